"""The index checks of ``reconcile`` and ``doctor`` asked of the changed frames only.

A full pass asks each question of every frame with set operations (``NOT IN`` over a whole
index); an incremental pass asks the same question of the frames the change log names
(``change_log.Changes``), a page of ids at a time, each looked up in the indexes by rowid (FTS5
and vec0 answer ``rowid = ?`` without scanning). Same rows found, work proportional to the
changes. A frame id the log names that no longer exists is a deletion: its index rows, if any,
are orphans.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from mind_core.store.change_log import Changes
from mind_core.store.db import IN_LIST, Database, in_list

PAGE_IDS = 2_000

_FTS_MISSING = (
    f"SELECT f.id, f.content FROM memory_frames f WHERE f.id IN ({IN_LIST}) "
    "AND NOT EXISTS (SELECT 1 FROM memory_frames_fts t WHERE t.rowid = f.id)"
)
_FTS_STALE = (
    f"SELECT f.id, f.content FROM memory_frames f WHERE f.id IN ({IN_LIST}) "
    "AND EXISTS (SELECT 1 FROM memory_frames_fts t WHERE t.rowid = f.id AND t.content != f.content)"
)
_GONE = f"SELECT j.value FROM ({IN_LIST}) j WHERE NOT EXISTS (SELECT 1 FROM memory_frames f WHERE f.id = j.value)"
_FTS_ORPHANS = f"SELECT g.value FROM ({_GONE}) g WHERE EXISTS (SELECT 1 FROM memory_frames_fts t WHERE t.rowid = g.value)"
_VEC_MISSING = (
    f"SELECT f.id, f.content FROM memory_frames f WHERE f.id IN ({IN_LIST}) "
    "AND NOT EXISTS (SELECT 1 FROM memory_frames_vec v WHERE v.rowid = f.id)"
)
_VEC_STALE = (
    f"SELECT f.id, f.content FROM memory_frames f WHERE f.id IN ({IN_LIST}) "
    "AND (f.embedded_hash IS NULL OR f.embedded_hash != f.content_hash) "
    "AND EXISTS (SELECT 1 FROM memory_frames_vec v WHERE v.rowid = f.id)"
)
_VEC_ORPHANS = f"SELECT g.value FROM ({_GONE}) g WHERE EXISTS (SELECT 1 FROM memory_frames_vec v WHERE v.rowid = g.value)"
_CHUNK_VEC_ORPHANS = (
    f"SELECT j.value FROM ({IN_LIST}) j WHERE NOT EXISTS (SELECT 1 FROM memory_frame_chunks c WHERE c.id = j.value) "
    "AND EXISTS (SELECT 1 FROM memory_frame_chunks_vec v WHERE v.rowid = j.value)"
)
_CHUNK_WITHOUT_VEC = (
    f"SELECT DISTINCT f.id, f.content FROM memory_frames f JOIN memory_frame_chunks c ON c.frame_id = f.id "
    f"WHERE f.id IN ({IN_LIST}) AND NOT EXISTS (SELECT 1 FROM memory_frame_chunks_vec v WHERE v.rowid = c.id)"
)
_EMBEDDED_LONG_WITHOUT_CHUNKS = (
    f"SELECT f.id, f.content FROM memory_frames f WHERE f.id IN ({IN_LIST}) "
    "AND f.embedded_hash = f.content_hash AND length(f.content) >= ? "
    "AND NOT EXISTS (SELECT 1 FROM memory_frame_chunks c WHERE c.frame_id = f.id)"
)

# check name -> (the SQL, the table it needs, which changed ids it asks about)
CHECKS: dict[str, tuple[str, str, str]] = {
    "fts_missing": (_FTS_MISSING, "memory_frames_fts", "frames"),
    "fts_stale": (_FTS_STALE, "memory_frames_fts", "frames"),
    "fts_orphans": (_FTS_ORPHANS, "memory_frames_fts", "frames"),
    "vec_missing": (_VEC_MISSING, "memory_frames_vec", "frames"),
    "vec_stale": (_VEC_STALE, "memory_frames_vec", "frames"),
    "vec_orphans": (_VEC_ORPHANS, "memory_frames_vec", "frames"),
    "chunk_vec_orphans": (_CHUNK_VEC_ORPHANS, "memory_frame_chunks_vec", "chunks"),
    "chunk_without_vec": (_CHUNK_WITHOUT_VEC, "memory_frame_chunks_vec", "frames"),
}


def _pages(ids: Sequence[int]) -> Iterator[Sequence[int]]:
    for start in range(0, len(ids), PAGE_IDS):
        yield ids[start : start + PAGE_IDS]


def rows(db: Database, check: str, changes: Changes) -> list[Any]:
    """The rows at fault for ``check`` among the changed frames (or deleted chunks)."""
    sql, table, ids = CHECKS[check]
    if not db.table_exists(table):
        return []
    found: list[Any] = []
    for page in _pages(getattr(changes, ids)):
        found += db.query(sql, (in_list(page),))
    return found


def long_frames_without_chunks(db: Database, changes: Changes, min_length: int) -> list[Any]:
    """Changed embedded frames of at least ``min_length`` characters with no chunk rows."""
    if not db.table_exists("memory_frame_chunks_vec"):
        return []
    found: list[Any] = []
    for page in _pages(changes.frames):
        found += db.query(_EMBEDDED_LONG_WITHOUT_CHUNKS, (in_list(page), min_length))
    return found
