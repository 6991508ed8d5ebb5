import json

import pytest

from mind_core.errors import InvalidInputError
from mind_core.harvest.importer import import_items
from mind_core.harvest.items import HarvestError, HarvestItem, HarvestMessage
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.harvest.stores import HarvestRunStore, HarvestSourceStore
from mind_core.mind import Mind
from mind_core.plugins import UnknownSourceError
from mind_core.testing.dump import canonical_dump
from mind_core.testing.exports import write_chatgpt_export
from mind_core.testing.fakes import HashingEmbedder
from mind_core.timestamps import epoch_to_iso


@pytest.fixture
def export(tmp_path):
    return write_chatgpt_export(tmp_path / "export" / "conversations.json", conversations=4, messages_each=6)


def open_mind(path, embedder=None):
    return Mind.open(path, embedder=embedder or HashingEmbedder())


def test_harvest_writes_one_frame_per_message_with_provenance_and_time(tmp_path, export):
    with open_mind(tmp_path / "w.mind") as mind:
        register_source(mind, "chatgpt", export, "gpt")
        report = harvest(mind, "gpt")
        assert report.imported.items_seen == 4 and report.imported.frames_new == 24
        assert report.vectors_written == 24 and report.cognified["processed"] == 24  # cognify embedded them
        data = json.loads(export.read_text())
        expected = {}
        for conv in data:
            for node in conv["mapping"].values():
                if node["message"]:
                    m = node["message"]
                    expected[m["id"]] = (conv["id"], epoch_to_iso(m["create_time"]), m["content"]["parts"][0])
        frames = mind.frames.get_recent(100)
        assert len(frames) == 24
        for frame in frames:
            prov = frame.metadata["provenance"]
            conv_id, when, text = expected[prov["message_key"]]
            assert prov["source"] == "gpt" and prov["plugin"] == "chatgpt" and prov["container"] == conv_id
            assert frame.created_at == when  # the message's own time, not the import time
            assert frame.content.endswith(text) and prov["role"].capitalize() in frame.content
            assert frame.gop_id == f"harvest:gpt:{conv_id}" and frame.source == "import"
        by_gop = {}
        for frame in sorted(frames, key=lambda f: f.id):
            by_gop.setdefault(frame.gop_id, []).append(frame.t)
        assert all(ts == list(range(6)) for ts in by_gop.values())
        assert mind.doctor().ok
        source = HarvestSourceStore(mind.db).get_by_source("gpt")
        assert source.items_imported == 4 and source.frames_created == 24 and source.last_fingerprint
        run = HarvestRunStore(mind.db).get_all(source="gpt")[0]
        assert run["status"] == "completed" and run["items_saved"] == 24


def test_reharvest_of_unchanged_source_writes_and_embeds_nothing(tmp_path, export):
    embedder = HashingEmbedder()
    with open_mind(tmp_path / "w.mind", embedder) as mind:
        register_source(mind, "chatgpt", export, "gpt")
        harvest(mind, "gpt")
        before = canonical_dump(mind)
        calls = embedder.calls
        skipped = harvest(mind, "gpt")
        assert skipped.skipped and skipped.imported is None
        forced = harvest(mind, "gpt", force=True)  # a full scan: every item is found unchanged
        assert forced.imported.frames_new == 0 and forced.imported.frames_updated == 0
        assert forced.imported.frames_unchanged == 24 and forced.imported.unchanged
        assert forced.cognified["processed"] == 0 and forced.vectors_written == 0
        assert embedder.calls == calls
        assert canonical_dump(mind) == before


def test_editing_one_message_updates_exactly_one_frame(tmp_path, export):
    embedder = HashingEmbedder()
    with open_mind(tmp_path / "w.mind", embedder) as mind:
        register_source(mind, "chatgpt", export, "gpt")
        harvest(mind, "gpt")
        data = json.loads(export.read_text())
        data[2]["mapping"]["conv-2-m3"]["message"]["content"]["parts"] = [
            "the zeppelin hangar budget was approved"
        ]
        export.write_text(json.dumps(data))
        embedder.texts_embedded.clear()
        report = harvest(mind, "gpt")
        assert (
            report.imported.frames_new,
            report.imported.frames_updated,
            report.imported.frames_unchanged,
        ) == (0, 1, 23)
        assert report.cognified["processed"] == 1
        assert len(embedder.texts_embedded) == 1 and "zeppelin" in embedder.texts_embedded[0]
        assert mind.frames.get_stats()["total"] == 24
        hit = mind.search.search("zeppelin hangar")[0].frame
        assert hit.metadata["provenance"]["message_key"] == "conv-2-m3"
        assert mind.doctor().ok


def test_message_gone_from_source_stays_unless_pruned(tmp_path, export):
    with open_mind(tmp_path / "w.mind") as mind:
        register_source(mind, "chatgpt", export, "gpt")
        harvest(mind, "gpt")
        data = json.loads(export.read_text())
        export.write_text(json.dumps(data[:3]))
        assert harvest(mind, "gpt").imported.frames_unchanged == 18
        assert mind.frames.get_stats()["total"] == 24
        report = harvest(mind, "gpt", force=True, prune=True)
        assert report.imported.pruned == 6
        assert mind.frames.get_stats()["total"] == 18 and mind.doctor().ok


def test_located_errors_are_reported_and_good_items_kept(tmp_path):
    def events():
        yield HarvestItem(
            "k1",
            "conversation",
            "Good",
            "c1",
            [HarvestMessage("m1", "a perfectly fine message", "user", timestamp="2024-01-01T00:00:00Z")],
        )
        yield HarvestError("export.json", "truncated JSON", "record 2")
        yield HarvestItem(
            "k3",
            "note",
            "Undated",
            "c3",
            [HarvestMessage("m1", "no timestamp here"), HarvestMessage("m2", "   ")],
        )

    with open_mind(tmp_path / "w.mind") as mind:
        summary = import_items(mind, "src", events(), kind="chatgpt")
        assert summary.frames_new == 2 and summary.error_count == 1 and summary.timestamps_missing == 1
        assert str(summary.errors[0]) == "export.json [record 2]: truncated JSON"


def test_registration_errors_are_clear(tmp_path, export):
    with open_mind(tmp_path / "w.mind") as mind:
        with pytest.raises(UnknownSourceError, match="chatgpt"):
            register_source(mind, "myspace", export)
        with pytest.raises(InvalidInputError, match="does not exist"):
            register_source(mind, "chatgpt", tmp_path / "nope.json")
        with pytest.raises(InvalidInputError, match="invalid source name"):
            register_source(mind, "chatgpt", export, "../evil")


# The SIGKILL crash-and-rerun trials live in tests/reliability/test_crash.py (shared with
# benchmarks/reliability.py).
