"""Parquet snapshots of a mind, for analysts (DuckDB, Spark, Trino, pandas read them unchanged).

Layout, hive-partitioned so a glob over all snapshots gets ``workspace`` and ``snapshot_date`` as
columns::

    <root>/<table>/workspace=<w>/snapshot_date=<YYYY-MM-DD>/part-0.parquet

Every table of one snapshot is read inside one SQLite read transaction, so the files agree with
each other (an entity link never points at a frame the frames file lacks) even while a harvest
writes the mind. Rows are streamed in record batches through a ``ParquetWriter``: memory follows
the batch size, not the mind's size. A snapshot is staged completely under ``<root>/.staging``
(removed again when no run stages there; a killed run's leftovers go with a later run) and only then swapped in, partition by partition, so re-running a date replaces it and a failed
run leaves the previous files untouched.

The root is a local folder or an fsspec URL (``file://`` by default, ``s3://``, ``gs://`` ...
through the matching fsspec package): ``$MIND_HARVEST_SNAPSHOT_URL``, else
``<MIND_HOME>/snapshots``. On a local file system a partition is swapped in by renaming its
folder (readers see the old partition or the new one); object stores have no rename, so there
fsspec's move copies then deletes, and a reader may briefly see a partition half replaced. A root
that cannot be reached fails before the mind is read, with the URL and the reason.

Timestamps in a mind come in several spellings (ours ``…T…mmmZ``, SQLite's naive
``YYYY-MM-DD HH:MM:SS``, ISO with offsets); all become ``timestamp[ms, UTC]``. A value no parser
reads becomes null and is counted in the summary's ``invalid_values`` instead of failing the run.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from mind_core import fs_url
from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.store.db import Database
from mind_core.store.home import PERSONAL, MindHome, validate_workspace_name
from mind_core.store.schema import get_meta, vec_dimensions
from mind_core.timestamps import format_utc, parse_instant, utc_now

log = logging.getLogger(__name__)

TIMESTAMP = pa.timestamp("ms", tz="UTC")
PART_FILE = "part-0.parquet"
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
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

ProgressCallback = Callable[[str, int], None]


@dataclass(frozen=True)
class Column:
    """One Parquet column and the SQL expression that reads it from the mind.

    ``needs`` names the mind columns the expression uses; when the mind lacks one (a mind written
    by the original engine has no ``metadata``), the column is written as nulls.
    """

    name: str
    type: pa.DataType
    sql: str | None = None
    needs: tuple[str, ...] | None = None

    @property
    def expression(self) -> str:
        return self.sql or self.name

    @property
    def required_columns(self) -> tuple[str, ...]:
        return self.needs if self.needs is not None else (self.name,)


@dataclass(frozen=True)
class TableSpec:
    name: str
    sqlite_table: str
    columns: tuple[Column, ...]
    order_by: str


def _ts(name: str) -> Column:
    return Column(name, TIMESTAMP)


_FRAME_STORED_COLUMNS: tuple[Column, ...] = (
    Column("id", pa.int64()),
    Column("gop_id", pa.string()),
    Column("t", pa.int64()),
    Column("frame_type", pa.string()),
    Column("base_frame_id", pa.int64()),
    Column("importance", pa.string()),
    Column("source", pa.string()),
    _ts("created_at"),
    _ts("last_accessed"),
    Column("access_count", pa.int64()),
    Column("content_length", pa.int64(), "length(content)", ("content",)),
    Column("content", pa.string()),
    Column(
        "vector_current",
        pa.bool_(),
        "(embedded_hash IS NOT NULL AND embedded_hash = content_hash)",
        ("embedded_hash", "content_hash"),
    ),
)
# Provenance columns, flattened from memory_frames.metadata["provenance"] (key in that object).
PROVENANCE_FIELDS: dict[str, str] = {
    "harvest_source": "source",
    "plugin": "plugin",
    "item_key": "item_key",
    "item_kind": "item_kind",
    "container": "container",
    "title": "title",
    "role": "role",
    "author": "author",
    "message_key": "message_key",
    "path": "path",
}
# What the plugin read (memory_frames.metadata["source"]): the whole object as JSON text for
# DuckDB's json functions, and the values analysts filter on most as columns of their own.
SOURCE_FIELDS: tuple[pa.Field, ...] = (
    pa.field("source_metadata", pa.string()),
    pa.field("tags", pa.list_(pa.string())),
    pa.field("links", pa.list_(pa.string())),
    pa.field("sender", pa.string()),
    pa.field("subject", pa.string()),
    pa.field("model", pa.string()),
)
_FRAME_DERIVED_FIELDS: tuple[pa.Field, ...] = (
    *(pa.field(name, pa.string()) for name in PROVENANCE_FIELDS),
    pa.field("original_timestamp", pa.string()),
    *SOURCE_FIELDS,
    pa.field("has_vector", pa.bool_()),
    pa.field("fts_indexed", pa.bool_()),
)

TABLES: dict[str, TableSpec] = {
    "sessions": TableSpec(
        "sessions",
        "sessions",
        (
            Column("id", pa.int64()),
            Column("gop_id", pa.string()),
            Column("project_id", pa.string()),
            Column("status", pa.string()),
            _ts("started_at"),
            _ts("ended_at"),
            Column("summary", pa.string()),
        ),
        "id",
    ),
    "entities": TableSpec(
        "entities",
        "knowledge_entities",
        (
            Column("id", pa.int64()),
            Column("entity_type", pa.string()),
            Column("name", pa.string()),
            Column("properties", pa.string()),
            _ts("valid_from"),
            _ts("valid_to"),
            _ts("recorded_at"),
        ),
        "id",
    ),
    "relations": TableSpec(
        "relations",
        "knowledge_relations",
        (
            Column("id", pa.int64()),
            Column("source_id", pa.int64()),
            Column("target_id", pa.int64()),
            Column("relation_type", pa.string()),
            Column("confidence", pa.float64()),
            Column("properties", pa.string()),
            _ts("valid_from"),
            _ts("valid_to"),
            _ts("recorded_at"),
        ),
        "id",
    ),
    # Earlier versions of entities and relations (transaction time): with `recorded_at` of the
    # entities / relations tables they answer "what did the mind believe on day T".
    "knowledge_versions": TableSpec(
        "knowledge_versions",
        "knowledge_versions",
        (
            Column("id", pa.int64()),
            Column("kind", pa.string()),
            Column("row_id", pa.int64()),
            Column("data", pa.string()),
            _ts("recorded_at"),
            _ts("superseded_at"),
        ),
        "id",
    ),
    "entity_frames": TableSpec(
        "entity_frames",
        "kg_entity_frames",
        (Column("entity_id", pa.int64()), Column("frame_id", pa.int64())),
        "entity_id, frame_id",
    ),
    "harvest_sources": TableSpec(
        "harvest_sources",
        "harvest_sources",
        (
            Column("id", pa.int64()),
            Column("source", pa.string()),
            Column("display_name", pa.string()),
            Column("source_path", pa.string()),
            _ts("last_synced_at"),
            Column("items_imported", pa.int64()),
            Column("frames_created", pa.int64()),
            Column("auto_sync", pa.bool_()),
            Column("sync_interval_hours", pa.int64()),
            Column("last_content_hash", pa.string()),
            _ts("created_at"),
        ),
        "id",
    ),
    "harvest_runs": TableSpec(
        "harvest_runs",
        "harvest_runs",
        (
            Column("id", pa.int64()),
            Column("source", pa.string()),
            Column("status", pa.string()),
            Column("total_items", pa.int64()),
            Column("items_saved", pa.int64()),
            _ts("started_at"),
            _ts("updated_at"),
            _ts("finished_at"),
            Column("error_message", pa.string()),
            Column("input_cache_path", pa.string()),
        ),
        "id",
    ),
}

DATA_TABLES: tuple[str, ...] = (
    "frames",
    "sessions",
    "entities",
    "relations",
    "knowledge_versions",
    "entity_frames",
    "harvest_sources",
    "harvest_runs",
)
# One row per snapshot: when it was taken, from which mind, with how many rows per table.
SNAPSHOTS_TABLE = "snapshots"
SNAPSHOT_TABLES: tuple[str, ...] = (*DATA_TABLES, SNAPSHOTS_TABLE)

SNAPSHOTS_SCHEMA = pa.schema(
    [
        pa.field("taken_at", TIMESTAMP),
        pa.field("mind_path", pa.string()),
        pa.field("schema_version", pa.string()),
        pa.field("seconds", pa.float64()),
        *(pa.field(f"{table}_rows", pa.int64()) for table in DATA_TABLES),
        pa.field("invalid_values", pa.int64()),
        pa.field("embedding_dimensions", pa.int32()),
    ]
)


def frames_schema(embedding_dimensions: int | None = None) -> pa.Schema:
    fields = [pa.field(c.name, c.type) for c in _FRAME_STORED_COLUMNS] + list(_FRAME_DERIVED_FIELDS)
    if embedding_dimensions:
        fields.append(pa.field("embedding", pa.list_(pa.float32(), embedding_dimensions)))
    return pa.schema(fields)


def table_schema(table: str) -> pa.Schema:
    """The Parquet schema of a snapshot table (frames without embeddings)."""
    if table == "frames":
        return frames_schema()
    if table == SNAPSHOTS_TABLE:
        return SNAPSHOTS_SCHEMA
    return pa.schema([pa.field(c.name, c.type) for c in TABLES[table].columns])


class SnapshotDestinationError(fs_url.UnreachableLocationError):
    """The snapshot root cannot be written."""

    what = "snapshot destination"


def partition_dir(root: str | Path, table: str, workspace: str, snapshot_date: str) -> Path:
    return Path(root) / table / f"workspace={workspace}" / f"snapshot_date={snapshot_date}"


def partition_path(root: str, table: str, workspace: str, snapshot_date: str) -> str:
    """``partition_dir`` within an fsspec file system (``/`` separated, any protocol)."""
    return f"{root.rstrip('/')}/{table}/workspace={workspace}/snapshot_date={snapshot_date}"


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


# -- reading a table in batches ---------------------------------------------------------------


def _instant_ms_sql(column: str) -> str:
    """SQLite parses every spelling we meet in C; the rare rest is parsed in Python."""
    return (
        f"CASE WHEN typeof({column}) = 'text' THEN "
        f"CAST(round((julianday({column}) - 2440587.5) * 86400000.0) AS INTEGER) END"
    )


def _select_list(columns: Sequence[Column], present: set[str]) -> list[str]:
    parts: list[str] = []
    for column in columns:
        available = all(name in present for name in column.required_columns)
        expression = column.expression if available else "NULL"
        parts.append(expression)
        if pa.types.is_timestamp(column.type):
            parts.append(_instant_ms_sql(column.expression) if available else "NULL")
    return parts


class _Problems:
    """Values that could not be read as their column's type: written as null, counted, logged once."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def add(self, where: str, count: int, example: object) -> None:
        if count <= 0:
            return
        if where not in self.counts:
            log.warning("snapshot: unreadable value(s) in %s written as null (e.g. %r)", where, example)
        self.counts[where] = self.counts.get(where, 0) + count

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def _timestamp_array(raw: Sequence[Any], millis: Sequence[Any], where: str, problems: _Problems) -> pa.Array:
    values: list[int | None] = list(millis)
    bad = 0
    example: object = None
    for i, ms in enumerate(values):
        if ms is not None or raw[i] is None:
            continue
        text = raw[i]
        try:
            if not isinstance(text, str):
                raise ValueError(text)
            values[i] = (parse_instant(text) - _EPOCH) // _MS
        except (ValueError, OverflowError):
            bad += 1
            example = text
    problems.add(where, bad, example)
    return pa.array(values, type=TIMESTAMP)


def _coerce_value(value: Any, type_: pa.DataType) -> Any:
    if pa.types.is_integer(type_):
        return int(value)
    if pa.types.is_floating(type_):
        return float(value)
    if pa.types.is_boolean(type_):
        return bool(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _plain_array(values: Sequence[Any], type_: pa.DataType, where: str, problems: _Problems) -> pa.Array:
    if pa.types.is_boolean(type_):
        values = [None if v is None else bool(v) for v in values]
    try:
        return pa.array(values, type=type_)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        pass
    coerced: list[Any] = []
    bad = 0
    example: object = None
    for value in values:
        if value is None:
            coerced.append(None)
            continue
        try:
            coerced.append(_coerce_value(value, type_))
        except (TypeError, ValueError, OverflowError):
            coerced.append(None)
            bad += 1
            example = value
    problems.add(where, bad, example)
    return pa.array(coerced, type=type_)


def _column_arrays(
    table: str, columns: Sequence[Column], data: Sequence[Sequence[Any]], problems: _Problems
) -> list[pa.Array]:
    """Arrow arrays for ``columns`` from the transposed row values (timestamps take two slots)."""
    arrays: list[pa.Array] = []
    position = 0
    for column in columns:
        where = f"{table}.{column.name}"
        if pa.types.is_timestamp(column.type):
            arrays.append(_timestamp_array(data[position], data[position + 1], where, problems))
            position += 2
        else:
            arrays.append(_plain_array(data[position], column.type, where, problems))
            position += 1
    return arrays


def _fetch_batches(db: Database, sql: str, batch_rows: int) -> Generator[list[tuple[Any, ...]], None, None]:
    cursor = db.conn.cursor()
    cursor.row_factory = None  # plain tuples: the rows are transposed straight into arrays
    try:
        cursor.execute(sql)
        while True:
            rows = cursor.fetchmany(batch_rows)
            if not rows:
                return
            yield rows
            del rows  # before the next fetch, so two batches never live at once
    finally:
        cursor.close()


def _transpose(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows to columns (a fetched batch is never empty)."""
    return list(zip(*rows, strict=True))


def _table_batches(
    db: Database, spec: TableSpec, batch_rows: int, problems: _Problems
) -> Generator[pa.RecordBatch, None, None]:
    schema = table_schema(spec.name)
    if not db.table_exists(spec.sqlite_table):
        return
    present = db.columns(spec.sqlite_table)
    select = _select_list(spec.columns, present)
    order = spec.order_by if all(c.strip() in present for c in spec.order_by.split(",")) else "rowid"
    sql = f"SELECT {', '.join(select)} FROM {spec.sqlite_table} ORDER BY {order}"
    for rows in _fetch_batches(db, sql, batch_rows):
        data = _transpose(rows)
        del rows
        batch = pa.RecordBatch.from_arrays(
            _column_arrays(spec.name, spec.columns, data, problems), schema=schema
        )
        del data
        yield batch
        del batch


# -- frames: stored columns, provenance, index flags, embeddings ------------------------------


def _provenance_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def _text_array(values: list[Any]) -> pa.Array:
    """Strings as they are; numbers, objects and lists (other tools' metadata) as text."""
    try:
        return pa.array(values, type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([_provenance_text(v) for v in values], type=pa.string())


def _string_list(*values: Any) -> list[str] | None:
    """The strings of one or more metadata lists, in order, each once; None when there are none."""
    seen = [v for value in values if isinstance(value, list) for v in value if isinstance(v, str)]
    return list(dict.fromkeys(seen)) or None


def _source_values(source: dict[str, Any]) -> tuple[Any, ...]:
    item = source.get("item") if isinstance(source.get("item"), dict) else {}
    message = source.get("message") if isinstance(source.get("message"), dict) else {}
    return (
        json.dumps(source, ensure_ascii=False, sort_keys=True) if source else None,
        _string_list(item.get("tags"), message.get("tags")),
        _string_list(message.get("links"), message.get("embeds")),
        message.get("from"),
        message.get("subject"),
        message.get("model") or item.get("model"),
    )


def _provenance_arrays(metadata: Sequence[Any], problems: _Problems) -> list[pa.Array]:
    """Decode each row's metadata and keep only its provenance and source values, row by row:
    holding a batch of decoded dicts would triple the batch's memory."""
    columns: list[list[Any]] = [[] for _ in range(len(PROVENANCE_FIELDS) + 1)]
    source_columns: list[list[Any]] = [[] for _ in SOURCE_FIELDS]
    fields = list(zip((column.append for column in columns[:-1]), PROVENANCE_FIELDS.values(), strict=True))
    add_original = columns[-1].append
    empty: dict[str, Any] = {}
    bad = 0
    example: object = None
    for text in metadata:
        meta: Any = empty
        if text:
            try:
                meta = json.loads(text)
            except (TypeError, ValueError):
                bad += 1
                example = text
            if not isinstance(meta, dict):
                meta = empty
        provenance = meta.get("provenance")
        if not isinstance(provenance, dict):
            provenance = empty
        for add, key in fields:
            add(provenance.get(key))
        add_original(provenance.get("timestamp") or meta.get("original_created_at"))
        source = meta.get("source")
        for column, value in zip(
            source_columns, _source_values(source if isinstance(source, dict) else empty), strict=True
        ):
            column.append(value)
    problems.add("frames.metadata", bad, example)
    arrays = [_text_array(values) for values in columns]
    for field, values in zip(SOURCE_FIELDS, source_columns, strict=True):
        if pa.types.is_list(field.type):
            arrays.append(pa.array(values, type=field.type))
        else:
            arrays.append(_text_array(values))
    return arrays


def _embedding_array(blobs: Sequence[Any], dimensions: int, problems: _Problems) -> pa.Array:
    matrix = np.zeros((len(blobs), dimensions), dtype=np.float32)
    missing = np.ones(len(blobs), dtype=bool)
    expected = dimensions * 4
    bad = 0
    for i, blob in enumerate(blobs):
        if blob is None:
            continue
        if not isinstance(blob, bytes | bytearray | memoryview) or len(blob) != expected:
            bad += 1
            continue
        matrix[i] = np.frombuffer(blob, dtype="<f4")
        missing[i] = False
    problems.add("frames.embedding", bad, f"a vector that is not {dimensions} float32 values")
    return pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), dimensions, mask=pa.array(missing))


def _frame_batches(
    db: Database, batch_rows: int, embedding_dimensions: int | None, problems: _Problems
) -> Generator[pa.RecordBatch, None, None]:
    schema = frames_schema(embedding_dimensions)
    if not db.table_exists("memory_frames"):
        return
    present = db.columns("memory_frames")
    select = _select_list(_FRAME_STORED_COLUMNS, present)
    has_fts = db.table_exists("memory_frames_fts")
    has_vec = db.table_exists("memory_frames_vec")
    extra = [
        "f.metadata" if "metadata" in present else "NULL",
        "EXISTS (SELECT 1 FROM memory_frames_vec v WHERE v.rowid = f.id)" if has_vec else "0",
        "EXISTS (SELECT 1 FROM memory_frames_fts s WHERE s.rowid = f.id)" if has_fts else "0",
    ]
    if embedding_dimensions:
        extra.append("(SELECT v.embedding FROM memory_frames_vec v WHERE v.rowid = f.id)")
    sql = f"SELECT {', '.join(select + extra)} FROM memory_frames f ORDER BY f.id"
    stored = len(select)
    for rows in _fetch_batches(db, sql, batch_rows):
        data = _transpose(rows)
        del rows
        arrays = _column_arrays("frames", _FRAME_STORED_COLUMNS, data[:stored], problems)
        arrays += _provenance_arrays(data[stored], problems)
        arrays.append(pa.array([bool(v) for v in data[stored + 1]], type=pa.bool_()))
        arrays.append(pa.array([bool(v) for v in data[stored + 2]], type=pa.bool_()))
        if embedding_dimensions:
            arrays.append(_embedding_array(data[stored + 3], embedding_dimensions, problems))
        del data
        batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
        del arrays
        yield batch
        del batch


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
    problems = _Problems()
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
            _frame_batches(db, _frame_batch_rows(batch_rows, dimensions), dimensions, problems),
            "frames",
            progress,
        )
        for name, spec in TABLES.items():
            rows[name] = _write_parquet(
                (url, fs),
                f"{staging}/{name}/{PART_FILE}",
                table_schema(name),
                _table_batches(db, spec, batch_rows, problems),
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
