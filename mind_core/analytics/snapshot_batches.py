"""A mind's tables read as Arrow record batches, in one pass and batch by batch, for the snapshot.

Timestamps in a mind come in several spellings (ours ``…T…mmmZ``, SQLite's naive
``YYYY-MM-DD HH:MM:SS``, ISO with offsets); all become ``timestamp[ms, UTC]``. A value no parser
reads becomes null and is counted (``Problems``) instead of failing the run. Frames gain their
provenance and source values (decoded from their metadata row by row), whether they are indexed,
and optionally their embedding.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Generator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa

from mind_core.analytics.snapshot_tables import (
    FRAME_STORED_COLUMNS,
    PROVENANCE_FIELDS,
    SOURCE_FIELDS,
    TIMESTAMP,
    Column,
    TableSpec,
    frames_schema,
    table_schema,
)
from mind_core.store.db import Database
from mind_core.timestamps import parse_instant

log = logging.getLogger(__name__)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


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


class Problems:
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


def _timestamp_array(raw: Sequence[Any], millis: Sequence[Any], where: str, problems: Problems) -> pa.Array:
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


def _plain_array(values: Sequence[Any], type_: pa.DataType, where: str, problems: Problems) -> pa.Array:
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
    table: str, columns: Sequence[Column], data: Sequence[Sequence[Any]], problems: Problems
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


def table_batches(
    db: Database, spec: TableSpec, batch_rows: int, problems: Problems
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


def _provenance_arrays(metadata: Sequence[Any], problems: Problems) -> list[pa.Array]:
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


def _embedding_array(blobs: Sequence[Any], dimensions: int, problems: Problems) -> pa.Array:
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


def frame_batches(
    db: Database,
    batch_rows: int,
    embedding_dimensions: int | None,
    problems: Problems,
    id_range: tuple[int, int] | None = None,
) -> Generator[pa.RecordBatch, None, None]:
    """The frames (those with ``low <= id < high`` when ``id_range`` is given) in id order."""
    schema = frames_schema(embedding_dimensions)
    if not db.table_exists("memory_frames"):
        return
    present = db.columns("memory_frames")
    select = _select_list(FRAME_STORED_COLUMNS, present)
    has_fts = db.table_exists("memory_frames_fts")
    has_vec = db.table_exists("memory_frames_vec")
    extra = [
        "f.metadata" if "metadata" in present else "NULL",
        "EXISTS (SELECT 1 FROM memory_frames_vec v WHERE v.rowid = f.id)" if has_vec else "0",
        "EXISTS (SELECT 1 FROM memory_frames_fts s WHERE s.rowid = f.id)" if has_fts else "0",
    ]
    if embedding_dimensions:
        extra.append("(SELECT v.embedding FROM memory_frames_vec v WHERE v.rowid = f.id)")
    where = "" if id_range is None else f" WHERE f.id >= {int(id_range[0])} AND f.id < {int(id_range[1])}"
    sql = f"SELECT {', '.join(select + extra)} FROM memory_frames f{where} ORDER BY f.id"
    stored = len(select)
    for rows in _fetch_batches(db, sql, batch_rows):
        data = _transpose(rows)
        del rows
        arrays = _column_arrays("frames", FRAME_STORED_COLUMNS, data[:stored], problems)
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
