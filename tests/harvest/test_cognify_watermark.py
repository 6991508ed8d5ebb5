"""Which frames a harvest cognifies (issue #31): for a source whose last cognify completed, the
frames changed since (the change log), not a scan of every frame of the mind; per source, so a
source harvested without cognify keeps its frames pending whatever other sources do."""

from __future__ import annotations

from pathlib import Path

from mind_core.embeddings.mock import MockEmbedder
from mind_core.harvest.pipeline import COGNIFY_PASS, harvest, pending_cognify_ids, register_source
from mind_core.knowledge.cognify import COGNIFIED_KEY
from mind_core.mind import Mind
from mind_core.store import change_log
from mind_core.store.schema import CHANGE_LOG_TABLE
from mind_core.testing.exports import write_chatgpt_export


def source_ids(mind: Mind, source: str) -> list[int]:
    return [r[0] for r in mind.db.query(
        "SELECT id FROM memory_frames WHERE json_extract(metadata, '$.provenance.source') = ? ORDER BY id", (source,))]


def uncognify(mind: Mind, frame_id: int) -> None:
    with mind.db.transaction():
        mind.db.execute(f"UPDATE memory_frames SET metadata = json_remove(metadata, '$.{COGNIFIED_KEY}') WHERE id = ?",
                        (frame_id,))


def test_pending_frames_come_from_the_changes_since_the_sources_last_cognify(tmp_path: Path) -> None:
    with Mind.open(tmp_path / "m.mind", embedder=MockEmbedder()) as mind:
        register_source(mind, "chatgpt", write_chatgpt_export(tmp_path / "a" / "conversations.json", 3, 10), "a")
        assert harvest(mind, "a").cognified["processed"] == 30
        assert change_log.watermark(mind.db, COGNIFY_PASS + "a") is not None
        assert pending_cognify_ids(mind, "a") == []
        first, second = source_ids(mind, "a")[:2]
        uncognify(mind, first)  # an edit the change log records: found
        assert pending_cognify_ids(mind, "a") == [first]
        with mind.db.transaction():
            mind.db.execute(f"DELETE FROM {CHANGE_LOG_TABLE}")  # an edit the log never saw ...
        uncognify(mind, second)
        with mind.db.transaction():
            mind.db.execute(f"DELETE FROM {CHANGE_LOG_TABLE} WHERE row = ?", (second,))
        assert pending_cognify_ids(mind, "a") == []  # ... is not looked for: no scan of every frame
        assert pending_cognify_ids(mind) == [first, second]  # (the whole mind's question scans them all)


def test_a_source_harvested_without_cognify_stays_pending_while_others_are_cognified(tmp_path: Path) -> None:
    with Mind.open(tmp_path / "m.mind", embedder=MockEmbedder()) as mind:
        register_source(mind, "chatgpt", write_chatgpt_export(tmp_path / "a" / "conversations.json", 2, 10), "a")
        register_source(mind, "chatgpt", write_chatgpt_export(tmp_path / "b" / "conversations.json", 2, 10, seed=3), "b")
        harvest(mind, "b", cognify=False)
        harvest(mind, "a")
        assert pending_cognify_ids(mind, "a") == []
        assert pending_cognify_ids(mind, "b") == source_ids(mind, "b")
        assert harvest(mind, "b", force=True).cognified["processed"] == 20
        assert pending_cognify_ids(mind, "b") == [] and pending_cognify_ids(mind) == []
