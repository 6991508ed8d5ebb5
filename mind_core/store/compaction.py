"""Compaction: prune old temporary/deprecated frames and fold long P-frame chains into their I-frame.

Unlike the original, every removal goes through ``FrameStore.delete`` (FTS, vectors and entity
links go with the frame, references are nulled first, so no foreign-key failure), and the merged
I-frame's vector is dropped so the next reconcile re-embeds it instead of serving a stale one.
The knowledge a pruned frame alone stated is ended (kept as history); what a folded P-frame stated
is now stated by its I-frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from mind_core.knowledge.graph import KnowledgeGraph
from mind_core.store.db import Database
from mind_core.timestamps import now_iso

P_FRAME_MERGE_THRESHOLD = 10  # a session with more P-frames than this after its I-frame is folded
P_FRAMES_KEPT = 5  # the newest P-frames stay separate
MERGE_SEPARATOR = "\n---\n"


class StoredFrame(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def content(self) -> str: ...


class FrameEditor(Protocol):
    """What compaction needs of the frame store (``FrameStore`` is one): the store calls
    compaction, so compaction names only the operations it uses and never imports the store."""

    db: Database

    def get_latest_i_frame(self, gop_id: str) -> StoredFrame | None: ...
    def get_p_frames_since_last_i(self, gop_id: str) -> Sequence[StoredFrame]: ...
    def update(self, frame_id: int, content: str) -> object: ...
    def delete(self, frame_id: int) -> bool: ...


@dataclass(frozen=True)
class CompactionResult:
    temporary_pruned: int = 0
    deprecated_pruned: int = 0
    p_frames_merged: int = 0


def _prune(frames: FrameEditor, importance: str, days: int) -> int:
    rows = frames.db.query(
        "SELECT id FROM memory_frames WHERE importance = ? "
        "AND julianday(created_at) < julianday(?, '-' || ? || ' days')",
        (importance, now_iso(), int(days)),
    )
    return sum(frames.delete(row["id"]) for row in rows)


def compact(
    frames: FrameEditor, max_temp_age_days: int = 30, max_deprecated_age_days: int = 90
) -> CompactionResult:
    db = frames.db
    knowledge = KnowledgeGraph(db)
    merged_count = 0
    with db.transaction():
        temporary_pruned = _prune(frames, "temporary", max_temp_age_days)
        deprecated_pruned = _prune(frames, "deprecated", max_deprecated_age_days)

        candidates = db.query(
            "SELECT gop_id FROM memory_frames WHERE frame_type = 'P' GROUP BY gop_id HAVING COUNT(*) > ?",
            (P_FRAME_MERGE_THRESHOLD,),
        )
        for row in candidates:
            gop_id = row["gop_id"]
            latest = frames.get_latest_i_frame(gop_id)
            if latest is None:
                continue
            pframes = frames.get_p_frames_since_last_i(gop_id)
            if len(pframes) <= P_FRAME_MERGE_THRESHOLD:
                continue
            to_merge = pframes[: len(pframes) - P_FRAMES_KEPT]
            merged = MERGE_SEPARATOR.join([latest.content, *(p.content for p in to_merge)])
            frames.update(latest.id, merged)
            knowledge.move_evidence([p.id for p in to_merge], latest.id)
            for pframe in to_merge:
                frames.delete(pframe.id)
            merged_count += len(to_merge)
        knowledge.end_facts_without_evidence()
    return CompactionResult(temporary_pruned, deprecated_pruned, merged_count)
