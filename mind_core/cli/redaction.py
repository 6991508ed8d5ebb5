"""``mind redaction``: what harvests redact (per workspace, per source), and a dry run of it."""

from __future__ import annotations

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

KINDS_HELP = (
    "Kinds, separated by commas: secrets, email, phone, iban, card, people; or all (every kind but "
    "people), personal (email, phone, iban, card), none."
)
FOLLOWS_WORKSPACE = "workspace"


@click.group(
    "redaction",
    epilog=example(
        "mind redaction set secrets,email -w team          # the workspace's policy",
        "mind redaction set all --source mail              # one source's own",
        "mind redaction preview mail                       # what a harvest would redact",
        "mind redaction show --all-workspaces",
    ),
)
def redaction() -> None:
    """Redact secrets and personal data on harvest.

    Secrets (API keys, tokens, private keys, passwords) and personal data (e-mail addresses,
    phone numbers, IBANs, card numbers, known people's names) are replaced by typed placeholders
    ([secret:aws-key], [email]...) before anything is stored or embedded. A workspace has a
    policy; a source may have its own. Changing a policy makes the next harvest read the sources
    it applies to again. See docs/privacy.md.
    """


@redaction.command("show", epilog=example("mind redaction show -w team"))
@ALL_WORKSPACES_OPTION
@common_options_hiding("embedder", "quiet")
@mind_command
def redaction_show(args: CommandArgs) -> int:
    """Show the workspace's and each source's policy."""
    from mind_core.harvest.stores import HarvestSourceStore
    from mind_core.privacy.redaction_policy import source_policy, workspace_policy

    data, rows = [], []
    for workspace in selected_workspaces(args):
        with open_mind(args, workspace, embed=False, readonly=True) as mind:
            policy = workspace_policy(mind.db)
            sources = []
            rows.append((workspace, "(workspace)", policy.describe(), ""))
            for source in HarvestSourceStore(mind.db).get_all():
                own = source_policy(mind.db, source.source)
                applied = own or policy
                sources.append({"source": source.source, "own": own is not None, "policy": applied.describe()})
                rows.append((workspace, source.source, applied.describe(), "own" if own else "the workspace's"))
            data.append({"workspace": workspace, "policy": policy.describe(), "sources": sources})
    emit(args, data, TableView(("workspace", "source", "redacts", "policy"), rows))
    return EXIT_OK


@redaction.command(
    "set",
    epilog=example(
        "mind redaction set secrets,personal -w team",
        "mind redaction set none --source notes",
        "mind redaction set workspace --source notes   # follow the workspace's again",
    ),
)
@click.argument("kinds", metavar="KINDS")
@click.option(
    "--source",
    metavar="NAME",
    help="Set this source's own policy (KINDS 'workspace': follow the workspace's again).",
)
@common_options_hiding("embedder", "quiet")
@mind_command
def redaction_set(args: CommandArgs) -> int:
    """Set the workspace's policy, or a source's.

    KINDS, separated by commas: secrets, email, phone, iban, card, people; or all (every kind but
    people), personal (email, phone, iban, card), none. The sources it applies to are read again
    by their next harvest, their frames rewritten under it, and what it now redacts scrubbed from
    the mind's files.
    """
    from mind_core.harvest.pipeline import get_registered
    from mind_core.harvest.stores import HarvestSourceStore
    from mind_core.privacy.redaction_policy import (
        RedactionPolicy,
        set_source_policy,
        set_workspace_policy,
        source_policy,
    )

    follow = args.source is not None and args.kinds.strip().lower() == FOLLOWS_WORKSPACE
    policy = None if follow else RedactionPolicy.parse(args.kinds)
    with open_mind(args, embed=False, write=True) as mind:
        with mind.db.transaction():
            if args.source is not None:
                get_registered(mind, args.source, f"workspace {args.workspace!r}")
                set_source_policy(mind.db, args.source, policy)
                affected = [args.source]
            else:
                set_workspace_policy(mind.db, policy)  # type: ignore[arg-type]
                affected = [
                    s.source
                    for s in HarvestSourceStore(mind.db).get_all()
                    if source_policy(mind.db, s.source) is None
                ]
    what = "the workspace's policy" if follow else policy.describe()  # type: ignore[union-attr]
    whose = f"source {args.source!r}" if args.source else f"workspace {args.workspace!r}"
    reread = (
        f"; the next harvest reads {', '.join(repr(a) for a in affected)} again" if affected else ""
    )
    emit(
        args,
        {"workspace": args.workspace, "source": args.source, "policy": what, "affected_sources": affected},
        f"{whose} now redacts: {what}{reread}",
    )
    return EXIT_OK


@redaction.command(
    "preview",
    epilog=example("mind redaction preview mail", "mind redaction preview --kinds all --all-workspaces --json"),
)
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("--kinds", metavar="KINDS", help="Try this policy instead of the sources' own. " + KINDS_HELP)
@click.option(
    "--limit", type=click.IntRange(min=0), default=50, show_default=True, help="Findings listed per source (all are counted)."
)
@ALL_WORKSPACES_OPTION
@common_options_hiding("embedder", "quiet")
@mind_command
def redaction_preview(args: CommandArgs) -> int:
    """Dry run: what a harvest would redact.

    Scans each named source (none named: every source of the workspace) as a harvest would and
    lists each finding: its kind, the file, item and message it lies in, and a masked preview
    (a secret's public prefix and length, an address's first letters, a number's last digits),
    never the value itself.
    """
    from mind_core.harvest.pipeline import get_registered
    from mind_core.harvest.redaction_preview import preview_redaction
    from mind_core.harvest.stores import HarvestSourceStore
    from mind_core.privacy.redaction_policy import RedactionPolicy

    policy = RedactionPolicy.parse(args.kinds) if args.kinds is not None else None
    results, rows, lines = [], [], []
    for workspace in selected_workspaces(args):
        with open_mind(args, workspace, embed=False, readonly=True) as mind:
            names = (
                [get_registered(mind, n, f"workspace {workspace!r}").source for n in args.names]
                if args.names
                else [s.source for s in HarvestSourceStore(mind.db).get_all()]
            )
            for name in names:
                found = preview_redaction(mind, name, policy, args.limit)
                results.append({"workspace": workspace, **found.to_dict()})
                counts = ", ".join(f"{n} {kind}" for kind, n in found.counts.items()) or "nothing"
                if str(found.policy) == "none" and not found.messages:
                    lines.append(
                        f"{workspace}/{name}: no redaction policy, nothing to preview (try one with --kinds,"
                        f" e.g. --kinds secrets,email; keep it with `mind redaction set`)"
                    )
                    continue
                lines.append(
                    f"{workspace}/{name} ({found.policy}): {found.messages_redacted} of {found.messages} "
                    f"messages, {counts}" + (f"; {found.hits_not_listed} more not listed" if found.hits_not_listed else "")
                )
                rows += [(f"{workspace}/{name}", h.kind, h.file, h.message, h.field, h.preview) for h in found.hits]
    parts: list[str | TableView] = []
    if rows:
        parts.append(TableView(("source", "kind", "file", "message", "where", "preview"), rows))
    parts.append(("\n" if rows else "") + "would redact (nothing written):\n" + "\n".join(f"  {line}" for line in lines))
    emit(args, results, *parts)
    return EXIT_OK
