"""One harvest of one source: scan → import → cognify → vectors → reconcile.

These are the same functions the Dagster assets call, stage by stage; ``harvest`` runs them all
for the command line. An unchanged source (same file fingerprint as at its last good sync) is
skipped at once, without a scan; a missing, failed, empty or partial one never records its
fingerprint.

A source's ledger belongs to one registration: re-adding a removed name, or pointing a name at
other files, starts a new ledger, so the new files never take over the old files' frames.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.harvest.importer import ImportSummary, Progress, import_items
from mind_core.harvest.items import ScanEvent
from mind_core.harvest.locations import location_exists, plugin_location, source_url, url_name
from mind_core.harvest.outcome import missing_outcome
from mind_core.harvest.ownership import forget_ledger, frames_held
from mind_core.harvest.paths import is_clean, stored_text
from mind_core.harvest.source_files import DEFAULT_RULES, ReadingRules, reading_with, scanned_with
from mind_core.harvest.stores import (
    FAILING_STATUSES,
    INTERRUPTED,
    RETRIED_STATUSES,
    HarvestSource,
    HarvestSourceStore,
)
from mind_core.knowledge.cognify import COGNIFIED_KEY
from mind_core.knowledge.people import resolve_people
from mind_core.knowledge.session_summary import close_harvested_sessions
from mind_core.knowledge.structure_learning import learn_structure
from mind_core.mind import Mind
from mind_core.plugins import CONFIDENT, PLAUSIBLE, get_source, rank_sources, source_kinds
from mind_core.privacy.forget import scrub
from mind_core.privacy.knowledge_redaction import redact_knowledge
from mind_core.privacy.redaction_policy import RedactionPolicy, effective_policy
from mind_core.store import change_log
from mind_core.store.change_log import Changes
from mind_core.store.db import IN_LIST, Database, in_list
from mind_core.store.reconcile import (
    ReconcileResult,
    changes_to_check,
    clean_orphan_fts,
    clean_orphan_vectors,
    reconcile_fts_index,
    reconcile_vec_index,
    record_reconciled,
)
from mind_core.store.schema import get_meta, set_meta

# A harvest reads the mind file without a memory map and with a small page cache
# (``Database.memory_bounds``): the mapped pages of its passes over the file counted in its
# resident memory (about 290 MB at 40,000 messages, up to the map's 1 GiB), and SQLite's memory grew
# past the 64 MiB cache with the source (155 MB after 20,000 messages' cognify, 8 MB with this
# cache, in less CPU time). The kernel's page cache still holds the file.
HARVEST_MMAP_BYTES = 0
HARVEST_CACHE_KIB = 8_192
# the file name every export of a kind has, so it names no export: its folder does
EXPORT_FILE_NAMES = frozenset({"conversations.json"})
_SOURCE_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
NO_REDACTION = RedactionPolicy()
# The sources fed by ingest (``mind_core.harvest.ingest``) are named ``ingest:<surface>``: a ':' no
# registered source name may hold, so they never clash with one, and a harvest passes them over.
INGEST_SOURCE_PREFIX = "ingest:"


def validate_source_name(name: str) -> str:
    if not name or len(name) > 64 or not set(name) <= _SOURCE_NAME_CHARS or name.startswith("."):
        raise InvalidInputError(
            f"invalid source name {name!r}: use 1-64 letters, digits, '-', '_' or '.' (not starting with '.')"
        )
    return name


def default_source_name(path: Path | str, kind: str) -> str:
    """The name of a source added without ``--name``: the last part of its path, a file's
    extension dropped, in lower case, accents dropped and every run of other characters than
    letters, digits, ``_`` and ``-`` as one ``-`` (``~/Downloads/chatgpt-export.zip`` ->
    ``chatgpt-export``, ``~/Mail/Work Inbox.mbox`` -> ``work-inbox``; a ChatGPT or Claude
    ``conversations.json`` by its folder; a URL by ``url_name``); the kind when nothing is left."""
    if isinstance(path, str):
        stem = url_name(path)
    elif path.is_file() and path.name.lower() in EXPORT_FILE_NAMES:
        stem = path.parent.name  # every export's file has this name: its folder tells them apart
    else:
        stem = path.stem if path.is_file() else path.name
    ascii_stem = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9_-]+", "-", ascii_stem.lower())[:64].strip("-_")
    return slug or kind


def shown_path(typed: str | Path, resolved: Path | str) -> str:
    """A path as the user typed it, for messages, the resolved path added in parentheses when it
    differs (a symlink, a relative path): a message names what its reader recognises."""
    typed_text = stored_text(typed)
    resolved_text = stored_text(resolved)
    return typed_text if typed_text == resolved_text else f"{typed_text} ({resolved_text})"


def resolve_source_path(path: str | Path) -> Path | str:
    """The absolute path of an existing source, or a URL kept as a URL (``locations``); a path
    that is not valid UTF-8 is refused (the registry stores text; files below it may have any
    name), with the name shown readably."""
    url = source_url(path)
    if url is not None:
        return url
    resolved = Path(path).expanduser().resolve()
    if not resolved.exists():
        raise InvalidInputError(f"source path does not exist: {shown_path(path, resolved)}")
    if not is_clean(str(resolved)):
        raise InvalidInputError(
            f"source path is not valid UTF-8: {shown_path(path, resolved)}; rename it or register a folder above it"
        )
    return resolved


def choose_kind(path: Path | str, kind: str | None, *, kind_anyway: bool = False, shown: str | None = None) -> str:
    """The kind of a source: detected when not given; a given kind that a confident detection of
    another kind contradicts is refused unless ``kind_anyway``. ``shown``: the path as messages
    name it (``shown_path``)."""
    shown = str(path) if shown is None else shown
    if kind is not None:
        get_source(kind)  # UnknownSourceError lists the known kinds
    ranked = rank_sources(path)
    if kind is None:
        if ranked and ranked[0].confidence >= PLAUSIBLE:
            return ranked[0].kind
        raise InvalidInputError(
            f"cannot tell what {shown} holds; give its kind: mind sources add PATH --kind KIND "
            f"(known kinds: {', '.join(source_kinds())})"
        )
    if kind_anyway or not ranked:
        return kind
    best = ranked[0]
    own = max((d.confidence for d in ranked if d.kind == kind), default=0.0)
    if best.kind != kind and best.confident and own < CONFIDENT:
        article = "an" if best.display_name[:1].lower() in "aeiou" else "a"
        raise InvalidInputError(
            f"{shown} looks like {article} {best.display_name}, not {kind}; pass --kind-anyway to insist"
        )
    return kind


@dataclass(frozen=True)
class SourcePlan:
    """What a registration will record, checked before any mind is touched: the resolved path,
    the kind (given or detected) and the name (given or derived); ``shown``: the path as
    messages name it (as typed, the resolved path in parentheses when it differs). ``path`` is a
    ``str`` for a URL source (``locations``)."""

    path: Path | str
    kind: str
    name: str
    derived: bool
    shown: str


def plan_source(
    kind: str | None, path: str | Path, name: str | None = None, *, kind_anyway: bool = False
) -> SourcePlan:
    """The registration of ``path``, or the input error that refuses it: a command can refuse
    a bad path, kind or name before it opens (and so creates) a mind."""
    resolved = resolve_source_path(path)
    shown = shown_path(path, resolved)
    kind = choose_kind(resolved, kind, kind_anyway=kind_anyway, shown=shown)
    derived = name is None
    name = validate_source_name(default_source_name(resolved, kind) if name is None else name)
    return SourcePlan(resolved, kind, name, derived, shown)


def register_source(
    mind: Mind,
    kind: str | None,
    path: str | Path,
    name: str | None = None,
    *,
    auto_sync: bool = False,
    interval_hours: int | None = None,
    replace: bool = False,
    kind_anyway: bool = False,
    rules: ReadingRules | None = None,
) -> HarvestSource:
    """Add a source to this mind's registry (``kind`` None: detected from the path; ``name``
    None: ``default_source_name``).

    Adding a name that exists with the same kind and path changes nothing; with another kind or
    path it is refused unless ``replace``, which starts the source's ledger over (its old frames
    stay in the mind, no longer tracked).
    """
    plan = plan_source(kind, path, name, kind_anyway=kind_anyway)
    return register_planned(
        mind, plan, auto_sync=auto_sync, interval_hours=interval_hours, replace=replace, rules=rules
    )


def register_planned(
    mind: Mind,
    plan: SourcePlan,
    *,
    auto_sync: bool = False,
    interval_hours: int | None = None,
    replace: bool = False,
    rules: ReadingRules | None = None,
) -> HarvestSource:
    """``register_source`` for a registration ``plan_source`` already checked; ``rules``: how its
    files may be read (None: unchanged, the defaults for a new source)."""
    resolved, kind, name, derived = plan.path, plan.kind, plan.name, plan.derived
    plugin = get_source(kind)
    store = HarvestSourceStore(mind.db)
    existing = store.get_by_source(name)
    same = existing is not None and existing.kind == kind and existing.source_path == str(resolved)
    derived_from = resolved if isinstance(resolved, str) else resolved.name
    if existing is not None and not same and not replace and derived:
        raise InvalidInputError(
            f"a source named {name!r} (the name derived from {derived_from!r}) already exists "
            f"({existing.kind} at {existing.source_path}); give this one its own name with --name NAME, "
            f"or pass --replace to point {name!r} at {plan.shown} (its ledger starts over)"
        )
    if existing is not None and not same and not replace:
        raise InvalidInputError(
            f"a source named {name!r} already exists ({existing.kind} at {existing.source_path}); "
            f"pass --replace to point it at {plan.shown} (its ledger starts over), or choose another --name"
        )
    with mind.db.transaction():
        if existing is None or not same:
            forget_ledger(mind.db, name)  # a name's old ledger never claims new files' messages
        if existing is not None and not same:
            mind.db.execute(
                "UPDATE harvest_sources SET kind = ?, source_path = ?, display_name = ? WHERE source = ?",
                (kind, str(resolved), plugin.display_name, name),
            )
            store.renew_identity(name)
        else:
            store.upsert(name, plugin.display_name, str(resolved), kind)
        if auto_sync or interval_hours is not None:
            store.set_auto_sync(name, auto_sync, interval_hours)
        if rules is not None:
            store.set_reading_rules(name, rules)
    return store.get_by_source(name)  # type: ignore[return-value]


def existing_registration(mind: Mind, plan: SourcePlan) -> HarvestSource | None:
    """The source ``plan`` is already registered as: the same kind at the same path, under the
    plan's name or, when the name was derived, under any name (adding a path again changes
    nothing, whatever name it was first given)."""
    same = [
        s
        for s in HarvestSourceStore(mind.db).get_all()
        if s.kind == plan.kind and s.source_path == str(plan.path)
    ]
    named = [s for s in same if s.source == plan.name]
    return named[0] if named else same[0] if same and plan.derived else None


def sources_reading_the_same_files(mind: Mind, plan: SourcePlan) -> list[tuple[HarvestSource, str]]:
    """The other sources that read files ``plan`` reads, each with how: the same path, or (of the
    same kind) a folder around or inside it. Allowed, but both scan those files and their frames
    are shared, not copied, so the user is told."""
    found = []
    for source in HarvestSourceStore(mind.db).get_all():
        if source.source == plan.name or not source.source_path:
            continue
        if source.source_path == str(plan.path):
            found.append((source, "reads the same path"))
            continue
        if isinstance(plan.path, str) or source_url(source.source_path):
            continue  # a URL is one page: nothing lies around or inside it
        theirs = Path(source.source_path)
        if source.kind == plan.kind and plan.path.is_relative_to(theirs):
            found.append((source, f"reads {stored_text(theirs)}, a folder around this path"))
        elif source.kind == plan.kind and theirs.is_relative_to(plan.path):
            found.append((source, f"reads {stored_text(theirs)}, which lies inside this path"))
    return found


def remove_source(mind: Mind, name: str) -> bool:
    """Unregister a source: its frames stay in the mind, its ledger goes (frames other sources
    hold are handed to them), so the name can later be added afresh."""
    with mind.db.transaction():
        forget_ledger(mind.db, name)
        return HarvestSourceStore(mind.db).remove(name)


def get_registered(mind: Mind, name: str, where: str = "this mind") -> HarvestSource:
    """The registered source ``name``; ``where`` names the mind in the error (``workspace 'team'``)."""
    source = HarvestSourceStore(mind.db).get_by_source(name)
    if source is None:
        known = ", ".join(s.source for s in HarvestSourceStore(mind.db).get_all()) or "none"
        raise NotFoundError(f"no source named {name!r} in {where} (registered: {known})")
    if not source.kind or not source.source_path:
        raise InvalidInputError(f"source {name!r} has no kind or path; re-add it with `mind sources add`")
    return source


def source_fingerprint(
    source: HarvestSource, rules: ReadingRules = DEFAULT_RULES, redaction: RedactionPolicy = NO_REDACTION
) -> str:
    """The plugin's fingerprint of the source's files, with the mark of the redaction policy it is
    harvested under: a new policy makes an unchanged source look changed, so it is read again."""
    with reading_with(rules):
        files = get_source(source.kind).fingerprint(plugin_location(source.source_path))  # type: ignore[arg-type]
    return files + rules.exclusion_mark + redaction.mark


def scan_source(
    source: HarvestSource, rules: ReadingRules = DEFAULT_RULES, excluded: set[str] | None = None
) -> Iterator[ScanEvent]:
    """The plugin's scan of the source, its files read under the source's ``rules`` (the paths of
    the files they exclude collected in ``excluded``)."""
    events = get_source(source.kind).scan(plugin_location(source.source_path))  # type: ignore[arg-type]
    return scanned_with(events, rules, excluded)


class _TimedScan:
    """Wraps a scan so the time spent parsing is measured apart from the time spent writing."""

    def __init__(self, events: Iterator[ScanEvent]) -> None:
        self.events = events
        self.seconds = 0.0

    def __iter__(self) -> Iterator[ScanEvent]:
        while True:
            began = time.perf_counter()
            try:
                event = next(self.events)
            except StopIteration:
                self.seconds += time.perf_counter() - began
                return
            self.seconds += time.perf_counter() - began
            yield event


@dataclass
class HarvestReport:
    source: str
    kind: str | None
    status: str | None = None  # skipped, or the source's outcome: ok / partial / failed / empty / missing
    skipped: bool = False
    reason: str | None = None
    imported: ImportSummary | None = None
    cognified: dict[str, Any] = field(default_factory=dict)
    vectors_written: int = 0
    reconciled: ReconcileResult = field(default_factory=ReconcileResult)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    frames_held: int | None = None  # the frames the source holds after this harvest (also when skipped)
    # frames rewritten under a new redaction policy: their old text was scrubbed from the files
    # (True), or could not all be (False: a reader held the WAL); None: nothing to scrub
    scrubbed: bool | None = None
    excluded_files: int = 0  # files the source's exclusions (--exclude) passed over, unread

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kind": self.kind,
            "status": self.status,
            "skipped": self.skipped,
            "reason": self.reason,
            "imported": self.imported.to_dict() if self.imported else None,
            "cognified": self.cognified,
            "vectors_written": self.vectors_written,
            "reconciled": asdict(self.reconciled),
            "stage_seconds": self.stage_seconds,
            "frames_held": self.frames_held,
            "scrubbed": self.scrubbed,
            "excluded_files": self.excluded_files,
        }


def cognify_frames(
    mind: Mind, frame_ids: list[int], source: str | None = None, progress: Progress | None = None
) -> dict[str, Any]:
    """Entities, relations and entity-frame links for these frames (and their vectors); with
    ``source``, also what the source's structure states (``mind_core.knowledge.structure``; idempotent, so
    it runs even when no frame is pending), counted as ``structure_entities`` /
    ``structure_relations`` created, then the person mentions that name a known person merged
    into it (``mind_core.knowledge.people``), counted as ``people_merged``. Last, the facts that
    lost their last evidence (frames a prune deleted) are ended, counted as ``entities_ended`` /
    ``relations_ended``."""
    result: dict[str, Any] = (
        dict(mind.cognify.cognify_batch(frame_ids, progress=progress))
        if frame_ids else {"processed": 0, "entities": 0, "relations": 0}
    )
    if source is not None:  # also with nothing pending: a crash may have come between the two steps
        learned = learn_structure(mind.db, mind.knowledge, source)
        result["structure_entities"] = learned["entities"]
        result["structure_relations"] = learned["relations"]
        result["people_merged"] = len(resolve_people(mind.db, mind.knowledge))
    # after the new frames' knowledge, so a fact restated by a new frame (a renamed section) stays
    ended = mind.knowledge.end_facts_without_evidence()
    result["entities_ended"], result["relations_ended"] = ended["entities"], ended["relations"]
    return result


COGNIFY_PASS = "cognify:"  # + the source's name: the change-log watermark of its last complete cognify


def pending_cognify_ids(mind: Mind, source: str | None = None) -> list[int]:
    """Frames (of one harvest source, or all) whose knowledge was never extracted from their
    current content: new and changed frames, and those a crash left behind. For a source whose
    last cognify completed (``cognify_source``), only the frames changed since are looked at
    (the change log, ``mind_core.store.change_log``), not every frame of the mind."""
    where = "json_extract(metadata, '$.provenance.source') = ? AND " if source else ""
    params: list[Any] = [source] if source else []
    changes = change_log.changes_since(mind.db, change_log.watermark(mind.db, COGNIFY_PASS + source)) if source else None
    if changes is not None:
        where = f"id IN ({IN_LIST}) AND " + where
        params.insert(0, in_list(changes.frames))
    rows = mind.db.query(
        f"SELECT id FROM memory_frames WHERE {where}"
        f"(json_extract(metadata, '$.{COGNIFIED_KEY}') IS NULL "
        f"OR json_extract(metadata, '$.{COGNIFIED_KEY}') != content_hash) ORDER BY id",
        params,
    )
    return [row[0] for row in rows]


def cognify_source(mind: Mind, source: str, progress: Progress | None = None) -> tuple[dict[str, Any], int]:
    """Cognify the source's pending frames (``cognify_frames``), close their sessions (counted
    as ``sessions_closed``), then record how far into the mind's changes this reached, so the
    next time looks only beyond it. Returns the counts and how many frames were pending."""
    through = change_log.position(mind.db)  # read first: whatever changes meanwhile lies beyond it
    pending = pending_cognify_ids(mind, source)
    result = cognify_frames(mind, pending, source, progress)
    result["sessions_closed"] = close_harvested_sessions(mind.db, source, pending)
    if change_log.enabled(mind.db):
        with mind.db.transaction():
            change_log.set_watermark(mind.db, COGNIFY_PASS + source, through)
    return result, len(pending)


def index_vectors(mind: Mind, progress: Progress | None = None, changes: Changes | None = None) -> int:
    """Embed every frame that has no vector or a stale one (new, changed, or left by a crash):
    among ``changes`` when given (what changed since the last reconcile, crashes included)."""
    if mind.embedder is None:
        return 0
    return reconcile_vec_index(mind.db, mind.embedder, progress, changes)


def reconcile_after_harvest(mind: Mind, changes: Changes | None = None) -> ReconcileResult:
    """The full-text index and orphan sweeps (of ``changes`` when given).

    The ANN graph of a large mind is not built or loaded here: it is held in memory whole
    (O(frames): 2 bytes a value, plus its links), which would make the harvest's peak memory grow
    with the mind. Its change log records the harvest's vectors, which searches apply until the
    next reconcile (``mind doctor --repair``, the daily upkeep) folds them in or builds the graph;
    a search finding no usable graph takes the pre-scan (``mind_core.search.ann``)."""
    return ReconcileResult(
        fts_fixed=reconcile_fts_index(mind.db, changes),
        orphans_removed=clean_orphan_fts(mind.db, changes) + clean_orphan_vectors(mind.db, changes),
        full=changes is None,
        frames_examined=len(changes.frames) + len(changes.chunks) if changes is not None else 0,
    )


def complete_harvest(mind: Mind, name: str, fingerprint: str) -> bool:
    """Record the fingerprint the source was harvested at, unless its last import failed, found
    nothing or lost records (then the next harvest scans it again). Returns whether it was recorded."""
    source = HarvestSourceStore(mind.db).get_by_source(name)
    if source is None or source.last_status in RETRIED_STATUSES:
        return False
    HarvestSourceStore(mind.db).record_sync(name, 0, 0, fingerprint=fingerprint)
    return True


UNFINISHED = (
    "the harvest stopped after its import, before its entities, vectors and index were complete; "
    "the next `mind harvest` finishes it"
)


def harvest(
    mind: Mind,
    name: str,
    *,
    force: bool = False,
    prune: bool = False,
    allow_mass_delete: bool = False,
    cognify: bool = True,
    progress: Callable[[str, int, int | None], None] | None = None,
) -> HarvestReport:
    """Harvest one registered source into this mind, end to end.

    A prune always scans (an unchanged fingerprint says nothing about what the ledger still holds).
    An ingest source has no files: it is skipped, with its frames counted.

    Every stage works in bounded batches, and the mind file is read through bounded memory
    (``HARVEST_MMAP_BYTES``, ``HARVEST_CACHE_KIB``).
    """
    with mind.db.memory_bounds(HARVEST_MMAP_BYTES, HARVEST_CACHE_KIB):
        return _harvest(mind, name, force, prune, allow_mass_delete, cognify, progress)


def _harvest(
    mind: Mind,
    name: str,
    force: bool,
    prune: bool,
    allow_mass_delete: bool,
    cognify: bool,
    progress: Callable[[str, int, int | None], None] | None,
) -> HarvestReport:
    ingested = HarvestSourceStore(mind.db).get_by_source(name) if name.startswith(INGEST_SOURCE_PREFIX) else None
    if ingested is not None:
        reason = "fed by ingest (POST /ingest, MCP ingest_items): no files to scan"
        return HarvestReport(name, ingested.kind, "skipped", True, reason, frames_held=frames_held(mind.db, name))
    source = get_registered(mind, name)
    report = HarvestReport(source=name, kind=source.kind)
    if not location_exists(source.source_path):  # type: ignore[arg-type]
        outcome = missing_outcome(source.source_path, frames_held(mind.db, name))  # type: ignore[arg-type]
        with mind.db.transaction():
            HarvestSourceStore(mind.db).record_outcome(name, outcome)
        report.status, report.reason, report.frames_held = outcome.status, outcome.reason, outcome.frames
        return report
    rules = HarvestSourceStore(mind.db).reading_rules(name)
    began = time.perf_counter()
    policy = effective_policy(mind.db, name)
    fingerprint = source_fingerprint(source, rules, policy)
    report.stage_seconds["fingerprint"] = time.perf_counter() - began
    if not force and not prune and fingerprint == source.last_fingerprint:
        report.status = "skipped"
        report.skipped, report.reason = True, "unchanged since the last sync (same file fingerprint and redaction policy)"
        report.frames_held = frames_held(mind.db, name)
        return report

    def stage_progress(stage: str) -> Progress | None:
        return None if progress is None else (lambda done, total: progress(stage, done, total))

    excluded: set[str] = set()
    scan = _TimedScan(scan_source(source, rules, excluded))
    began = time.perf_counter()
    report.imported = import_items(
        mind,
        name,
        scan,
        kind=source.kind,  # type: ignore[arg-type]
        prune=prune,
        allow_mass_delete=allow_mass_delete,
        progress=stage_progress("import"),
    )
    report.status, report.reason = report.imported.status, report.imported.status_reason
    report.excluded_files = len(excluded)
    if report.status not in FAILING_STATUSES:  # until the index and vectors are complete too
        with mind.db.transaction():
            HarvestSourceStore(mind.db).set_status(name, INTERRUPTED, UNFINISHED)
    report.stage_seconds["scan"] = scan.seconds
    report.stage_seconds["import"] = time.perf_counter() - began - scan.seconds

    began = time.perf_counter()
    if cognify:
        report.cognified = cognify_source(mind, name, stage_progress("cognify"))[0]
    report.stage_seconds["cognify"] = time.perf_counter() - began

    began = time.perf_counter()
    # what changed since the last reconcile (this harvest's frames, and whatever a crash left):
    # the vectors and the index sweeps below look at those, not at every frame of the mind
    changes, reconciled_through = changes_to_check(mind.db, change_log.RECONCILE, full=False)
    # cognify embeds the frames it processed; this stage embeds any other frame left without one
    report.vectors_written = int(report.cognified.get("vectors", 0)) + index_vectors(
        mind, stage_progress("vectors"), changes
    )
    report.stage_seconds["vectors"] = time.perf_counter() - began

    began = time.perf_counter()
    report.reconciled = reconcile_after_harvest(mind, changes)
    if mind.embedder is not None:  # a reconcile's whole work, done: the next one starts from here
        record_reconciled(mind.db, reconciled_through)
    report.stage_seconds["reconcile"] = time.perf_counter() - began
    if report.status not in FAILING_STATUSES:
        with mind.db.transaction():
            HarvestSourceStore(mind.db).set_status(name, report.status, report.reason)  # type: ignore[arg-type]
    complete_harvest(mind, name, fingerprint)
    report.scrubbed = settle_redaction(mind, source, policy, bool(report.imported.frames_updated))
    report.frames_held = frames_held(mind.db, name)
    return report


APPLIED_REDACTION_KEY = "harvest_source_redaction_applied:"  # + the source: the policy mark its frames hold


def applied_redaction(db: Database, source: HarvestSource) -> str | None:
    """The mark (``RedactionPolicy.mark``) of the policy the source's frames were last stored
    under: recorded by every harvest, even a ``partial`` one (which records no fingerprint);
    for a mind harvested before that record, read off its last fingerprint; None when unknown."""
    recorded = get_meta(db, APPLIED_REDACTION_KEY + source.source)
    if recorded is not None:
        return recorded
    if source.last_fingerprint is not None:
        _, found, digest = source.last_fingerprint.rpartition("|redaction:")
        return f"|redaction:{digest}" if found else ""
    return None


def newly_redacting(previous: str | None, policy: RedactionPolicy, harvested_before: bool = True) -> bool:
    """Whether a harvest under ``policy`` redacts what the source's frames held before (stored
    under the policy of mark ``previous``; None: unknown, so assumed unredacted when the source
    was harvested before)."""
    if not policy.active:
        return False
    return previous != policy.mark if previous is not None else harvested_before


def settle_redaction(
    mind: Mind, source: HarvestSource, policy: RedactionPolicy, frames_rewritten: bool = True
) -> bool | None:
    """After a source's harvest (``source`` as registered before it): when its policy newly
    redacts, what its frames taught the knowledge graph and the summaries is brought to the
    policy and the earlier text scrubbed from the files (``scrub_superseded``); then the policy
    is recorded as applied. Returns whether the scrub finished (None: no scrub)."""
    scrubbed = None
    if newly_redacting(applied_redaction(mind.db, source), policy, source.last_harvest_at is not None):
        scrubbed = scrub_superseded(mind, source.source, frames_rewritten)
    with mind.db.transaction():
        set_meta(mind.db, APPLIED_REDACTION_KEY + source.source, policy.mark)
    return scrubbed


def scrub_superseded(mind: Mind, source: str, frames_rewritten: bool = True) -> bool | None:
    """After a harvest under a new redaction policy: what the source's frames taught the
    knowledge graph and the session summaries brought to the policy too
    (``mind_core.privacy.knowledge_redaction``), then, when anything was rewritten, the earlier
    text made unrecoverable from the mind's files (FTS segments merged, file vacuumed, WAL
    truncated: ``mind_core.privacy.forget.scrub``). False when another reader kept the WAL from
    truncating; None when nothing was rewritten."""
    superseded = _superseded_frames(mind.db, source)
    for frame_id in superseded:
        mind.frames.delete(frame_id)
    rewritten = redact_knowledge(mind.db, source, effective_policy(mind.db, source))
    if not frames_rewritten and not superseded and not any(rewritten.values()):
        return None
    return not scrub(mind.db)["wal_busy"]


def _superseded_frames(db: Database, source: str) -> list[int]:
    """The source's message frames no ledger row holds any more: a frame two of its messages
    shared (one mail in two files) is not rewritten in place; each gets the redacted frame, and
    the old one, with the old text, is left to nobody."""
    rows = db.query(
        "SELECT id FROM memory_frames m WHERE frame_type = 'I' AND json_valid(metadata)"
        " AND json_extract(metadata, '$.provenance.source') = ?"
        " AND NOT EXISTS (SELECT 1 FROM harvest_ledger l WHERE l.frame_id = m.id)",
        (source,),
    )
    return [row[0] for row in rows]


def due_sources(mind: Mind) -> list[HarvestSource]:
    """Auto-sync sources whose interval has elapsed."""
    return HarvestSourceStore(mind.db).get_stale()
