import pytest

from mind_core.mind import Mind
from mind_core.store.db import Database
from mind_core.store.schema import DEFAULT_DIMENSIONS, ensure_schema, get_meta, vec_dimensions
from mind_core.timestamps import is_valid_iso_timestamp

SPEC_TABLES = {
    "meta", "identity", "awareness", "sessions", "memory_frames", "memory_frames_fts", "memory_frames_vec",
    "knowledge_entities", "knowledge_relations", "harvest_sources", "harvest_runs", "embedding_usage",
    "kg_entity_frames",
}


def test_all_tables_and_indexes_exist():
    mind = Mind.open(":memory:")
    names = {r[0] for r in mind.db.query("SELECT name FROM sqlite_master")}
    assert SPEC_TABLES <= names
    for index in ("idx_sessions_project", "idx_frames_gop_t", "idx_frames_type", "idx_frames_base",
                  "idx_entities_type", "idx_entities_name", "idx_relations_source", "idx_relations_target",
                  "idx_frames_content_hash", "idx_kg_entity_frames_frame"):
        assert index in names
    assert get_meta(mind.db, "schema_version") == "1"
    assert is_valid_iso_timestamp(get_meta(mind.db, "first_run_at"))
    assert vec_dimensions(mind.db) == DEFAULT_DIMENSIONS
    assert {"content_hash", "metadata"} <= mind.db.columns("memory_frames")


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO sessions (gop_id, status) VALUES ('x', 'bogus')",
        "INSERT INTO memory_frames (frame_type, gop_id, content) VALUES ('Z', 'g', 'c')",
        "INSERT INTO memory_frames (frame_type, gop_id, content, importance) VALUES ('I', 'g', 'c', 'huge')",
        "INSERT INTO memory_frames (frame_type, gop_id, content, source) VALUES ('I', 'g', 'c', 'team_sync')",
        "INSERT INTO identity (id, name) VALUES (2, 'second')",
        "INSERT INTO awareness (category, content) VALUES ('mood', 'x')",
    ],
)
def test_check_constraints_are_enforced(sql):
    mind = Mind.open(":memory:")
    mind.sessions.ensure("g")
    with pytest.raises(mind.db.errors.IntegrityError):
        mind.db.execute(sql)


def test_reopening_does_not_recreate(tmp_path):
    path = tmp_path / "a.mind"
    with Mind.open(path) as mind:
        mind.sessions.ensure("g")
        mind.frames.create_i_frame("g", "kept across reopen")
        first_run = get_meta(mind.db, "first_run_at")
    with Mind.open(path) as mind:
        assert mind.frames.get_stats()["total"] == 1
        assert get_meta(mind.db, "first_run_at") == first_run
        assert mind.db.scalar("PRAGMA journal_mode") == "wal"
        assert mind.db.scalar("PRAGMA foreign_keys") == 1


def test_configured_dimensions_are_kept(tmp_path):
    path = tmp_path / "small.mind"
    Mind.open(path, dimensions=384).close()
    with Mind.open(path, dimensions=1024) as mind:  # an existing mind keeps its width
        assert vec_dimensions(mind.db) == 384


def test_ensure_schema_twice_is_harmless():
    db = Database(":memory:")
    ensure_schema(db)
    ensure_schema(db)
    assert db.scalar("SELECT COUNT(*) FROM meta WHERE key = 'schema_version'") == 1
