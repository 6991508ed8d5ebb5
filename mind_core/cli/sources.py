"""``mind sources``: register, list, change and remove harvest sources."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from mind_core.cli.base import (
    ALL_WORKSPACES_OPTION,
    EXIT_OK,
    CommandArgs,
    common_options_hiding,
    example,
    mind_command,
    open_mind,
    selected_workspaces,
)
from mind_core.cli.output import TableView, emit
from mind_core.errors import NotFoundError

if TYPE_CHECKING:
    from mind_core.harvest.source_files import ReadingRules
    from mind_core.mind import Mind


SIZE_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


class SizeType(click.ParamType):
    """A size in bytes, with an optional binary unit: ``65536``, ``64M``, ``2GiB``."""

    name = "SIZE"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", str(value), re.IGNORECASE)
        if match is None or float(match.group(1)) <= 0:
            self.fail(f"{value!r} is not a size (bytes, or with a unit: 64M, 2G)", param, ctx)
        return int(float(match.group(1)) * SIZE_UNITS[match.group(2).lower()])


MAX_FILE_SIZE_HELP = (
    "The largest file this source reads; larger ones are skipped and reported. Default: 64M for a "
    "file read whole (a note, a mail, a prompt), 32G for an export streamed record by record."
)
FOLLOW_HELP = "Follow symlinks that lead outside the source's folder (by default they are skipped and reported)."
EXCLUDE_HELP = (
    "Files of a folder source never read, as a glob matched against the path relative to the "
    "folder (fnmatch: * also matches /; a pattern without / also matches any file or folder "
    "name on the way; a folder matched excludes all below it): '*.msg', 'drafts/**'. Skipped "
    "without an error, counted in the harvest's report"
)
REDACT_HELP = (
    "What harvests of this source redact, instead of the workspace's policy (`mind redaction`): "
    "secrets, email, phone, iban, card, people, all, personal or none, separated by commas"
)


def _set_redaction(mind: Mind, source: str, kinds: str | None) -> None:
    """Give the source its own redaction policy (``workspace``: follow the workspace's again)."""
    from mind_core.privacy.redaction_policy import RedactionPolicy, set_source_policy

    if kinds is not None:
        follow = kinds.strip().lower() == "workspace"
        set_source_policy(mind.db, source, None if follow else RedactionPolicy.parse(kinds))


def _reading_rules(
    source_rules: ReadingRules,
    max_file_size: int | None,
    follow: bool | None,
    exclude: tuple[str, ...] | None = None,
) -> ReadingRules:
    """The source's rules with what the options changed (``exclude`` None: unchanged)."""
    from dataclasses import replace

    if max_file_size is not None:
        source_rules = replace(source_rules, max_file_bytes=max_file_size)
    if follow is not None:
        source_rules = replace(source_rules, follow_outside_links=follow)
    if exclude is not None:
        source_rules = replace(source_rules, exclude=exclude)
    return source_rules


def _exclusions(globs: tuple[str, ...]) -> tuple[str, ...]:
    """The --exclude globs as stored; a bad one is a usage error, before any mind is touched."""
    from mind_core.harvest.source_files import exclusion_patterns

    try:
        return exclusion_patterns(globs)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--exclude") from exc


class SourcesAddCommand(click.Command):
    """``sources add``, whose help lists the source kinds the installed plugins provide."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from mind_core.plugins import get_source, source_kinds

        with formatter.section("Installed kinds"):
            formatter.write_dl([(kind, get_source(kind).display_name) for kind in source_kinds()])
        super().format_epilog(ctx, formatter)


@click.group(
    "sources",
    cls=click.Group,
    epilog=example(
        "mind sources add ~/Downloads/chatgpt-export.zip",
        "mind sources list --all-workspaces",
        "mind sources set chatgpt-export --auto-sync --interval-hours 6",
    ),
)
def sources() -> None:
    """Manage harvest sources.

    The exports, folders and mailboxes a mind is filled from. Adding the first source of a
    workspace creates its mind.
    """


@sources.command(
    "add",
    cls=SourcesAddCommand,
    epilog=example(
        "mind sources add ~/Downloads/chatgpt-export.zip --name gpt",
        "mind sources add ~/Mail/archive --kind email -w team",
        "mind sources add ~/Mail/archive --exclude '*.msg' --exclude 'drafts/**'",
    ),
)
@click.argument(
    "paths",
    nargs=-1,
    required=True,
    metavar="PATH",
    help="The export file or folder to harvest (the older form KIND PATH still works).",
)
@click.option(
    "--kind",
    metavar="KIND",
    show_default="detected from PATH",
    help="The source kind (see Installed kinds below).",
)
@click.option(
    "--name",
    show_default="derived from PATH",
    help="The source's name in the workspace: PATH's last part, extension dropped, lower-cased, "
    "other characters as '-' (chatgpt-export for ~/Downloads/chatgpt-export.zip; a ChatGPT or "
    "Claude conversations.json is named after its folder).",
)
@click.option("--replace", is_flag=True, help="Re-point an existing name (its ledger starts over).")
@click.option("--kind-anyway", is_flag=True, help="Keep --kind even though PATH looks like another kind.")
@click.option(
    "--auto-sync", is_flag=True, help="Harvest it with `mind harvest --due` once its interval elapsed."
)
@click.option(
    "--interval-hours",
    type=click.IntRange(min=1),
    metavar="HOURS",
    show_default="24",
    help="Hours between auto-sync harvests.",
)
@click.option("--max-file-size", type=SizeType(), help=MAX_FILE_SIZE_HELP)
@click.option("--follow-outside-links", is_flag=True, default=None, help=FOLLOW_HELP)
@click.option("--exclude", "exclude", multiple=True, metavar="GLOB", help=EXCLUDE_HELP + " (repeatable).")
@click.option("--redact", metavar="KINDS", help=REDACT_HELP + ".")
@common_options_hiding("embedder", "quiet")
@mind_command
def sources_add(args: CommandArgs) -> int:
    """Register a source; the first one creates the workspace's mind.

    A bad path, kind or name is refused before any mind is created. Adding a path that is
    already registered with its kind changes nothing (and says so); another name for a path
    another source reads is registered with a warning. When other kinds of export lie in folders
    below PATH, a note names those folders (a source reads its path as one kind).
    """
    from dataclasses import replace

    from mind_core.harvest.paths import stored_text
    from mind_core.harvest.pipeline import (
        existing_registration,
        plan_source,
        register_planned,
        sources_reading_the_same_files,
    )
    from mind_core.harvest.stores import HarvestSourceStore
    from mind_core.harvest.survey import other_kinds_below
    from mind_core.privacy.redaction_policy import RedactionPolicy

    kind, path = _kind_and_path(args.paths, args.kind)
    plan = plan_source(kind, path, args.name, kind_anyway=args.kind_anyway)
    if args.redact is not None and args.redact.strip().lower() != "workspace":
        RedactionPolicy.parse(args.redact)  # refused before any mind is created
    sync_given = args.auto_sync or args.interval_hours is not None
    exclude = _exclusions(args.exclude) if args.exclude else None
    rules_given = args.max_file_size is not None or args.follow_outside_links is not None or exclude is not None
    with open_mind(args, embed=False, create=True) as mind:
        existing = None if args.replace else existing_registration(mind, plan)
        if existing is not None:
            plan = replace(plan, name=existing.source)
        readers = [] if existing is not None else sources_reading_the_same_files(mind, plan)
        source = existing
        if source is None or sync_given or rules_given:
            rules = _reading_rules(
                HarvestSourceStore(mind.db).reading_rules(plan.name),
                args.max_file_size,
                args.follow_outside_links,
                exclude,
            )
            source = register_planned(
                mind,
                plan,
                auto_sync=args.auto_sync,
                interval_hours=args.interval_hours,
                replace=args.replace,
                rules=rules if rules_given else None,
            )
        with mind.db.transaction():
            _set_redaction(mind, source.source, args.redact)
    where = f"-> {source.source_path} in workspace {args.workspace!r}"
    if existing is not None:
        changed = (
            f"; auto-sync {'on' if source.auto_sync else 'off'}, every {source.sync_interval_hours}h"
            if sync_given
            else "; reading rules changed"
            if rules_given
            else "; redaction policy set"
            if args.redact is not None
            else "; nothing changed"
        )
        emit(
            args,
            {**source.__dict__, "already_registered": True, "also_found_below": {}},
            f"source {source.source!r} ({source.kind}) is already registered {where}{changed}",
        )
        return EXIT_OK
    for other, how in readers:
        print(
            f"warning: source {other.source!r} ({other.kind}) {how}: both harvest those files "
            "(identical frames are shared, not copied)",
            file=sys.stderr,
        )
    found = other_kinds_below(plan.path, plan.kind)
    detected = ", detected" if kind is None else ""
    parts = [f"added source {source.source!r} ({source.kind}{detected}) {where}"]
    if found:
        parts.append(_also_found_note(plan.path, plan.kind, found))
    emit(
        args,
        {
            **source.__dict__,
            "already_registered": False,
            "also_found_below": {
                other: [stored_text(folder) for folder in folders] for other, folders in found.items()
            },
        },
        *parts,
    )
    return EXIT_OK


FOLDERS_NAMED = 3  # per kind in the note; the rest counted


def _also_found_note(path: Path, kind: str, found: dict[str, list[Path]]) -> str:
    """The other kinds found below ``path`` with their first folders (relative to it)."""
    from mind_core.harvest.paths import stored_text

    def named(folders: list[Path]) -> str:
        shown = [stored_text(f.relative_to(path)) for f in folders[:FOLDERS_NAMED]]
        more = len(folders) - FOLDERS_NAMED
        return ", ".join(shown + ([f"{more} more"] if more > 0 else []))

    kinds = "; ".join(f"{other} ({named(folders)})" for other, folders in found.items())
    return (
        f"also found below: {kinds}; this source reads only {kind}: add those "
        "folders as sources of their own (`mind sources add FOLDER`) to harvest them"
    )


def _kind_and_path(paths: tuple[str, ...], kind: str | None) -> tuple[str | None, str]:
    """PATH with --kind, or the older ``KIND PATH`` form (scripts written for it keep working)."""
    if len(paths) == 1:
        return kind, paths[0]
    if len(paths) == 2 and kind is None and not _looks_like_path(paths[0]):
        return paths[0], paths[1]
    raise click.UsageError(
        f"expected one PATH, got {len(paths)} arguments ({' '.join(paths)}); "
        "give the kind with --kind KIND and quote a path with spaces"
    )


def _looks_like_path(argument: str) -> bool:
    """A first argument that is a path, not a kind: an unquoted path with a space split in two."""
    from mind_core.plugins import source_kinds

    return argument not in source_kinds() and ("/" in argument or Path(argument).exists())


@sources.command("list", epilog=example("mind sources list --all-workspaces"))
@ALL_WORKSPACES_OPTION
@common_options_hiding("embedder", "quiet")
@mind_command
def sources_list(args: CommandArgs) -> int:
    """List sources with their last harvest.

    The table's "last items" and "last errors" count the last harvest that read the files; "frames
    held" is what the source holds now. --json names the same counts last_harvest_items,
    last_harvest_errors and frames_held, and the counts summed over every harvest
    items_imported_total and frames_created_total.
    """
    from mind_core.harvest.stores import HarvestSourceStore
    from mind_core.query.models.sources import Source

    rows, data, notes = [], [], []
    for workspace in selected_workspaces(args):
        with open_mind(args, workspace, embed=False) as mind:
            store = HarvestSourceStore(mind.db)
            for s in store.get_all():
                patterns = store.reading_rules(s.source).exclude
                data.append(Source.of(workspace, s, patterns).model_dump(mode="json"))
                interval = f"every {s.sync_interval_hours}h" if s.auto_sync else "manual"
                rows.append(
                    (
                        workspace,
                        s.source,
                        s.kind,
                        s.last_status or "never harvested",
                        interval,
                        s.last_harvest_at or "never",
                        s.last_items,
                        s.last_frames,
                        s.last_errors,
                        s.source_path,
                    )
                )
                if patterns:
                    notes.append(f"  {workspace}/{s.source}: excludes {', '.join(patterns)}")
                if s.last_status_reason:
                    notes.append(f"  {workspace}/{s.source}: {s.last_status}: {s.last_status_reason}")
                notes.extend(f"    {error}" for error in s.last_first_errors)
    headers = (
        "workspace",
        "source",
        "kind",
        "status",
        "sync",
        "last harvest",
        "last items",
        "frames held",
        "last errors",
        "path",
    )
    parts: list[str | TableView] = [TableView(headers, rows) if rows else "no sources registered; `mind sources add PATH` adds one"]
    if notes:
        parts.append("\n" + "\n".join(notes))
    emit(args, data, *parts)
    return EXIT_OK


@sources.command("remove", epilog=example("mind sources remove gpt"))
@click.argument("name", help="The source to unregister.")
@common_options_hiding("embedder", "quiet")
@mind_command
def sources_remove(args: CommandArgs) -> int:
    """Unregister a source (its frames stay in the mind)."""
    from mind_core.harvest.pipeline import remove_source

    with open_mind(args, embed=False) as mind:
        if not remove_source(mind, args.name):
            raise NotFoundError(f"no source named {args.name!r} in workspace {args.workspace!r}")
    emit(
        args,
        {"removed": args.name},
        f"removed source {args.name!r} (its frames stay in the mind; adding the name again starts a new ledger)",
    )
    return EXIT_OK


@sources.command(
    "set",
    epilog=example("mind sources set gpt --auto-sync --interval-hours 6", "mind sources set mail --exclude '*.msg'"),
)
@click.argument("name", help="The source to change.")
@click.option(
    "--path", type=click.Path(), metavar="PATH", help="Other files for the source: its ledger starts over."
)
@click.option("--kind-anyway", is_flag=True, help="Keep the kind even though PATH looks like another kind.")
@click.option(
    "--auto-sync/--no-auto-sync",
    default=None,
    help="Turn harvesting by `mind harvest --due` on or off.",
)
@click.option(
    "--interval-hours",
    type=click.IntRange(min=1),
    metavar="HOURS",
    show_default="the current interval",
    help="Hours between auto-sync harvests.",
)
@click.option("--max-file-size", type=SizeType(), help=MAX_FILE_SIZE_HELP)
@click.option("--follow-outside-links/--no-follow-outside-links", default=None, help=FOLLOW_HELP)
@click.option(
    "--exclude", "exclude", multiple=True, metavar="GLOB", help=EXCLUDE_HELP + " (repeatable; replaces the list)."
)
@click.option("--no-exclude", is_flag=True, help="Read every file again (drop the source's exclusions).")
@click.option("--redact", metavar="KINDS", help=REDACT_HELP + "; workspace: follow the workspace's again.")
@common_options_hiding("embedder", "quiet")
@mind_command
def sources_set(args: CommandArgs) -> int:
    """Change a source's path, schedule, reading rules or redaction.

    Reading rules: --max-file-size, --follow-outside-links, --exclude. Changing the exclusions
    makes the next harvest read the source again.
    """
    from mind_core.harvest.pipeline import get_registered, register_source
    from mind_core.harvest.stores import HarvestSourceStore

    exclude = _exclusions(args.exclude) if args.exclude else () if args.no_exclude else None
    with open_mind(args, embed=False) as mind:
        source = get_registered(mind, args.name, f"workspace {args.workspace!r}")
        if args.path:
            source = register_source(
                mind, source.kind, args.path, args.name, replace=True, kind_anyway=args.kind_anyway
            )
        if args.auto_sync is not None or args.interval_hours is not None:
            enabled = source.auto_sync if args.auto_sync is None else args.auto_sync
            HarvestSourceStore(mind.db).set_auto_sync(args.name, enabled, args.interval_hours)
        if args.max_file_size is not None or args.follow_outside_links is not None or exclude is not None:
            store = HarvestSourceStore(mind.db)
            store.set_reading_rules(
                args.name,
                _reading_rules(store.reading_rules(args.name), args.max_file_size, args.follow_outside_links, exclude),
            )
        with mind.db.transaction():
            _set_redaction(mind, args.name, args.redact)
        source = get_registered(mind, args.name)
        patterns = HarvestSourceStore(mind.db).reading_rules(args.name).exclude
    emit(
        args,
        {**source.__dict__, "exclude": list(patterns)},
        f"source {source.source!r}: auto-sync {'on' if source.auto_sync else 'off'}, "
        f"every {source.sync_interval_hours}h, path {source.source_path}"
        + (f", excludes {', '.join(patterns)}" if patterns else ""),
    )
    return EXIT_OK
