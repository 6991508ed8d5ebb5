"""Audits of what a harvest wrote for one source: read-only questions with located answers.

Each audit answers one promise the harvest makes and returns how many rows break it, with a few
examples to look at: no message was imported into two frames, every message that had a time kept
it, and every frame of the source is findable (full text and vectors). Orchestrators turn these
into checks; nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mind_core.store.db import Database
from mind_core.timestamps import is_valid_iso_timestamp, normalize_iso

EXAMPLES = 10

_OF_SOURCE = "json_extract(f.metadata, '$.provenance.source') = ?"


@dataclass
class AuditFinding:
    """The outcome of one audit: rows examined, rows that break the promise, a few of them."""

    audit: str
    checked: int
    failures: int
    examples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failures == 0


def duplicate_imports(db: Database, source: str, examples: int = EXAMPLES) -> AuditFinding:
    """Frames of ``source`` that the ledger does not name as the one frame of their message.

    The ledger maps each message key (item key / message key) to exactly one frame; a frame whose
    provenance names a message the ledger maps elsewhere, or not at all, is a second copy of that
    message (an import that bypassed or lost the ledger) and would be counted twice by search.
    """
    rows = db.query(
        "SELECT f.id AS frame_id, "
        "json_extract(f.metadata, '$.provenance.item_key') || '/' || "
        "json_extract(f.metadata, '$.provenance.message_key') AS message, "
        "l.frame_id AS ledger_frame_id "
        "FROM memory_frames f LEFT JOIN harvest_ledger l ON l.source = ? AND l.item_key = "
        "json_extract(f.metadata, '$.provenance.item_key') || '/' || "
        f"json_extract(f.metadata, '$.provenance.message_key') WHERE {_OF_SOURCE} "
        "AND (l.frame_id IS NULL OR l.frame_id != f.id) ORDER BY f.id",
        (source, source),
    )
    checked = db.scalar(f"SELECT COUNT(*) FROM memory_frames f WHERE {_OF_SOURCE}", (source,))
    return AuditFinding("duplicate_imports", int(checked or 0), len(rows), [dict(r) for r in rows[:examples]])


def timestamps_not_kept(db: Database, source: str, examples: int = EXAMPLES) -> AuditFinding:
    """Frames of ``source`` whose message had a valid time that is not the frame's time.

    Time is the event's time: a frame made from a message written in 2023 must say 2023, not the
    day of the import. Messages without a (valid) time are not counted; they had nothing to keep.
    """
    checked = 0
    broken: list[dict[str, Any]] = []
    failures = 0
    for row in db.execute(  # a row at a time: the source may hold a million frames
        "SELECT f.id, f.created_at, json_extract(f.metadata, '$.provenance.timestamp') AS original "
        f"FROM memory_frames f WHERE {_OF_SOURCE} ORDER BY f.id",
        (source,),
    ):
        original = row["original"]
        if not is_valid_iso_timestamp(original):
            continue
        checked += 1
        if normalize_iso(original) != row["created_at"]:
            failures += 1
            if len(broken) < examples:
                broken.append({"frame_id": row["id"], "original": original, "created_at": row["created_at"]})
    return AuditFinding("timestamps_not_kept", checked, failures, broken)


def index_gaps(db: Database, source: str, examples: int = EXAMPLES) -> AuditFinding:
    """Frames of ``source`` missing from full text, missing a vector, or with a stale vector.

    Vectors are only audited in a mind that has a vector table; a stale vector is one made from
    content the frame no longer has.
    """
    with_vectors = db.table_exists("memory_frames_vec")
    vector_state = (
        "CASE WHEN f.id NOT IN (SELECT rowid FROM memory_frames_vec) THEN 'missing' "
        "WHEN f.embedded_hash IS NULL OR f.embedded_hash != f.content_hash THEN 'stale' END"
        if with_vectors
        else "NULL"
    )
    rows = db.query(
        "SELECT id, fts, vector FROM (SELECT f.id AS id, "
        "CASE WHEN f.id NOT IN (SELECT rowid FROM memory_frames_fts) THEN 'missing' END AS fts, "
        f"{vector_state} AS vector FROM memory_frames f WHERE {_OF_SOURCE}) "
        "WHERE fts IS NOT NULL OR vector IS NOT NULL ORDER BY id",
        (source,),
    )
    checked = db.scalar(f"SELECT COUNT(*) FROM memory_frames f WHERE {_OF_SOURCE}", (source,))
    return AuditFinding(
        "index_gaps",
        int(checked or 0),
        len(rows),
        [
            {"frame_id": r["id"], "fts": r["fts"] or "ok", "vector": r["vector"] or "ok"}
            for r in rows[:examples]
        ],
    )
