"""Index reconciliation: make FTS and vectors agree with memory_frames again, and report.

A crash between a frame write and its indexing, an update, or a compaction can leave frames
that are not searchable, rows for frames that are gone, or vectors made from old content.
Everything here is idempotent and safe to run on a schedule.
"""

from __future__ import annotations

from typing import Any

from mind_core.db import Database
from mind_core.embeddings.base import Embedder
from mind_core.errors import FingerprintMismatchError
from mind_core.vector_index import LONG_FRAME_WORDS, VectorIndex, split_chunks

_MISSING_FTS = (
    "SELECT f.id, f.content FROM memory_frames f WHERE f.id NOT IN (SELECT rowid FROM memory_frames_fts)"
)
_STALE_FTS = "SELECT f.id, f.content FROM memory_frames f JOIN memory_frames_fts t ON t.rowid = f.id WHERE t.content != f.content"
_ORPHAN_FTS = "SELECT rowid FROM memory_frames_fts WHERE rowid NOT IN (SELECT id FROM memory_frames)"
_MISSING_VEC = (
    "SELECT f.id, f.content FROM memory_frames f WHERE f.id NOT IN (SELECT rowid FROM memory_frames_vec)"
)
_STALE_VEC = (
    "SELECT f.id, f.content FROM memory_frames f WHERE f.id IN (SELECT rowid FROM memory_frames_vec) "
    "AND (f.embedded_hash IS NULL OR f.embedded_hash != f.content_hash)"
)
_ORPHAN_VEC = "SELECT rowid FROM memory_frames_vec WHERE rowid NOT IN (SELECT id FROM memory_frames)"
_CHUNK_WITHOUT_VEC = (
    "SELECT DISTINCT f.id, f.content FROM memory_frames f JOIN memory_frame_chunks c ON c.frame_id = f.id "
    "WHERE c.id NOT IN (SELECT rowid FROM memory_frame_chunks_vec)"
)
_EMBEDDED_LONG_WITHOUT_CHUNKS = (
    "SELECT f.id, f.content FROM memory_frames f WHERE f.embedded_hash = f.content_hash "
    "AND length(f.content) >= ? AND f.id NOT IN (SELECT frame_id FROM memory_frame_chunks)"
)
_ORPHAN_CHUNK_VEC = (
    "SELECT rowid FROM memory_frame_chunks_vec WHERE rowid NOT IN (SELECT id FROM memory_frame_chunks)"
)


def frames_missing_chunk_vectors(db: Database) -> list[Any]:
    """Embedded frames whose later text is not fully searchable: a chunk row without its vector,
    or a long frame with no chunk rows at all (the frame vector alone covers only its start)."""
    if not db.table_exists("memory_frame_chunks_vec"):
        return []
    missing = {row["id"]: row for row in db.query(_CHUNK_WITHOUT_VEC)}
    for row in db.query(_EMBEDDED_LONG_WITHOUT_CHUNKS, (2 * LONG_FRAME_WORDS,)):
        if split_chunks(row["content"]):
            missing[row["id"]] = row
    return list(missing.values())


def reconcile_fts_index(db: Database) -> int:
    """Index frames missing from FTS5 (and rewrite rows whose text is out of date)."""
    rows = db.query(_MISSING_FTS) + db.query(_STALE_FTS)
    with db.transaction():
        for row in rows:
            db.execute("DELETE FROM memory_frames_fts WHERE rowid = ?", (row["id"],))
            db.execute(
                "INSERT INTO memory_frames_fts (rowid, content) VALUES (?, ?)", (row["id"], row["content"])
            )
    return len(rows)


def reconcile_vec_index(db: Database, embedder: Embedder, progress: Any = None) -> int:
    """Embed frames with no vector, a stale one or missing chunk vectors, EMBED_BATCH at a time
    (the original: 50); re-indexing a frame rewrites its chunks with it."""
    if not db.table_exists("memory_frames_vec"):
        return 0
    rows = {r["id"]: r for r in db.query(_MISSING_VEC) + db.query(_STALE_VEC) + frames_missing_chunk_vectors(db)}
    return VectorIndex(db, embedder).index_frames([(r["id"], r["content"]) for r in rows.values()], progress=progress)


def clean_orphan_fts(db: Database) -> int:
    ids = [r[0] for r in db.query(_ORPHAN_FTS)]
    with db.transaction():
        db.executemany("DELETE FROM memory_frames_fts WHERE rowid = ?", [(i,) for i in ids])
    return len(ids)


def clean_orphan_vectors(db: Database) -> int:
    if not db.table_exists("memory_frames_vec"):
        return 0
    ids = [r[0] for r in db.query(_ORPHAN_VEC)]
    chunk_ids = [r[0] for r in db.query(_ORPHAN_CHUNK_VEC)]
    with db.transaction():
        db.executemany("DELETE FROM memory_frames_vec WHERE rowid = ?", [(i,) for i in ids])
        db.executemany("DELETE FROM memory_frame_chunks_vec WHERE rowid = ?", [(i,) for i in chunk_ids])
    return len(ids) + len(chunk_ids)


def reconcile_indexes(db: Database, embedder: Embedder | None = None) -> dict[str, int]:
    """FTS repair, vector repair (when an embedder is given), then orphan sweeps."""
    fts_fixed = reconcile_fts_index(db)
    vec_fixed = reconcile_vec_index(db, embedder) if embedder is not None else 0
    orphans = clean_orphan_fts(db) + clean_orphan_vectors(db)
    return {"ftsFixed": fts_fixed, "vecFixed": vec_fixed, "orphansRemoved": orphans}


def doctor(db: Database, embedder: Embedder | None = None, repair: bool = False) -> dict[str, Any]:
    """Check every index against memory_frames; with ``repair`` fix what can be fixed."""
    index = VectorIndex(db, embedder)
    fingerprint = "ok"
    try:
        index.check_fingerprint()
    except FingerprintMismatchError as exc:
        fingerprint = str(exc)
    report: dict[str, Any] = {
        "frames": db.scalar("SELECT COUNT(*) FROM memory_frames"),
        "fts_missing": len(db.query(_MISSING_FTS)),
        "fts_stale": len(db.query(_STALE_FTS)),
        "fts_orphans": len(db.query(_ORPHAN_FTS)),
        "vec_missing": len(db.query(_MISSING_VEC)),
        "vec_stale": len(db.query(_STALE_VEC)),
        "vec_chunks_missing": len(frames_missing_chunk_vectors(db)),
        "vec_orphans": len(db.query(_ORPHAN_VEC)) + len(db.query(_ORPHAN_CHUNK_VEC)),
        "fingerprint": fingerprint,
        "stored_fingerprint": index.stored_fingerprint(),
        "integrity": db.scalar("PRAGMA quick_check"),
    }
    problems = [
        k
        for k in (
            "fts_missing",
            "fts_stale",
            "fts_orphans",
            "vec_missing",
            "vec_stale",
            "vec_chunks_missing",
            "vec_orphans",
        )
        if report[k]
    ]
    if fingerprint != "ok":
        problems.append("fingerprint")
    if report["integrity"] != "ok":
        problems.append("integrity")
    report["problems"] = problems
    report["ok"] = not problems
    if repair and problems:
        can_embed = embedder is not None and fingerprint == "ok"
        report["repaired"] = reconcile_indexes(db, embedder if can_embed else None)
        after = doctor(db, embedder, repair=False)
        report["after"] = {k: after[k] for k in ("problems", "ok")}
    return report
