"""DuckDB over the Parquet snapshots: one view per table across every snapshot, and named queries.

DuckDB reads only the Parquet files written by ``mind_core.analytics.snapshot`` (its SQLite extension is not
available offline and could not read the vec0 tables anyway), so analysts get the same answers
from ``mind analytics`` as from their own DuckDB, Spark or pandas session on those files.

Views: ``frames``, ``sessions``, ``entities``, ``relations``, ``entity_frames``,
``harvest_sources``, ``harvest_runs`` and ``snapshots`` hold every snapshot (with ``workspace``
and ``snapshot_date`` columns from the hive partitions); each has a ``<name>_latest`` twin that
keeps only the newest snapshot of each workspace.

Snapshots that hold forgotten data are left out: a forget marks the root
(``mind_core.privacy.snapshots``) with the instant of a workspace's latest forget, and every
snapshot of that workspace read from the mind before it is stale until the next ``mind snapshot``
deletes it. The views never show a stale snapshot; ``stale_snapshots`` lists them (workspace,
snapshot_date) so ``mind analytics`` can say which were left out and why.

Snapshots of encrypted minds (``snapshot_crypto``) are decrypted through pyarrow with their
workspace's key and registered as Arrow tables beside DuckDB's reading of the plain files: the
same views and queries, with those files held in memory rather than streamed.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from mind_core import fs_url
from mind_core.analytics.snapshot import SnapshotDestinationError
from mind_core.analytics.snapshot_crypto import SnapshotKeyError, is_encrypted_parquet, read_encrypted
from mind_core.analytics.snapshot_tables import PART_FILE, SNAPSHOT_TABLES, SNAPSHOTS_TABLE, table_schema
from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.privacy.snapshots import stale_marks
from mind_core.store.cipher import KEY_ENV, MindKeyError, key_from_environment, key_from_keyring, key_variable
from mind_core.text_table import OUTPUT_FORMATS, format_table

TABLE_CELL_WIDTH = 60
_PARTITION = re.compile(r"workspace=([^/]+)/snapshot_date=(\d{4}-\d{2}-\d{2})/")


class NoSnapshotsError(NotFoundError):
    """Analytics was pointed at a folder without snapshots."""


@dataclass(frozen=True)
class NamedQuery:
    description: str
    sql: str
    params: dict[str, Any] = field(default_factory=dict)  # name -> default value


QUERIES: dict[str, NamedQuery] = {
    "kg_growth": NamedQuery(
        "Entities and relations added and retired per day and type. basis='valid_time': from "
        "valid_from/valid_to of each workspace's latest snapshot (active = valid at the end of that "
        "day); basis='snapshot': rows per snapshot date (added/retired since the previous snapshot, "
        "active = not retired at that snapshot).",
        """
WITH events AS (
    SELECT workspace, 'entity' AS kind, entity_type AS type, CAST(valid_from AS DATE) AS day, 1 AS added, 0 AS retired
    FROM entities_latest WHERE valid_from IS NOT NULL
    UNION ALL
    SELECT workspace, 'entity', entity_type, CAST(valid_to AS DATE), 0, 1
    FROM entities_latest WHERE valid_to IS NOT NULL
    UNION ALL
    SELECT workspace, 'relation', relation_type, CAST(valid_from AS DATE), 1, 0
    FROM relations_latest WHERE valid_from IS NOT NULL
    UNION ALL
    SELECT workspace, 'relation', relation_type, CAST(valid_to AS DATE), 0, 1
    FROM relations_latest WHERE valid_to IS NOT NULL
),
valid_time AS (
    SELECT workspace, kind, type, day, SUM(added) AS added, SUM(retired) AS retired
    FROM events GROUP BY workspace, kind, type, day
),
per_snapshot AS (
    SELECT workspace, snapshot_date AS day, 'entity' AS kind, entity_type AS type,
           COUNT(*) AS total, COUNT(valid_to) AS retired_total, COUNT(*) - COUNT(valid_to) AS active
    FROM entities GROUP BY workspace, snapshot_date, entity_type
    UNION ALL
    SELECT workspace, snapshot_date, 'relation', relation_type,
           COUNT(*), COUNT(valid_to), COUNT(*) - COUNT(valid_to)
    FROM relations GROUP BY workspace, snapshot_date, relation_type
)
SELECT workspace, 'valid_time' AS basis, day, kind, type,
       CAST(added AS BIGINT) AS added, CAST(retired AS BIGINT) AS retired,
       CAST(SUM(added - retired) OVER (PARTITION BY workspace, kind, type ORDER BY day) AS BIGINT) AS active
FROM valid_time
UNION ALL
SELECT workspace, 'snapshot', day, kind, type,
       total - COALESCE(LAG(total) OVER w, 0),
       retired_total - COALESCE(LAG(retired_total) OVER w, 0),
       active
FROM per_snapshot
WINDOW w AS (PARTITION BY workspace, kind, type ORDER BY day)
ORDER BY workspace, basis DESC, day, kind, type
""",
    ),
    "frames_by_source": NamedQuery(
        "Frames per month of event time (created_at, UTC) per frame source, harvest source and plugin, "
        "in each workspace's latest snapshot.",
        """
SELECT workspace, strftime(created_at, '%Y-%m') AS month, source, harvest_source, plugin,
       COUNT(*) AS frames, CAST(SUM(content_length) AS BIGINT) AS characters
FROM frames_latest
GROUP BY ALL
ORDER BY workspace, month NULLS LAST, source, harvest_source NULLS FIRST, plugin NULLS FIRST
""",
    ),
    "top_entities": NamedQuery(
        "Entities linked to the most frames (entity_frames) in each workspace's latest snapshot.",
        """
SELECT e.workspace, e.id AS entity_id, e.entity_type, e.name, COUNT(*) AS frames,
       e.valid_to IS NULL AS active
FROM entities_latest e
JOIN entity_frames_latest l
  ON l.workspace = e.workspace AND l.snapshot_date = e.snapshot_date AND l.entity_id = e.id
GROUP BY e.workspace, e.id, e.entity_type, e.name, e.valid_to
ORDER BY frames DESC, e.workspace, e.name, e.id
LIMIT $limit
""",
        {"limit": 20},
    ),
    "harvest_history": NamedQuery(
        "Every harvest run in each workspace's latest snapshot, oldest first, with its source's "
        "display name and how many frames of that source the mind holds now.",
        """
WITH source_frames AS (
    SELECT workspace, harvest_source, COUNT(*) AS frames
    FROM frames_latest WHERE harvest_source IS NOT NULL GROUP BY ALL
)
SELECT r.workspace, r.source, s.display_name, r.id AS run_id, r.status, r.started_at, r.finished_at,
       ROUND(epoch(r.finished_at) - epoch(r.started_at), 3) AS seconds,
       r.total_items, r.items_saved, COALESCE(f.frames, 0) AS source_frames_now, r.error_message
FROM harvest_runs_latest r
LEFT JOIN harvest_sources_latest s ON s.workspace = r.workspace AND s.source = r.source
LEFT JOIN source_frames f ON f.workspace = r.workspace AND f.harvest_source = r.source
ORDER BY r.workspace, r.started_at, r.id
""",
    ),
    "index_health": NamedQuery(
        "Search index coverage per workspace and snapshot: frames in the full-text index, frames with "
        "a vector, and vectors made from older content (stale).",
        """
SELECT s.workspace, s.snapshot_date, COUNT(f.id) AS frames,
       COUNT(f.id) FILTER (WHERE f.fts_indexed) AS fts_indexed,
       COUNT(f.id) FILTER (WHERE f.has_vector) AS with_vector,
       COUNT(f.id) FILTER (WHERE f.has_vector AND NOT COALESCE(f.vector_current, false)) AS stale_vectors,
       ROUND(100.0 * COUNT(f.id) FILTER (WHERE f.fts_indexed) / NULLIF(COUNT(f.id), 0), 2) AS fts_coverage_pct,
       ROUND(100.0 * COUNT(f.id) FILTER (WHERE f.has_vector) / NULLIF(COUNT(f.id), 0), 2) AS vector_coverage_pct
FROM snapshots s
LEFT JOIN frames f ON f.workspace = s.workspace AND f.snapshot_date = s.snapshot_date
GROUP BY s.workspace, s.snapshot_date
ORDER BY s.workspace, s.snapshot_date
""",
    ),
}


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _read_parquet(files: str) -> str:
    """A SELECT of every snapshot file ``files`` names (a glob or a list, as SQL), with the
    partition folders as columns."""
    return (
        f"SELECT * FROM read_parquet({files}, hive_partitioning = true, union_by_name = true, "
        "hive_types = {'workspace': VARCHAR, 'snapshot_date': DATE})"
    )


class Analytics:
    """An in-memory DuckDB with views over every snapshot under ``root`` (a folder or an fsspec
    URL: DuckDB reads other file systems through the fsspec one registered with it)."""

    def __init__(self, root: str | Path) -> None:
        url = fs_url.as_url(root)
        local = fs_url.local_path(url)
        self.root: Path | str = local if local is not None else url
        self._fs, self._path = fs_url.filesystem(url, SnapshotDestinationError)
        if not self._files(SNAPSHOTS_TABLE, PART_FILE):
            raise NoSnapshotsError(
                f"no snapshots under {self.root}: run `mind snapshot` first (or pass --root)"
            )
        self.con = duckdb.connect(":memory:")
        self.con.execute("SET TimeZone = 'UTC'")  # day and month boundaries are UTC ones
        if local is None:
            self.con.register_filesystem(self._fs)
        for table in SNAPSHOT_TABLES:
            self._create_view(f"_stored_{table}", table)
        self._find_stale(stale_marks(self.root))
        for table in SNAPSHOT_TABLES:
            self.con.execute(
                f"CREATE VIEW {table} AS SELECT * FROM _stored_{table} t WHERE NOT EXISTS (SELECT 1 FROM "
                "stale_snapshots s WHERE s.workspace = t.workspace AND s.snapshot_date = t.snapshot_date)"
            )
        self.con.execute(
            "CREATE VIEW latest_snapshots AS SELECT workspace, MAX(snapshot_date) AS snapshot_date "
            "FROM snapshots GROUP BY workspace"
        )
        for table in SNAPSHOT_TABLES:
            self.con.execute(
                f"CREATE VIEW {table}_latest AS SELECT * FROM {table} t WHERE EXISTS (SELECT 1 FROM "
                "latest_snapshots l WHERE l.workspace = t.workspace AND l.snapshot_date = t.snapshot_date)"
            )

    def _files(self, table: str, name: str = "*.parquet") -> list[str]:
        with fs_url.reaching(str(self.root), SnapshotDestinationError):
            return self._fs.glob(f"{self._path}/{table}/workspace=*/snapshot_date=*/{name}")

    def _find_stale(self, marks: Mapping[str, str]) -> None:
        """The table ``stale_snapshots``: per workspace a forget marked, its snapshots read from
        the mind before that forget (or of unknown time: data without its ``snapshots`` row)."""
        self.con.execute("CREATE TABLE _forgotten (workspace VARCHAR, forgotten_at TIMESTAMPTZ)")
        if marks:
            self.con.executemany("INSERT INTO _forgotten VALUES (?, CAST(? AS TIMESTAMPTZ))", list(marks.items()))
        self.con.execute(
            "CREATE TABLE stale_snapshots AS "
            "WITH taken AS (SELECT DISTINCT workspace, snapshot_date FROM _stored_frames UNION "
            "SELECT DISTINCT workspace, snapshot_date FROM _stored_snapshots) "
            "SELECT t.workspace, t.snapshot_date FROM taken t JOIN _forgotten f ON f.workspace = t.workspace "
            "WHERE NOT EXISTS (SELECT 1 FROM _stored_snapshots s WHERE s.workspace = t.workspace "
            "AND s.snapshot_date = t.snapshot_date AND s.taken_at >= f.forgotten_at) "
            "ORDER BY t.workspace, t.snapshot_date"
        )

    def stale_snapshots(self) -> list[tuple[str, str]]:
        """(workspace, snapshot_date) of the snapshots left out because they hold forgotten data."""
        rows = self.con.execute("SELECT workspace, CAST(snapshot_date AS VARCHAR) FROM stale_snapshots").fetchall()
        return [(str(w), str(d)) for w, d in rows]

    def _create_view(self, view: str, table: str) -> None:
        files = self._files(table)
        encrypted = [path for path in files if is_encrypted_parquet(self._fs, path)]
        if files and not encrypted:
            pattern = f"{self.root}/{table}/workspace=*/snapshot_date=*/*.parquet"
            self.con.execute(f"CREATE VIEW {view} AS {_read_parquet(_sql_string(pattern))}")
            return
        if files:
            # Snapshots of encrypted minds: decrypted through pyarrow with each workspace's key
            # and registered beside DuckDB's own reading of the plain files.
            parts = [f"SELECT * FROM {self._decrypted(table, encrypted)}"]
            plain = [f"{self.root}{path.removeprefix(self._path)}" for path in files if path not in encrypted]
            if plain:
                parts.insert(0, _read_parquet("[" + ", ".join(_sql_string(url) for url in plain) + "]"))
            self.con.execute(f"CREATE VIEW {view} AS " + " UNION ALL BY NAME ".join(parts))
            return
        # A table no snapshot has written yet (snapshots from an older version): empty, typed.
        empty = pa.Table.from_batches([], schema=table_schema(table))
        self.con.register(f"_empty_{table}", empty)
        self.con.execute(
            f"CREATE VIEW {view} AS SELECT *, CAST(NULL AS VARCHAR) AS workspace, "
            f"CAST(NULL AS DATE) AS snapshot_date FROM _empty_{table}"
        )

    def _decrypted(self, table: str, files: list[str]) -> str:
        """The encrypted snapshot files of ``table`` read into one registered Arrow table, with
        the ``workspace`` and ``snapshot_date`` columns DuckDB takes from the partition folders;
        its name. Each workspace's key as its mind's (``$MIND_HARVEST_KEY_<WORKSPACE>``,
        ``$MIND_HARVEST_KEY``, the keyring); ``MindKeyError`` for one without a key."""
        tables = []
        for path in files:
            partition = _PARTITION.search(path)
            if partition is None:
                continue
            workspace, day = partition.group(1), date.fromisoformat(partition.group(2))
            key = key_from_environment(workspace) or key_from_keyring(workspace)
            if key is None:
                raise MindKeyError(
                    f"the snapshots of workspace {workspace!r} are encrypted and no key was given: set "
                    f"${key_variable(workspace)} or ${KEY_ENV} (the key of its mind)"
                )
            try:
                data = read_encrypted(self._fs, path, key)
            except (SnapshotKeyError, OSError) as exc:
                raise MindKeyError(
                    f"the snapshots of workspace {workspace!r} are encrypted and {key} does not open them"
                ) from exc
            rows = data.num_rows
            data = data.append_column("workspace", pa.array([workspace] * rows, pa.string()))
            tables.append(data.append_column("snapshot_date", pa.array([day] * rows, pa.date32())))
        name = f"_decrypted_{table}"
        self.con.register(name, pa.concat_tables(tables, promote_options="default"))
        return name

    @staticmethod
    def queries() -> dict[str, str]:
        """Name -> description of every named query."""
        return {name: query.description for name, query in QUERIES.items()}

    def run(self, name: str, params: Mapping[str, Any] | None = None) -> tuple[list[str], list[tuple]]:
        """Run a named query; ``params`` override its defaults (e.g. ``{"limit": 5}``)."""
        query = QUERIES.get(name)
        if query is None:
            raise InvalidInputError(f"unknown query {name!r}; known: {', '.join(QUERIES)}")
        values = dict(query.params)
        for key, value in (params or {}).items():
            if key not in values:
                raise InvalidInputError(
                    f"query {name!r} takes no parameter {key!r}"
                    + (f"; it takes {', '.join(values)}" if values else "")
                )
            values[key] = _coerce_param(value, query.params[key], key)
        return self._execute(query.sql, values)

    def sql(self, text: str) -> tuple[list[str], list[tuple]]:
        """Any SQL over the views."""
        return self._execute(text, None)

    def _execute(self, text: str, params: dict[str, Any] | None) -> tuple[list[str], list[tuple]]:
        try:
            cursor = self.con.execute(text, params) if params else self.con.execute(text)
        except duckdb.Error as exc:
            raise InvalidInputError(f"query failed: {exc}") from exc
        if cursor.description is None:
            return [], []
        return [d[0] for d in cursor.description], cursor.fetchall()

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Analytics:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _coerce_param(value: Any, default: Any, key: str) -> Any:
    """Command-line parameters arrive as text; give them the type of the default."""
    if isinstance(default, int) and not isinstance(value, int):
        try:
            return int(value)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"parameter {key!r} must be an integer, got {value!r}") from exc
    return value


# -- output -----------------------------------------------------------------------------------


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return value


def cell_text(value: Any) -> str:
    """One value as flat text (CSV cells, table cells)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="milliseconds")
    converted = _json_value(value)
    if isinstance(converted, list | dict):
        return json.dumps(converted, ensure_ascii=False)
    return str(converted)


def _cell(value: Any) -> str:
    text = " ".join(cell_text(value).split())
    return text if len(text) <= TABLE_CELL_WIDTH else text[: TABLE_CELL_WIDTH - 1] + "…"


def format_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str = "table") -> str:
    """Rows as an aligned text table (long cells cut), CSV, or a JSON array of objects."""
    if fmt == "json":
        return json.dumps(
            [{c: _json_value(v) for c, v in zip(columns, row, strict=True)} for row in rows],
            ensure_ascii=False,
            indent=2,
        )
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([cell_text(v) for v in row])
        return out.getvalue()
    if fmt != "table":
        raise InvalidInputError(f"unknown format {fmt!r}; use one of {', '.join(OUTPUT_FORMATS)}")
    cells, numeric = table_cells(columns, rows)
    return f"{format_table(columns, cells, numeric)}\n{row_count(rows)}"


def table_cells(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> tuple[list[list[str]], list[bool]]:
    """The rows as flat table cells (long ones cut), and which columns hold only numbers."""
    cells = [[_cell(v) for v in row] for row in rows]
    numeric = [
        bool(rows)
        and all(
            row[i] is None or (isinstance(row[i], int | float | Decimal) and not isinstance(row[i], bool))
            for row in rows
        )
        for i in range(len(columns))
    ]
    return cells, numeric


def row_count(rows: Sequence[Any]) -> str:
    return f"({len(rows)} row{'s' if len(rows) != 1 else ''})"
