"""The hostile corpus through the real harvest: every run finishes, reports located errors, keeps
every good item, refuses traversal-named archive members and writes nothing outside the home."""

from mind_core.embeddings.mock import MockEmbedder
from mind_core.harvest.importer import MAX_MESSAGE_CHARS
from mind_core.mind import Mind
from mind_core.store.home import MindHome
from mind_core.testing.hostile import build_corpus, harvest_corpus, tree_state


def test_hostile_corpus_is_harvested_without_loss_or_escape(tmp_path):
    home = MindHome(tmp_path / "home")
    cases = build_corpus(tmp_path / "corpus", truncations=4, big_bytes=MAX_MESSAGE_CHARS + 500_000, seed=5)
    before = tree_state(tmp_path)
    with Mind.open(home.workspace_path("hostile"), embedder=MockEmbedder(1024)) as mind:
        outcomes = list(harvest_corpus(mind, cases))
        for outcome in outcomes:
            assert outcome.ok, outcome
        assert sum(o.frames for o in outcomes) >= sum(len(c.good) for c in cases)
        assert mind.doctor().ok
    assert tree_state(tmp_path, skip=home.root) == before  # sources untouched, nothing escaped
    assert {p.name for p in tmp_path.iterdir()} == {"corpus", "home"}
    errors = [e for o in outcomes for e in o.errors]
    assert any("unsafe archive member" in e and "../" in e for e in errors)
    assert any("nested deeper than 256" in e for e in errors)
    assert any("cut to its first" in e for e in errors)


def test_an_overlong_message_is_cut_and_the_cut_reported(tmp_path):
    from mind_core.harvest.importer import import_items
    from mind_core.harvest.items import HarvestItem, HarvestMessage

    huge = HarvestItem(
        "note", "note", "Huge", "c", [HarvestMessage("s0", "zqhead " + "x" * (MAX_MESSAGE_CHARS + 10))]
    )
    with Mind.open(tmp_path / "w.mind", embedder=MockEmbedder(1024)) as mind:
        summary = import_items(mind, "src", [huge], kind="markdown")
        frame = mind.frames.get_by_id(summary.new_frame_ids[0])
    assert summary.frames_new == 1 and frame.content.startswith("[Huge]\nzqhead x")
    assert len(frame.content) == len("[Huge]\n") + MAX_MESSAGE_CHARS
    assert [str(e) for e in summary.errors] == [
        f"src [note/s0]: message of {MAX_MESSAGE_CHARS + 17:,} characters cut to its first {MAX_MESSAGE_CHARS:,}"
    ]
