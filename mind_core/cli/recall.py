"""``mind recall``: what do I know about X, from the workspace and the personal mind."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Any

import click

from mind_core.cli.base import (
    EXIT_OK,
    EXTERNAL_URL_OPTION,
    RECORD_ACCESS_OPTION,
    CommandArgs,
    common_options_hiding,
    example,
    make_embedder,
    mind_command,
    no_mind,
)
from mind_core.cli.output import TableView, emit
from mind_core.errors import NotFoundError
from mind_core.query.models.requests import RecallRequest
from mind_core.recall import SCOPES
from mind_core.search.scoring import FILE_TIME, HARVEST_TIME, SCORING_PROFILES
from mind_core.search.snippets import DEFAULT_WIDTH
from mind_core.store.home import DEFAULT_WORKSPACE, PERSONAL, MindHome

FROM_TITLE_CHARS = 40


@click.command(
    "recall",
    epilog=example('mind recall "postgres migration" --since 2024-01-01 --limit 5'),
)
@click.argument(
    "query", nargs=-1, required=True, metavar="QUERY...", help="What to recall (words are joined)."
)
@click.option(
    "--scope",
    type=click.Choice(SCOPES),
    default="all",
    show_default=True,
    help="Which minds to read: the workspace, the personal mind, or both.",
)
@click.option(
    "--limit",
    type=int,
    default=10,
    show_default=True,
    help="How many results to show (1-100), across the workspace and the personal mind together.",
)
@click.option(
    "--profile",
    type=click.Choice(tuple(SCORING_PROFILES)),
    default="balanced",
    show_default=True,
    help="How relevance weighs recency, importance and access.",
)
@click.option(
    "--since",
    metavar="WHEN",
    help="Only memories at or after this ISO date/time (a filter; dates in the query only boost).",
)
@click.option("--until", metavar="WHEN", help="Only memories at or before this ISO date/time.")
@click.option("--explain", is_flag=True, help="Show lane ranks and score parts.")
@click.option("--tag", multiple=True, help="Only frames with this tag (repeatable; nested tags match).")
@click.option("--from", "sender", metavar="TEXT", help="Only frames whose mail From or author contains this.")
@click.option(
    "--as-of", metavar="WHEN", help="Recall as of this instant: memories up to it, recency measured from it."
)
@click.option(
    "--source-kind",
    metavar="KIND",
    callback=lambda ctx, param, value: _known_source_kind(value),
    help="Only frames of this plugin (markdown, email, chatgpt ...) or item kind (note, conversation ...).",
)
@click.option("--keyword-only", is_flag=True, help="Full-text lane only: no embedding model is loaded.")
@click.option(
    "--snippet-chars",
    type=int,
    metavar="N",
    show_default=f"{DEFAULT_WIDTH} in the table, whole texts with --json",
    help="Each text as a snippet of about N characters around the query's words.",
)
@RECORD_ACCESS_OPTION
@EXTERNAL_URL_OPTION
@common_options_hiding("quiet")
@mind_command
def recall(args: CommandArgs) -> int:
    """What do I know about X.

    The workspace mind and the personal memory, ranked together.
    """
    from mind_core.query.models.recall import RecallResponse
    from mind_core.query.models.requests import parse_request
    from mind_core.retrieval import CombinedRetrieval, configured_retrievers
    from mind_core.search.snippets import bold_ansi

    request = parse_request(
        RecallRequest,
        {
            "query": " ".join(args.query),
            "workspace": args.workspace,
            "scope": args.scope,
            "limit": args.limit,
            "profile": args.profile,
            "since": args.since,
            "until": args.until,
            "explain": args.explain,
            "tags": list(args.tag),
            "sender": args.sender,
            "source_kind": args.source_kind,
            "as_of": args.as_of,
            "snippet_chars": args.snippet_chars,
        },
    )
    with contextlib.ExitStack() as stack:
        name, workspace, personal = _recall_minds(args, request, stack)
        retrieval = CombinedRetrieval(
            workspace,
            personal,
            configured_retrievers(args.external_url),
            workspace_name=name,
            record_access_on_recall=args.record_access,
        )
        result = retrieval.recall(request.parameters())
    # matches in bold on a terminal; piped or with NO_COLOR, plain text with no markers at all
    mark = bold_ansi if sys.stdout.isatty() and not os.environ.get("NO_COLOR") else None
    notice = doubt_notice(result)
    if notice and not args.json:  # on stderr: piped, stdout stays the table alone
        print(notice, file=sys.stderr)
    emit(
        args,
        RecallResponse.from_retrieval(result, request).model_dump(mode="json"),
        *format_recall(result, args.explain, mark, args.snippet_chars or DEFAULT_WIDTH),
    )
    return EXIT_OK


def _known_source_kind(value: str | None) -> str | None:
    """--source-kind checked as soon as it is read (``models.known_source_kind``), a usage error."""
    if value is None:
        return None
    from mind_core.query.models.fields import known_source_kind

    try:
        return known_source_kind(value)
    except ValueError as exc:
        raise click.BadParameter(f"unknown kind {value!r}: {exc}") from None


def _recall_minds(
    args: CommandArgs, request: RecallRequest, stack: contextlib.ExitStack
) -> tuple[str, Any, Any]:
    """The workspace's name and the workspace and personal minds a recall reads
    (``recall_mind_paths``: a missing mind is skipped, except a workspace named other than the
    default); with no mind to read at all, the error every command gives for a missing mind."""
    from mind_core.mind import Mind
    from mind_core.retrieval import recall_mind_paths

    home = MindHome(args.home)
    try:
        name, workspace_path, personal_path = recall_mind_paths(
            home, request.workspace, DEFAULT_WORKSPACE, request.scope
        )
    except NotFoundError:
        raise no_mind(home, request.workspace or DEFAULT_WORKSPACE) from None
    if workspace_path is None and personal_path is None:  # a fresh home: the error stats gives
        raise no_mind(home, PERSONAL if request.scope == PERSONAL else name)
    embedder = None if args.keyword_only else make_embedder(args.embedder)

    def open_for_recall(path: Path | None) -> Any:
        # Recording access writes to the mind (file and folder: WAL); a mind this user may only
        # read is still recalled from, untouched.
        if path is None:
            return None
        writable = args.record_access and os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
        return stack.enter_context(Mind.open(path, embedder=embedder, readonly=not writable))

    return name, open_for_recall(workspace_path), open_for_recall(personal_path)


def _event_time(value: str | None) -> str:
    """A memory's time in the table's zone, UTC (the column says so)."""
    from mind_core.timestamps import parse_instant

    try:
        return parse_instant(value).astimezone(UTC).strftime("%Y-%m-%d %H:%M") if value else ""
    except ValueError:
        return value or ""


def _origin(workspace: str, source: str, title: str) -> str:
    """The ``from`` cell: mind, source and title, the title cut at a word with an ellipsis."""
    from mind_core.retrieval import memory_attribution
    from mind_core.search.snippets import shorten

    return memory_attribution(workspace, source, shorten(title, FROM_TITLE_CHARS))


def _borrowed_mark(dated_by: str | None) -> str:
    """The table's mark on a time that is not the memory's own (see ``scoring.borrowed_time``)."""
    return f" ({dated_by} time)" if dated_by in (FILE_TIME, HARVEST_TIME) else ""


def _rank(value: int | None) -> str:
    """A lane rank as a person counts: explain's JSON ranks are 0-based, the screen's 1-based."""
    return "-" if value is None else str(value + 1)


def _lanes(parts: dict[str, Any]) -> str:
    """Where the frame came from: its lane ranks, or its neighbouring turn when no lane found it
    and only the session-neighbour credit brought it in."""
    found = [parts.get(f"{lane}_rank") for lane in ("keyword", "vector", "entity")]
    if all(rank is None for rank in found) and any(
        parts.get(f"{lane}_context", 0) > 0 for lane in ("keyword", "vector", "entity")
    ):
        return "via neighbouring turn"
    keyword = "time window" if parts.get("keyword_lane") == "time window" else "keyword"
    return f"{keyword} rank {_rank(parts.get('keyword_rank'))}, vector rank {_rank(parts.get('vector_rank'))}"


def _speaker(parts: dict[str, Any]) -> str:
    """Who said the frame, when the question named a speaker: ``said by Melanie (named)``, ``said
    by Caroline (another speaker)``, or a frame whose author is not recorded."""
    speaker = parts.get("speaker")
    if speaker is None:
        return ", no speaker recorded"
    return f", said by {speaker} ({'named' if parts['speaker_score'] else 'another speaker'})"


def _explain_line(rank: int, result: Any) -> str:
    meta, parts = result.metadata, result.explain or {}
    if result.workspace is None:
        return f"#{rank} external score {result.score:.3f} from {meta.get('retriever')}"
    # each part on 0..1 times its share of the profile (the shares add up to 1), so the sum is the
    # relevance the match is multiplied by (scoring.relevance_parts)
    terms = parts.get("relevance_parts", {})
    relevance = " + ".join(f"{name} {term['part']:.2f}x{term['share']:.2f}" for name, term in terms.items())
    share = parts.get("relevance_share", sum(term["part"] * term["share"] for term in terms.values()))
    similarity = parts.get("question_similarity")
    closeness = "-" if similarity is None else f"{similarity:.2f}"
    timing = ""
    if "time_score" in parts:
        timing += f", time {parts['time_score']:.2f} for {parts.get('time_window')}"
    elif "time_window_ignored" in parts:
        timing += f", time window {parts['time_window_ignored']} ignored: no memory near it"
    if "speaker_score" in parts:
        timing += _speaker(parts)
    if parts.get("lanes_without"):
        timing += f" (lanes searched without {', '.join(parts['lanes_without'])})"
    if parts.get("borrowed_time"):
        timing += f", {parts['borrowed_time']} time: no recency"
    match = parts.get("match", meta["match_score"])  # the ranking match; match_score is the thresholds'
    if abs(match - meta["match_score"]) >= 0.0005:
        timing += f", confidence judged on match {meta['match_score']:.3f} (without the preferences)"
    weight = meta.get("mind_weight")
    weighing = "" if weight is None else f" x mind weight {weight:.2f}"
    if "part_scale" in parts:  # found by one part of a question joining people (question_parts)
        weighing = f" x part scale {parts['part_scale']:.2f}{weighing}"
        timing += f", asked as {parts['question_part']!r}"
    return (
        f"#{rank} score {result.score:.3f} = match {match:.3f} x relevance "
        f"{share:.3f} ({relevance}){weighing}; "
        f"{_lanes(parts)}, "
        f"similarity {closeness}, keywords {parts.get('keyword_share', 0):.0%}{timing}"
    )


def doubt_notice(result: Any) -> str | None:
    """The line that says the table holds the closest memories, not matches."""
    if result.merged() and not result.confident and (result.workspace_results or result.personal_results):
        return f"no confident match for {result.query!r}: the closest memories are"
    return None


def format_recall(
    result: Any, explain: bool, mark: Callable[[str], str] | None = None, width: int = DEFAULT_WIDTH
) -> list[str | TableView]:
    """The recall as printable parts: a table of results (or why there is none) and notes."""
    from mind_core.search.snippets import make_snippet, own_text

    merged = result.merged()
    parts: list[str | TableView] = []
    if not merged:
        parts.append(f"no memories match {result.query!r}")
    else:
        rows = []
        for rank, r in enumerate(merged, 1):
            origin = r.metadata.get("provenance", {})
            if r.workspace is None:  # an external source's result
                where = r.attribution
            else:
                where = _origin(r.workspace, r.source, origin.get("title") or "")
            rows.append(
                (
                    rank,
                    f"{r.score:.2f}",
                    _event_time(r.metadata.get("created_at")) + _borrowed_mark(origin.get("dated_by")),
                    where,
                    make_snippet(own_text(r.content, origin), result.query, width, mark),
                )
            )
        parts.append(TableView(("#", "score", "time (UTC)", "from", "snippet"), rows))
        if explain:
            parts.append("\n" + "\n".join(_explain_line(rank, r) for rank, r in enumerate(merged, 1)))
    if result.external_error:
        parts.append(f"\nexternal source failed: {result.external_error}")
    if result.has_conflict:
        parts.append(f"\nconflict: {result.conflict_note}")
    return parts
