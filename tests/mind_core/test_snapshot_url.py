"""Snapshots to an fsspec URL: ``file://`` and fsspec's in-memory file system (standing in for an
object store), re-snapshots that replace, analytics and reports read from and written to the URL,
the ``$MIND_HARVEST_SNAPSHOT_URL`` default, and a destination that cannot be reached."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pyarrow.parquet as pq
import pytest

from mind_core.analytics.queries import Analytics
from mind_core.analytics.report import write_report
from mind_core.analytics.snapshot import (
    SNAPSHOT_URL_ENV,
    SnapshotDestinationError,
    snapshot_mind,
    write_snapshot,
)
from mind_core.analytics.snapshot_tables import PART_FILE, SNAPSHOT_TABLES
from mind_core.cli import EXIT_OK, main
from mind_core.mind import Mind
from mind_core.store.frames import NewFrame
from mind_core.store.home import MindHome
from mind_core.testing.fakes import HashingEmbedder
from tests.snapshot_minds import build_mind

DAY = "2024-03-10"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mind") / "small.mind"
    build_mind(path)
    return path


@pytest.fixture
def memory_root() -> Iterator[str]:
    """A folder of its own in fsspec's process-wide in-memory file system, removed afterwards."""
    folder = f"/snapshots-{uuid.uuid4().hex}"
    yield f"memory://{folder}"
    memory = fsspec.filesystem("memory")
    if memory.exists(folder):
        memory.rm(folder, recursive=True)


def memory_files(url: str) -> list[str]:
    fs = fsspec.filesystem("memory")
    root = url.removeprefix("memory://")
    return sorted(path.removeprefix(root + "/") for path in fs.find(root))


def read_memory(url: str, table: str, workspace: str = "ws", day: str = DAY):
    path = f"{url.removeprefix('memory://')}/{table}/workspace={workspace}/snapshot_date={day}/{PART_FILE}"
    with fsspec.filesystem("memory").open(path, "rb") as source:
        return pq.read_table(source)


def test_a_file_url_writes_the_same_files_as_its_folder(built: Path, tmp_path: Path) -> None:
    by_path = snapshot_mind(built, tmp_path / "by-path", "ws", DAY)
    by_url = snapshot_mind(built, (tmp_path / "by-url").as_uri(), "ws", DAY)
    assert by_url.root == str((tmp_path / "by-url").resolve())
    assert by_url.rows == by_path.rows
    for table in SNAPSHOT_TABLES:
        folder = Path(by_url.paths[table])
        assert folder.is_relative_to(tmp_path / "by-url") and [p.name for p in folder.iterdir()] == [PART_FILE]
        assert pq.read_table(folder / PART_FILE).num_rows == by_path.rows.get(table, 1)
    assert not (tmp_path / "by-url" / ".staging").exists()


def test_a_memory_url_holds_one_partition_per_table_and_a_rerun_replaces_it(
    built: Path, tmp_path: Path, memory_root: str
) -> None:
    mind_file = tmp_path / "copy.mind"
    mind_file.write_bytes(built.read_bytes())
    first = snapshot_mind(mind_file, memory_root, "ws", DAY)
    assert first.root == memory_root
    assert first.paths["frames"] == f"{memory_root}/frames/workspace=ws/snapshot_date={DAY}"
    expected = sorted(f"{table}/workspace=ws/snapshot_date={DAY}/{PART_FILE}" for table in SNAPSHOT_TABLES)
    assert [f for f in memory_files(memory_root) if not f.startswith(".staging")] == expected
    assert read_memory(memory_root, "frames").num_rows == first.rows["frames"]

    with Mind.open(mind_file, embedder=HashingEmbedder()) as mind:
        mind.frames.create_i_frames([NewFrame("manual", f"added later {i}") for i in range(2)])
    second = snapshot_mind(mind_file, memory_root, "ws", DAY)
    assert second.rows["frames"] == first.rows["frames"] + 2
    assert [f for f in memory_files(memory_root) if not f.startswith(".staging")] == expected
    assert read_memory(memory_root, "frames").num_rows == second.rows["frames"]
    assert not [f for f in memory_files(memory_root) if f.startswith(".staging/") and f.endswith(".parquet")]


def test_a_failed_snapshot_to_a_url_keeps_the_previous_partition(built: Path, memory_root: str) -> None:
    before = snapshot_mind(built, memory_root, "ws", DAY)

    def fail(table: str, rows: int) -> None:
        if table == "entities":
            raise RuntimeError("connection reset")

    with pytest.raises(RuntimeError, match="connection reset"):
        snapshot_mind(built, memory_root, "ws", DAY, progress=fail)
    assert read_memory(memory_root, "frames").num_rows == before.rows["frames"]
    assert read_memory(memory_root, "entities").num_rows == before.rows["entities"]
    assert not [f for f in memory_files(memory_root) if f.startswith(".staging/") and f.endswith(".parquet")]


def test_analytics_and_the_report_work_over_a_memory_url(built: Path, memory_root: str) -> None:
    taken = snapshot_mind(built, memory_root, "ws", DAY)
    with Analytics(memory_root) as engine:
        _, rows = engine.sql("SELECT workspace, snapshot_date, COUNT(*) FROM frames_latest GROUP BY ALL")
        assert [(w, str(d), n) for w, d, n in rows] == [("ws", DAY, taken.rows["frames"])]
        index = write_report(engine, f"{memory_root}/reports/{DAY}")
    assert index == f"{memory_root}/reports/{DAY}/index.html"
    assert {"index.html", "kg_growth.png", "frames_by_source.png"} <= {
        f.rsplit("/", 1)[-1] for f in memory_files(memory_root) if f.startswith("reports/")
    }
    with fsspec.open(index, "r") as page:
        assert "Knowledge graph growth" in page.read()


def test_the_snapshot_url_variable_is_the_default_root(
    tmp_path: Path, memory_root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = MindHome(tmp_path / "home")
    with Mind.open(home.workspace_path("team")) as mind:
        mind.sessions.ensure("g")
        mind.frames.create_i_frame("g", "team note")
    monkeypatch.setenv(SNAPSHOT_URL_ENV, memory_root)
    result = write_snapshot(home, None, None, DAY)
    assert result.root == memory_root and set(result.minds) == {"team"}
    assert read_memory(memory_root, "frames", "team").column("content").to_pylist() == ["team note"]
    assert not (home.root / "snapshots").exists()


@pytest.mark.parametrize(
    ("root", "reason"),
    [
        ("nosuchfs://bucket/snapshots", "Protocol not known"),
        ("file-under-a-file", "NotADirectoryError"),  # a folder whose parent is a regular file
    ],
)
def test_an_unreachable_destination_fails_with_its_url_and_reason(
    built: Path, tmp_path: Path, root: str, reason: str
) -> None:
    if root == "file-under-a-file":
        (tmp_path / "plain-file").write_text("not a folder")
        root = (tmp_path / "plain-file" / "snapshots").as_uri()
    with pytest.raises(SnapshotDestinationError) as raised:
        snapshot_mind(built, root, "ws", DAY)
    assert raised.value.url == root and reason in raised.value.reason
    assert str(raised.value).startswith(f"snapshot destination {root} is unreachable: ")


def test_the_commands_take_a_url_root(tmp_path: Path, memory_root: str, capsys: pytest.CaptureFixture) -> None:
    home = MindHome(tmp_path / "home")
    with Mind.open(home.workspace_path("default")) as mind:
        mind.sessions.ensure("g")
        mind.frames.create_i_frames([NewFrame("g", f"note {i}") for i in range(3)])
    base = ["--home", str(home.root), "-q"]
    assert main(["snapshot", *base, "--root", memory_root, "--date", DAY, "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["root"] == memory_root
    assert main(["analytics", "sql", "SELECT COUNT(*) AS n FROM frames_latest", *base, "--root", memory_root,
                 "--format", "csv"]) == EXIT_OK
    assert capsys.readouterr().out.split() == ["n", "3"]
    code = main(["snapshot", *base, "--root", "nosuchfs://bucket/snapshots"])
    err = capsys.readouterr().err
    assert code != EXIT_OK and "Traceback" not in err
    assert "snapshot destination nosuchfs://bucket/snapshots is unreachable: " in err
