"""What changed in a mind since an upkeep pass last looked: a change log kept by triggers, and
one watermark per pass.

The daily upkeep (reconcile, doctor, the analytics snapshot) would otherwise rescan every frame
of every mind every day: O(archive) work for a day's changes. Like the ANN index's log
(``mind_core/search/ann.py``: a sequence of changed rows, and a consumer that records the position
it has taken in), ``frame_changes`` holds one row per frame inserted, updated or deleted and per
chunk deleted, in the writer's own transaction: SQLite triggers write it, so no write path can
forget it, the original engine's included. A pass records the log position it has handled (its
*watermark*: reconcile and doctor in the mind's ``meta``, the snapshot in its own files) and the
next pass reads only the rows logged after it.

The log is bounded: past ``keep_entries`` (a quarter of the frames, at least ``MIN_KEPT``) the
oldest entries are dropped (``prune``) and ``pruned_through`` remembers where; a pass whose
watermark lies before that, or beyond the log's end (a mind restored from an older copy), or that
never ran, makes a full pass instead (``changes_since`` returns None). A day that changes more
than a quarter of the mind costs a full pass: still proportional to the day's changes.

What the log cannot see (an index row written or deleted behind the engine's back, a page
corrupted on disk) is what ``--full`` passes are for.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mind_core.store.db import Database
from mind_core.store.schema import CHANGE_LOG_TABLE as LOG_TABLE
from mind_core.store.schema import CHANGE_LOG_TOKEN_KEY as TOKEN_KEY
from mind_core.store.schema import get_meta, set_meta

FRAMES, CHUNKS = "memory_frames", "memory_frame_chunks"
MIN_KEPT = 100_000
KEEP_SHARE = 0.25  # of the frames: entries kept beyond which the oldest are dropped
PRUNED_KEY = "frame_changes_pruned_through"
WATERMARK_PREFIX = "upkeep_seq:"
RECONCILE, DOCTOR = "reconcile", "doctor"



@dataclass(frozen=True)
class Changes:
    """The rows logged after ``since`` up to ``end``: frame ids (inserted, updated or deleted)
    and deleted chunk ids, each once, ascending."""

    since: int
    end: int
    frames: list[int]
    chunks: list[int]


def enabled(db: Database) -> bool:
    return db.table_exists(LOG_TABLE)


def log_end(db: Database) -> int:
    """The position of the newest entry (0 for an empty log; positions are never reused)."""
    if not enabled(db):
        return 0
    end = db.scalar(f"SELECT max(seq) FROM {LOG_TABLE}")
    if end is None:  # emptied by ``prune``: AUTOINCREMENT still knows the last position
        end = db.scalar("SELECT seq FROM sqlite_sequence WHERE name = ?", (LOG_TABLE,))
    return int(end or 0)


def token(db: Database) -> str | None:
    """This log's identity: what a snapshot made from the mind records (None without a log)."""
    return get_meta(db, TOKEN_KEY) if enabled(db) else None


def pruned_through(db: Database) -> int:
    return int(get_meta(db, PRUNED_KEY) or 0)


def watermark(db: Database, upkeep_pass: str) -> int | None:
    """The log position ``upkeep_pass`` last handled; None when it never ran on this mind."""
    value = get_meta(db, WATERMARK_PREFIX + upkeep_pass)
    return None if value is None else int(value)


def set_watermark(db: Database, upkeep_pass: str, seq: int) -> None:
    set_meta(db, WATERMARK_PREFIX + upkeep_pass, str(seq))


def changes_since(db: Database, since: int | None) -> Changes | None:
    """What was logged after position ``since``; None when a full pass is needed instead (no log,
    no watermark, entries after it pruned, or a watermark beyond the log's end)."""
    if since is None or not enabled(db):
        return None
    end = log_end(db)
    if since > end or since < pruned_through(db):
        return None
    frames: set[int] = set()
    chunks: set[int] = set()
    for table, row in db.query(f"SELECT tbl, row FROM {LOG_TABLE} WHERE seq > ? AND seq <= ?", (since, end)):
        (frames if table == FRAMES else chunks).add(int(row))
    return Changes(since, end, sorted(frames), sorted(chunks))


def note_frames(db: Database, frame_ids: Iterable[int]) -> None:
    """Log frames whose derived rows (their full-text row) changed without the frame itself."""
    if enabled(db):
        db.executemany(f"INSERT INTO {LOG_TABLE} (tbl, row) VALUES ('{FRAMES}', ?)", [(i,) for i in frame_ids])


def keep_entries(db: Database) -> int:
    frames = int(db.scalar(f"SELECT coalesce(max(id), 0) FROM {FRAMES}") or 0)
    return max(MIN_KEPT, int(KEEP_SHARE * frames))


def prune(db: Database, keep: int | None = None) -> int:
    """Drop the oldest entries beyond ``keep`` (default ``keep_entries``); returns how many."""
    if not enabled(db):
        return 0
    end = log_end(db)
    through = end - (keep_entries(db) if keep is None else keep)
    if through <= pruned_through(db):
        return 0
    with db.transaction():
        dropped = db.execute(f"DELETE FROM {LOG_TABLE} WHERE seq <= ?", (through,)).rowcount
        set_meta(db, PRUNED_KEY, str(through))
    return int(dropped)
