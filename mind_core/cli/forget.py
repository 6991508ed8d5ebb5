"""``mind forget``: delete what a mind holds of a source, some frames, a query's matches, a time
range or a person, with everything derived from it; a dry run unless ``--yes``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from mind_core.cli.base import EXIT_OK, CommandArgs, common_options_hiding, example, mind_command, open_mind
from mind_core.cli.output import TableView, emit


@click.command(
    "forget",
    epilog=example(
        'mind forget --person "Zephyrine Quarlesworth"          # what would go',
        "mind forget --person zq@example.org --yes",
        'mind forget --query "api key" --since 2024-01 --yes',
        "mind forget --source old-mail --yes",
        "mind forget --source old-mail --allow-return --yes    # let a harvest bring it back",
    ),
)
@click.option("--source", metavar="NAME", help="The frames a harvest source brought.")
@click.option("--frames", "frame_ids", metavar="IDS", help="Frame ids, separated by commas.")
@click.option("--query", metavar="TEXT", help="The frames holding every word of TEXT (full-text match).")
@click.option(
    "--person",
    metavar="NAME_OR_ADDRESS",
    help="A person: what they wrote goes, their name and address elsewhere become a placeholder, "
    "their entity and its history go.",
)
@click.option("--since", metavar="WHEN", help="Frames from this event time on (ISO date or timestamp).")
@click.option("--until", metavar="WHEN", help="Frames up to this event time.")
@click.option("--yes", is_flag=True, help="Forget for real; without it, only show what would go.")
@click.option(
    "--allow-return",
    is_flag=True,
    help="Instead of forgetting: lift the tombstones an earlier forget with the same selector laid, "
    "so a later harvest may bring the content back.",
)
@click.option("--by", metavar="WHO", help="Who forgets, for the audit log; the OS user when not given.")
@click.option(
    "--no-vacuum", is_flag=True, help="Skip VACUUM (freed pages are still zeroed by secure_delete)."
)
@common_options_hiding("quiet")
@mind_command
def forget(args: CommandArgs) -> int:
    """Forget a person, a source, a query or frames, for good.

    Everything derived goes too (full-text and vector indexes, chunks, knowledge, session
    summaries, awareness), deleted content is overwritten in the mind's files, and tombstones
    (keyed hashes, never the content) keep a later harvest from bringing it back. Backups and
    Parquet snapshots made before are not touched: see docs/privacy.md.
    """
    from mind_core.privacy import forget as forgetting
    from mind_core.privacy.audit import current_actor
    from mind_core.privacy.selection import Selector, parse_frame_ids

    selector = Selector(
        source=args.source,
        frame_ids=parse_frame_ids(args.frame_ids) if args.frame_ids else (),
        query=args.query,
        person=args.person,
        since=args.since,
        until=args.until,
    )
    actor = args.by or current_actor()
    # only a person's forget embeds (the frames whose mentions it replaced); the others need no model
    embed = args.yes and args.person is not None and not args.allow_return
    with open_mind(args, embed=embed, write=args.yes) as mind:
        if args.allow_return:
            counts = forgetting.allow_return(mind, selector, actor, apply=args.yes)
            verb = "lifted" if args.yes else "would lift"
            emit(args, {"applied": args.yes, **counts}, f"{verb} {counts['tombstones_removed']} tombstone(s)")
            return EXIT_OK
        plan = forgetting.plan_forget(mind.db, selector)
        shown = forgetting.preview(mind.db, plan)
        if not args.yes:
            emit(
                args,
                {"applied": False, "counts": plan.counts(), "frames": shown},
                *_dry_run_text(plan, shown),
            )
            return EXIT_OK
        result = forgetting.forget(mind, plan, actor, vacuum=not args.no_vacuum)
        marker = _mark_snapshots(args, result)
    emit(
        args,
        {
            "applied": True,
            "counts": result.counts,
            "audit_id": result.audit_id,
            "scrub": result.scrub,
            "seconds": round(result.seconds, 3),
            "snapshot_marker": marker,
        },
        "forgot: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in result.counts.items()),
        *(
            ["warning: another reader kept the WAL open; run `mind forget` again later to truncate it"]
            if result.scrub["wal_busy"]
            else []
        ),
        *([f"snapshots taken before now still hold it: marked stale in {marker}"] if marker else []),
    )
    return EXIT_OK


def _dry_run_text(plan: Any, shown: list[dict[str, Any]]) -> list[Any]:
    counts = plan.counts()
    lines: list[Any] = [
        "would forget: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items()),
    ]
    if shown:
        lines.append(TableView(("id", "time", "text"), [(f["id"], f["time"], f["snippet"]) for f in shown]))
    if len(plan.frame_ids) > len(shown):
        lines.append(f"(and {len(plan.frame_ids) - len(shown)} more frames)")
    lines.append("nothing changed: add --yes to forget")
    return lines


def _mark_snapshots(args: CommandArgs, result: Any) -> str | None:
    """The stale marker beside this workspace's local snapshots, when there are any."""
    from mind_core.analytics.snapshot import default_snapshot_root
    from mind_core.privacy.snapshots import mark_stale
    from mind_core.store.home import MindHome

    root = default_snapshot_root(MindHome(args.home))
    marker = mark_stale(Path(root) if not str(root).count("://") else None, args.workspace, result.audit_id)
    return None if marker is None else str(marker)
