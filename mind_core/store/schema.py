"""The mind's schema: the original's tables verbatim, then our additions as numbered migrations.

Table names, columns and CHECK constraints follow the spec (reference-behaviour §1) so a mind
written here is a valid mind for the original system; our additions are additive only (new
columns with defaults, new tables, new indexes).

Every schema step is one ``Migration`` in ``MIGRATIONS``, recorded by name in the mind's own
``migrations`` table (name, applied_at). To change the schema, append one with the next number
(``"0007_…"``) and either SQL (statements separated by ``;``) or a function taking the
``Database``. It runs once per mind, in the same transaction as its record, so a crash leaves
both or neither. Never edit, rename or reorder a migration that has shipped: minds in the field
have recorded it.

Migrations 0001-0006 describe minds made before this table existed (by the original system and by
earlier versions of this project). Such a mind may already hold part of what they add, so they
tolerate that (``IF NOT EXISTS``, :func:`add_column`). Every later migration runs exactly once, on a
mind that has recorded all before it, and can be plain SQL.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from mind_core.store.db import Database
from mind_core.timestamps import now_iso

# The original system's informational format version (reference-behaviour §1), kept in
# meta.schema_version so the original still reads our minds; what ran is in ``migrations``.
ORIGINAL_SCHEMA_VERSION = "1"
DEFAULT_DIMENSIONS = 1024

MIGRATIONS_TABLE_SQL = (
    "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
)


@dataclass(frozen=True)
class Migration:
    """One numbered schema step: SQL statements or a function over the mind's database."""

    name: str
    apply: str | Callable[[Database], None]

    def run(self, db: Database) -> None:
        if callable(self.apply):
            self.apply(db)
        else:
            execute_script(db, self.apply)


def execute_script(db: Database, script: str) -> None:
    """Run ``;``-separated statements one by one (``executescript`` would commit our transaction)."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def add_column(db: Database, table: str, column: str, definition: str) -> bool:
    """Add ``column`` unless a mind made before migrations were recorded already has it."""
    if column in db.columns(table):
        return False
    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
    return True


# -- 0001: the original system's schema (reference-behaviour §1), verbatim ------------------
SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS identity (
  id INTEGER PRIMARY KEY CHECK (id = 1), name TEXT NOT NULL,
  role TEXT NOT NULL DEFAULT '', department TEXT NOT NULL DEFAULT '',
  personality TEXT NOT NULL DEFAULT '', capabilities TEXT NOT NULL DEFAULT '',
  system_prompt TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL DEFAULT (datetime('now')), updated_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE TABLE IF NOT EXISTS awareness (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  category TEXT NOT NULL CHECK (category IN ('task', 'action', 'pending', 'flag')),
  content TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0, metadata TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL DEFAULT (datetime('now')), expires_at TEXT);
CREATE TABLE IF NOT EXISTS sessions (
  id INTEGER PRIMARY KEY AUTOINCREMENT, gop_id TEXT NOT NULL UNIQUE, project_id TEXT,
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'closed', 'archived')),
  started_at TEXT NOT NULL DEFAULT (datetime('now')), ended_at TEXT, summary TEXT);
CREATE INDEX IF NOT EXISTS idx_sessions_project ON sessions (project_id, started_at);
CREATE TABLE IF NOT EXISTS memory_frames (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  frame_type TEXT NOT NULL CHECK (frame_type IN ('I', 'P', 'B')),
  gop_id TEXT NOT NULL, t INTEGER NOT NULL DEFAULT 0,
  base_frame_id INTEGER REFERENCES memory_frames(id),
  content TEXT NOT NULL,
  importance TEXT NOT NULL DEFAULT 'normal'
    CHECK (importance IN ('critical', 'important', 'normal', 'temporary', 'deprecated')),
  source TEXT NOT NULL DEFAULT 'user_stated'
    CHECK (source IN ('user_stated', 'tool_verified', 'agent_inferred', 'import', 'system')),
  access_count INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  last_accessed TEXT NOT NULL DEFAULT (datetime('now')),
  FOREIGN KEY (gop_id) REFERENCES sessions(gop_id));
CREATE INDEX IF NOT EXISTS idx_frames_gop_t ON memory_frames (gop_id, t);
CREATE INDEX IF NOT EXISTS idx_frames_type ON memory_frames (frame_type, gop_id);
CREATE INDEX IF NOT EXISTS idx_frames_base ON memory_frames (base_frame_id);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_frames_fts USING fts5(
  content, content_rowid='id', tokenize='porter unicode61');
CREATE TABLE IF NOT EXISTS knowledge_entities (
  id INTEGER PRIMARY KEY AUTOINCREMENT, entity_type TEXT NOT NULL, name TEXT NOT NULL,
  properties TEXT NOT NULL DEFAULT '{}',
  valid_from TEXT NOT NULL DEFAULT (datetime('now')), valid_to TEXT,
  recorded_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE INDEX IF NOT EXISTS idx_entities_type ON knowledge_entities (entity_type);
CREATE INDEX IF NOT EXISTS idx_entities_name ON knowledge_entities (name);
CREATE TABLE IF NOT EXISTS knowledge_relations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  source_id INTEGER NOT NULL REFERENCES knowledge_entities(id),
  target_id INTEGER NOT NULL REFERENCES knowledge_entities(id),
  relation_type TEXT NOT NULL, confidence REAL NOT NULL DEFAULT 1.0,
  properties TEXT NOT NULL DEFAULT '{}',
  valid_from TEXT NOT NULL DEFAULT (datetime('now')), valid_to TEXT,
  recorded_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE INDEX IF NOT EXISTS idx_relations_source ON knowledge_relations (source_id, relation_type);
CREATE INDEX IF NOT EXISTS idx_relations_target ON knowledge_relations (target_id, relation_type);
CREATE TABLE IF NOT EXISTS harvest_sources (
  id INTEGER PRIMARY KEY AUTOINCREMENT, source TEXT NOT NULL UNIQUE, display_name TEXT NOT NULL,
  source_path TEXT, last_synced_at TEXT,
  items_imported INTEGER NOT NULL DEFAULT 0, frames_created INTEGER NOT NULL DEFAULT 0,
  auto_sync INTEGER NOT NULL DEFAULT 0, sync_interval_hours INTEGER NOT NULL DEFAULT 24,
  last_content_hash TEXT, created_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE TABLE IF NOT EXISTS harvest_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT, source TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'running',
  total_items INTEGER NOT NULL DEFAULT 0, items_saved INTEGER NOT NULL DEFAULT 0,
  started_at TEXT NOT NULL DEFAULT (datetime('now')), updated_at TEXT NOT NULL DEFAULT (datetime('now')),
  finished_at TEXT, error_message TEXT, input_cache_path TEXT);
CREATE TABLE IF NOT EXISTS embedding_usage (
  id INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, year_month TEXT NOT NULL,
  count INTEGER NOT NULL DEFAULT 0, updated_at INTEGER NOT NULL, UNIQUE(user_id, year_month))
"""


def _original_schema(db: Database) -> None:
    """The original's ``SCHEMA_SQL`` plus its own one migration (the ``source`` column)."""
    execute_script(db, SCHEMA_SQL)
    add_column(db, "memory_frames", "source", "TEXT NOT NULL DEFAULT 'user_stated'")


# -- 0002: frame columns for dedup, provenance and vector staleness --------------------------
_HM_PREFIX = re.compile(r"^\[hm [^\]]*\]\s*")


def strip_hm_prefix(content: str) -> str:
    """Remove a leading ``[hm session:… src:…]`` provenance block (reference-behaviour §2)."""
    return _HM_PREFIX.sub("", content, count=1)


def content_hash(content: str) -> str:
    """The dedup key: sha256 of the content without its [hm …] prefix, whitespace trimmed."""
    return hashlib.sha256(strip_hm_prefix(content).strip().encode("utf-8", "surrogatepass")).hexdigest()


def _frame_columns(db: Database) -> None:
    """``content_hash`` (backfilled, so dedup sees old frames), ``metadata`` and ``embedded_hash``
    (the hash a frame's vector was made from; NULL = no vector or stale)."""
    if add_column(db, "memory_frames", "content_hash", "TEXT"):
        rows = db.query("SELECT id, content FROM memory_frames")
        db.executemany(
            "UPDATE memory_frames SET content_hash = ? WHERE id = ?",
            [(content_hash(r["content"]), r["id"]) for r in rows],
        )
    add_column(db, "memory_frames", "metadata", "TEXT NOT NULL DEFAULT '{}'")
    add_column(db, "memory_frames", "embedded_hash", "TEXT")
    db.execute("CREATE INDEX IF NOT EXISTS idx_frames_content_hash ON memory_frames (content_hash)")


# -- 0003: entity-frame links, chunks of long frames, the harvest ledger ---------------------
_LINKS_CHUNKS_LEDGER_SQL = """
CREATE TABLE IF NOT EXISTS kg_entity_frames (
  entity_id INTEGER NOT NULL REFERENCES knowledge_entities(id) ON DELETE CASCADE,
  frame_id INTEGER NOT NULL REFERENCES memory_frames(id) ON DELETE CASCADE,
  PRIMARY KEY (entity_id, frame_id));
CREATE INDEX IF NOT EXISTS idx_kg_entity_frames_frame ON kg_entity_frames (frame_id);
CREATE INDEX IF NOT EXISTS idx_kg_entity_frames_entity ON kg_entity_frames (entity_id);
CREATE INDEX IF NOT EXISTS idx_entities_type_lname ON knowledge_entities (entity_type, lower(name));
CREATE TABLE IF NOT EXISTS memory_frame_chunks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  frame_id INTEGER NOT NULL REFERENCES memory_frames(id) ON DELETE CASCADE,
  chunk_idx INTEGER NOT NULL, char_start INTEGER NOT NULL, char_end INTEGER NOT NULL,
  UNIQUE (frame_id, chunk_idx));
CREATE TABLE IF NOT EXISTS harvest_ledger (
  source TEXT NOT NULL, item_key TEXT NOT NULL, content_hash TEXT NOT NULL,
  frame_id INTEGER REFERENCES memory_frames(id) ON DELETE SET NULL,
  first_seen TEXT NOT NULL, last_seen TEXT NOT NULL,
  PRIMARY KEY (source, item_key));
CREATE INDEX IF NOT EXISTS idx_harvest_ledger_frame ON harvest_ledger (frame_id)
"""


def _source_columns(db: Database) -> None:
    """Which plugin reads a source, and the cheap fingerprint of its files at the last completed
    sync (skips an unchanged source without a scan)."""
    add_column(db, "harvest_sources", "kind", "TEXT")
    add_column(db, "harvest_sources", "last_fingerprint", "TEXT")


# -- 0007: the identity a source's ledger belongs to (new when a name is re-added or re-pointed)
# and the outcome of its last harvest (issue #14)
_SOURCE_IDENTITY_OUTCOME_SQL = """
ALTER TABLE harvest_sources ADD COLUMN identity TEXT;
ALTER TABLE harvest_sources ADD COLUMN last_status TEXT;
ALTER TABLE harvest_sources ADD COLUMN last_status_reason TEXT;
ALTER TABLE harvest_sources ADD COLUMN last_harvest_at TEXT;
ALTER TABLE harvest_sources ADD COLUMN last_items INTEGER NOT NULL DEFAULT 0;
ALTER TABLE harvest_sources ADD COLUMN last_frames INTEGER NOT NULL DEFAULT 0;
ALTER TABLE harvest_sources ADD COLUMN last_errors INTEGER NOT NULL DEFAULT 0;
ALTER TABLE harvest_sources ADD COLUMN last_first_errors TEXT NOT NULL DEFAULT '[]'
"""


# -- 0008 (issue #16): the knowledge graph's earlier versions (transaction-time history) -------
# ``data`` is the entity or relation row as it was (JSON of its columns), believed from its own
# ``recorded_at`` until ``superseded_at``; the live row is the current version.
_KNOWLEDGE_VERSIONS_SQL = """
CREATE TABLE IF NOT EXISTS knowledge_versions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('entity', 'relation')),
  row_id INTEGER NOT NULL,
  data TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  superseded_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS idx_knowledge_versions_row ON knowledge_versions (kind, row_id)
"""


# -- 0009 (issue #19): quantized companions of the vectors, the vector lane's first passes -------
def _vector_codes(db: Database) -> None:
    """The companion tables, filled from the vectors a mind already holds (the vector tables are
    made after the migrations, so a new mind has none yet)."""
    from mind_core.search import vector_codes  # brings numpy, which reading the schema module must not

    execute_script(db, vector_codes.COMPANION_SQL)
    for table in vector_codes.VECTOR_TABLES:
        vector_codes.rebuild(db, table)


# -- 0010 (new-user report 5): the evidence of relations, and facts whose evidence was deleted ------
# ``kg_relation_frames`` is to relations what ``kg_entity_frames`` is to entities: the frames that
# state the relation. ``kg_evidence_lost`` holds the entities and relations that lost evidence
# when frames were deleted (a prune, compaction), until the harvest's knowledge step ends those
# left with none (``KnowledgeGraph.end_facts_without_evidence``); ``lost_at`` is when. Earlier
# minds kept no relation evidence: it is taken from the frames naming both ends (how cognify finds
# relations) and from the frame ids a structure relation keeps in its properties.
_KNOWLEDGE_EVIDENCE_SQL = """
CREATE TABLE IF NOT EXISTS kg_relation_frames (
  relation_id INTEGER NOT NULL REFERENCES knowledge_relations(id) ON DELETE CASCADE,
  frame_id INTEGER NOT NULL REFERENCES memory_frames(id) ON DELETE CASCADE,
  PRIMARY KEY (relation_id, frame_id));
CREATE INDEX IF NOT EXISTS idx_kg_relation_frames_frame ON kg_relation_frames (frame_id);
CREATE TABLE IF NOT EXISTS kg_evidence_lost (
  kind TEXT NOT NULL CHECK (kind IN ('entity', 'relation')),
  row_id INTEGER NOT NULL,
  lost_at TEXT NOT NULL,
  PRIMARY KEY (kind, row_id));
INSERT OR IGNORE INTO kg_relation_frames (relation_id, frame_id)
  SELECT r.id, j.value FROM knowledge_relations r,
    json_each(CASE WHEN json_valid(r.properties) THEN r.properties ELSE '{}' END, '$.frames') j
  WHERE j.type = 'integer' AND j.value IN (SELECT id FROM memory_frames);
INSERT OR IGNORE INTO kg_relation_frames (relation_id, frame_id)
  SELECT r.id, a.frame_id FROM knowledge_relations r
  JOIN kg_entity_frames a ON a.entity_id = r.source_id
  JOIN kg_entity_frames b ON b.frame_id = a.frame_id AND b.entity_id = r.target_id
"""


# -- 0012 (issue #33): what `mind forget` keeps: tombstones and the audit log, never the content ------
# ``privacy_tombstones`` holds keyed hashes (HMAC with the mind's own key in ``meta``) of forgotten
# item keys, content hashes and people, so a later harvest does not bring them back; ``selector``
# is the keyed hash of the forget that laid them (``--allow-return`` with the same selector lifts
# them). ``privacy_audit`` records who forgot what kind of thing, how much and when.
_PRIVACY_SQL = """
CREATE TABLE privacy_audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at TEXT NOT NULL,
  actor TEXT NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('forget', 'allow_return')),
  selector_kinds TEXT NOT NULL,
  selector TEXT NOT NULL,
  counts TEXT NOT NULL DEFAULT '{}');
CREATE TABLE privacy_tombstones (
  kind TEXT NOT NULL CHECK (kind IN ('item', 'content', 'person')),
  digest TEXT NOT NULL,
  selector TEXT NOT NULL,
  PRIMARY KEY (kind, digest, selector)) WITHOUT ROWID;
CREATE INDEX idx_privacy_tombstones_selector ON privacy_tombstones (selector)
"""


# A frame's speaker (the chat message's author), as ``idx_frames_role`` indexes it; a query must
# spell it the same way for SQLite to use the index. Metadata that is not JSON has no speaker.
FRAME_ROLE_SQL = "(CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.provenance.role') END)"


MIGRATIONS: tuple[Migration, ...] = (
    Migration("0001_original_schema", _original_schema),
    Migration("0002_frame_columns", _frame_columns),
    Migration("0003_links_chunks_ledger", _LINKS_CHUNKS_LEDGER_SQL),
    # the first version of this project indexed created_at, which nothing queries by
    Migration("0004_drop_frames_created_index", "DROP INDEX IF EXISTS idx_frames_created"),
    Migration(
        "0005_relations_pair_index",
        "CREATE INDEX IF NOT EXISTS idx_relations_pair ON knowledge_relations (source_id, target_id, relation_type)",
    ),
    Migration("0006_source_kind_fingerprint", _source_columns),
    Migration("0007_source_identity_and_outcome", _SOURCE_IDENTITY_OUTCOME_SQL),
    Migration("0008_knowledge_versions", _KNOWLEDGE_VERSIONS_SQL),
    Migration("0009_vector_codes", _vector_codes),
    Migration("0010_knowledge_evidence", _KNOWLEDGE_EVIDENCE_SQL),
    # the search asks which speakers a mind has for every question (``mind_core.search.speakers``)
    Migration("0011_frames_role_index", f"CREATE INDEX idx_frames_role ON memory_frames {FRAME_ROLE_SQL}"),
    Migration("0012_privacy", _PRIVACY_SQL),
    # "is any memory near the time a question names" reads frames by event time on every dated question
    Migration("0013_frames_created_at_index", "CREATE INDEX idx_frames_created_at ON memory_frames (created_at)"),
)


def applied_migrations(db: Database) -> list[str]:
    """Names of the migrations this mind has recorded, oldest first."""
    if not db.table_exists("migrations"):
        return []
    return [row[0] for row in db.query("SELECT name FROM migrations ORDER BY name")]


def migrate(db: Database, migrations: tuple[Migration, ...] = MIGRATIONS) -> list[str]:
    """Apply and record every migration this mind has not recorded; returns the names applied."""
    applied: list[str] = []
    with db.transaction():
        db.execute(MIGRATIONS_TABLE_SQL)
        done = set(applied_migrations(db))
        for migration in migrations:
            if migration.name in done:
                continue
            migration.run(db)
            db.execute(
                "INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (migration.name, now_iso())
            )
            applied.append(migration.name)
    return applied


def vec_table_sql(table: str, dimensions: int) -> str:
    return f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0(embedding float[{int(dimensions)}])"


def vec_dimensions(db: Database, table: str = "memory_frames_vec") -> int | None:
    """The float[N] width of an existing vec0 table, read from its DDL."""
    sql = db.scalar("SELECT sql FROM sqlite_master WHERE name = ?", (table,))
    if not sql:
        return None
    match = re.search(r"float\[(\d+)\]", sql)
    return int(match.group(1)) if match else None


def get_meta(db: Database, key: str) -> str | None:
    return db.scalar("SELECT value FROM meta WHERE key = ?", (key,))


def set_meta(db: Database, key: str, value: str) -> None:
    db.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def ensure_schema(db: Database, dimensions: int | None = None) -> list[str]:
    """Create a new mind or upgrade an existing one in place; safe to call on every open.

    The vector tables are not a migration: their width is the mind's setting (``dimensions`` for
    a new mind), and rebuilding the vectors may recreate them at another width.
    Returns the names of the migrations applied now.
    """
    with db.transaction():
        applied = migrate(db)
        dims = vec_dimensions(db) or int(get_meta(db, "vec_dimensions") or dimensions or DEFAULT_DIMENSIONS)
        db.execute(vec_table_sql("memory_frames_vec", dims))
        db.execute(vec_table_sql("memory_frame_chunks_vec", dims))
        if get_meta(db, "schema_version") is None:
            set_meta(db, "schema_version", ORIGINAL_SCHEMA_VERSION)
        if get_meta(db, "first_run_at") is None:
            set_meta(db, "first_run_at", now_iso())
        set_meta(db, "vec_dimensions", str(dims))
    return applied
