"""Looking after a mind: ``stats``, ``doctor``, ``reindex``, ``compact``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from mind_core.cli.base import (
    ALL_WORKSPACES_OPTION,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_PROBLEMS,
    CommandArgs,
    common_options,
    common_options_hiding,
    example,
    mind_command,
    no_minds,
    open_mind,
    require_mind,
    selected_workspaces,
)
from mind_core.cli.output import StageProgress, TableView, emit
from mind_core.store.home import MindHome
from mind_core.text_table import rich_table, styled_output


@click.command("stats", epilog=example("mind stats --all-workspaces --json"))
@ALL_WORKSPACES_OPTION
@common_options_hiding("embedder", "quiet")
@mind_command
def stats(args: CommandArgs) -> int:
    """Counts per mind.

    Frames, sessions, entities, relations, vectors and sources.
    Read-only; an unreadable mind (corrupt, not a mind) is listed with its error and makes the
    exit code 1, the others are still counted.
    """
    from mind_core.query.models.service import MindStats
    from mind_core.query.service import QueryService, ServiceConfig

    home = MindHome(args.home)
    if args.all_workspaces and not home.minds():
        raise no_minds(home)
    if not args.all_workspaces:
        require_mind(args)
    service = QueryService(ServiceConfig(home=home, default_workspace=args.workspace))
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
    headers = (*columns, "error") if broken else columns
    emit(args, [m.model_dump() for m in minds], TableView(headers, rows))
    return EXIT_FAILED if broken else EXIT_OK


@click.command("doctor", epilog=example("mind doctor --repair", "mind doctor --all-workspaces", "mind doctor --full"))
@click.option(
    "--repair", is_flag=True, help="Repair what can be repaired (indexes, orphans), then check again."
)
@click.option(
    "--full",
    is_flag=True,
    help="Check every frame and the file's integrity, not only what changed since the last clean check or reconcile.",
)
@ALL_WORKSPACES_OPTION
@common_options_hiding("quiet")
@mind_command
def doctor(args: CommandArgs) -> int:
    """Check (and repair) a mind.

    Checks the full-text and vector indexes, orphans, the embedder's model cache and the
    sources' last harvests, and says whether the mind is encrypted; exit code 3 when problems are
    left unrepaired (in any mind checked). The index checks cover the frames changed since the
    last check that found the mind healthy or the last reconcile (a harvest ends with one): every
    frame the first time, or with --full.
    """
    workspaces = selected_workspaces(args)
    if not workspaces:
        raise no_minds(MindHome(args.home))
    checked = [_checked_mind(args, workspace) for workspace in workspaces]
    if args.json:
        emit(args, [c.data for c in checked] if args.all_workspaces else checked[0].data)
    elif not styled_output():
        emit(args, None, "\n\n".join(c.plain() for c in checked))
    else:
        for c in checked:
            Console().print(c.panel())
    return EXIT_OK if all(c.healthy for c in checked) else EXIT_PROBLEMS


@dataclasses.dataclass
class DoctorCheck:
    """What ``mind doctor`` found in one mind, as JSON, plain lines and a rich panel."""

    workspace: str
    data: dict[str, Any]
    checks: list[tuple[str, str]]
    source_problems: list[Any]
    status: str
    repaired: str | None
    healthy: bool

    @classmethod
    def broken(cls, workspace: str, exc: Exception) -> DoctorCheck:
        reason = f"cannot open this mind: {exc}"
        return cls(
            workspace=workspace,
            data={"workspace": workspace, "ok": False, "problems": ["unreadable"], "error": reason},
            checks=[("mind", reason), ("onnx cache", "not checked")],
            source_problems=[],
            status="problems: unreadable",
            repaired=None,
            healthy=False,
        )

    def plain(self) -> str:
        lines = [f"workspace: {self.workspace}"]
        lines += [f"{check}: {value}" for check, value in self.checks if check != "onnx cache"]
        if self.source_problems:
            lines.append("sources:\n" + "\n".join(f"  {p}" for p in self.source_problems))
        lines.append(f"onnx cache: {dict(self.checks)['onnx cache']}")
        lines.append(f"status: {self.status}")
        if self.repaired:
            lines.append(f"repaired: {self.repaired}")
        return "\n".join(lines)

    def panel(self) -> Panel:
        table = rich_table(("check", "result"), self.checks)
        for problem in self.source_problems:
            table.add_row("source", Text(str(problem), style="red"))
        if self.repaired:
            table.add_row("repaired", self.repaired)
        colour = "green" if self.status == "ok" else "red"
        return Panel(
            table,
            title=f"mind doctor: {self.workspace}",
            subtitle=f"[{colour}]status: {self.status}[/{colour}]",
            expand=False,
        )


def _checked_mind(args: CommandArgs, workspace: str) -> DoctorCheck:
    """One mind's check; with --all-workspaces a mind that cannot be opened (corrupt, not a
    mind) is reported in its own row and the others are still checked."""
    from mind_core.errors import MindError

    try:
        return _doctor_mind(args, workspace)
    except MindError as exc:
        if not args.all_workspaces:
            raise
        return DoctorCheck.broken(workspace, exc)


def _doctor_mind(args: CommandArgs, workspace: str) -> DoctorCheck:
    from mind_core.harvest.health import source_problems

    with open_mind(args, workspace, write=args.repair, readonly=not args.repair) as mind:
        report = mind.doctor(repair=args.repair, full=args.full)
        sources = source_problems(mind.db)
        onnx_cache = _onnx_cache_status(mind.embedder)
        encryption = encryption_status(mind.db)
    problems = [*report.problems, *(["sources"] if sources else [])]
    scope = "all" if report.full else f"{report.frames_examined:,} changed since the last clean check or reconcile"
    checks = [("frames", f"{report.frames:,}"), ("checked", scope)]
    checks += [(f.check, "ok" if f.ok else f"{f.count:,} ({f.detail})") for f in report.findings]
    checks.append(("encryption", encryption["summary"]))
    checks.append(("onnx cache", status_text(onnx_cache)))
    repaired_line = None
    if report.repaired is not None and report.after is not None:
        repaired = report.repaired
        repaired_line = (
            f"{repaired.fts_fixed:,} full-text rows, {repaired.vectors_fixed:,} vectors, "
            f"{repaired.orphans_removed:,} orphans"
            + (f", ANN index rebuilt ({repaired.ann_rebuilt:,} vectors)" if repaired.ann_rebuilt else "")
            + (f", keyword index rebuilt ({repaired.keyword_index_rebuilt:,} word lists)" if repaired.keyword_index_rebuilt else "")
            + "; after: "
            + ("ok" if report.after.ok else "problems: " + ", ".join(report.after.problems))
        )
    data = {
        "workspace": workspace,
        **report.to_dict(),
        "sources": [p.to_dict() for p in sources],
        "encryption": encryption,
        "onnx_cache": onnx_cache,
    }
    if sources:
        data["ok"], data["problems"] = False, problems
    return DoctorCheck(
        workspace=workspace,
        data=data,
        checks=checks,
        source_problems=sources,
        status="ok" if not problems else "problems: " + ", ".join(problems),
        repaired=repaired_line,
        healthy=report.healthy and not sources,
    )


def encryption_status(db: Any) -> dict[str, Any]:
    """Whether the mind's file is encrypted, where its key came from (never the key) and what
    beside it is not encrypted (the ANN graphs: vectors and frame ids, no text)."""
    from mind_core.search.ann import ann_dir

    folder = ann_dir(db)
    plain_ann = db.encrypted and folder is not None and folder.is_dir()
    if not db.encrypted:
        summary = "no (plain SQLite file; `mind encrypt` encrypts it)"
    else:
        summary = f"yes (SQLCipher, key from {db.key.origin})" + (
            "; the ANN index beside it is not (vectors only)" if plain_ann else ""
        )
    return {
        "encrypted": db.encrypted,
        "key_from": db.key.origin if db.encrypted else None,
        "ann_index_plain": plain_ann,
        "summary": summary,
    }


def status_text(status: dict[str, Any] | str) -> str:
    """A status mapping as one report line: ``key value`` pairs, nested mappings in parentheses."""
    if isinstance(status, str):
        return status
    return ", ".join(f"{key} {_readable(value)}" for key, value in status.items())


def _readable(value: Any) -> str:
    """A nested value as a person reads it (``torch=2.13.0+cpu, onnx=1.19.0``), not as a Python
    repr; ``--json`` keeps the structure."""
    if isinstance(value, dict):
        return "(" + ", ".join(f"{key}={_readable(item)}" for key, item in value.items()) + ")"
    if isinstance(value, list | tuple):
        return ", ".join(_readable(item) for item in value)
    return str(value)


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
        status["state"] += (
            " (rebuilt at the next embedding, or now: python -m mind_core.embeddings.onnx_export)"
        )
    return status


@click.command("reindex", epilog=example("mind reindex --embedder inprocess"))
@common_options
@mind_command
def reindex(args: CommandArgs) -> int:
    """Re-embed every frame with the current embedder.

    Needed after changing the embedding model or provider.
    """
    from mind_core.store.reconcile import reconcile_vec_index

    with (
        open_mind(args, rebuild=True, write=True) as mind,
        StageProgress("reindex", not args.quiet) as progress,
    ):
        count = reconcile_vec_index(
            mind.db, mind.embedder, lambda done, total: progress("vectors", done, total)
        )
    emit(args, {"reembedded": count}, f"re-embedded {count:,} frames")
    return EXIT_OK


@click.command("compact", epilog=example("mind compact --max-temp-age-days 7"))
@click.option(
    "--max-temp-age-days",
    type=int,
    default=30,
    show_default=True,
    help="Prune temporary frames older than this.",
)
@click.option(
    "--max-deprecated-age-days",
    type=int,
    default=90,
    show_default=True,
    help="Prune deprecated frames older than this.",
)
@common_options_hiding("quiet")
@mind_command
def compact(args: CommandArgs) -> int:
    """Prune old frames and fold P-frames.

    Temporary and deprecated frames past their age are pruned, P-frames folded into their
    I-frame, then the indexes are reconciled.
    """
    with open_mind(args, write=True) as mind:
        compacted = mind.frames.compact(args.max_temp_age_days, args.max_deprecated_age_days)
        reconciled = mind.reconcile()
    result = {**dataclasses.asdict(compacted), "reconciled": dataclasses.asdict(reconciled)}
    emit(
        args,
        result,
        f"pruned {compacted.temporary_pruned:,} temporary and {compacted.deprecated_pruned:,} deprecated "
        f"frames, merged {compacted.p_frames_merged:,} P-frames; reindexed {reconciled.fts_fixed:,} "
        f"full-text rows and {reconciled.vectors_fixed:,} vectors, removed {reconciled.orphans_removed:,} orphans"
        + (f", rebuilt the ANN index ({reconciled.ann_rebuilt:,} vectors)" if reconciled.ann_rebuilt else "")
        + (
            f", rebuilt the keyword index ({reconciled.keyword_index_rebuilt:,} word lists)"
            if reconciled.keyword_index_rebuilt
            else ""
        ),
    )
    return EXIT_OK
