"""Parquet snapshots of a mind, for analysts (DuckDB, Spark, Trino, pandas read them unchanged).

The tables and their partition layout are ``snapshot_tables``; reading a mind's rows into Arrow
batches is ``snapshot_batches``; this module writes them and swaps them in.

Every table of one snapshot is read inside one SQLite read transaction, so the files agree with
each other (an entity link never points at a frame the frames file lacks) even while a harvest
writes the mind. Rows are streamed in record batches through a ``ParquetWriter``: memory follows
the batch size, not the mind's size. A snapshot is staged completely under ``<root>/.staging``
(removed again when no run stages there; a killed run's leftovers go with a later run) and only
then swapped in, partition by partition, so re-running a date replaces it and a failed run leaves
the previous files untouched.

The root is a local folder or an fsspec URL (``file://`` by default, ``s3://``, ``gs://`` ...
through the matching fsspec package): ``$MIND_HARVEST_SNAPSHOT_URL``, else
``<MIND_HOME>/snapshots``. On a local file system a partition is swapped in by renaming its
folder (readers see the old partition or the new one); object stores have no rename, so there
fsspec's move copies then deletes, and a reader may briefly see a partition half replaced. A root
that cannot be reached fails before the mind is read, with the URL and the reason.
Values a column cannot hold are written as null and counted in the summary's ``invalid_values``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from mind_core import fs_url
from mind_core.analytics.snapshot_batches import Problems, frame_batches, table_batches
from mind_core.analytics.snapshot_tables import (
    DATA_TABLES,
    PART_FILE,
    SNAPSHOT_TABLES,
    SNAPSHOTS_SCHEMA,
    SNAPSHOTS_TABLE,
    TABLES,
    frames_schema,
    partition_path,
    table_schema,
)
from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.store.db import Database
from mind_core.store.home import PERSONAL, MindHome, validate_workspace_name
from mind_core.store.schema import get_meta, vec_dimensions
from mind_core.timestamps import format_utc, utc_now

log = logging.getLogger(__name__)

COMPRESSION = "zstd"
DEFAULT_BATCH_ROWS = 50_000
SNAPSHOTS_DIR = "snapshots"
SNAPSHOT_URL_ENV = "MIND_HARVEST_SNAPSHOT_URL"
STAGING_DIR = ".staging"
# The snapshot reads each page once, in order: a large page cache would only grow with the mind.
_SNAPSHOT_CACHE_KIB = 8192
# Vectors are wide (1024 float32 = 4 KiB a frame): with embeddings, a frames batch holds at most
# this many bytes of them, whatever batch_rows says.
EMBEDDING_BATCH_BYTES = 64 * 2**20
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

ProgressCallback = Callable[[str, int], None]


class SnapshotDestinationError(fs_url.UnreachableLocationError):
    """The snapshot root cannot be written."""

    what = "snapshot destination"


def default_snapshot_root(home: MindHome) -> str | Path:
    """``$MIND_HARVEST_SNAPSHOT_URL``, else ``<home>/snapshots``."""
    return os.environ.get(SNAPSHOT_URL_ENV) or home.root / SNAPSHOTS_DIR


def snapshot_location(root: str | Path) -> str:
    """How a snapshot root is reported: a local folder as its absolute path (what DuckDB and
    pandas take), any other file system as its URL."""
    url = fs_url.as_url(root)
    local = fs_url.local_path(url)
    return str(local) if local is not None else url


def normalize_snapshot_date(value: str | date | None) -> str:
    """``YYYY-MM-DD``; today's UTC date when None."""
    if value is None:
        return utc_now().date().isoformat()
    if isinstance(value, datetime):
        return value.astimezone(UTC).date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    text = str(value).strip()
    try:
        if not _DATE.match(text):
            raise ValueError(text)
        return date.fromisoformat(text).isoformat()
    except ValueError as exc:
        raise InvalidInputError(f"invalid snapshot date {value!r}: expected YYYY-MM-DD") from exc


def _check_workspace_label(workspace: str) -> str:
    """The label becomes a directory name: the personal mind or a valid workspace name."""
    return workspace if workspace == PERSONAL else validate_workspace_name(workspace)


def _frame_batch_rows(batch_rows: int, embedding_dimensions: int | None) -> int:
    if not embedding_dimensions:
        return batch_rows
    return max(1, min(batch_rows, EMBEDDING_BATCH_BYTES // (embedding_dimensions * 4)))


# -- writing ----------------------------------------------------------------------------------


def _write_parquet(
    destination: tuple[str, fsspec.AbstractFileSystem],
    path: str,
    schema: pa.Schema,
    batches: Generator[pa.RecordBatch, None, None],
    table: str,
    progress: ProgressCallback | None,
) -> int:
    """Stream batches into one file (one row group per batch); an empty table still gets a file.

    The generator is closed here, so its cursor is released even when writing fails."""
    url, fs = destination
    with fs_url.reaching(url, SnapshotDestinationError):
        fs.makedirs(path.rpartition("/")[0], exist_ok=True)
        opened = fs.open(path, "wb")
    rows = 0
    with (
        contextlib.closing(batches),
        opened as sink,
        pq.ParquetWriter(sink, schema, compression=COMPRESSION) as writer,
    ):
        for batch in batches:
            writer.write_batch(batch)
            rows += batch.num_rows
            del batch  # released before the generator builds the next one
            if progress is not None:
                progress(table, rows)
    return rows


def _swap_in(fs: fsspec.AbstractFileSystem, staged: str, final: str, trash: str) -> None:
    """Replace ``final`` by ``staged``: two renames on a local file system (readers see the old
    partition or the new one, never a mix), copy and delete on an object store; the old files
    are deleted afterwards."""
    fs.makedirs(final.rpartition("/")[0], exist_ok=True)
    if fs.exists(final):
        fs.makedirs(trash.rpartition("/")[0], exist_ok=True)
        fs.mv(final, trash, recursive=True)
    fs.mv(staged, final, recursive=True)
    _remove(fs, trash)


def _remove(fs: fsspec.AbstractFileSystem, path: str) -> None:
    """Delete a folder if it is there; what cannot be deleted stays (it is never read)."""
    with contextlib.suppress(*fs_url.UNREACHABLE):
        if fs.exists(path):
            fs.rm(path, recursive=True)


STALE_STAGING_SECONDS = 3600


def _remove_if_empty(fs: fsspec.AbstractFileSystem, path: str) -> None:
    """Delete what killed runs left in the staging folder, then the folder itself once no
    snapshot stages in it, so the root ends up holding only the tables. A run's folder where
    nothing was written for ``STALE_STAGING_SECONDS`` before the staging folder last changed
    (this run just removed its own) is a killed run's: a live run writes every batch, and a
    folder another run is staging in is recent and stays. Ages are the file system's own times
    (an object store without folder times keeps what it holds)."""
    with contextlib.suppress(*fs_url.UNREACHABLE):
        if not fs.isdir(path):
            return
        changed = _mtime(fs.info(path))
        for run in fs.ls(path, detail=False) if changed is not None else []:
            written = [_mtime(info) for info in [fs.info(run), *fs.find(run, withdirs=True, detail=True).values()]]
            if max((t for t in written if t is not None), default=changed) < changed - STALE_STAGING_SECONDS:
                fs.rm(run, recursive=True)
        if not fs.ls(path):
            fs.rmdir(path)


def _mtime(info: dict[str, Any]) -> float | None:
    value = info.get("mtime")
    return value.timestamp() if isinstance(value, datetime) else value


@dataclass(frozen=True)
class MindSnapshot:
    """One mind's snapshot, for logs and Dagster metadata.

    ``rows`` per table, ``paths`` the partition directory per table, ``invalid_values``
    (``"table.column"`` -> values written as null), ``embedding_dimensions`` None unless
    embeddings were included.
    """

    workspace: str
    snapshot_date: str
    root: str
    mind_path: str
    taken_at: str
    seconds: float
    rows: dict[str, int]
    paths: dict[str, str]
    invalid_values: dict[str, int]
    embedding_dimensions: int | None


@dataclass(frozen=True)
class SnapshotSet:
    """The minds of one home snapshotted for one day under one root."""

    root: str
    snapshot_date: str
    minds: dict[str, MindSnapshot]


def snapshot_mind(
    mind_path: str | Path,
    root: str | Path,
    workspace: str,
    snapshot_date: str | date | None = None,
    include_embeddings: bool = False,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    progress: ProgressCallback | None = None,
) -> MindSnapshot:
    """Export one mind to Parquet partitions for ``workspace`` and ``snapshot_date``.

    ``progress(table, rows_so_far)`` is called after every written batch.
    """
    began = time.perf_counter()
    workspace = _check_workspace_label(workspace)
    day = normalize_snapshot_date(snapshot_date)
    if not isinstance(batch_rows, int) or batch_rows < 1:
        raise InvalidInputError(f"batch_rows must be a positive integer, got {batch_rows!r}")
    mind_file = Path(mind_path).expanduser().resolve()
    if not mind_file.is_file():
        raise NotFoundError(f"no mind at {mind_file}")
    url = fs_url.as_url(root)
    fs, root_dir = fs_url.filesystem(url, SnapshotDestinationError)
    token = uuid.uuid4().hex
    staging = f"{root_dir}/{STAGING_DIR}/{token}"
    trash = f"{root_dir}/{STAGING_DIR}/{token}-old"
    with fs_url.reaching(url, SnapshotDestinationError):
        fs.makedirs(staging, exist_ok=True)
    problems = Problems()
    rows: dict[str, int] = {}
    db = Database(mind_file, readonly=True)
    try:
        db.execute(f"PRAGMA cache_size = -{_SNAPSHOT_CACHE_KIB}")
        db.execute("BEGIN")  # one read transaction: every table sees the same state of the mind
        dimensions = vec_dimensions(db) if include_embeddings else None
        if include_embeddings and not dimensions:
            log.warning("snapshot: %s has no vector table; embeddings left out", mind_file)
        schema_version = get_meta(db, "schema_version") if db.table_exists("meta") else None
        rows["frames"] = _write_parquet(
            (url, fs),
            f"{staging}/frames/{PART_FILE}",
            frames_schema(dimensions),
            frame_batches(db, _frame_batch_rows(batch_rows, dimensions), dimensions, problems),
            "frames",
            progress,
        )
        for name, spec in TABLES.items():
            rows[name] = _write_parquet(
                (url, fs),
                f"{staging}/{name}/{PART_FILE}",
                table_schema(name),
                table_batches(db, spec, batch_rows, problems),
                name,
                progress,
            )
        db.execute("COMMIT")
    except BaseException:
        _remove(fs, staging)
        _remove_if_empty(fs, f"{root_dir}/{STAGING_DIR}")
        raise
    finally:
        db.close()
    seconds = time.perf_counter() - began
    taken_at = utc_now()
    summary_row = {
        "taken_at": [taken_at],
        "mind_path": [str(mind_file)],
        "schema_version": [schema_version],
        "seconds": [seconds],
        **{f"{table}_rows": [rows[table]] for table in DATA_TABLES},
        "invalid_values": [problems.total],
        "embedding_dimensions": [dimensions],
    }
    location = snapshot_location(url)
    paths: dict[str, str] = {}
    try:
        with fs_url.reaching(url, SnapshotDestinationError):
            fs.makedirs(f"{staging}/{SNAPSHOTS_TABLE}", exist_ok=True)
            with fs.open(f"{staging}/{SNAPSHOTS_TABLE}/{PART_FILE}", "wb") as sink:
                pq.write_table(pa.table(summary_row, schema=SNAPSHOTS_SCHEMA), sink, compression=COMPRESSION)
            for table in SNAPSHOT_TABLES:
                _swap_in(
                    fs,
                    f"{staging}/{table}",
                    partition_path(root_dir, table, workspace, day),
                    f"{trash}/{table}",
                )
                paths[table] = partition_path(location, table, workspace, day)
    finally:
        _remove(fs, staging)
        _remove(fs, trash)
        _remove_if_empty(fs, f"{root_dir}/{STAGING_DIR}")
    return MindSnapshot(
        workspace=workspace,
        snapshot_date=day,
        root=location,
        mind_path=str(mind_file),
        taken_at=format_utc(taken_at),
        seconds=round(seconds, 3),
        rows=rows,
        paths=paths,
        invalid_values=dict(problems.counts),
        embedding_dimensions=dimensions,
    )


def write_snapshot(
    home: MindHome,
    workspace: str | None = None,
    out_root: str | Path | None = None,
    date: str | None = None,
    include_embeddings: bool = False,
) -> SnapshotSet:
    """Snapshot one workspace (or 'personal'), or every mind in the home when None, under
    ``out_root`` (a folder or an fsspec URL; default ``default_snapshot_root``)."""
    root = out_root or default_snapshot_root(home)
    day = normalize_snapshot_date(date)
    if workspace is not None:
        path = home.mind_path(workspace)
        if not path.is_file():
            raise NotFoundError(f"no mind for workspace {workspace!r} at {path}")
        targets = {workspace: path}
    else:
        targets = {name: home.mind_path(name) for name in home.minds()}
        if not targets:
            raise NotFoundError(f"no minds in {home.root}: harvest something first")
    minds = {
        name: snapshot_mind(path, root, name, day, include_embeddings=include_embeddings)
        for name, path in targets.items()
    }
    return SnapshotSet(root=snapshot_location(root), snapshot_date=day, minds=minds)
