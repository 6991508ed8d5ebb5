"""The tables of a snapshot: which mind rows each holds, the SQL that reads them, their Parquet
schemas, and where a table's partition lies for one workspace and day.

Layout, hive-partitioned so a glob over all snapshots gets ``workspace`` and ``snapshot_date`` as
columns::

    <root>/<table>/workspace=<w>/snapshot_date=<YYYY-MM-DD>/part-0.parquet

The analytics views read these names and schemas; the snapshot writes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

TIMESTAMP = pa.timestamp("ms", tz="UTC")
PART_FILE = "part-0.parquet"


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


FRAME_STORED_COLUMNS: tuple[Column, ...] = (
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
    fields = [pa.field(c.name, c.type) for c in FRAME_STORED_COLUMNS] + list(_FRAME_DERIVED_FIELDS)
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


def partition_dir(root: str | Path, table: str, workspace: str, snapshot_date: str) -> Path:
    return Path(root) / table / f"workspace={workspace}" / f"snapshot_date={snapshot_date}"


def partition_path(root: str, table: str, workspace: str, snapshot_date: str) -> str:
    """``partition_dir`` within an fsspec file system (``/`` separated, any protocol)."""
    return f"{root.rstrip('/')}/{table}/workspace={workspace}/snapshot_date={snapshot_date}"
