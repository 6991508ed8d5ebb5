"""Parquet snapshots: round trip against the mind, mixed timestamps, index flags, idempotent and
atomic re-snapshots, one read transaction, batching, embeddings, old minds, bad values, the command."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mind_core.analytics import snapshot
from mind_core.analytics.snapshot import snapshot_mind, write_snapshot
from mind_core.analytics.snapshot_tables import PART_FILE, PROVENANCE_FIELDS, SNAPSHOT_TABLES, partition_dir
from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.mind import Mind
from mind_core.store.db import Database
from mind_core.store.frames import NewFrame
from mind_core.store.home import MindHome
from mind_core.store.schema import SCHEMA_SQL
from mind_core.testing.fakes import HashingEmbedder
from mind_core.timestamps import parse_instant
from tests.snapshot_minds import MIXED_CREATED_AT, build_mind, mind_rows, provenance_of

DAY = "2024-03-10"
SQLITE_TABLES = {
    "frames": "memory_frames",
    "sessions": "sessions",
    "entities": "knowledge_entities",
    "relations": "knowledge_relations",
    "knowledge_versions": "knowledge_versions",
    "entity_frames": "kg_entity_frames",
    "harvest_sources": "harvest_sources",
    "harvest_runs": "harvest_runs",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("mind") / "small.mind"
    return path, build_mind(path)


@pytest.fixture
def mind_copy(built: tuple[Path, dict], tmp_path: Path) -> Path:
    """A private copy for tests that change the mind."""
    target = tmp_path / "copy.mind"
    shutil.copy(built[0], target)
    return target


def read(root: Path, table: str, workspace: str = "ws", day: str = DAY) -> pa.Table:
    return pq.read_table(partition_dir(root, table, workspace, day) / PART_FILE)


def ms(text: str) -> int:
    return int(parse_instant(text).timestamp() * 1000)


def as_ms(value: datetime | None) -> int | None:
    return None if value is None else round(value.timestamp() * 1000)


def test_round_trip_row_counts_and_values(built: tuple[Path, dict], tmp_path: Path) -> None:
    path, _ = built
    summary = snapshot_mind(path, tmp_path, "ws", DAY)
    for table, sqlite_table in SQLITE_TABLES.items():
        expected = mind_rows(path, f"SELECT COUNT(*) AS n FROM {sqlite_table}")[0]["n"]
        assert expected > 0
        assert summary.rows[table] == expected == read(tmp_path, table).num_rows, table
    assert set(summary.paths) == set(SNAPSHOT_TABLES)
    for table, folder in summary.paths.items():
        assert Path(folder) == partition_dir(tmp_path.resolve(), table, "ws", DAY)
        assert [p.name for p in Path(folder).iterdir()] == [PART_FILE]
    assert summary.workspace == "ws" and summary.snapshot_date == DAY

    frames = {row["id"]: row for row in read(tmp_path, "frames").to_pylist()}
    for stored in mind_rows(path, "SELECT * FROM memory_frames"):
        row = frames[stored["id"]]
        for column in (
            "gop_id",
            "t",
            "frame_type",
            "base_frame_id",
            "importance",
            "source",
            "access_count",
            "content",
        ):
            assert row[column] == stored[column], column
        assert row["content_length"] == len(stored["content"])
        provenance = provenance_of(stored["metadata"])
        for column, key in PROVENANCE_FIELDS.items():
            assert row[column] == provenance.get(key), column
        assert as_ms(row["last_accessed"]) == ms(stored["last_accessed"])

    entities = {row["id"]: row for row in read(tmp_path, "entities").to_pylist()}
    for stored in mind_rows(path, "SELECT * FROM knowledge_entities"):
        row = entities[stored["id"]]
        assert (row["entity_type"], row["name"], json.loads(row["properties"])) == (
            stored["entity_type"],
            stored["name"],
            json.loads(stored["properties"]),
        )
        assert as_ms(row["valid_from"]) == ms(stored["valid_from"])
        assert as_ms(row["valid_to"]) == (None if stored["valid_to"] is None else ms(stored["valid_to"]))
    relations = {row["id"]: row for row in read(tmp_path, "relations").to_pylist()}
    for stored in mind_rows(path, "SELECT * FROM knowledge_relations"):
        row = relations[stored["id"]]
        assert (row["source_id"], row["target_id"], row["relation_type"], row["confidence"]) == (
            stored["source_id"],
            stored["target_id"],
            stored["relation_type"],
            stored["confidence"],
        )
    links = {(r["entity_id"], r["frame_id"]) for r in read(tmp_path, "entity_frames").to_pylist()}
    assert links == {
        (r["entity_id"], r["frame_id"]) for r in mind_rows(path, "SELECT * FROM kg_entity_frames")
    }
    sessions = {row["gop_id"]: row for row in read(tmp_path, "sessions").to_pylist()}
    assert sessions["conv-a"]["status"] == "closed" and sessions["conv-a"]["summary"] == "Falcon kickoff"
    assert sessions["conv-a"]["ended_at"] is not None and sessions["conv-b"]["ended_at"] is None
    assert sessions["conv-a"]["project_id"] == "falcon"
    sources = {row["source"]: row for row in read(tmp_path, "harvest_sources").to_pylist()}
    assert sources["chatgpt-main"]["auto_sync"] is True and sources["vault"]["auto_sync"] is False
    assert as_ms(sources["chatgpt-main"]["created_at"]) == ms("2024-01-01T08:00:00Z")
    runs = {row["source"]: row for row in read(tmp_path, "harvest_runs").to_pylist()}
    assert runs["inbox"]["error_message"] == "bad mbox line 7" and runs["inbox"]["finished_at"] is None
    assert as_ms(runs["vault"]["started_at"]) == ms("2024-03-05T10:00:30Z")

    snapshot_row = read(tmp_path, "snapshots").to_pylist()
    assert len(snapshot_row) == 1
    assert snapshot_row[0]["frames_rows"] == summary.rows["frames"]
    assert snapshot_row[0]["mind_path"] == str(path.resolve())


def test_timestamps_in_mixed_formats_become_utc_instants(built: tuple[Path, dict], tmp_path: Path) -> None:
    path, ids = built
    summary = snapshot_mind(path, tmp_path, "ws", DAY)
    created = {row["id"]: row["created_at"] for row in read(tmp_path, "frames").to_pylist()}
    for index, (_, expected_ms) in MIXED_CREATED_AT.items():
        assert as_ms(created[ids["frames"][index]]) == expected_ms
    assert as_ms(created[ids["frames"][0]]) == ms("2024-01-10T09:00:00Z")
    assert read(tmp_path, "frames").schema.field("created_at").type == pa.timestamp("ms", tz="UTC")
    assert summary.invalid_values == {"frames.created_at": 1}  # only "not a timestamp"
    bob = next(r for r in read(tmp_path, "entities").to_pylist() if r["name"] == "Bob Smith")
    assert as_ms(bob["valid_from"]) == ms("2024-01-20T12:00:00Z")  # stored as '2024-01-20 12:00:00'
    originals = {row["id"]: row["original_timestamp"] for row in read(tmp_path, "frames").to_pylist()}
    assert originals[ids["frames"][0]] == "1704877200"  # provenance.timestamp wins
    assert originals[ids["frames"][1]] == "2024-01-10T09:05:00.000Z"  # metadata.original_created_at


def test_index_flags_computed_at_snapshot_time(built: tuple[Path, dict], tmp_path: Path) -> None:
    path, ids = built
    snapshot_mind(path, tmp_path, "ws", DAY)
    frames = {row["id"]: row for row in read(tmp_path, "frames").to_pylist()}
    with_vector = {r["rowid"] for r in mind_rows(path, "SELECT rowid FROM memory_frames_vec")}
    in_fts = {r["rowid"] for r in mind_rows(path, "SELECT rowid FROM memory_frames_fts")}
    assert with_vector == set(ids["frames"][:4]) and ids["frames"][5] not in in_fts
    for frame_id, row in frames.items():
        assert row["has_vector"] == (frame_id in with_vector)
        assert row["fts_indexed"] == (frame_id in in_fts)
    assert [frames[i]["vector_current"] for i in ids["frames"][:4]] == [True, False, True, True]


def test_resnapshot_same_date_replaces_partition(mind_copy: Path, tmp_path: Path) -> None:
    root = tmp_path / "snaps"
    first = snapshot_mind(mind_copy, root, "ws", DAY)
    with Mind.open(mind_copy, embedder=HashingEmbedder()) as mind:
        mind.frames.create_i_frames([NewFrame("manual", f"added later {i}") for i in range(3)])
    second = snapshot_mind(mind_copy, root, "ws", DAY)
    assert second.rows["frames"] == first.rows["frames"] + 3
    for table in SNAPSHOT_TABLES:
        assert [p.name for p in partition_dir(root, table, "ws", DAY).iterdir()] == [PART_FILE]
    dataset = pq.read_table(root / "frames")  # every partition under the table, as analysts read it
    assert dataset.num_rows == second.rows["frames"]
    assert len(set(dataset.column("id").to_pylist())) == dataset.num_rows
    assert not (root / ".staging").exists()  # nothing left behind, not even the empty folder
    snapshot_mind(mind_copy, root, "ws", "2024-03-11")
    assert pq.read_table(root / "frames").num_rows == 2 * second.rows["frames"]


def test_a_snapshot_leaves_the_staging_folder_of_a_run_still_staging(built: tuple[Path, dict], tmp_path: Path) -> None:
    path, _ = built
    other_run = tmp_path / ".staging" / "another-run" / "frames"
    other_run.mkdir(parents=True)
    snapshot_mind(path, tmp_path, "ws", DAY)
    assert [p.name for p in (tmp_path / ".staging").iterdir()] == ["another-run"]
    assert other_run.is_dir()


def test_failed_snapshot_keeps_the_previous_partition(built: tuple[Path, dict], tmp_path: Path) -> None:
    path, _ = built
    before = snapshot_mind(path, tmp_path, "ws", DAY)

    def fail(table: str, rows: int) -> None:
        if table == "entities":
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        snapshot_mind(path, tmp_path, "ws", DAY, progress=fail)
    assert read(tmp_path, "frames").num_rows == before.rows["frames"]
    assert read(tmp_path, "entities").num_rows == before.rows["entities"]
    assert not (tmp_path / ".staging").exists()


def test_all_tables_come_from_one_read_transaction(mind_copy: Path, tmp_path: Path) -> None:
    """A harvest writing while the snapshot runs: none of its rows appear, in any table."""
    writer = Mind.open(mind_copy, embedder=HashingEmbedder())
    counts = {
        t: mind_rows(mind_copy, f"SELECT COUNT(*) AS n FROM {s}")[0]["n"] for t, s in SQLITE_TABLES.items()
    }
    wrote: list[int] = []

    def write_meanwhile(table: str, rows: int) -> None:
        if table == "frames" and not wrote:
            with writer.db.transaction():
                frame = writer.frames.create_i_frame("manual", "written during the snapshot")
                entity = writer.knowledge.create_entity("concept", "Concurrency")
                writer.knowledge.link_entity_to_frame(entity.id, frame.id)
                writer.db.execute("INSERT INTO harvest_runs (source, status) VALUES ('late', 'running')")
            wrote.append(frame.id)

    try:
        summary = snapshot_mind(mind_copy, tmp_path, "ws", DAY, batch_rows=2, progress=write_meanwhile)
    finally:
        writer.close()
    assert wrote
    assert summary.rows == counts
    frame_ids = set(read(tmp_path, "frames").column("id").to_pylist())
    assert wrote[0] not in frame_ids
    assert set(read(tmp_path, "entity_frames").column("frame_id").to_pylist()) <= frame_ids
    assert mind_rows(mind_copy, "SELECT COUNT(*) AS n FROM memory_frames")[0]["n"] == counts["frames"] + 1


def test_frames_are_streamed_in_record_batches(built: tuple[Path, dict], tmp_path: Path) -> None:
    path, _ = built
    seen: list[tuple[str, int]] = []
    summary = snapshot_mind(
        path, tmp_path, "ws", DAY, batch_rows=3, progress=lambda t, n: seen.append((t, n))
    )
    frames = summary.rows["frames"]
    metadata = pq.ParquetFile(partition_dir(tmp_path, "frames", "ws", DAY) / PART_FILE).metadata
    assert metadata.num_row_groups == -(-frames // 3)
    assert metadata.row_group(0).column(0).compression == "ZSTD"
    assert [n for t, n in seen if t == "frames"] == [min(frames, k) for k in range(3, frames + 3, 3)]


def test_embeddings_only_when_asked(
    built: tuple[Path, dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, ids = built
    monkeypatch.setattr(snapshot, "EMBEDDING_BATCH_BYTES", 3 * 1024 * 4)  # three 1024-d vectors a batch
    snapshot_mind(path, tmp_path / "plain", "ws", DAY)
    assert "embedding" not in read(tmp_path / "plain", "frames").schema.names
    summary = snapshot_mind(path, tmp_path / "vec", "ws", DAY, include_embeddings=True)
    table = read(tmp_path / "vec", "frames")
    assert summary.embedding_dimensions == 1024
    frames_file = pq.ParquetFile(partition_dir(tmp_path / "vec", "frames", "ws", DAY) / PART_FILE)
    assert frames_file.metadata.num_row_groups == -(-len(ids["frames"]) // 3)  # wide rows, smaller batches
    assert table.schema.field("embedding").type == pa.list_(pa.float32(), 1024)
    embeddings = dict(zip(table.column("id").to_pylist(), table.column("embedding").to_pylist(), strict=True))
    for frame_id in ids["frames"]:
        stored = mind_rows(path, "SELECT embedding FROM memory_frames_vec WHERE rowid = ?", (frame_id,))
        if stored:
            assert np.array_equal(
                np.array(embeddings[frame_id], dtype=np.float32),
                np.frombuffer(stored[0]["embedding"], dtype=np.float32),
            )
        else:
            assert embeddings[frame_id] is None


def test_mind_written_by_the_original_schema(tmp_path: Path) -> None:
    """No metadata/content_hash columns, no entity links or vector tables: still a full snapshot."""
    path = tmp_path / "original.mind"
    db = Database(path)
    for statement in SCHEMA_SQL.split(";"):
        if statement.strip():
            db.execute(statement)
    db.execute("INSERT INTO sessions (gop_id) VALUES ('g')")
    db.execute("INSERT INTO memory_frames (frame_type, gop_id, t, content) VALUES ('I', 'g', 0, 'old frame')")
    db.execute("INSERT INTO memory_frames_fts (rowid, content) VALUES (1, 'old frame')")
    db.execute("INSERT INTO knowledge_entities (entity_type, name) VALUES ('person', 'Ada')")
    db.close()
    summary = snapshot_mind(path, tmp_path / "snaps", "ws", DAY)
    assert summary.rows["frames"] == 1 and summary.rows["entity_frames"] == 0
    frame = read(tmp_path / "snaps", "frames").to_pylist()[0]
    assert frame["harvest_source"] is None and frame["has_vector"] is False and frame["fts_indexed"] is True
    assert frame["vector_current"] is None
    now = datetime.now(UTC).timestamp()
    assert abs(frame["created_at"].timestamp() - now) < 120  # datetime('now') default, naive UTC
    assert read(tmp_path / "snaps", "entity_frames").num_rows == 0


def test_unreadable_values_become_nulls_and_are_counted(mind_copy: Path, tmp_path: Path) -> None:
    db = Database(mind_copy)
    db.execute("UPDATE harvest_runs SET total_items = 'many' WHERE source = 'inbox'")
    frame_id = db.scalar("SELECT MIN(id) FROM memory_frames")
    db.execute("UPDATE memory_frames SET metadata = '{broken' WHERE id = ?", (frame_id,))
    db.close()
    summary = snapshot_mind(mind_copy, tmp_path, "ws", DAY)
    assert summary.invalid_values == {
        "frames.created_at": 1,
        "frames.metadata": 1,
        "harvest_runs.total_items": 1,
    }
    runs = {r["source"]: r["total_items"] for r in read(tmp_path, "harvest_runs").to_pylist()}
    assert runs == {"chatgpt-main": 2, "vault": 1, "inbox": None}
    frame = next(r for r in read(tmp_path, "frames").to_pylist() if r["id"] == frame_id)
    assert frame["harvest_source"] is None and frame["content"]
    assert read(tmp_path, "snapshots").to_pylist()[0]["invalid_values"] == 3


def test_input_errors(built: tuple[Path, dict], tmp_path: Path) -> None:
    path, _ = built
    with pytest.raises(InvalidInputError, match="workspace"):
        snapshot_mind(path, tmp_path, "../escape", DAY)
    with pytest.raises(InvalidInputError, match="snapshot date"):
        snapshot_mind(path, tmp_path, "ws", "2024-13-01")
    with pytest.raises(InvalidInputError, match="snapshot date"):
        snapshot_mind(path, tmp_path, "ws", "10.03.2024")
    with pytest.raises(InvalidInputError, match="batch_rows"):
        snapshot_mind(path, tmp_path, "ws", DAY, batch_rows=0)
    with pytest.raises(NotFoundError, match="no mind"):
        snapshot_mind(tmp_path / "absent.mind", tmp_path, "ws", DAY)
    assert not (tmp_path / "frames").exists()


def test_write_snapshot_over_a_home(tmp_path: Path) -> None:
    home = MindHome(tmp_path / "home")
    with pytest.raises(NotFoundError, match="no minds"):
        write_snapshot(home, None, None, DAY)
    for path, text in ((home.personal_path, "personal note"), (home.workspace_path("team"), "team note")):
        with Mind.open(path) as mind:
            mind.sessions.ensure("g")
            mind.frames.create_i_frame("g", text)
    result = write_snapshot(home, None, None, DAY)
    assert result.root == str(home.root / "snapshots") and result.snapshot_date == DAY
    assert set(result.minds) == {"personal", "team"}
    team = read(home.root / "snapshots", "frames", "team")
    assert team.column("content").to_pylist() == ["team note"]
    only = write_snapshot(home, "personal", tmp_path / "elsewhere", "2024-03-11")
    assert set(only.minds) == {"personal"}
    assert read(tmp_path / "elsewhere", "frames", "personal", "2024-03-11").num_rows == 1
    with pytest.raises(NotFoundError, match="absent"):
        write_snapshot(home, "absent", None, DAY)
