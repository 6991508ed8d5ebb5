"""``mind harvest``: harvest registered sources into their mind, with progress per stage."""

from __future__ import annotations

import contextlib
import sys
import traceback
from typing import Any

import click

from mind_core.cli.base import (
    ALL_WORKSPACES_OPTION,
    EXIT_FAILED,
    EXIT_OK,
    CommandArgs,
    common_options,
    example,
    mind_command,
    open_mind,
    selected_workspaces,
)
from mind_core.cli.output import StageProgress, TableView, emit
from mind_core.errors import MindError
from mind_core.harvest.summary import (
    SourceSummary,
    is_numeric,
    redacted_line,
    shared_frames_line,
    summary_columns,
    summary_notes,
)
from mind_core.store.home import MindHome


@click.command(
    "harvest",
    epilog=example("mind harvest gpt notes --prune", "mind harvest --due --all-workspaces --quiet"),
)
@click.argument(
    "names", nargs=-1, metavar="[NAME]...", help="Sources to harvest; none named: every source of the workspace."
)
@click.option("--due", is_flag=True, help="Only auto-sync sources whose interval elapsed.")
@click.option("--force", is_flag=True, help="Scan even if the files look unchanged.")
@click.option("--prune", is_flag=True, help="Delete frames of messages gone from the source.")
@click.option(
    "--prune-allow-mass-delete",
    is_flag=True,
    help="Let --prune delete when the scan found nothing or more than half of the source's frames are gone.",
)
@ALL_WORKSPACES_OPTION
@common_options
@mind_command
def harvest(args: CommandArgs) -> int:
    """Harvest sources into their mind.

    Stages: scan/import, cognify (entities, relations), embed.
    Shows a progress bar per stage on a terminal (plain lines on stderr otherwise, nothing
    with --quiet), then a table of what each source brought in. Exits non-zero when a source
    failed, found nothing, is missing or lost records (partial): those are scanned again next time.
    """
    from mind_core.harvest.stores import RETRIED_STATUSES

    reports, failures = harvest_sources(args)
    outcome_lines = []
    for r in reports:
        prune_refused = (r["imported"] or {}).get("prune_refused")
        if r["status"] in RETRIED_STATUSES or prune_refused:
            failures += 1
        if r["status"] not in ("ok", "skipped") and r["reason"]:
            outcome_lines.append(f"  {r['workspace']}/{r['source']}: {r['status']}: {r['reason']}")
        if prune_refused:
            outcome_lines.append(f"  {r['workspace']}/{r['source']}: prune refused: {prune_refused}")
    parts: list[str | TableView] = [_harvest_table(reports)] if reports else ["nothing to harvest"]
    notes = summary_notes([SourceSummary.of_report(r) for r in reports])
    notes.extend(
        f"  {r['workspace']}/{shared_frames_line(r['source'], shared)}"
        for r in reports
        if (shared := (r["imported"] or {}).get("frames_shared_with"))
    )
    notes.extend(
        f"  {r['workspace']}/{redacted_line(r['source'], redacted)}"
        for r in reports
        if (redacted := (r["imported"] or {}).get("redacted"))
    )
    notes.extend(
        f"  {r['workspace']}/{r['source']}: excluded {n} file{'s' if n != 1 else ''} (its --exclude globs)"
        for r in reports
        if (n := r.get("excluded_files"))
    )
    if notes:
        parts.append("\n" + "\n".join(notes))
    error_lines = [
        f"  {r['source']}: {e}" for r in reports for e in (r["imported"] or {}).get("errors", [])[:10]
    ]
    if outcome_lines:
        parts.append("\n" + "\n".join(outcome_lines))
    if error_lines:
        parts.append("\nskipped input (first errors per source):\n" + "\n".join(error_lines))
    emit(args, reports, *parts)
    return EXIT_FAILED if failures else EXIT_OK


def harvest_sources(args: CommandArgs) -> tuple[list[dict[str, Any]], int]:
    """Each selected source's report, and how many sources raised (one broken source does not
    stop the others)."""
    from mind_core.harvest.pipeline import due_sources, get_registered
    from mind_core.harvest.pipeline import harvest as harvest_source
    from mind_core.harvest.stores import HarvestSourceStore
    from mind_core.plugins import announce_harvest

    reports = []
    failures = 0
    for workspace in selected_workspaces(args):
        with contextlib.ExitStack() as stack:
            try:
                mind = stack.enter_context(open_mind(args, workspace, write=True))
            except MindError as exc:
                if not args.all_workspaces:
                    raise
                reports.append(broken_mind_report(workspace, exc))  # the other minds go on
                continue
            if args.names:
                names = [get_registered(mind, n, f"workspace {workspace!r}").source for n in args.names]
            elif args.due:
                names = [s.source for s in due_sources(mind)]
            else:
                names = [s.source for s in HarvestSourceStore(mind.db).get_all()]
            for name in names:
                try:
                    with StageProgress(f"{workspace}/{name}", enabled=not args.quiet) as progress:
                        report = harvest_source(
                            mind,
                            name,
                            force=args.force,
                            prune=args.prune,
                            allow_mass_delete=args.prune_allow_mass_delete,
                            progress=progress,
                        )
                except MindError:
                    raise
                except Exception as exc:
                    failures += 1
                    print(
                        f"error: harvest of {workspace}/{name} failed: {type(exc).__name__}: {exc}",
                        file=sys.stderr,
                    )
                    if args.debug:
                        traceback.print_exc()
                    continue
                for warning in announce_harvest(MindHome(args.home).root, workspace, report):
                    print(f"warning: {warning}", file=sys.stderr)
                reports.append({"workspace": workspace, **report.to_dict()})
            if not args.quiet and any(not r["skipped"] for r in reports if r["workspace"] == workspace):
                _note_ann_waiting(mind, workspace)
    return reports, failures


def _note_ann_waiting(mind: Any, workspace: str) -> None:
    """Say when the mind should keep a vector graph or a keyword index and has none usable: a
    harvest leaves them to the next reconcile, the graph's memory growing with the mind."""
    from mind_core.harvest.pipeline import HARVEST_CACHE_KIB, HARVEST_MMAP_BYTES
    from mind_core.search import keyword_index
    from mind_core.store.reconcile import ann_waiting

    with mind.db.memory_bounds(HARVEST_MMAP_BYTES, HARVEST_CACHE_KIB):  # (it counts the vectors)
        waiting = ann_waiting(mind.db)
        keywords = keyword_index.problem(mind.db)
    if waiting is not None:
        print(
            f"note: {workspace}: the vector graph of this large mind is not built ({waiting}): "
            "`mind doctor --repair` (or the daily upkeep) builds it; searches use the pre-scan until then",
            file=sys.stderr,
        )
    if keywords is not None:
        print(
            f"note: {workspace}: the keyword index of this large mind is not usable ({keywords}): "
            "`mind doctor --repair` (or the daily upkeep) builds it; the keyword lane asks FTS5 until then",
            file=sys.stderr,
        )


def broken_mind_report(workspace: str, exc: Exception) -> dict[str, Any]:
    """The row of a mind that cannot be opened (corrupt, not a mind): failed, with why."""
    return {
        "workspace": workspace,
        "source": "-",
        "kind": None,
        "status": "failed",
        "skipped": False,
        "reason": f"cannot open this mind: {exc}",
        "imported": None,
        "cognified": {},
        "vectors_written": 0,
        "reconciled": {},
        "stage_seconds": {},
        "frames_held": None,
    }


def _harvest_table(reports: list[dict[str, Any]]) -> TableView:
    """The shared summary columns, with the workspace, the source's kind and the time around them."""
    summaries = [SourceSummary.of_report(r) for r in reports]
    source, *counts = summary_columns(summaries)
    headers = ("workspace", source, "kind", *counts, "time")
    rows = [
        (r["workspace"], s.source, r["kind"], *s.row(counts), f"{sum(r['stage_seconds'].values()):.1f}s")
        for r, s in zip(reports, summaries, strict=True)
    ]
    return TableView(headers, rows, [is_numeric(h) and h not in ("workspace", "kind") for h in headers])
