"""Minds made by the original system and by every earlier version of this project are upgraded by
the numbered migrations to the same schema a new mind gets, keeping their data.

The old schemas are written out here as DDL (taken from ``git show <commit>:mind_core/store/schema.py``
and the spec), so no binary mind file is checked in.
"""

import pytest

from mind_core.mind import Mind
from mind_core.store.db import Database
from mind_core.store.schema import (
    MIGRATIONS,
    Migration,
    applied_migrations,
    content_hash,
    ensure_schema,
    get_meta,
    migrate,
    vec_dimensions,
)

# reference-behaviour §1.1, with the frames table as the original had it before its own
# migration added `source`; harvest_runs and embedding_usage are created lazily there.
ORIGINAL_BEFORE_SOURCE_COLUMN = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sessions (id INTEGER PRIMARY KEY AUTOINCREMENT, gop_id TEXT NOT NULL UNIQUE, project_id TEXT,
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'closed', 'archived')),
  started_at TEXT NOT NULL DEFAULT (datetime('now')), ended_at TEXT, summary TEXT);
CREATE TABLE memory_frames (id INTEGER PRIMARY KEY AUTOINCREMENT,
  frame_type TEXT NOT NULL CHECK (frame_type IN ('I', 'P', 'B')), gop_id TEXT NOT NULL, t INTEGER NOT NULL DEFAULT 0,
  base_frame_id INTEGER REFERENCES memory_frames(id), content TEXT NOT NULL,
  importance TEXT NOT NULL DEFAULT 'normal', access_count INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT (datetime('now')), last_accessed TEXT NOT NULL DEFAULT (datetime('now')),
  FOREIGN KEY (gop_id) REFERENCES sessions(gop_id));
CREATE VIRTUAL TABLE memory_frames_fts USING fts5(content, content_rowid='id', tokenize='porter unicode61');
INSERT INTO meta VALUES ('schema_version', '1');
"""

ORIGINAL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE identity (
  id INTEGER PRIMARY KEY CHECK (id = 1), name TEXT NOT NULL,
  role TEXT NOT NULL DEFAULT '', department TEXT NOT NULL DEFAULT '',
  personality TEXT NOT NULL DEFAULT '', capabilities TEXT NOT NULL DEFAULT '',
  system_prompt TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL DEFAULT (datetime('now')), updated_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE TABLE awareness (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  category TEXT NOT NULL CHECK (category IN ('task', 'action', 'pending', 'flag')),
  content TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0, metadata TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL DEFAULT (datetime('now')), expires_at TEXT);
CREATE TABLE sessions (
  id INTEGER PRIMARY KEY AUTOINCREMENT, gop_id TEXT NOT NULL UNIQUE, project_id TEXT,
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'closed', 'archived')),
  started_at TEXT NOT NULL DEFAULT (datetime('now')), ended_at TEXT, summary TEXT);
CREATE INDEX idx_sessions_project ON sessions (project_id, started_at);
CREATE TABLE memory_frames (
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
CREATE INDEX idx_frames_gop_t ON memory_frames (gop_id, t);
CREATE INDEX idx_frames_type ON memory_frames (frame_type, gop_id);
CREATE INDEX idx_frames_base ON memory_frames (base_frame_id);
CREATE VIRTUAL TABLE memory_frames_fts USING fts5(
  content, content_rowid='id', tokenize='porter unicode61');
CREATE TABLE knowledge_entities (
  id INTEGER PRIMARY KEY AUTOINCREMENT, entity_type TEXT NOT NULL, name TEXT NOT NULL,
  properties TEXT NOT NULL DEFAULT '{}',
  valid_from TEXT NOT NULL DEFAULT (datetime('now')), valid_to TEXT,
  recorded_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE INDEX idx_entities_type ON knowledge_entities (entity_type);
CREATE INDEX idx_entities_name ON knowledge_entities (name);
CREATE TABLE knowledge_relations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  source_id INTEGER NOT NULL REFERENCES knowledge_entities(id),
  target_id INTEGER NOT NULL REFERENCES knowledge_entities(id),
  relation_type TEXT NOT NULL, confidence REAL NOT NULL DEFAULT 1.0,
  properties TEXT NOT NULL DEFAULT '{}',
  valid_from TEXT NOT NULL DEFAULT (datetime('now')), valid_to TEXT,
  recorded_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE INDEX idx_relations_source ON knowledge_relations (source_id, relation_type);
CREATE INDEX idx_relations_target ON knowledge_relations (target_id, relation_type);
CREATE TABLE harvest_sources (
  id INTEGER PRIMARY KEY AUTOINCREMENT, source TEXT NOT NULL UNIQUE, display_name TEXT NOT NULL,
  source_path TEXT, last_synced_at TEXT,
  items_imported INTEGER NOT NULL DEFAULT 0, frames_created INTEGER NOT NULL DEFAULT 0,
  auto_sync INTEGER NOT NULL DEFAULT 0, sync_interval_hours INTEGER NOT NULL DEFAULT 24,
  last_content_hash TEXT, created_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE VIRTUAL TABLE memory_frames_vec USING vec0(embedding float[8]);
INSERT INTO meta VALUES ('schema_version', '1');
INSERT INTO meta VALUES ('first_run_at', '2025-01-02T03:04:05.000Z');
"""

# What every version of this project before numbered migrations (ef1da9a .. 8b410b6) added to the
# original: frame columns (each version wrote them with ALTER TABLE), its own tables and indexes.
PROJECT_BASE = ORIGINAL.replace("CREATE VIRTUAL TABLE memory_frames_vec USING vec0(embedding float[8]);", "") + """
CREATE TABLE harvest_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT, source TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'running',
  total_items INTEGER NOT NULL DEFAULT 0, items_saved INTEGER NOT NULL DEFAULT 0,
  started_at TEXT NOT NULL DEFAULT (datetime('now')), updated_at TEXT NOT NULL DEFAULT (datetime('now')),
  finished_at TEXT, error_message TEXT, input_cache_path TEXT);
CREATE TABLE embedding_usage (
  id INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, year_month TEXT NOT NULL,
  count INTEGER NOT NULL DEFAULT 0, updated_at INTEGER NOT NULL, UNIQUE(user_id, year_month));
ALTER TABLE memory_frames ADD COLUMN content_hash TEXT;
ALTER TABLE memory_frames ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE memory_frames ADD COLUMN embedded_hash TEXT;
CREATE TABLE kg_entity_frames (
  entity_id INTEGER NOT NULL REFERENCES knowledge_entities(id) ON DELETE CASCADE,
  frame_id INTEGER NOT NULL REFERENCES memory_frames(id) ON DELETE CASCADE,
  PRIMARY KEY (entity_id, frame_id));
CREATE INDEX idx_kg_entity_frames_frame ON kg_entity_frames (frame_id);
CREATE INDEX idx_kg_entity_frames_entity ON kg_entity_frames (entity_id);
CREATE INDEX idx_entities_type_lname ON knowledge_entities (entity_type, lower(name));
CREATE TABLE memory_frame_chunks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  frame_id INTEGER NOT NULL REFERENCES memory_frames(id) ON DELETE CASCADE,
  chunk_idx INTEGER NOT NULL, char_start INTEGER NOT NULL, char_end INTEGER NOT NULL,
  UNIQUE (frame_id, chunk_idx));
CREATE TABLE harvest_ledger (
  source TEXT NOT NULL, item_key TEXT NOT NULL, content_hash TEXT NOT NULL,
  frame_id INTEGER REFERENCES memory_frames(id) ON DELETE SET NULL,
  first_seen TEXT NOT NULL, last_seen TEXT NOT NULL,
  PRIMARY KEY (source, item_key));
CREATE INDEX idx_harvest_ledger_frame ON harvest_ledger (frame_id);
CREATE INDEX idx_frames_content_hash ON memory_frames (content_hash);
CREATE VIRTUAL TABLE memory_frames_vec USING vec0(embedding float[8]);
CREATE VIRTUAL TABLE memory_frame_chunks_vec USING vec0(embedding float[8]);
INSERT INTO meta VALUES ('mind_harvest_extensions', '1');
INSERT INTO meta VALUES ('vec_dimensions', '8');
"""

RELATIONS_PAIR_INDEX = (
    "CREATE INDEX idx_relations_pair ON knowledge_relations (source_id, target_id, relation_type);"
)
SOURCE_COLUMNS = (
    "ALTER TABLE harvest_sources ADD COLUMN kind TEXT; ALTER TABLE harvest_sources ADD COLUMN last_fingerprint TEXT;"
)

OLD_SCHEMAS = {
    "original-before-source-column": ORIGINAL_BEFORE_SOURCE_COLUMN,
    "original": ORIGINAL,
    "ef1da9a": PROJECT_BASE + "CREATE INDEX idx_frames_created ON memory_frames (created_at);",
    "73643d7": PROJECT_BASE,
    "8bce17c": PROJECT_BASE + RELATIONS_PAIR_INDEX,
    "8b410b6": PROJECT_BASE + RELATIONS_PAIR_INDEX + SOURCE_COLUMNS,
}


def _build_old_mind(path, ddl):
    db = Database(path)
    for statement in ddl.split(";"):
        if statement.strip():
            db.execute(statement)
    db.execute("INSERT INTO sessions (gop_id) VALUES ('old')")
    db.execute("INSERT INTO memory_frames (frame_type, gop_id, content) VALUES ('I', 'old', '[hm src:x] legacy row')")
    db.execute("INSERT INTO memory_frames_fts (rowid, content) VALUES (1, '[hm src:x] legacy row')")
    if "ADD COLUMN content_hash" in ddl:  # those versions wrote the hash on insert
        db.execute("UPDATE memory_frames SET content_hash = ?", (content_hash("legacy row"),))
    db.close()


def _shape(db):
    """Tables with their columns (name, type, not-null, default) and indexes with their columns;
    column order is left out because ALTER TABLE appends."""
    shape = {}
    for row in db.query("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"):
        kind, name = row[0], row[1]
        if kind == "table":
            columns = db.query(f"PRAGMA table_info({name})")
            shape[name] = sorted((c[1], c[2], c[3], c[4]) for c in columns)
        elif kind == "index":
            shape[name] = [c[2] for c in db.query(f"PRAGMA index_info({name})")]
    return shape


@pytest.mark.parametrize("version", OLD_SCHEMAS)
def test_a_mind_from_every_earlier_version_is_upgraded_to_the_current_schema(tmp_path, version):
    fresh = Database(":memory:")
    ensure_schema(fresh, 8)
    path = tmp_path / f"{version}.mind"
    _build_old_mind(path, OLD_SCHEMAS[version])

    with Mind.open(path, dimensions=8) as mind:
        assert _shape(mind.db) == _shape(fresh)
        assert applied_migrations(mind.db) == [m.name for m in MIGRATIONS]
        row = mind.db.query_one("SELECT * FROM memory_frames WHERE id = 1")
        assert row["content"] == "[hm src:x] legacy row"
        assert row["source"] == "user_stated"
        assert row["content_hash"] == content_hash("legacy row")
        assert row["metadata"] == "{}"
        assert mind.frames.create_i_frame("old", "legacy row").id == 1  # dedup sees the hash
        assert get_meta(mind.db, "schema_version") == "1"  # still a valid mind for the original
        assert vec_dimensions(mind.db) == 8

    with Mind.open(path) as mind:  # reopening applies nothing again
        assert ensure_schema(mind.db) == []
        assert mind.db.scalar("SELECT COUNT(*) FROM migrations") == len(MIGRATIONS)


def test_a_new_mind_records_every_migration_once():
    db = Database(":memory:")
    assert ensure_schema(db) == [m.name for m in MIGRATIONS]
    assert ensure_schema(db) == []
    rows = db.query("SELECT name, applied_at FROM migrations ORDER BY name")
    assert [r["name"] for r in rows] == [m.name for m in MIGRATIONS]
    assert all(r["applied_at"].endswith("Z") for r in rows)


def test_migration_names_are_numbered_in_order_and_unique():
    names = [m.name for m in MIGRATIONS]
    numbers = [int(name.split("_", 1)[0]) for name in names]
    assert numbers == list(range(1, len(names) + 1))


def test_a_new_migration_runs_once_and_a_failing_one_records_nothing(tmp_path):
    db = Database(tmp_path / "m.mind")
    ensure_schema(db)
    added = (*MIGRATIONS, Migration("0099_frames_language", "ALTER TABLE memory_frames ADD COLUMN language TEXT"))
    assert migrate(db, added) == ["0099_frames_language"]
    assert migrate(db, added) == []
    assert "language" in db.columns("memory_frames")

    broken = (*added, Migration("0100_broken", "CREATE TABLE t1 (x); CREATE TABLE nonsense ("))
    with pytest.raises(db.errors.OperationalError):
        migrate(db, broken)
    assert "0100_broken" not in applied_migrations(db)
    assert not db.table_exists("t1")  # the step and its record commit together
