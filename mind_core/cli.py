"""The ``mind`` command: register sources, harvest them, and look after the minds.

Exit codes: 0 success (items skipped for bad input are reported, not fatal); 1 a command failed
at run time (a harvested source missing, failed or empty, or a prune refused); 2 bad usage or input (unknown kind, missing path, invalid name); 3 ``doctor`` found
problems it did not repair. Errors are one line on stderr; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from mind_core.errors import InvalidInputError, MindError, NotFoundError
from mind_core.home import DEFAULT_WORKSPACE, PERSONAL, MindHome
from mind_core.query.models import SCOPES
from mind_core.scoring import SCORING_PROFILES

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PROBLEMS = 0, 1, 2, 3
EMBEDDER_ENV = "MIND_HARVEST_EMBEDDER"


# -- output helpers -----------------------------------------------------------------------------
def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


class ProgressLine:
    """Progress on stderr: rewritten in place on a terminal, a line every few seconds otherwise."""

    def __init__(self, label: str, enabled: bool = True) -> None:
        self.label = label
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < (0.2 if self.tty else 5.0):
            return
        self.last = now
        of = f"/{total:,}" if total else ""
        text = f"[{self.label}] {stage}: {done:,}{of}"
        sys.stderr.write(f"\r{text:<70}" if self.tty else text + "\n")
        sys.stderr.flush()

    def done(self) -> None:
        if self.enabled and self.tty and self.last:
            sys.stderr.write("\r" + " " * 70 + "\r")
            sys.stderr.flush()


def emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        data = dataclasses.asdict(data)
    print(json.dumps(data, indent=2, default=str) if args.json else text)


# -- minds --------------------------------------------------------------------------------------
def make_embedder(name: str | None) -> Any:
    from mind_core.embeddings import create_embedding_provider

    provider = name or os.environ.get(EMBEDDER_ENV) or "inprocess"
    # Only `auto` may fall back to the mock: an explicitly chosen provider that cannot start
    # (e.g. the model package is missing) must fail, not bake meaningless vectors into a mind.
    # An explicit provider is not probed: its model loads at the first text embedded, so a
    # command that embeds nothing (unchanged source, fingerprint check) loads none.
    auto = provider == "auto"
    embedder = create_embedding_provider(provider, fallback_to_mock=auto, lazy=not auto)
    status = embedder.get_status()
    if status.get("warning"):
        print(f"warning: {status['warning']}", file=sys.stderr)
    return embedder


@contextlib.contextmanager
def open_mind(
    args: argparse.Namespace,
    workspace: str | None = None,
    *,
    embed: bool = True,
    rebuild: bool = False,
    write: bool = False,
    readonly: bool = False,
) -> Iterator[Any]:
    """The mind of ``workspace``; with ``write``, held under the mind's OS write lock (the one
    Dagster steps take), so a harvest from the shell and a scheduled one take turns; with
    ``readonly``, opened for reading only (works on a mind this user cannot write)."""
    from mind_core.mind import Mind
    from mind_core.write_lock import mind_write_lock

    home = MindHome(args.home)
    path = home.mind_path(workspace or args.workspace)
    if readonly and not path.is_file():
        raise NotFoundError(f"no mind for workspace {workspace or args.workspace!r} in {home.root}")
    with contextlib.ExitStack() as stack:
        if write and not stack.enter_context(mind_write_lock(path, blocking=False)):
            print(f"waiting for the other writer of {path} to finish ...", file=sys.stderr)
            stack.enter_context(mind_write_lock(path))
        embedder = make_embedder(args.embedder) if embed else None
        yield stack.enter_context(
            Mind.open(path, embedder=embedder, rebuild_vectors=rebuild, readonly=readonly)
        )


# -- commands -----------------------------------------------------------------------------------
def cmd_sources_add(args: argparse.Namespace) -> int:
    from mind_core.harvest.pipeline import register_source

    kind, path = (args.kind_or_path, args.path) if args.path is not None else (None, args.kind_or_path)
    with open_mind(args, embed=False) as mind:
        source = register_source(
            mind,
            kind,
            path,
            args.name,
            auto_sync=args.auto_sync,
            interval_hours=args.interval_hours,
            replace=args.replace,
            kind_anyway=args.kind_anyway,
        )
    detected = ", detected" if kind is None else ""
    emit(
        args,
        source.__dict__,
        f"added source {source.source!r} ({source.kind}{detected}) -> {source.source_path} "
        f"in workspace {args.workspace!r}",
    )
    return EXIT_OK


def _workspaces(args: argparse.Namespace) -> list[str]:
    if args.all_workspaces:
        return MindHome(args.home).workspaces()
    return [args.workspace]


def cmd_sources_list(args: argparse.Namespace) -> int:
    from mind_core.harvest.stores import HarvestSourceStore

    rows, data, notes = [], [], []
    for workspace in _workspaces(args):
        with open_mind(args, workspace, embed=False) as mind:
            for s in HarvestSourceStore(mind.db).get_all():
                data.append({"workspace": workspace, **s.__dict__})
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
                if s.last_status_reason:
                    notes.append(f"  {workspace}/{s.source}: {s.last_status}: {s.last_status_reason}")
                notes.extend(f"    {error}" for error in s.last_first_errors)
    headers = ("workspace", "source", "kind", "status", "sync", "last harvest", "items", "frames", "errors", "path")
    text = format_table(headers, rows) if rows else "no sources registered"
    if notes:
        text += "\n\n" + "\n".join(notes)
    emit(args, data, text)
    return EXIT_OK


def cmd_sources_remove(args: argparse.Namespace) -> int:
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


def cmd_sources_set(args: argparse.Namespace) -> int:
    from mind_core.harvest.pipeline import get_registered, register_source
    from mind_core.harvest.stores import HarvestSourceStore

    with open_mind(args, embed=False) as mind:
        source = get_registered(mind, args.name)
        if args.path:
            source = register_source(
                mind, source.kind, args.path, args.name, replace=True, kind_anyway=args.kind_anyway
            )
        if args.auto_sync is not None or args.interval_hours is not None:
            enabled = source.auto_sync if args.auto_sync is None else args.auto_sync
            HarvestSourceStore(mind.db).set_auto_sync(args.name, enabled, args.interval_hours)
        source = get_registered(mind, args.name)
    emit(
        args,
        source.__dict__,
        f"source {source.source!r}: auto-sync {'on' if source.auto_sync else 'off'}, "
        f"every {source.sync_interval_hours}h, path {source.source_path}",
    )
    return EXIT_OK


def cmd_harvest(args: argparse.Namespace) -> int:
    from mind_core.harvest.pipeline import due_sources, harvest
    from mind_core.harvest.stores import FAILING_STATUSES, HarvestSourceStore
    from mind_core.plugins import announce_harvest

    reports = []
    failures = 0
    for workspace in _workspaces(args):
        with open_mind(args, workspace, write=True) as mind:
            if args.names:
                names = list(args.names)
            elif args.due:
                names = [s.source for s in due_sources(mind)]
            else:
                names = [s.source for s in HarvestSourceStore(mind.db).get_all()]
            for name in names:
                progress = ProgressLine(f"{workspace}/{name}", enabled=not args.quiet)
                try:
                    report = harvest(
                        mind,
                        name,
                        force=args.force,
                        prune=args.prune,
                        allow_mass_delete=args.prune_allow_mass_delete,
                        progress=progress,
                    )
                except MindError:
                    raise
                except Exception as exc:  # one broken source does not stop the others
                    failures += 1
                    print(
                        f"error: harvest of {workspace}/{name} failed: {type(exc).__name__}: {exc}",
                        file=sys.stderr,
                    )
                    if args.debug:
                        traceback.print_exc()
                    continue
                finally:
                    progress.done()
                for warning in announce_harvest(MindHome(args.home).root, workspace, report):
                    print(f"warning: {warning}", file=sys.stderr)
                reports.append({"workspace": workspace, **report.to_dict()})
    outcome_lines = []
    for r in reports:
        prune_refused = (r["imported"] or {}).get("prune_refused")
        if r["status"] in FAILING_STATUSES or prune_refused:
            failures += 1
        if r["status"] not in ("ok", "skipped") and r["reason"]:
            outcome_lines.append(f"  {r['workspace']}/{r['source']}: {r['status']}: {r['reason']}")
        if prune_refused:
            outcome_lines.append(f"  {r['workspace']}/{r['source']}: prune refused: {prune_refused}")
    rows = []
    for r in reports:
        imported = r["imported"] or {}
        seconds = sum(r["stage_seconds"].values())
        rows.append(
            (
                r["workspace"],
                r["source"],
                r["kind"],
                r["status"],
                imported.get("items_seen", 0),
                imported.get("frames_new", 0),
                imported.get("frames_updated", 0),
                imported.get("frames_unchanged", 0),
                r["cognified"].get("entities", 0),
                r["vectors_written"],
                imported.get("error_count", 0),
                f"{seconds:.1f}s",
            )
        )
    text = (
        format_table(
            (
                "workspace",
                "source",
                "kind",
                "status",
                "items",
                "new",
                "updated",
                "unchanged",
                "entities",
                "vectors",
                "errors",
                "time",
            ),
            rows,
        )
        if rows
        else "nothing to harvest"
    )
    error_lines = [
        f"  {r['source']}: {e}" for r in reports for e in (r["imported"] or {}).get("errors", [])[:10]
    ]
    if outcome_lines:
        text += "\n\n" + "\n".join(outcome_lines)
    if error_lines:
        text += "\n\nskipped input (first errors per source):\n" + "\n".join(error_lines)
    emit(args, reports, text)
    return EXIT_FAILED if failures else EXIT_OK


def cmd_stats(args: argparse.Namespace) -> int:
    """Counts per mind, read-only; an unreadable mind (corrupt, not a mind) is listed with its
    error and makes the exit code 1, the others are still counted."""
    from mind_core.query.models import MindStats
    from mind_core.query.service import QueryService, ServiceConfig

    service = QueryService(ServiceConfig(home=MindHome(args.home), default_workspace=args.workspace))
    try:
        minds = service.stats(None if args.all_workspaces else args.workspace).minds
    finally:
        service.close()
    columns = ("workspace", "frames", "sessions", "entities", "relations", "vectors", "sources")
    broken = any(not isinstance(m, MindStats) for m in minds)
    rows = [
        [getattr(m, c) for c in columns] + ([""] if broken else [])
        if isinstance(m, MindStats)
        else [m.workspace, *["-"] * (len(columns) - 1), m.error]
        for m in minds
    ]
    emit(
        args,
        [m.model_dump() for m in minds],
        format_table((*columns, "error") if broken else columns, rows),
    )
    return EXIT_FAILED if broken else EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    from mind_core.harvest.health import source_problems

    with open_mind(args, write=args.repair, readonly=not args.repair) as mind:
        report = mind.doctor(repair=args.repair)
        sources = source_problems(mind.db)
        onnx_cache = _onnx_cache_status(mind.embedder)
    lines = [f"frames: {report.frames:,}"]
    lines += [f"{f.check}: {'ok' if f.ok else f'{f.count:,} ({f.detail})'}" for f in report.findings]
    problems = [*report.problems, *(["sources"] if sources else [])]
    if sources:
        lines.append("sources:\n" + "\n".join(f"  {p}" for p in sources))
    lines.append(f"onnx cache: {onnx_cache}")
    lines.append("status: " + ("ok" if not problems else "problems: " + ", ".join(problems)))
    if report.repaired is not None and report.after is not None:
        repaired = report.repaired
        lines.append(
            f"repaired: {repaired.fts_fixed:,} full-text rows, {repaired.vectors_fixed:,} vectors, "
            f"{repaired.orphans_removed:,} orphans; after: "
            + ("ok" if report.after.ok else "problems: " + ", ".join(report.after.problems))
        )
    data = {**report.to_dict(), "sources": [p.to_dict() for p in sources], "onnx_cache": onnx_cache}
    if sources:
        data["ok"], data["problems"] = False, problems
    emit(args, data, "\n".join(lines))
    return EXIT_OK if report.healthy and not sources else EXIT_PROBLEMS


def _onnx_cache_status(embedder: Any) -> dict[str, Any] | str:
    """The exported ONNX files the in-process model reads (files re-hashed), or why none apply."""
    from mind_core.embeddings import EmbeddingError
    from mind_core.embeddings.inprocess import bundled_model_path
    from mind_core.embeddings.onnx_export import cache_for

    if getattr(embedder, "runtime", None) != "onnx":
        return "not used (the embedder is not an in-process ONNX model)"
    active = getattr(embedder, "active_embedder", embedder)
    try:
        model_dir = Path(active.model_path) if active.model_path is not None else bundled_model_path()
        status = cache_for(model_dir, active.onnx_cache).status(verify_hashes=True)
    except EmbeddingError as exc:
        return f"unavailable: {exc}"
    if status["state"] != "ok":
        status["state"] += " (rebuilt at the next embedding, or now: python -m mind_core.embeddings.onnx_export)"
    return status


def cmd_reindex(args: argparse.Namespace) -> int:
    from mind_core.reconcile import reconcile_vec_index

    with open_mind(args, rebuild=True, write=True) as mind:
        progress = ProgressLine("reindex", enabled=not args.quiet)
        count = reconcile_vec_index(
            mind.db, mind.embedder, lambda done, total: progress("embed", done, total)
        )
        progress.done()
    emit(args, {"reembedded": count}, f"re-embedded {count:,} frames")
    return EXIT_OK


def cmd_compact(args: argparse.Namespace) -> int:
    with open_mind(args, write=True) as mind:
        compacted = mind.frames.compact(args.max_temp_age_days, args.max_deprecated_age_days)
        reconciled = mind.reconcile()
    result = {**dataclasses.asdict(compacted), "reconciled": dataclasses.asdict(reconciled)}
    emit(
        args,
        result,
        f"pruned {compacted.temporary_pruned:,} temporary and {compacted.deprecated_pruned:,} deprecated "
        f"frames, merged {compacted.p_frames_merged:,} P-frames; reindexed {reconciled.fts_fixed:,} "
        f"full-text rows and {reconciled.vectors_fixed:,} vectors, removed {reconciled.orphans_removed:,} orphans",
    )
    return EXIT_OK


def _recall_minds(args: argparse.Namespace, stack: contextlib.ExitStack) -> tuple[Any, Any]:
    """The workspace and personal minds a recall reads; a missing mind is skipped, except a
    workspace named explicitly (not the default)."""
    from mind_core.mind import Mind

    home = MindHome(args.home)
    embedder = None if args.keyword_only else make_embedder(args.embedder)

    def open_for_recall(path: Path) -> Any:
        # Recall touches what it returns, which needs a writable mind (file and folder: WAL);
        # a mind this user may only read is still recalled from, untouched.
        writable = not args.no_touch and os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
        return stack.enter_context(Mind.open(path, embedder=embedder, readonly=not writable))

    workspace = personal = None
    if args.scope != "personal" and args.workspace != PERSONAL:
        path = home.workspace_path(args.workspace)
        if path.is_file():
            workspace = open_for_recall(path)
        elif args.workspace != DEFAULT_WORKSPACE:
            raise NotFoundError(f"no mind for workspace {args.workspace!r} in {home.root}")
    if args.scope != "workspace" and home.personal_path.is_file():
        personal = open_for_recall(home.personal_path)
    return workspace, personal


def _event_time(value: str | None) -> str:
    from mind_core.timestamps import parse_instant

    try:
        return parse_instant(value).strftime("%Y-%m-%d %H:%M") if value else ""
    except ValueError:
        return value or ""


def _rank(value: int | None) -> str:
    return "-" if value is None else str(value)


def _explain_line(rank: int, result: Any) -> str:
    meta, parts = result.metadata, result.explain or {}
    if result.source == "external":
        return f"#{rank} external score {result.score:.3f} from {meta.get('retriever')}"
    weights = parts.get("weights", {})
    relevance = " + ".join(
        f"{name} {value:.2f}x{weights.get(name, 0):.1f}" for name, value in parts.get("relevance", {}).items()
    )
    return (
        f"#{rank} keyword rank {_rank(parts.get('keyword_rank'))}, vector rank {_rank(parts.get('vector_rank'))}: "
        f"rrf {meta['rrf_score']:.4f} = match {result.score:.3f}; relevance {meta['relevance_score']:.3f} "
        f"({relevance}); final {meta['final_score']:.4f}"
    )


def format_recall(result: Any, explain: bool, mark: Callable[[str], str]) -> str:
    from mind_core.snippets import make_snippet

    merged = result.merged()
    if not merged:
        text = f"no memories match {result.query!r}"
    else:
        rows = []
        for rank, r in enumerate(merged, 1):
            origin = r.metadata.get("provenance", {})
            if r.source == "external":
                where = r.attribution
            else:
                title = (origin.get("title") or "")[:30]
                where = f"{r.source}/{origin.get('source')}" + (f": {title}" if title else "")
            rows.append(
                (
                    rank,
                    f"{r.score:.2f}",
                    _event_time(r.metadata.get("created_at")),
                    where,
                    make_snippet(r.content, result.query, mark=mark),
                )
            )
        text = format_table(("#", "score", "time", "from", "snippet"), rows)
        if explain:
            text += "\n\n" + "\n".join(_explain_line(rank, r) for rank, r in enumerate(merged, 1))
    if result.external_error:
        text += f"\n\nexternal source failed: {result.external_error}"
    if result.has_conflict:
        text += f"\n\nconflict: {result.conflict_note}"
    return text


def cmd_recall(args: argparse.Namespace) -> int:
    from mind_core.query.models import RecallRequest, RecallResponse, parse_request
    from mind_core.retrieval import CombinedRetrieval, configured_retrievers
    from mind_core.snippets import bold_ansi, bold_markdown

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
        },
    )
    with contextlib.ExitStack() as stack:
        workspace, personal = _recall_minds(args, stack)
        retrieval = CombinedRetrieval(
            workspace,
            personal,
            configured_retrievers(args.external_url),
            record_access_on_recall=not args.no_touch,
        )
        result = retrieval.recall(request)
    mark = bold_ansi if sys.stdout.isatty() and not os.environ.get("NO_COLOR") else bold_markdown
    emit(
        args,
        RecallResponse.from_retrieval(result, request).model_dump(mode="json"),
        format_recall(result, args.explain, mark),
    )
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from mind_core.query.http_server import SERVE_TOKEN_ENV, QueryServer
    from mind_core.query.service import ServiceConfig
    from mind_core.retrieval import configured_retrievers

    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    token = args.token or os.environ.get(SERVE_TOKEN_ENV)
    config = ServiceConfig(
        home=MindHome(args.home),
        default_workspace=args.workspace,
        embedder=make_embedder(args.embedder),
        token=token,
        retrievers=configured_retrievers(args.external_url),
        record_access=args.record_access,
    )
    try:
        server = QueryServer(config, args.host, args.port)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILED
    print(
        f"listening on {server.url} (API docs at {server.url}/docs; minds in {config.home.root}; "
        f"token {'required' if token else 'off'}; Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    # uvicorn stops on SIGINT/SIGTERM, then raises the signal again for the handler in place
    # before it started; by then the service has shut down cleanly, so that one is ignored.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    try:
        server.serve()
    finally:
        server.close()
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace) -> int:
    from mind_core.query.mcp import EmbedderOnFirstUse, MindTools, build_mcp_server
    from mind_core.retrieval import configured_retrievers

    tools = MindTools(
        MindHome(args.home),
        args.workspace,
        EmbedderOnFirstUse(lambda: make_embedder(args.embedder)),
        configured_retrievers(args.external_url),
    )
    try:
        build_mcp_server(tools).run("stdio")
    finally:
        tools.close()
    return EXIT_OK


# -- snapshots and analytics --------------------------------------------------------------------
def cmd_snapshot(args: argparse.Namespace) -> int:
    from mind_core import snapshot

    home = MindHome(args.home)
    workspace = None if args.all_workspaces else args.workspace
    result = snapshot.write_snapshot(home, workspace, args.root, args.date, include_embeddings=args.embeddings)
    rows = [
        (name, s.rows["frames"], s.rows["entities"], s.rows["relations"], f"{s.seconds:.1f}",
         sum(s.invalid_values.values()))
        for name, s in result.minds.items()
    ]
    text = format_table(("workspace", "frames", "entities", "relations", "seconds", "nulled values"), rows)
    emit(args, result, f"{text}\nsnapshot {result.snapshot_date} written to {result.root}")
    return EXIT_OK


def _analytics_root(args: argparse.Namespace) -> Any:
    from mind_core.snapshot import default_snapshot_root

    return args.root or default_snapshot_root(MindHome(args.home))


def cmd_analytics_list(args: argparse.Namespace) -> int:
    from mind_core.analytics import QUERIES

    data = {name: {"description": q.description, "params": q.params} for name, q in QUERIES.items()}
    lines = []
    for name, q in QUERIES.items():
        params = " (" + ", ".join(f"{k}={v}" for k, v in q.params.items()) + ")" if q.params else ""
        lines.append(f"{name}{params}\n    {q.description}")
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


def cmd_analytics_query(args: argparse.Namespace) -> int:
    from mind_core.analytics import Analytics, format_rows

    with Analytics(_analytics_root(args)) as analytics:
        if args.action == "run":
            columns, rows = analytics.run(args.name, _parse_params(args.param))
        else:
            columns, rows = analytics.sql(args.query)
    print(format_rows(columns, rows, "json" if args.json else args.format))
    return EXIT_OK


def cmd_analytics_report(args: argparse.Namespace) -> int:
    from mind_core.analytics import Analytics
    from mind_core.analytics_report import write_report

    with Analytics(_analytics_root(args)) as analytics:
        index = write_report(analytics, args.out)
    emit(args, {"report": str(index)}, f"report written to {index}")
    return EXIT_OK


# -- knowledge graph ----------------------------------------------------------------------------
def _kg_axes(args: argparse.Namespace) -> dict[str, str | None]:
    return {"valid_at": args.valid_at, "known_at": args.known_at}


def _entity_row(entity: Any) -> dict[str, Any]:
    return {
        "id": entity.id,
        "type": entity.entity_type,
        "name": entity.name,
        "valid_from": entity.valid_from,
        "valid_to": entity.valid_to,
        "recorded_at": entity.recorded_at,
        "properties": entity.properties,
    }


def cmd_kg_entities(args: argparse.Namespace) -> int:
    with open_mind(args, embed=False, readonly=True) as mind:
        found = mind.knowledge.entities_as_of(**_kg_axes(args), entity_type=args.type, limit=args.limit)
    rows = [_entity_row(e) for e in found]
    table = format_table(
        ("id", "type", "name", "valid from", "valid to"),
        [(r["id"], r["type"], r["name"], r["valid_from"], r["valid_to"] or "") for r in rows],
    )
    emit(args, rows, table)
    return EXIT_OK


def cmd_kg_relations(args: argparse.Namespace) -> int:
    with open_mind(args, embed=False, readonly=True) as mind:
        kg = mind.knowledge
        found = kg.relations_as_of(**_kg_axes(args), relation_type=args.type, limit=args.limit)
        names = {e.id: e.name for e in kg.entities_as_of(known_at=args.known_at, limit=10**9)}
    rows = [
        {
            "id": r.id,
            "source": names.get(r.source_id, r.source_id),
            "type": r.relation_type,
            "target": names.get(r.target_id, r.target_id),
            "confidence": r.confidence,
            "valid_from": r.valid_from,
            "valid_to": r.valid_to,
            "recorded_at": r.recorded_at,
        }
        for r in found
    ]
    table = format_table(
        ("source", "relation", "target", "valid from"),
        [(r["source"], r["type"], r["target"], r["valid_from"]) for r in rows],
    )
    emit(args, rows, table)
    return EXIT_OK


def cmd_kg_neighbours(args: argparse.Namespace) -> int:
    name = " ".join(args.name)
    with open_mind(args, embed=False, readonly=True) as mind:
        kg = mind.knowledge
        entities = {e.id: e for e in kg.entities_as_of(known_at=args.known_at, limit=10**9)}
        matches = [e for e in entities.values() if e.name.lower() == name.lower()]
        if not matches:
            raise NotFoundError(f"no entity named {name!r} (as known at {args.known_at or 'now'})")
        rows = []
        for entity in matches:
            for relation in kg.relations_as_of(**_kg_axes(args), entity_id=entity.id, limit=args.limit):
                outgoing = relation.source_id == entity.id
                other = entities.get(relation.target_id if outgoing else relation.source_id)
                rows.append(
                    {
                        "entity": entity.name,
                        "direction": "out" if outgoing else "in",
                        "relation": relation.relation_type,
                        "neighbour": other.name if other else None,
                        "neighbour_type": other.entity_type if other else None,
                        "valid_from": relation.valid_from,
                        "valid_to": relation.valid_to,
                    }
                )
    table = format_table(
        ("relation", "dir", "neighbour", "type", "valid from"),
        [(r["relation"], r["direction"], r["neighbour"], r["neighbour_type"], r["valid_from"]) for r in rows],
    )
    emit(args, rows, table)
    return EXIT_OK


# -- parser -------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--home", help="mind home folder (default: $MIND_HOME or ~/.mind-harvest)")
    common.add_argument(
        "--workspace",
        "-w",
        default=DEFAULT_WORKSPACE,
        help="workspace mind to use ('personal' for the personal mind)",
    )
    common.add_argument(
        "--embedder",
        help="embedding provider: inprocess (default), auto, ollama, voyage, "
        f"openai, litellm, mock (or ${EMBEDDER_ENV})",
    )
    common.add_argument("--json", action="store_true", help="machine-readable output")
    common.add_argument("--debug", action="store_true", help="show tracebacks")
    common.add_argument("--quiet", "-q", action="store_true", help="no progress output")

    parser = argparse.ArgumentParser(prog="mind", description="Harvest your history into a searchable mind.")
    commands = parser.add_subparsers(dest="command", required=True)

    sources = commands.add_parser("sources", help="manage harvest sources").add_subparsers(
        dest="action", required=True
    )
    add = sources.add_parser("add", parents=[common], help="register a source: [KIND] PATH")
    add.add_argument("kind_or_path", metavar="KIND", help="the source kind (omit it to detect it from PATH)")
    add.add_argument("path", nargs="?", metavar="PATH")
    add.add_argument("--name")
    add.add_argument("--replace", action="store_true", help="re-point an existing name (its ledger starts over)")
    add.add_argument(
        "--kind-anyway", action="store_true", help="keep KIND even though PATH looks like another kind"
    )
    add.add_argument("--auto-sync", action="store_true")
    add.add_argument("--interval-hours", type=int)
    add.set_defaults(func=cmd_sources_add)
    listing = sources.add_parser("list", parents=[common], help="list sources")
    listing.add_argument("--all-workspaces", action="store_true")
    listing.set_defaults(func=cmd_sources_list)
    remove = sources.add_parser("remove", parents=[common], help="unregister a source (frames stay)")
    remove.add_argument("name")
    remove.set_defaults(func=cmd_sources_remove)
    setter = sources.add_parser("set", parents=[common], help="change a source's path or sync schedule")
    setter.add_argument("name")
    setter.add_argument("--path", help="other files: the source's ledger starts over")
    setter.add_argument(
        "--kind-anyway", action="store_true", help="keep the kind even though PATH looks like another kind"
    )
    setter.add_argument("--auto-sync", dest="auto_sync", action="store_true", default=None)
    setter.add_argument("--no-auto-sync", dest="auto_sync", action="store_false")
    setter.add_argument("--interval-hours", type=int)
    setter.set_defaults(func=cmd_sources_set)

    harvest = commands.add_parser("harvest", parents=[common], help="harvest sources into their mind")
    harvest.add_argument("names", nargs="*", help="sources to harvest (default: all in the workspace)")
    harvest.add_argument("--due", action="store_true", help="only auto-sync sources whose interval elapsed")
    harvest.add_argument("--force", action="store_true", help="scan even if the files look unchanged")
    harvest.add_argument(
        "--prune", action="store_true", help="delete frames of messages gone from the source"
    )
    harvest.add_argument(
        "--prune-allow-mass-delete",
        action="store_true",
        help="let --prune delete when the scan found nothing or more than half of the source's frames are gone",
    )
    harvest.add_argument("--all-workspaces", action="store_true")
    harvest.set_defaults(func=cmd_harvest)

    stats = commands.add_parser("stats", parents=[common], help="counts per mind")
    stats.add_argument(
        "--all-workspaces", action="store_true", help="every mind in the home, personal included"
    )
    stats.set_defaults(func=cmd_stats)

    doctor = commands.add_parser("doctor", parents=[common], help="check (and repair) the indexes")
    doctor.add_argument("--repair", action="store_true")
    doctor.set_defaults(func=cmd_doctor)

    commands.add_parser(
        "reindex", parents=[common], help="re-embed every frame with the current embedder"
    ).set_defaults(func=cmd_reindex)

    compact = commands.add_parser(
        "compact", parents=[common], help="prune old temporary frames, fold P-frames"
    )
    compact.add_argument("--max-temp-age-days", type=int, default=30)
    compact.add_argument("--max-deprecated-age-days", type=int, default=90)
    compact.set_defaults(func=cmd_compact)

    axes = argparse.ArgumentParser(add_help=False)
    axes.add_argument("--valid-at", help="what held at this instant (valid time; ISO date/time)")
    axes.add_argument("--known-at", help="as the mind believed it at this instant (transaction time)")
    axes.add_argument("--limit", type=int, default=200)
    kg = commands.add_parser("kg", help="the knowledge graph, on both time axes").add_subparsers(
        dest="action", required=True
    )
    kg_entities = kg.add_parser("entities", parents=[common, axes], help="entities (of one --type)")
    kg_entities.add_argument("--type")
    kg_entities.set_defaults(func=cmd_kg_entities)
    kg_relations = kg.add_parser("relations", parents=[common, axes], help="relations (of one --type)")
    kg_relations.add_argument("--type")
    kg_relations.set_defaults(func=cmd_kg_relations)
    kg_neighbours = kg.add_parser("neighbours", parents=[common, axes], help="an entity's relations")
    kg_neighbours.add_argument("name", nargs="+")
    kg_neighbours.set_defaults(func=cmd_kg_neighbours)

    external = argparse.ArgumentParser(add_help=False)
    external.add_argument(
        "--external-url",
        help="external search service (POST {url}/search; or $MIND_HARVEST_EXTERNAL_URL; "
        "token from $MIND_HARVEST_EXTERNAL_TOKEN)",
    )
    recall = commands.add_parser(
        "recall", parents=[common, external], help="what do I know about X: workspace + personal memory"
    )
    recall.add_argument("query", nargs="+")
    recall.add_argument("--scope", choices=SCOPES, default="all")
    recall.add_argument("--limit", type=int, default=10, help="results per mind (1-100)")
    recall.add_argument("--profile", choices=tuple(SCORING_PROFILES), default="balanced")
    recall.add_argument("--since", help="only memories at or after this ISO date/time")
    recall.add_argument("--until", help="only memories at or before this ISO date/time")
    recall.add_argument("--explain", action="store_true", help="show lane ranks and score parts")
    recall.add_argument("--no-touch", action="store_true", help="do not count this recall as an access")
    recall.add_argument(
        "--tag", action="append", default=[], help="only frames with this tag (repeatable; nested tags match)"
    )
    recall.add_argument("--from", dest="sender", help="only frames whose mail From or author contains this")
    recall.add_argument("--as-of", help="recall as of this instant: memories up to it, recency measured from it")
    recall.add_argument("--source-kind", help="only frames of this plugin (markdown, email, chatgpt ...) or item kind")
    recall.add_argument(
        "--keyword-only", action="store_true", help="full-text lane only: no embedding model is loaded"
    )
    recall.set_defaults(func=cmd_recall)

    serve = commands.add_parser("serve", parents=[common, external], help="HTTP JSON query service")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8787)
    serve.add_argument("--token", help="bearer token (or $MIND_HARVEST_SERVE_TOKEN); required off loopback")
    serve.add_argument(
        "--record-access", action="store_true", help="count recalls as accesses (writes access counts)"
    )
    serve.set_defaults(func=cmd_serve)

    commands.add_parser("mcp", parents=[common, external], help="MCP server over stdio").set_defaults(
        func=cmd_mcp
    )
    snap = commands.add_parser("snapshot", parents=[common], help="export minds to Parquet for analysts")
    snap.add_argument("--all-workspaces", action="store_true", help="every mind in the home, personal included")
    snap.add_argument("--root", help="snapshot folder (default: <MIND_HOME>/snapshots)")
    snap.add_argument("--date", help="snapshot date YYYY-MM-DD (default: today, UTC); re-running replaces it")
    snap.add_argument("--embeddings", action="store_true", help="include the frame vectors")
    snap.set_defaults(func=cmd_snapshot)

    from mind_core.analytics import OUTPUT_FORMATS, QUERIES

    analytics_common = argparse.ArgumentParser(add_help=False, parents=[common])
    analytics_common.add_argument("--root", help="snapshot folder (default: <MIND_HOME>/snapshots)")
    analytics = commands.add_parser("analytics", help="query the Parquet snapshots with DuckDB").add_subparsers(
        dest="action", required=True
    )
    analytics.add_parser("list", parents=[common], help="the named queries").set_defaults(func=cmd_analytics_list)
    run = analytics.add_parser("run", parents=[analytics_common], help="run a named query")
    run.add_argument("name", choices=sorted(QUERIES))
    run.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="e.g. limit=5")
    run.add_argument("--format", choices=OUTPUT_FORMATS, default="table")
    run.set_defaults(func=cmd_analytics_query)
    sql = analytics.add_parser("sql", parents=[analytics_common], help="any SQL over the snapshot views")
    sql.add_argument("query")
    sql.add_argument("--format", choices=OUTPUT_FORMATS, default="table")
    sql.set_defaults(func=cmd_analytics_query)
    report = analytics.add_parser("report", parents=[analytics_common], help="PNG charts and index.html")
    report.add_argument("--out", required=True, help="folder for the report")
    report.set_defaults(func=cmd_analytics_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except (InvalidInputError, NotFoundError, LookupError) as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except MindError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # output piped into `head` and friends
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stop the interpreter's flush from failing again
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
