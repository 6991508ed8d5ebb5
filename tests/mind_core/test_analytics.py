"""DuckDB analytics over snapshots: views, *_latest, each named query against an answer computed
from the minds themselves (SQLite + Python, never DuckDB), output formats and the HTML/PNG report."""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from matplotlib.image import imread

from mind_core.analytics.queries import QUERIES, Analytics, NoSnapshotsError, format_rows
from mind_core.analytics.report import FRAMES_BY_SOURCE_PNG, KG_GROWTH_PNG, write_report
from mind_core.analytics.snapshot import snapshot_mind
from mind_core.errors import InvalidInputError
from mind_core.mind import Mind
from mind_core.testing.fakes import HashingEmbedder
from mind_core.timestamps import parse_instant
from tests.snapshot_minds import build_mind, mind_rows, provenance_of

FIRST, SECOND = "2024-03-10", "2024-03-11"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass
class Scene:
    root: Path
    alpha: Path
    beta: Path
    # (workspace, date) -> (kind, type) -> (total, retired), read from the mind at snapshot time
    kg_counts: dict[tuple[str, str], dict[tuple[str, str], tuple[int, int]]]
    # (workspace, date) -> (frames, in FTS, with a vector, stale vectors)
    index_counts: dict[tuple[str, str], tuple[int, int, int, int]]


def kg_counts(path: Path) -> dict[tuple[str, str], tuple[int, int]]:
    rows = mind_rows(
        path,
        "SELECT 'entity' AS kind, entity_type AS type, COUNT(*) AS total, COUNT(valid_to) AS retired "
        "FROM knowledge_entities GROUP BY entity_type UNION ALL "
        "SELECT 'relation', relation_type, COUNT(*), COUNT(valid_to) FROM knowledge_relations GROUP BY relation_type",
    )
    return {(r["kind"], r["type"]): (r["total"], r["retired"]) for r in rows}


def index_counts(path: Path) -> tuple[int, int, int, int]:
    row = mind_rows(
        path,
        "SELECT COUNT(*) AS frames, "
        "SUM(id IN (SELECT rowid FROM memory_frames_fts)) AS fts, "
        "SUM(id IN (SELECT rowid FROM memory_frames_vec)) AS vectors, "
        "SUM(id IN (SELECT rowid FROM memory_frames_vec) AND (embedded_hash IS NULL OR embedded_hash != content_hash)) "
        "AS stale FROM memory_frames",
    )[0]
    return row["frames"], row["fts"], row["vectors"], row["stale"]


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Scene:
    """alpha: the small mind, snapshotted, then changed and snapshotted the next day; beta: two
    plain frames and no graph, snapshotted once."""
    base = tmp_path_factory.mktemp("analytics")
    root = base / "snapshots"
    alpha = base / "alpha.mind"
    build_mind(alpha)
    counts: dict = {}
    health: dict = {}
    counts[("alpha", FIRST)], health[("alpha", FIRST)] = kg_counts(alpha), index_counts(alpha)
    snapshot_mind(alpha, root, "alpha", FIRST)
    with Mind.open(alpha, embedder=HashingEmbedder()) as mind:
        mind.knowledge.create_entity("organization", "Acme Corp", valid_from="2024-03-11T08:00:00Z")
        depends_on = mind.db.scalar("SELECT id FROM knowledge_relations WHERE relation_type = 'depends_on'")
        mind.knowledge.retire_relation(depends_on)
        mind.frames.create_i_frame("manual", "Acme signed the contract")
    counts[("alpha", SECOND)], health[("alpha", SECOND)] = kg_counts(alpha), index_counts(alpha)
    snapshot_mind(alpha, root, "alpha", SECOND)
    beta = base / "beta.mind"
    with Mind.open(beta) as mind:
        mind.sessions.ensure("g")
        mind.frames.create_i_frame("g", "beta frame one", created_at="2023-12-31T23:59:59.999Z")
        mind.frames.create_i_frame("g", "beta frame two", created_at="2024-01-01T00:00:00+01:00")
    counts[("beta", FIRST)], health[("beta", FIRST)] = kg_counts(beta), index_counts(beta)
    snapshot_mind(beta, root, "beta", FIRST)
    return Scene(root, alpha, beta, counts, health)


@pytest.fixture
def analytics(scene: Scene) -> Analytics:
    with Analytics(scene.root) as instance:
        yield instance


def as_dicts(result: tuple[list[str], list[tuple]]) -> list[dict[str, Any]]:
    columns, rows = result
    return [dict(zip(columns, row, strict=True)) for row in rows]


def frame_count(path: Path) -> int:
    return mind_rows(path, "SELECT COUNT(*) AS n FROM memory_frames")[0]["n"]


def test_no_snapshots_yet_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NoSnapshotsError, match="mind snapshot"):
        Analytics(tmp_path)
    with pytest.raises(NoSnapshotsError):
        Analytics(tmp_path / "missing")


def test_views_over_all_snapshots_and_latest(scene: Scene, analytics: Analytics) -> None:
    alpha_first = scene.index_counts[("alpha", FIRST)][0]
    alpha_now, beta_now = frame_count(scene.alpha), frame_count(scene.beta)
    per_snapshot = dict(
        ((ws, day.isoformat()), n)
        for ws, day, n in analytics.sql("SELECT workspace, snapshot_date, COUNT(*) FROM frames GROUP BY ALL")[
            1
        ]
    )
    assert per_snapshot == {
        ("alpha", FIRST): alpha_first,
        ("alpha", SECOND): alpha_now,
        ("beta", FIRST): beta_now,
    }
    latest = analytics.sql(
        "SELECT workspace, snapshot_date, COUNT(*) FROM frames_latest GROUP BY ALL ORDER BY 1"
    )[1]
    assert latest == [("alpha", date(2024, 3, 11), alpha_now), ("beta", date(2024, 3, 10), beta_now)]
    for table in (
        "sessions",
        "entities",
        "relations",
        "entity_frames",
        "harvest_sources",
        "harvest_runs",
        "snapshots",
    ):
        columns, _ = analytics.sql(f"SELECT * FROM {table}_latest LIMIT 0")
        assert {"workspace", "snapshot_date"} <= set(columns), table
    assert analytics.sql("SELECT COUNT(*) FROM snapshots")[1] == [(3,)]


def test_a_table_without_files_reads_as_empty(scene: Scene, tmp_path: Path) -> None:
    root = tmp_path / "partial"
    shutil.copytree(scene.root, root)
    shutil.rmtree(root / "harvest_runs")
    with Analytics(root) as partial:
        columns, rows = partial.sql("SELECT * FROM harvest_runs")
        assert rows == [] and "error_message" in columns and "workspace" in columns
        assert partial.run("harvest_history")[1] == []


def test_kg_growth_valid_time_is_computed_from_bitemporal_columns(scene: Scene, analytics: Analytics) -> None:
    expected: Counter = Counter()
    for table, kind, type_column in (
        ("knowledge_entities", "entity", "entity_type"),
        ("knowledge_relations", "relation", "relation_type"),
    ):
        for row in mind_rows(scene.alpha, f"SELECT {type_column} AS type, valid_from, valid_to FROM {table}"):
            expected[(kind, row["type"], parse_instant(row["valid_from"]).date(), "added")] += 1
            if row["valid_to"] is not None:
                expected[(kind, row["type"], parse_instant(row["valid_to"]).date(), "retired")] += 1
    rows = [r for r in as_dicts(analytics.run("kg_growth")) if r["basis"] == "valid_time"]
    assert {r["workspace"] for r in rows} == {"alpha"}  # beta has no graph
    got: Counter = Counter()
    for r in rows:
        got[(r["kind"], r["type"], r["day"], "added")] += r["added"]
        got[(r["kind"], r["type"], r["day"], "retired")] += r["retired"]
    assert +got == +expected
    running: dict = defaultdict(int)
    for r in sorted(rows, key=lambda r: (r["kind"], r["type"], r["day"])):
        running[(r["kind"], r["type"])] += r["added"] - r["retired"]
        assert r["active"] == running[(r["kind"], r["type"])]


def test_kg_growth_across_a_retire_and_recreate_history(analytics: Analytics) -> None:
    """Alice Johnson: valid 2024-01-10 .. 2024-01-20, recreated 2024-02-01; Bob from 2024-01-20
    (stored in the original's naive format); the led_by relation follows Alice."""
    rows = as_dicts(analytics.run("kg_growth"))
    people = [
        (r["day"].isoformat(), r["added"], r["retired"], r["active"])
        for r in rows
        if r["basis"] == "valid_time" and r["kind"] == "entity" and r["type"] == "person"
    ]
    assert people == [("2024-01-10", 1, 0, 1), ("2024-01-20", 1, 1, 1), ("2024-02-01", 1, 0, 2)]
    led_by = [
        (r["day"].isoformat(), r["added"], r["retired"], r["active"])
        for r in rows
        if r["basis"] == "valid_time" and r["type"] == "led_by"
    ]
    assert led_by == [("2024-01-10", 1, 0, 1), ("2024-01-20", 0, 1, 0), ("2024-02-01", 1, 0, 1)]


def test_kg_growth_across_snapshot_dates(scene: Scene, analytics: Analytics) -> None:
    expected = set()
    for workspace in ("alpha", "beta"):
        previous: dict = {}
        for day in (FIRST, SECOND):
            counts = scene.kg_counts.get((workspace, day))
            if counts is None:
                continue
            for (kind, type_), (total, retired) in counts.items():
                before_total, before_retired = previous.get((kind, type_), (0, 0))
                expected.add(
                    (
                        workspace,
                        day,
                        kind,
                        type_,
                        total - before_total,
                        retired - before_retired,
                        total - retired,
                    )
                )
            previous = counts
    got = {
        (r["workspace"], r["day"].isoformat(), r["kind"], r["type"], r["added"], r["retired"], r["active"])
        for r in as_dicts(analytics.run("kg_growth"))
        if r["basis"] == "snapshot"
    }
    assert got == expected
    assert ("alpha", SECOND, "entity", "organization", 1, 0, 1) in got
    assert ("alpha", SECOND, "relation", "depends_on", 0, 1, 0) in got


def test_frames_by_source(scene: Scene, analytics: Analytics) -> None:
    expected: dict = defaultdict(lambda: [0, 0])
    for workspace, path in (("alpha", scene.alpha), ("beta", scene.beta)):
        for row in mind_rows(path, "SELECT created_at, source, content, metadata FROM memory_frames"):
            try:
                month = parse_instant(row["created_at"]).strftime("%Y-%m")
            except ValueError:
                month = None
            provenance = provenance_of(row["metadata"])
            key = (workspace, month, row["source"], provenance.get("source"), provenance.get("plugin"))
            expected[key][0] += 1
            expected[key][1] += len(row["content"])
    got = {
        (r["workspace"], r["month"], r["source"], r["harvest_source"], r["plugin"]): [
            r["frames"],
            r["characters"],
        ]
        for r in as_dicts(analytics.run("frames_by_source"))
    }
    assert got == dict(expected)
    assert got[("beta", "2023-12", "user_stated", None, None)][0] == 2  # +01:00 midnight is 23:00 UTC
    assert ("alpha", "2024-03", "import", "vault", "markdown") in got  # -0100 offset crosses into March


def test_top_entities(scene: Scene, analytics: Analytics) -> None:
    rows = mind_rows(
        scene.alpha,
        "SELECT e.id, e.entity_type, e.name, e.valid_to IS NULL AS active, COUNT(*) AS frames "
        "FROM kg_entity_frames l JOIN knowledge_entities e ON e.id = l.entity_id GROUP BY e.id",
    )
    expected = sorted(
        [("alpha", r["id"], r["entity_type"], r["name"], r["frames"], bool(r["active"])) for r in rows],
        key=lambda r: (-r[4], r[0], r[3], r[1]),
    )
    assert analytics.run("top_entities")[1] == expected
    assert analytics.run("top_entities", {"limit": 2})[1] == expected[:2]
    assert analytics.run("top_entities", {"limit": "1"})[1] == expected[:1]  # text from the command line
    assert expected[0][3] == "Project Falcon"


def test_harvest_history(scene: Scene, analytics: Analytics) -> None:
    frames_per_source = Counter(
        provenance_of(r["metadata"]).get("source")
        for r in mind_rows(scene.alpha, "SELECT metadata FROM memory_frames")
    )
    runs = mind_rows(
        scene.alpha,
        "SELECT r.*, s.display_name FROM harvest_runs r LEFT JOIN harvest_sources s ON s.source = r.source",
    )
    expected = []
    for run in sorted(runs, key=lambda r: (parse_instant(r["started_at"]), r["id"])):
        seconds = None
        if run["finished_at"]:
            seconds = round(
                (parse_instant(run["finished_at"]) - parse_instant(run["started_at"])).total_seconds(), 3
            )
        expected.append(
            (
                "alpha",
                run["source"],
                run["display_name"],
                run["id"],
                run["status"],
                seconds,
                run["total_items"],
                run["items_saved"],
                frames_per_source[run["source"]],
                run["error_message"],
            )
        )
    got = [
        (
            r["workspace"],
            r["source"],
            r["display_name"],
            r["run_id"],
            r["status"],
            r["seconds"],
            r["total_items"],
            r["items_saved"],
            r["source_frames_now"],
            r["error_message"],
        )
        for r in as_dicts(analytics.run("harvest_history"))
    ]
    assert got == expected
    assert got[0][5] == 60.5


def test_index_health(scene: Scene, analytics: Analytics) -> None:
    expected = []
    for (workspace, day), (frames, fts, vectors, stale) in sorted(scene.index_counts.items()):
        expected.append(
            (
                workspace,
                date.fromisoformat(day),
                frames,
                fts,
                vectors,
                stale,
                round(100.0 * fts / frames, 2),
                round(100.0 * vectors / frames, 2),
            )
        )
    assert analytics.run("index_health")[1] == expected
    assert scene.index_counts[("alpha", FIRST)][1:] == (7, 4, 1)  # one frame out of FTS, one stale vector


def test_run_and_sql_errors(analytics: Analytics) -> None:
    with pytest.raises(InvalidInputError, match="unknown query"):
        analytics.run("nope")
    with pytest.raises(InvalidInputError, match="takes no parameter"):
        analytics.run("kg_growth", {"limit": 3})
    with pytest.raises(InvalidInputError, match="integer"):
        analytics.run("top_entities", {"limit": "many"})
    with pytest.raises(InvalidInputError, match="query failed"):
        analytics.sql("SELECT * FROM no_such_view")
    assert (
        set(analytics.queries())
        == set(QUERIES)
        == {"kg_growth", "frames_by_source", "top_entities", "harvest_history", "index_health"}
    )


def test_format_rows(analytics: Analytics) -> None:
    columns, rows = analytics.sql(
        "SELECT workspace, snapshot_date, COUNT(*) AS frames, MIN(created_at) AS first FROM frames "
        "GROUP BY ALL ORDER BY 1, 2"
    )
    parsed = json.loads(format_rows(columns, rows, "json"))
    assert [(r["workspace"], r["snapshot_date"], r["frames"]) for r in parsed] == [
        (w, d.isoformat(), n) for w, d, n, _ in rows
    ]
    assert parsed[0]["first"] == rows[0][3].isoformat()
    table = list(csv.reader(io.StringIO(format_rows(columns, rows, "csv"))))
    assert table[0] == columns and len(table) == len(rows) + 1
    assert table[1][:3] == [rows[0][0], rows[0][1].isoformat(), str(rows[0][2])]
    text = format_rows(columns, rows, "table").splitlines()
    assert text[0].split() == columns and text[-1] == f"({len(rows)} rows)"
    assert len({len(line) for line in text[2:-1]}) == 1  # aligned
    long_cell = format_rows(["content"], [("x" * 500,)], "table").splitlines()[2]
    assert len(long_cell) < 100 and long_cell.endswith("…")
    with pytest.raises(InvalidInputError, match="format"):
        format_rows(columns, rows, "xml")


def check_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) > 10_000
    height, width = imread(path).shape[:2]
    assert height > 200 and width > 400


def test_report_writes_png_charts_and_html(analytics: Analytics, tmp_path: Path) -> None:
    index = write_report(analytics, tmp_path / "report")
    assert index == tmp_path / "report" / "index.html"
    check_png(tmp_path / "report" / KG_GROWTH_PNG)
    check_png(tmp_path / "report" / FRAMES_BY_SOURCE_PNG)
    page = index.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert f'src="{KG_GROWTH_PNG}"' in page and f'src="{FRAMES_BY_SOURCE_PNG}"' in page
    for expected in ("Project Falcon", "bad mbox line 7", "Index health", "<table>"):
        assert expected in page


def test_report_without_graph_or_harvests(scene: Scene, tmp_path: Path) -> None:
    root = tmp_path / "beta-only"
    snapshot_mind(scene.beta, root, "beta", FIRST)
    with Analytics(root) as beta_only:
        index = write_report(beta_only, tmp_path / "report")
    check_png(tmp_path / "report" / KG_GROWTH_PNG)
    assert "no rows" in index.read_text()


@pytest.mark.slow
def test_kg_growth_of_the_shared_mail_spans_the_years_of_its_mails(shared_data: Path, tmp_path: Path) -> None:
    """Issue #16's done-when: the KG-growth chart follows the sources' years, not the harvest day."""
    from mind_core.harvest.pipeline import harvest, register_source

    path = tmp_path / "mail.mind"
    with Mind.open(path, embedder=HashingEmbedder()) as mind:
        register_source(mind, "email", shared_data / "email", "mail")
        harvest(mind, "mail")
    snapshot_mind(path, tmp_path / "snapshots", "mail", FIRST)
    with Analytics(tmp_path / "snapshots") as analytics:
        rows = [r for r in as_dicts(analytics.run("kg_growth")) if r["basis"] == "valid_time"]
        index = write_report(analytics, tmp_path / "report")
    people = [r for r in rows if r["kind"] == "entity" and r["type"] == "person" and r["added"]]
    decades = {r["day"].year // 10 * 10 for r in people}
    assert {1990, 2000, 2010} <= decades  # the corpus's mails from 1992 to the 2010s
    assert min(r["day"] for r in people).year < 2000
    assert len({r["day"] for r in rows}) > 50  # many days of growth, not one dot on harvest day
    check_png(index.parent / KG_GROWTH_PNG)
