"""``mind snapshot`` (minds to Parquet) and ``mind analytics`` (DuckDB over the snapshots)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from mind_core.cli.base import (
    ALL_WORKSPACES_OPTION,
    EXIT_OK,
    CommandArgs,
    common_options_hiding,
    example,
    mind_command,
    no_minds,
    require_mind,
)
from mind_core.cli.output import TableView, emit
from mind_core.errors import InvalidInputError
from mind_core.store.home import MindHome
from mind_core.text_table import OUTPUT_FORMATS

ROOT_OPTION = click.option(
    "--root",
    metavar="DIR|URL",
    show_default="$MIND_HARVEST_SNAPSHOT_URL or <home>/snapshots",
    help="Snapshot folder or fsspec URL, e.g. s3://bucket/snapshots.",
)
FORMAT_OPTION = click.option(
    "--format",
    "output_format",
    type=click.Choice(OUTPUT_FORMATS),
    default="table",
    show_default=True,
    help="Output format (--json is the same as --format json).",
)


@click.command("snapshot", epilog=example("mind snapshot --all-workspaces --date 2024-05-01"))
@ALL_WORKSPACES_OPTION
@ROOT_OPTION
@click.option(
    "--date",
    metavar="YYYY-MM-DD",
    show_default="today, UTC",
    help="Snapshot date; re-running a date replaces its snapshot.",
)
@click.option("--embeddings", is_flag=True, help="Include the frame vectors.")
@click.option(
    "--full", is_flag=True, help="Write every frames file again, not only those changed since the last snapshot."
)
@common_options_hiding("embedder", "quiet")
@mind_command
def snapshot(args: CommandArgs) -> int:
    """Export minds to Parquet for analysts.

    One dated snapshot per run; re-running a date replaces it. Frames files whose frames did not
    change since the workspace's previous snapshot are carried over, not written again.
    """
    from mind_core.analytics.snapshot import write_snapshot

    home = MindHome(args.home)
    workspace = None if args.all_workspaces else args.workspace
    if workspace is not None:
        require_mind(args)
    elif not home.minds():
        raise no_minds(home)
    result = write_snapshot(
        home, workspace, args.root, args.date, include_embeddings=args.embeddings, full=args.full
    )
    rows = [
        (
            name,
            s.rows["frames"],
            s.rows["entities"],
            s.rows["relations"],
            s.rows_written["frames"],
            f"{s.seconds:.1f}",
            sum(s.invalid_values.values()),
        )
        for name, s in result.minds.items()
    ]
    table = TableView(("workspace", "frames", "entities", "relations", "frames written", "seconds", "nulled values"), rows)
    removed = [
        f"{name}: deleted the snapshots of {', '.join(s.stale_removed)} (taken before a forget)"
        for name, s in result.minds.items()
        if s.stale_removed
    ]
    emit(args, result, table, f"snapshot {result.snapshot_date} written to {result.root}", *removed)
    return EXIT_OK


@click.group(
    "analytics",
    cls=click.Group,
    epilog=example(
        "mind snapshot --all-workspaces && mind analytics list",
        "mind analytics run top_entities --param limit=5",
        "mind analytics report --out report/",
    ),
)
def analytics() -> None:
    """Query the Parquet snapshots with DuckDB.

    `mind snapshot` writes the snapshots; these commands read them.
    """


def _analytics_root(args: CommandArgs) -> Any:
    from mind_core.analytics.snapshot import default_snapshot_root

    return args.root or default_snapshot_root(MindHome(args.home))


@analytics.command("list", epilog=example("mind analytics list --json"))
@ROOT_OPTION
@common_options_hiding("embedder", "workspace", "quiet")
@mind_command
def analytics_list(args: CommandArgs) -> int:
    """The named queries and the latest snapshots.

    Each named query with its parameters, and the latest snapshot of each workspace under the
    snapshot root (what `run` and `sql` would read).
    """
    from mind_core.analytics.queries import QUERIES, Analytics, NoSnapshotsError

    data: dict[str, Any] = {
        name: {"description": q.description, "params": q.params} for name, q in QUERIES.items()
    }
    lines = []
    for name, q in QUERIES.items():
        params = " (" + ", ".join(f"{k}={v}" for k, v in q.params.items()) + ")" if q.params else ""
        lines.append(f"{name}{params}\n    {q.description}")
    root = _analytics_root(args)
    try:
        with Analytics(root) as engine:
            _, latest = engine.sql("SELECT workspace, snapshot_date FROM latest_snapshots ORDER BY workspace")
            stale = engine.stale_snapshots()
    except NoSnapshotsError:
        latest, stale = [], []
    shown = ", ".join(f"{workspace} {day}" for workspace, day in latest) or "none yet (run `mind snapshot`)"
    lines.append(f"\nlatest snapshots under {root}: {shown}")
    if stale:
        left_out = ", ".join(f"{workspace} {day}" for workspace, day in stale)
        lines.append(f"left out, they hold forgotten data (`mind snapshot` deletes them): {left_out}")
    emit(args, data, "\n".join(lines))
    return EXIT_OK


def _parse_params(pairs: Sequence[str]) -> dict[str, str]:
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidInputError(f"--param expects KEY=VALUE, got {pair!r}")
        params[key] = value
    return params


def _print_rows(args: CommandArgs, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    from mind_core.analytics.queries import format_rows, row_count, table_cells

    output_format = "json" if args.json else args.output_format
    if output_format == "table":
        cells, numeric = table_cells(columns, rows)
        emit(args, None, TableView(columns, cells, numeric), row_count(rows))
    else:
        print(format_rows(columns, rows, output_format))


@analytics.command("run", epilog=example("mind analytics run top_entities --param limit=5"))
@click.argument("name", metavar="NAME", help="The named query (see `mind analytics list`).")
@click.option(
    "--param", multiple=True, metavar="KEY=VALUE", help="A query parameter, e.g. limit=5 (repeatable)."
)
@FORMAT_OPTION
@ROOT_OPTION
@common_options_hiding("embedder", "workspace", "quiet")
@mind_command
def analytics_run(args: CommandArgs) -> int:
    """Run a named query over the latest snapshots."""
    from mind_core.analytics.queries import Analytics

    with Analytics(_analytics_root(args)) as engine:
        columns, rows = engine.run(args.name, _parse_params(args.param))
    _print_rows(args, columns, rows)
    return EXIT_OK


@analytics.command(
    "sql", epilog=example('mind analytics sql "SELECT workspace, count(*) FROM frames_latest GROUP BY 1"')
)
@click.argument("query", metavar="SQL", help="Any read-only SQL over the snapshot views.")
@FORMAT_OPTION
@ROOT_OPTION
@common_options_hiding("embedder", "workspace", "quiet")
@mind_command
def analytics_sql(args: CommandArgs) -> int:
    """Any read-only SQL over the snapshot views.

    The views: frames, entities, relations, and their *_latest forms (the latest snapshot of
    each workspace).
    """
    from mind_core.analytics.queries import Analytics

    with Analytics(_analytics_root(args)) as engine:
        columns, rows = engine.sql(args.query)
    _print_rows(args, columns, rows)
    return EXIT_OK


@analytics.command("report", epilog=example("mind analytics report --out report/"))
@click.option("--out", required=True, metavar="DIR|URL", help="Folder or fsspec URL for the report.")
@ROOT_OPTION
@common_options_hiding("embedder", "workspace", "quiet")
@mind_command
def analytics_report(args: CommandArgs) -> int:
    """PNG charts and an index.html over the snapshots."""
    from mind_core.analytics.queries import Analytics
    from mind_core.analytics.report import write_report

    with Analytics(_analytics_root(args)) as engine:
        index = write_report(engine, args.out)
    emit(args, {"report": str(index)}, f"report written to {index}")
    return EXIT_OK
