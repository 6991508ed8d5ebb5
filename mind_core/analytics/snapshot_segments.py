"""A day's frames partition made of frame-id segments, so a snapshot rewrites only what changed.

The frames table (the text, and the vectors when asked for) is nearly all of a snapshot's bytes:
rewriting it every day is O(archive) work for a day's changes. So a partition holds one file per
``SEGMENT_FRAMES`` frame ids, ``part-<segment>.parquet`` (segment 0 is ``part-0.parquet``, what a
small mind always had), each frame in the file of ``id // SEGMENT_FRAMES``. DuckDB, pandas and
Spark read the folder as before (``*.parquet``).

Each partition records how it was made (``Increment``) in the schema metadata of its
``memory_snapshots`` file: the mind's change-log token and the log position it includes, when it
was taken, the files' layout and each segment's row count. The next snapshot of the workspace
starts from the newest earlier partition (or today's, when re-run): segments with a frame the
change log (``mind_core.store.change_log``) names since then are written again from the mind,
the others are carried over (a hard link on a local disk, so a day costs only the bytes that
changed; a server-side copy on an object store). Everything is written again instead when there
is no earlier partition, it was made from another mind, another layout (vectors included or not,
another schema), the log no longer reaches back to it, a forget happened since (its
``_forgotten.json`` marker, ``mind_core.privacy.snapshots``: the forgotten rows must leave every
file, so no file made before it is reused), or ``full`` is asked for.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import asdict, dataclass

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from mind_core import fs_url
from mind_core.analytics.snapshot_tables import PART_FILE, SNAPSHOTS_TABLE
from mind_core.store import change_log
from mind_core.store.db import Database
from mind_core.timestamps import parse_instant

SEGMENT_FRAMES = 10_000
INCREMENT_KEY = b"mind_harvest.increment"


def segment_file(segment: int) -> str:
    return f"part-{segment}.parquet"


def segment_range(segment: int) -> tuple[int, int]:
    """The frame ids ``[low, high)`` of a segment."""
    return segment * SEGMENT_FRAMES, (segment + 1) * SEGMENT_FRAMES


@dataclass(frozen=True)
class Increment:
    """How one partition was made: enough for the next snapshot to reuse its unchanged files."""

    token: str | None  # the mind's change-log token (None: a mind without a log)
    position: str  # how far into the mind's changes the partition goes (``change_log.Position``)
    taken_at: str
    layout: str  # the frames files' schema and segment size, hashed
    segments: dict[int, int]  # segment -> rows in its file

    def to_metadata(self) -> dict[bytes, bytes]:
        return {INCREMENT_KEY: json.dumps(asdict(self)).encode()}

    @classmethod
    def from_metadata(cls, metadata: dict[bytes, bytes] | None) -> Increment | None:
        raw = (metadata or {}).get(INCREMENT_KEY)
        if raw is None:
            return None
        data = json.loads(raw)
        data["segments"] = {int(k): int(v) for k, v in data["segments"].items()}
        return cls(**data)


def layout(frames_schema: pa.Schema) -> str:
    return hashlib.sha256(f"{frames_schema.to_string()}|{SEGMENT_FRAMES}".encode()).hexdigest()[:16]


def previous_partition(
    fs: fsspec.AbstractFileSystem, root_dir: str, workspace: str, day: str
) -> tuple[str, Increment] | None:
    """The newest partition of ``workspace`` dated ``day`` or earlier that records its
    increment: its date folder name and the increment."""
    pattern = f"{root_dir}/{SNAPSHOTS_TABLE}/workspace={workspace}/snapshot_date=*/{PART_FILE}"
    with contextlib.suppress(*fs_url.UNREACHABLE):
        for path in sorted(fs.glob(pattern), reverse=True):
            folder = path.rsplit("/", 2)[-2]
            if folder.removeprefix("snapshot_date=") > day:
                continue
            with contextlib.suppress(OSError, ValueError, TypeError, KeyError, pa.ArrowException):
                with fs.open(path, "rb") as source:
                    increment = Increment.from_metadata(pq.read_schema(source).metadata)
                if increment is not None:
                    return folder, increment
    return None


def _forgotten_since(forgotten_at: str | None, taken_at: str) -> bool:
    """Whether a forget (the mind's audit log or the root's stale marker) came after ``taken_at``."""
    return forgotten_at is not None and parse_instant(forgotten_at) >= parse_instant(taken_at)


def _has_frames(db: Database) -> bool:
    return db.table_exists("memory_frames")


def frames_in(db: Database, low: int, high: int) -> int:
    """How many frames have ``low <= id < high``."""
    if not _has_frames(db):
        return 0
    return int(db.scalar("SELECT count(*) FROM memory_frames WHERE id >= ? AND id < ?", (low, high)) or 0)


@dataclass(frozen=True)
class SegmentPlan:
    """Which segments to write from the mind and which to carry over from ``source`` (a
    partition folder); ``full`` when every segment is written."""

    write: list[int]
    carry: dict[int, int]  # segment -> rows, from the previous partition
    source: str | None
    full: bool
    reason: str


def plan_segments(
    db: Database,
    fs: fsspec.AbstractFileSystem,
    root_dir: str,
    workspace: str,
    day: str,
    frames_layout: str,
    full: bool,
    forgotten_at: str | None = None,
) -> tuple[SegmentPlan, change_log.Position]:
    """The plan for this snapshot's frames files, and how far into the mind's changes it goes
    (read in the snapshot's read transaction, like the rows)."""
    end = change_log.position(db)
    max_id = int(db.scalar("SELECT coalesce(max(id), 0) FROM memory_frames") or 0) if _has_frames(db) else 0
    every = list(range(max_id // SEGMENT_FRAMES + 1))

    def everything(reason: str) -> tuple[SegmentPlan, change_log.Position]:
        return SegmentPlan(every, {}, None, True, reason), end

    if full:
        return everything("asked for")
    found = previous_partition(fs, root_dir, workspace, day)
    if found is None:
        return everything("no earlier snapshot")
    folder, previous = found
    if previous.token is None or previous.token != change_log.token(db):
        return everything("the earlier snapshot is of another mind (or one without a change log)")
    if previous.layout != frames_layout:
        return everything("the earlier snapshot has another layout")
    if _forgotten_since(forgotten_at, previous.taken_at):
        return everything("a forget since the earlier snapshot")
    changes = change_log.changes_since(db, change_log.Position.parse(previous.position))
    if changes is None:
        return everything("the change log no longer reaches the earlier snapshot")
    source = f"{root_dir}/frames/workspace={workspace}/{folder}"
    changed = {frame_id // SEGMENT_FRAMES for frame_id in changes.frames}
    carry = {
        segment: rows
        for segment, rows in previous.segments.items()
        if segment not in changed and fs.exists(f"{source}/{segment_file(segment)}")
    }
    write = [segment for segment in every if segment not in carry]
    return SegmentPlan(write, carry, source, False, f"{len(changes.frames):,} frames changed"), end


def carry_over(fs: fsspec.AbstractFileSystem, source: str, target: str) -> None:
    """Put an unchanged segment file into the new partition: a hard link on a local disk (no
    bytes copied; the old partition keeps its own name for it), else the store's own copy."""
    fs.makedirs(target.rpartition("/")[0], exist_ok=True)
    if isinstance(fs, LocalFileSystem):
        try:
            os.link(source, target)
            return
        except OSError:
            pass  # another device or no hard links: copy
    fs.copy(source, target)
