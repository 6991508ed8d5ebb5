"""``mind forget``: delete what a mind holds of a source, some frames, a query's matches, a time
range or a person, with everything derived from it; a dry run unless ``--yes``."""

from __future__ import annotations

from typing import Any

import click

from mind_core.cli.base import EXIT_OK, CommandArgs, common_options_hiding, example, mind_command, open_mind
from mind_core.cli.output import TableView, emit
from mind_core.store.home import MindHome


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
    (keyed hashes, never the content) keep a later harvest from bringing it back. Parquet
    snapshots taken before are marked stale (analytics leaves them out, the next `mind snapshot`
    deletes them); backups are not touched: see docs/privacy.md.
    """
    from mind_core.analytics.snapshot import default_snapshot_root
    from mind_core.privacy.audit import current_actor
    from mind_core.privacy.requests import ForgetRequest, run_forget

    request = ForgetRequest(
        source=args.source,
        frames=args.frame_ids,
        query=args.query,
        person=args.person,
        since=args.since,
        until=args.until,
        apply=args.yes,
        allow_return=args.allow_return,
        vacuum=not args.no_vacuum,
    )
    request.selector()  # a request that says nothing is refused before the mind is opened
    root = default_snapshot_root(MindHome(args.home))
    with open_mind(args, embed=request.embeds, write=args.yes) as mind:
        answer = run_forget(
            mind, request, args.by or current_actor(), workspace=args.workspace, snapshot_root=root
        )
    emit(args, answer, *_answer_text(answer))
    return EXIT_OK


def _answer_text(answer: dict[str, Any]) -> list[Any]:
    if answer["action"] == "allow_return":
        verb = "lifted" if answer["applied"] else "would lift"
        return [f"{verb} {answer['tombstones_removed']} tombstone(s)"]
    if not answer["applied"]:
        return _dry_run_text(answer)
    marker = answer["snapshot_marker"]
    return [
        "forgot: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in answer["counts"].items()),
        *([answer["redaction"]] if "redaction" in answer else []),
        *(
            ["warning: another reader kept the WAL open; run `mind forget` again later to truncate it"]
            if answer["scrub"]["wal_busy"]
            else []
        ),
        *(
            [f"snapshots taken before now hold it: marked stale in {marker} (analytics leaves them out; the next `mind snapshot` deletes them)"]
            if marker
            else []
        ),
    ]


def _dry_run_text(answer: dict[str, Any]) -> list[Any]:
    counts, shown = answer["counts"], answer["frames"]
    if not any(counts.values()):
        return ["nothing matches: no frame to delete, no name or address to redact (check the spelling or the workspace)"]
    lines: list[Any] = [
        "would forget: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items()),
    ]
    if "redaction" in answer:
        lines.append(answer["redaction"])
    if shown:
        lines.append(TableView(("id", "time", "text"), [(f["id"], f["time"], f["snippet"]) for f in shown]))
    if counts["frames_deleted"] > len(shown):
        lines.append(f"(and {counts['frames_deleted'] - len(shown)} more frames)")
    lines.append("nothing changed: add --yes to forget")
    return lines
