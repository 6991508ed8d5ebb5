"""Incremental upkeep: the frame change log, and reconcile, doctor and the snapshot passes that
examine only what it names since their last pass, with the same outcome as a full pass."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mind_core.analytics import snapshot_segments
from mind_core.analytics.snapshot import snapshot_mind
from mind_core.analytics.snapshot_tables import partition_dir
from mind_core.mind import Mind
from mind_core.privacy.snapshots import mark_stale
from mind_core.store import change_log
from mind_core.store.frames import NewFrame
from mind_core.testing.dump import canonical_dump
from mind_core.testing.fakes import HashingEmbedder

FRAMES = 60
LONG_TEXT = " ".join(f"word{i}" for i in range(900))  # long enough to be split into chunks


def new_mind(path: Path, frames: int = FRAMES) -> Mind:
    mind = Mind.open(path, embedder=HashingEmbedder())
    mind.sessions.ensure("g")
    texts = [f"note {i} about topic {i % 7}" for i in range(frames - 1)] + [LONG_TEXT]
    mind.frames.create_i_frames([NewFrame("g", text) for text in texts])
    first = mind.reconcile()
    assert first.full and first.vectors_fixed == frames  # no watermark yet: every frame
    # the next pass looks again at the frames the first one wrote vectors for (all of them)
    assert mind.reconcile() == type(first)()
    assert not mind.reconcile().full
    assert mind.doctor().ok
    return mind


def add_frames(mind: Mind, texts: list[str]) -> list[int]:
    return [frame.id for frame in mind.frames.create_i_frames([NewFrame("g", text) for text in texts])]


def break_indexes(mind: Mind) -> dict[str, int]:
    """Changes a day brings, some leaving the indexes behind: new frames with no index rows, an
    edit, a deletion (its index rows left behind), a full-text row removed from an edited frame."""
    added = add_frames(mind, ["a new note about kites", "another new note about tides"])
    long_id = mind.db.scalar("SELECT id FROM memory_frames WHERE length(content) > 5000")
    mind.db.execute("UPDATE memory_frames SET content = 'edited note' WHERE id = 3")
    mind.db.execute("DELETE FROM memory_frames_fts WHERE rowid = 5")
    mind.db.execute("UPDATE memory_frames SET access_count = access_count + 1 WHERE id = 5")
    with mind.db.transaction():
        mind.db.execute("PRAGMA foreign_keys = OFF")
        mind.db.execute("DELETE FROM memory_frames WHERE id = ?", (long_id,))  # vectors and FTS left behind
        mind.db.execute("PRAGMA foreign_keys = ON")
    return {"added": len(added), "long_id": long_id}


def test_changes_name_every_frame_added_edited_or_deleted_and_every_chunk_deleted(tmp_path: Path) -> None:
    with new_mind(tmp_path / "m.mind") as mind:
        before = change_log.position(mind.db)
        long_id = mind.db.scalar("SELECT id FROM memory_frames WHERE length(content) > 5000")
        chunks = [r[0] for r in mind.db.query("SELECT id FROM memory_frame_chunks WHERE frame_id = ?", (long_id,))]
        assert chunks
        logged = mind.db.scalar("SELECT count(*) FROM frame_changes")
        (new,) = add_frames(mind, ["fresh"])
        assert mind.db.scalar("SELECT count(*) FROM frame_changes") == logged  # an insert logs nothing
        mind.frames.update(2, "changed text")
        mind.frames.delete(long_id)  # its chunks go by cascade
        changes = change_log.changes_since(mind.db, before)
        assert changes is not None
        assert {new, 2, long_id} <= set(changes.frames)
        assert set(changes.frames) <= {new, 2, long_id}
        assert changes.chunks == sorted(chunks)
        assert changes.end == change_log.position(mind.db)


def test_a_pass_without_a_usable_watermark_is_full(tmp_path: Path) -> None:
    with new_mind(tmp_path / "m.mind") as mind:
        assert change_log.changes_since(mind.db, None) is None  # never ran
        now = change_log.position(mind.db)
        later = change_log.Position(now.seq + 5, now.frame_id)
        assert change_log.changes_since(mind.db, later) is None  # a mind restored from an older copy
        mind.frames.update(1, "edited once")
        assert change_log.prune(mind.db, keep=0) > 0
        assert change_log.position(mind.db).seq > now.seq  # positions survive an emptied log
        assert change_log.changes_since(mind.db, now) is None  # the entry after it was pruned
        edited = change_log.position(mind.db)
        assert change_log.changes_since(mind.db, edited) == change_log.Changes(edited, edited, [], [])
        change_log.set_watermark(mind.db, change_log.RECONCILE, now)
        assert mind.reconcile().full


def test_incremental_reconcile_examines_the_changes_and_repairs_like_a_full_pass(tmp_path: Path) -> None:
    path = tmp_path / "m.mind"
    new_mind(path).close()
    with Mind.open(path, embedder=HashingEmbedder()) as mind:
        broken = break_indexes(mind)
    shutil.copy(path, tmp_path / "full.mind")
    with (
        Mind.open(path, embedder=HashingEmbedder()) as incremental,
        Mind.open(tmp_path / "full.mind", embedder=HashingEmbedder()) as full,
    ):
        by_changes, by_scan = incremental.reconcile(), full.reconcile(full=True)
        assert not by_changes.full and by_scan.full
        # 2 added, 1 edited, 1 touched, 1 deleted (and its chunks)
        chunks = len(change_log.changes_since(incremental.db, change_log.Position(0, FRAMES + 2)).chunks)  # type: ignore[union-attr]
        assert by_changes.frames_examined == broken["added"] + 3 + chunks
        assert by_scan.frames_examined >= FRAMES
        assert by_changes == by_scan
        assert by_changes.fts_fixed and by_changes.vectors_fixed and by_changes.orphans_removed
        assert canonical_dump(incremental) == canonical_dump(full)
        assert incremental.doctor(full=True).ok
        again = incremental.reconcile()
        assert not again.full and again == type(again)()  # only the pass's own repairs to look at


def test_incremental_doctor_finds_what_a_full_check_finds_and_records_only_a_clean_check(tmp_path: Path) -> None:
    path = tmp_path / "m.mind"
    with new_mind(path) as mind:
        clean = mind.doctor()
        assert not clean.full and clean.frames_examined == 0 and clean.ok
        break_indexes(mind)
        by_changes, by_scan = mind.doctor(), mind.doctor(full=True)
        assert not by_changes.full and by_scan.full
        assert 0 < by_changes.frames_examined < by_scan.frames_examined
        for finding in by_scan.findings:
            if finding.check != "integrity":
                assert by_changes.count(finding.check) == finding.count, finding.check
        assert set(by_changes.problems) >= {"fts_missing", "fts_stale", "fts_orphans", "vec_missing", "vec_orphans"}
        assert mind.doctor().problems == by_changes.problems  # not healthy: the watermark stays
    with Mind.open(path, embedder=HashingEmbedder(), readonly=True) as reader:
        assert reader.doctor().problems == by_changes.problems  # read-only: checks, records nothing
    with Mind.open(path, embedder=HashingEmbedder()) as mind:
        repaired = mind.doctor(repair=True)
        assert repaired.repaired is not None and repaired.after is not None and repaired.after.ok
        assert mind.doctor().frames_examined == 0  # the clean check moved the watermark
        assert mind.doctor(full=True).ok


# -- snapshots -------------------------------------------------------------------------------


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(snapshot_segments, "SEGMENT_FRAMES", 10)
    return 10


def frames_table(root: Path, day: str) -> pa.Table:
    folder = partition_dir(root, "frames", "ws", day)
    return pq.read_table(folder).sort_by("id").drop_columns(["last_accessed"])


def test_a_snapshot_writes_only_the_segments_with_changed_frames(tmp_path: Path, small_segments: int) -> None:
    path, root = tmp_path / "m.mind", tmp_path / "snapshots"
    new_mind(path).close()
    first = snapshot_mind(path, root, "ws", "2024-05-01")
    assert first.full_reason == "no earlier snapshot" and first.rows_written["frames"] == FRAMES
    with Mind.open(path, embedder=HashingEmbedder()) as mind:
        added = add_frames(mind, ["late note one", "late note two"])
        mind.frames.update(4, "changed in segment zero")
    second = snapshot_mind(path, root, "ws", "2024-05-02")
    changed_segments = {4 // small_segments, *(i // small_segments for i in added)}
    assert second.full_reason is None
    assert second.rows["frames"] == FRAMES + 2
    assert second.rows_written["frames"] == len([i for i in range(1, FRAMES + 3) if i // small_segments in changed_segments])
    day1, day2 = (partition_dir(root, "frames", "ws", d) for d in ("2024-05-01", "2024-05-02"))
    unchanged = snapshot_segments.segment_file(2)
    assert os.stat(day1 / unchanged).st_ino == os.stat(day2 / unchanged).st_ino  # carried over, not copied
    full = snapshot_mind(path, tmp_path / "full", "ws", "2024-05-02", full=True)
    assert full.full_reason == "asked for" and full.rows_written["frames"] == FRAMES + 2
    assert frames_table(root, "2024-05-02").equals(frames_table(tmp_path / "full", "2024-05-02"))
    assert frames_table(root, "2024-05-01").num_rows == FRAMES  # the earlier day is untouched


def test_deletions_rewrite_their_segment_and_a_forget_rewrites_everything(
    tmp_path: Path, small_segments: int
) -> None:
    path, root = tmp_path / "m.mind", tmp_path / "snapshots"
    new_mind(path).close()
    snapshot_mind(path, root, "ws", "2024-05-01")
    with Mind.open(path, embedder=HashingEmbedder()) as mind:
        mind.frames.delete(15)
    pruned = snapshot_mind(path, root, "ws", "2024-05-02")
    assert pruned.full_reason is None and pruned.rows_written["frames"] == small_segments - 1
    assert 15 not in frames_table(root, "2024-05-02").column("id").to_pylist()
    mark_stale(root, "ws", audit_id=1)
    after_forget = snapshot_mind(path, root, "ws", "2024-05-03")
    assert after_forget.full_reason == "a forget since the earlier snapshot"
    assert after_forget.rows_written["frames"] == FRAMES - 1
    assert snapshot_mind(path, root, "ws", "2024-05-04").rows_written["frames"] == 0  # nothing changed since
    with_vectors = snapshot_mind(path, root, "ws", "2024-05-05", include_embeddings=True)
    assert with_vectors.full_reason == "the earlier snapshot has another layout"


def test_a_read_only_doctor_after_a_reconcile_checks_only_what_changed_since(tmp_path: Path) -> None:
    path = tmp_path / "m.mind"
    with Mind.open(path, embedder=HashingEmbedder()) as mind:
        mind.sessions.ensure("g")
        add_frames(mind, [f"note {i}" for i in range(30)])
        mind.reconcile()
        mind.reconcile()  # what the first one wrote (the vectors) is looked at once more
        assert change_log.watermark(mind.db, change_log.DOCTOR) is None
        add_frames(mind, ["written after the reconcile"])
    with Mind.open(path, embedder=HashingEmbedder(), readonly=True) as reader:
        report = reader.doctor()
        assert not report.full and report.frames_examined == 1
        assert report.problems == ["vec_missing"]
