"""What changed in a mind since an upkeep pass last looked: new frames by their ids, edits and
deletions by a change log kept by triggers, and one watermark per pass.

The daily upkeep (reconcile, doctor, the analytics snapshot) would otherwise rescan every frame
of every mind every day: O(archive) work for a day's changes. Two things say what changed:

- new frames: frame ids only grow (``AUTOINCREMENT``), so the frames added since a pass are
  those above the largest id it saw — no bookkeeping on the harvest's insert path;
- edits and deletions: like the ANN index's log (``mind_core/search/ann.py``: a sequence of
  changed rows, and a consumer that records the position it has taken in), ``frame_changes``
  holds one row per frame updated or deleted and per chunk deleted, written in the writer's own
  transaction by SQLite triggers, so no write path can forget it, the original engine's included.

A pass records the ``Position`` it has handled (its *watermark*: log position and largest frame
id, read in one statement; reconcile and doctor keep theirs in the mind's ``meta``, the snapshot
in its own files) and the next pass reads only what lies beyond it.

The log is bounded: past ``keep_entries`` (a quarter of the frames, at least ``MIN_KEPT``) the
oldest entries are dropped (``prune``) and ``pruned_through`` remembers where; a pass whose
watermark lies before that, or beyond the log's end (a mind restored from an older copy), or that
never ran, makes a full pass instead (``changes_since`` returns None). A day that edits more
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

FRAMES = "memory_frames"  # the log also names deleted chunks (``memory_frame_chunks``)
MIN_KEPT = 100_000
KEEP_SHARE = 0.25  # of the frames: entries kept beyond which the oldest are dropped
PRUNED_KEY = "frame_changes_pruned_through"
WATERMARK_PREFIX = "upkeep_watermark:"  # meta key of a pass's ``Position``
RECONCILE, DOCTOR = "reconcile", "doctor"


@dataclass(frozen=True)
class Position:
    """How far a pass has looked: the change log's position and the largest frame id."""

    seq: int
    frame_id: int

    def __str__(self) -> str:
        return f"{self.seq}/{self.frame_id}"

    @classmethod
    def parse(cls, text: str) -> Position:
        seq, frame_id = text.split("/")
        return cls(int(seq), int(frame_id))


@dataclass(frozen=True)
class Changes:
    """What changed after ``since`` up to ``end``: frame ids (added, edited or deleted) and
    deleted chunk ids, each once, ascending."""

    since: Position
    end: Position
    frames: list[int]
    chunks: list[int]


def enabled(db: Database) -> bool:
    return db.table_exists(LOG_TABLE)


def position(db: Database) -> Position:
    """Where the mind stands now (log position, largest frame id), read in one statement."""
    if not enabled(db):
        return Position(0, 0)
    seq, frame_id = db.query(
        f"SELECT (SELECT max(seq) FROM {LOG_TABLE}), (SELECT coalesce(max(id), 0) FROM {FRAMES})"
    )[0]
    if seq is None:  # emptied by ``prune``: AUTOINCREMENT still knows the last position
        seq = db.scalar("SELECT seq FROM sqlite_sequence WHERE name = ?", (LOG_TABLE,))
    return Position(int(seq or 0), int(frame_id))


def token(db: Database) -> str | None:
    """This log's identity: what a snapshot made from the mind records (None without a log)."""
    return get_meta(db, TOKEN_KEY) if enabled(db) else None


def pruned_through(db: Database) -> int:
    return int(get_meta(db, PRUNED_KEY) or 0)


def watermark(db: Database, upkeep_pass: str) -> Position | None:
    """How far ``upkeep_pass`` last looked; None when it never ran on this mind."""
    value = get_meta(db, WATERMARK_PREFIX + upkeep_pass)
    return None if value is None else Position.parse(value)


def set_watermark(db: Database, upkeep_pass: str, at: Position) -> None:
    set_meta(db, WATERMARK_PREFIX + upkeep_pass, str(at))


def changes_since(db: Database, since: Position | None) -> Changes | None:
    """What changed after ``since``; None when a full pass is needed instead (no log, no
    watermark, log entries after it pruned, or a watermark beyond where the mind stands)."""
    if since is None or not enabled(db):
        return None
    now = position(db)
    if since.seq > now.seq or since.seq < pruned_through(db):
        return None
    end = Position(now.seq, max(now.frame_id, since.frame_id))  # the newest frames may have gone since
    frames = {
        int(row[0]) for row in db.query(f"SELECT id FROM {FRAMES} WHERE id > ? AND id <= ?", (since.frame_id, end.frame_id))
    }
    chunks: set[int] = set()
    for table, row in db.query(f"SELECT tbl, row FROM {LOG_TABLE} WHERE seq > ? AND seq <= ?", (since.seq, end.seq)):
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
    """Drop the oldest entries beyond the newest ``keep`` (default ``keep_entries``); returns how many."""
    if not enabled(db):
        return 0
    through = position(db).seq - (keep_entries(db) if keep is None else keep)
    if through <= pruned_through(db):
        return 0
    with db.transaction():
        dropped = db.execute(f"DELETE FROM {LOG_TABLE} WHERE seq <= ?", (through,)).rowcount
        set_meta(db, PRUNED_KEY, str(through))
    return int(dropped)
