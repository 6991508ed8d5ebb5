import pytest

from mind_core.harvest.audit import duplicate_imports, index_gaps, timestamps_not_kept
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.store.frames import NewFrame
from mind_core.testing.exports import write_chatgpt_export
from mind_core.testing.fakes import HashingEmbedder


@pytest.fixture
def mind(tmp_path):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", conversations=2, messages_each=3)
    with Mind.open(tmp_path / "a.mind", embedder=HashingEmbedder()) as mind:
        register_source(mind, "chatgpt", export, "gpt")
        harvest(mind, "gpt")
        yield mind


def first_frame(mind):
    return mind.frames.get_many([mind.db.scalar("SELECT MIN(id) FROM memory_frames")]).popitem()[1]


def test_a_clean_harvest_passes_every_audit(mind):
    for audit in (duplicate_imports, timestamps_not_kept, index_gaps):
        finding = audit(mind.db, "gpt")
        assert finding.ok and finding.checked == 6 and finding.examples == []
    assert duplicate_imports(mind.db, "other").checked == 0


def test_a_second_frame_for_a_ledgered_message_is_a_duplicate(mind):
    original = first_frame(mind)
    copy = mind.frames.create_i_frames(
        [
            NewFrame(
                original.gop_id,
                original.content + " (again)",
                "normal",
                "import",
                original.created_at,
                original.metadata,
            )
        ]
    )[0]
    finding = duplicate_imports(mind.db, "gpt")
    assert finding.failures == 1 and finding.checked == 7
    assert (
        finding.examples[0]["frame_id"] == copy.id and finding.examples[0]["ledger_frame_id"] == original.id
    )
    prov = original.metadata["provenance"]
    assert finding.examples[0]["message"] == f"{prov['item_key']}/{prov['message_key']}"


def test_a_frame_whose_time_is_not_its_message_time_is_found(mind):
    frame = first_frame(mind)
    mind.db.execute(
        "UPDATE memory_frames SET created_at = '2030-01-01T00:00:00.000Z' WHERE id = ?", (frame.id,)
    )
    finding = timestamps_not_kept(mind.db, "gpt")
    assert finding.failures == 1 and finding.examples == [
        {
            "frame_id": frame.id,
            "original": frame.metadata["provenance"]["timestamp"],
            "created_at": "2030-01-01T00:00:00.000Z",
        }
    ]


def test_frames_missing_from_an_index_or_with_stale_vectors_are_found(mind):
    ids = [r[0] for r in mind.db.query("SELECT id FROM memory_frames ORDER BY id")]
    mind.db.execute("DELETE FROM memory_frames_fts WHERE rowid = ?", (ids[0],))
    mind.db.execute("DELETE FROM memory_frames_vec WHERE rowid = ?", (ids[1],))
    mind.db.execute("UPDATE memory_frames SET embedded_hash = 'old' WHERE id = ?", (ids[2],))
    finding = index_gaps(mind.db, "gpt")
    assert finding.failures == 3
    assert finding.examples == [
        {"frame_id": ids[0], "fts": "missing", "vector": "ok"},
        {"frame_id": ids[1], "fts": "ok", "vector": "missing"},
        {"frame_id": ids[2], "fts": "ok", "vector": "stale"},
    ]
