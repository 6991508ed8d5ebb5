"""The assets: a harvest source's way from its files to searchable memory, and the minds' upkeep.

Per harvest source (partition ``<workspace>/<source>``)::

    harvest_items ──▶ iframe_imports ──▶ cognified_frames ──▶ staged_vectors ──▶ vector_index
    (scan → Parquet)   (I-frames, ledger)  (entities, relations) (chunks embedded) (vectors loaded)

``harvest_items`` and the chunk steps of ``staged_vectors`` are stateless: they read the source's
files or staged texts and write the staging store (an fsspec URL), never a mind, so they run on
any worker; the steps that open a mind run on its home node (``mind_harvest.pipelines.routing`` tags every
step with its queue). ``staged_vectors`` is a graph: ``plan_vector_chunks`` (home: stages the
texts of frames that need a vector) ─▶ ``embed_vector_chunk`` × chunks (any worker, retried)
─▶ ``collect_vector_chunks``.

Per mind (partition ``<workspace>``): ``reconciled_indexes`` ──▶ ``compacted_frames``; per day
(partition ``YYYY-MM-DD``): ``memory_snapshots`` of every mind, for analysts. Every asset is a thin
call into ``mind_core``. One writer per mind: the run queue lets one run per mind tag be in
progress (``pipelines/dagster.yaml``), and every step that writes a mind holds its OS write lock,
which also covers runs launched without the tag (asset backfills, automation) and the command line.

An unchanged source (same file fingerprint as at its last complete harvest) is not scanned and
``harvest_items`` records no materialization (an observation says why), so nothing downstream
runs and nothing is written or embedded. The fingerprint is recorded by ``vector_index`` only when
the whole chain ran in the same run and the import succeeded (not failed or empty), so a harvest
cut short or a source that found nothing is tried again by the next one.
"""

import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import dagster as dg
from mind_harvest.pipelines.chain import CHAIN, never_materialized
from mind_harvest.pipelines.check_results import SOURCE_PARSED, source_parsed_result
from mind_harvest.pipelines.failed_sources import RUN_LABEL, record_failed_scan
from mind_harvest.pipelines.metadata import (
    FRAMES_SHOWN,
    errors_table,
    frames_preview,
    mind_totals,
    rate,
    redaction_metadata,
)
from mind_harvest.pipelines.partitions import (
    harvest_sources,
    mind_workspaces,
    parse_source_partition_key,
    snapshot_days,
)
from mind_harvest.pipelines.progress import progress_log
from mind_harvest.pipelines.resources import (
    EmbedderResource,
    MindHomeResource,
    PluginManagerResource,
    ScanTarget,
)
from mind_harvest.pipelines.routing import WRITE_POOL, stateless_step, writing_step

from mind_core.analytics.queries import Analytics
from mind_core.analytics.report import write_report
from mind_core.analytics.snapshot import SnapshotDestinationError, write_snapshot
from mind_core.embeddings import Embedder
from mind_core.harvest.audit import index_gaps
from mind_core.harvest.importer import import_items
from mind_core.harvest.locations import location_exists
from mind_core.harvest.outcome import SOURCE_MISSING_LABEL, staged_outcome
from mind_core.harvest.pipeline import (
    cognify_source,
    complete_harvest,
    get_registered,
    settle_redaction,
)
from mind_core.harvest.scan_redaction import redacted_scan
from mind_core.harvest.source_files import ReadingRules
from mind_core.harvest.staged_vectors import (
    DEFAULT_CHUNK_TEXTS,
    embed_chunk,
    load_vectors,
    stage_pending_texts,
    staged_chunks,
)
from mind_core.harvest.staging import read_staged, stage_scan, staged_scan_info
from mind_core.harvest.staging_store import StagingStoreError
from mind_core.mind import Mind
from mind_core.privacy.redaction import Redactor
from mind_core.privacy.redaction_policy import RedactionPolicy, effective_policy
from mind_core.search.vector_index import meta_fingerprint
from mind_core.store.write_lock import mind_write_lock

HARVEST_GROUP = "harvest"
MIND_GROUP = "mind_upkeep"
ANALYTICS_GROUP = "analytics"
REPORTS_DIR = "reports"

# Downstream harvest assets follow their upstream: when it updates (and its blocking checks pass),
# they are requested for the same partition by the automation condition sensor.
FOLLOW_UPSTREAM = dg.AutomationCondition.eager() & dg.AutomationCondition.all_deps_blocking_checks_passed()


class HarvestItemsConfig(dg.Config):
    force: bool = False  # scan even when the source's files look unchanged since the last harvest
    prune: bool = False  # delete the frames of items the source no longer holds (always scans)
    prune_allow_mass_delete: bool = False  # let a prune delete more than half of the source's frames
    # The source as registered when the run was made (the harvest job fills these in on the home
    # node, pipelines/jobs.py), so the scan opens no mind and runs on any worker. Unset (a run made
    # from the asset graph): read from the mind's registry, which needs the minds' folder.
    kind: str | None = None
    source_path: str | None = None
    last_fingerprint: str | None = None
    max_file_bytes: int | None = None  # the source's reading rules (None: the default limits)
    follow_outside_links: bool = False
    exclude: list[str] = []  # its files never read (``mind sources add --exclude GLOB``)
    redact: list[str] = []  # the kinds its redaction policy redacts (``mind redaction``)

    def scan_target(self, source: str) -> ScanTarget | None:
        if self.kind is None or self.source_path is None:
            return None
        rules = ReadingRules(self.max_file_bytes, self.follow_outside_links, tuple(self.exclude))
        redaction = RedactionPolicy.parse(self.redact)
        return ScanTarget(source, self.kind, self.source_path, self.last_fingerprint, rules, redaction)


class VectorChunksConfig(dg.Config):
    chunk_texts: int = DEFAULT_CHUNK_TEXTS  # texts per embedding chunk: one step (and one retry) each


# A worker lost mid-chunk (killed, out of memory, a flaky model server): the chunk runs again; it
# only rewrites its own Parquet file, so a retry leaves the mind as one clean run would.
CHUNK_RETRY = dg.RetryPolicy(max_retries=3, delay=1, backoff=dg.Backoff.EXPONENTIAL)


class SnapshotConfig(dg.Config):
    include_embeddings: bool = False  # vectors in the frames file (large); analysts rarely need them
    full: bool = False  # every frames file written again, not only those whose frames changed


class UpkeepConfig(dg.Config):
    full: bool = False  # every frame checked, not only those changed since the last pass


class CompactionConfig(dg.Config):
    max_temp_age_days: int = 30
    max_deprecated_age_days: int = 90


@contextmanager
def _writing(
    context: dg.AssetExecutionContext,
    mind_home: MindHomeResource,
    workspace: str,
    embedder: Embedder | None = None,
) -> Iterator[Mind]:
    """The workspace's mind, opened for writing while this step holds its write lock."""
    path = mind_home.mind_path(workspace)
    with ExitStack() as stack:
        if not stack.enter_context(mind_write_lock(path, blocking=False)):
            context.log.info(f"waiting for the other writer of mind {workspace!r} to finish")
            stack.enter_context(mind_write_lock(path))
        yield stack.enter_context(mind_home.open_mind(workspace, embedder))


@contextmanager
def _staging_store() -> Iterator[None]:
    """A staging store that cannot be reached fails the step with its URL and the reason."""
    try:
        yield
    except StagingStoreError as exc:
        raise dg.Failure(
            description=str(exc), metadata={"staging_url": exc.url, "reason": exc.reason}
        ) from None


@contextmanager
def _snapshot_destination() -> Iterator[None]:
    """A snapshot root that cannot be reached fails the step with its URL and the reason."""
    try:
        yield
    except SnapshotDestinationError as exc:
        raise dg.Failure(
            description=str(exc), metadata={"snapshot_url": exc.url, "reason": exc.reason}
        ) from None


def _embedder_metadata(embedder: Embedder) -> dict[str, str]:
    return {k.replace("embedding_", "embedder_"): v for k, v in meta_fingerprint(embedder).items()}


def _materialized_in_run(context: dg.AssetExecutionContext, asset: dg.AssetsDefinition) -> bool:
    """Whether ``asset`` was materialized for this partition by the current run."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset.key, asset_partitions=[context.partition_key]), limit=1
    ).records
    return bool(records) and records[0].run_id == context.run.run_id


@dg.asset(
    partitions_def=harvest_sources,
    group_name=HARVEST_GROUP,
    kinds={"parquet"},
    output_required=False,
    op_tags=stateless_step(),
    check_specs=[SOURCE_PARSED],
)
def harvest_items(
    context: dg.AssetExecutionContext,
    config: HarvestItemsConfig,
    mind_home: MindHomeResource,
    plugins: PluginManagerResource,
):
    """The source's items, scanned by its plugin and staged as one Parquet file (with the located
    errors of records that could not be read) in the staging store. Not materialized when the
    source is unchanged. Writes no mind, and opens none when the run carries the source (the
    harvest job's runs do). A source that is missing, empty or entirely unreadable fails here,
    with its ``source_parsed`` check, the reason and the located errors (the scan is staged all
    the same, and ``record_failed_sources`` records the outcome in the mind, on the home node)."""
    key = parse_source_partition_key(context.partition_key)
    source = config.scan_target(key.source) or mind_home.scan_target(key.workspace, key.source)
    store = mind_home.staging()
    with _staging_store():
        store.ensure_reachable()
    labels = {
        "workspace": key.workspace,
        "source": key.source,
        "kind": str(source.kind),
        # the import step's options travel with the scan it imports
        "prune": str(config.prune).lower(),
        "prune_allow_mass_delete": str(config.prune_allow_mass_delete).lower(),
        RUN_LABEL: context.run.run_id,
    }
    missing = not location_exists(str(source.source_path))
    fingerprint = None if missing else plugins.fingerprint(source)
    if missing:
        context.log.warning(f"{key}: {source.source_path} does not exist; the import step records it")
        labels[SOURCE_MISSING_LABEL] = "true"
    elif not config.force and not config.prune and fingerprint == source.last_fingerprint:
        context.log.info(f"{key}: unchanged since its last harvest (same file fingerprint); nothing to do")
        context.log_event(
            dg.AssetObservation(
                asset_key=context.asset_key,
                partition=context.partition_key,
                metadata={
                    "skipped": True,
                    "reason": "unchanged since the last harvest",
                    "fingerprint": fingerprint,
                },
            )
        )
        if never_materialized(context.instance, context.partition_key):
            # harvested before this instance kept its history: its chain is up to date, say so
            for name in CHAIN:
                context.log_event(
                    dg.AssetMaterialization(
                        asset_key=name,
                        partition=context.partition_key,
                        metadata={"unchanged": True, "fingerprint": fingerprint},
                    )
                )
        yield dg.AssetCheckResult(
            check_name=SOURCE_PARSED.name,
            passed=True,
            description="unchanged since its last complete harvest, which read it: not scanned again",
            metadata={"status": "unchanged", "fingerprint": fingerprint},
        )
        return
    redacted: Counter[str] = Counter()
    excluded: set[str] = set()
    with _staging_store():
        staged = stage_scan(
            iter(()) if missing else redacted_scan(plugins.scan(source, excluded), Redactor(source.redaction), redacted),
            mind_home.scan_url(key.workspace, key.source),
            fingerprint=fingerprint,
            labels=labels,
        )
    metadata = {
        "workspace": key.workspace,
        "source": key.source,
        "kind": str(source.kind),
        "source_path": dg.MetadataValue.path(str(source.source_path)),
        "items": staged.items,
        "messages": staged.messages,
        "errors": staged.error_count,
        "error_rate": round(staged.error_rate, 4),
        "scan_seconds": round(staged.scan_seconds, 3),
        "items_per_second": rate(staged.items, staged.scan_seconds),
        "messages_per_second": rate(staged.messages, staged.scan_seconds),
        "staged_file": dg.MetadataValue.path(staged.path),
        "staged_bytes": staged.bytes,
        "fingerprint": fingerprint or "",
        "first_errors": errors_table(staged.errors, staged.error_count),
        "excluded_files": len(excluded),  # passed over by the source's exclude globs, unread
        **redaction_metadata(source.redaction.describe(), redacted),
    }
    if excluded:
        context.log.info(f"{key}: excluded {len(excluded)} file{'' if len(excluded) == 1 else 's'}")
    outcome = staged_outcome(staged, str(source.source_path), frames=0)  # its status needs no mind
    parsed = source_parsed_result(outcome.status, outcome.reason, staged.items, staged.errors, staged.error_count)
    if not parsed.passed:
        yield parsed
        raise dg.Failure(
            description=f"{key}: {outcome.status}: {outcome.reason}",
            metadata={**metadata, "status": outcome.status, "reason": str(outcome.reason)},
        )
    yield dg.MaterializeResult(metadata=metadata)
    yield parsed


@dg.op(
    ins={"cognified_frames": dg.In(dg.Nothing)},
    out=dg.DynamicOut(int),
    tags=writing_step(),
    pool=WRITE_POOL,
)
def plan_vector_chunks(
    context: dg.OpExecutionContext, config: VectorChunksConfig, mind_home: MindHomeResource
):
    """The texts of the mind's frames that need a vector, staged, and one chunk number per
    ``chunk_texts`` of them. Chunk files already embedded for the same texts are kept (a re-run
    or a retry from failure reuses them), the others removed. Reads the mind, so it runs on its
    home node."""
    key = parse_source_partition_key(context.partition_key)
    store = mind_home.staging()
    with _staging_store():
        with mind_home.open_mind(key.workspace, readonly=True) as mind:
            staged = stage_pending_texts(mind, store.texts_url(key.workspace, key.source), config.chunk_texts)
        removed = store.keep_only_chunks(key.workspace, key.source, staged.chunk_keys)
    chunks = len(staged.chunk_keys)
    context.log.info(
        f"{key}: {staged.texts} text(s) to embed in {chunks} chunk(s) of up to {config.chunk_texts}"
        + (f"; {removed} chunk file(s) of texts no longer pending removed" if removed else "")
    )
    for chunk in range(chunks):
        yield dg.DynamicOutput(chunk, mapping_key=f"chunk_{chunk}")


@dg.op(tags=stateless_step(), retry_policy=CHUNK_RETRY)
def embed_vector_chunk(
    context: dg.OpExecutionContext,
    chunk: int,
    mind_home: MindHomeResource,
    embedder: EmbedderResource,
) -> dict[str, Any]:
    """The vectors of one chunk of the staged texts, written whole to the staging store."""
    key = parse_source_partition_key(context.partition_key)
    store = mind_home.staging()
    began = time.perf_counter()
    texts_url = store.texts_url(key.workspace, key.source)
    with _staging_store():
        staged = staged_chunks(texts_url)
        done = embed_chunk(
            texts_url,
            chunk,
            staged.chunk_size,
            embedder.build(),
            store.chunk_url(key.workspace, key.source, staged.chunk_keys[chunk]),
        )
    seconds = time.perf_counter() - began
    if done.kept:
        context.log.info(f"{key}: chunk {chunk}: already embedded ({done.texts} texts), kept")
    else:
        context.log.info(f"{key}: chunk {chunk}: {done.texts} texts embedded in {seconds:.2f}s")
    return {"chunk": chunk, "texts": done.texts, "windows": done.chunk_vectors, "seconds": seconds, "kept": done.kept}


@dg.op(out=dg.Out(dg.Nothing), tags=stateless_step())
def collect_vector_chunks(
    context: dg.OpExecutionContext, chunks: list[dict[str, Any]], embedder: EmbedderResource
):
    """The embedding of every chunk, summed up as the asset's metadata."""
    seconds = sum(c["seconds"] for c in chunks)
    texts = sum(c["texts"] for c in chunks if not c.get("kept"))
    yield dg.Output(
        None,
        metadata={
            "chunks": len(chunks),
            "chunks_kept": sum(bool(c.get("kept")) for c in chunks),
            "texts_embedded": texts,
            "chunk_vectors": sum(c["windows"] for c in chunks),
            "embed_seconds": round(seconds, 3),
            "slowest_chunk_seconds": round(max((c["seconds"] for c in chunks), default=0.0), 3),
            "texts_per_second": rate(texts, seconds),
            **_embedder_metadata(embedder.build()),
        },
    )


@dg.graph_asset(
    partitions_def=harvest_sources,
    group_name=HARVEST_GROUP,
    kinds={"parquet"},
    ins={"cognified_frames": dg.AssetIn(dagster_type=dg.Nothing)},
    automation_condition=FOLLOW_UPSTREAM,
)
def staged_vectors(cognified_frames):
    """The texts of the frames that need a vector (none for an unchanged source), embedded in
    chunks of ``chunk_texts``, each chunk a separate step on any worker, retried on failure, into
    Parquet files of the staging store keyed by content hash."""
    return collect_vector_chunks(plan_vector_chunks(cognified_frames).map(embed_vector_chunk).collect())


@dg.asset(
    partitions_def=harvest_sources,
    deps=[harvest_items],
    group_name=HARVEST_GROUP,
    kinds={"sqlite"},
    automation_condition=FOLLOW_UPSTREAM,
    op_tags=writing_step(),
    pool=WRITE_POOL,
)
def iframe_imports(context: dg.AssetExecutionContext, mind_home: MindHomeResource) -> dg.MaterializeResult:
    """The staged items imported into the workspace mind: one I-frame per message with the
    message's own time, one session per conversation / note / thread, ledgered (a re-import of
    unchanged items writes nothing). A failed scan (a missing path, nothing the plugin recognises,
    every record unreadable) fails ``harvest_items``, so this step does not run after it; run on
    its own over such a scan, it records the outcome with the source and fails with the reason."""
    key = parse_source_partition_key(context.partition_key)
    path = mind_home.scan_url(key.workspace, key.source)
    with _staging_store():
        staged = staged_scan_info(path)
    if staged is None:
        raise dg.Failure(
            f"no staged scan of {key} at {path}: materialize harvest_items for this partition first"
        )
    if staged.items == 0:  # a failed scan (its own step failed): materialized here on its own
        with _writing(context, mind_home, key.workspace) as mind:
            outcome = record_failed_scan(mind, key.source, staged)
        if outcome is not None:
            raise dg.Failure(
                description=f"{key}: {outcome.status}: {outcome.reason}",
                metadata={"status": outcome.status, "reason": str(outcome.reason)},
            )
    with _staging_store(), _writing(context, mind_home, key.workspace) as mind:
        source = get_registered(mind, key.source)
        summary = import_items(
            mind,
            key.source,
            read_staged(path),
            kind=str(source.kind),
            prune=staged.labels.get("prune") == "true",
            allow_mass_delete=staged.labels.get("prune_allow_mass_delete") == "true",
            progress=progress_log(context.log, "messages read"),
        )
        new_frames = mind.frames.get_many(summary.new_frame_ids[:FRAMES_SHOWN])
        totals = mind_totals(mind)
    return dg.MaterializeResult(
        metadata={
            "items": summary.items_seen,
            "messages": summary.messages_seen,
            "frames_new": summary.frames_new,
            "frames_updated": summary.frames_updated,
            "frames_unchanged": summary.frames_unchanged,
            "frames_duplicate": summary.frames_duplicate,
            "timestamps_missing": summary.timestamps_missing,
            "errors": summary.error_count,
            "unchanged_set": summary.unchanged,
            "set_hash": summary.set_hash or "",
            "fingerprint": staged.fingerprint or "",
            "harvest_run_id": summary.run_id or 0,
            "import_seconds": round(summary.duration_s, 3),
            "messages_per_second": rate(summary.messages_seen, summary.duration_s),
            "first_errors": errors_table(summary.errors, summary.error_count),
            **redaction_metadata(None, summary.redacted),
            "new_frames": frames_preview(
                [new_frames[i] for i in summary.new_frame_ids[:FRAMES_SHOWN] if i in new_frames],
                summary.frames_new,
            ),
            **totals,
        }
    )


@dg.asset(
    partitions_def=harvest_sources,
    deps=[iframe_imports],
    group_name=HARVEST_GROUP,
    kinds={"sqlite"},
    automation_condition=FOLLOW_UPSTREAM,
    op_tags=writing_step(),
    pool=WRITE_POOL,
)
def cognified_frames(context: dg.AssetExecutionContext, mind_home: MindHomeResource) -> dg.MaterializeResult:
    """Entities, relations and entity-frame links of the source's new and changed frames (and of
    any a crash left behind); frames already cognified with their current content are skipped."""
    key = parse_source_partition_key(context.partition_key)
    with _writing(context, mind_home, key.workspace) as mind:
        began = time.perf_counter()
        result, pending = cognify_source(mind, key.source)
        seconds = time.perf_counter() - began
        totals = mind_totals(mind)
    return dg.MaterializeResult(
        metadata={
            "frames_pending": pending,
            "frames_processed": int(result.get("processed", 0)),
            "entity_mentions": int(result.get("entities", 0)),
            "relations_created": int(result.get("relations", 0)),
            "vectors_written": int(result.get("vectors", 0)),
            "structure_relations_created": int(result.get("structure_relations", 0)),
            "people_merged": int(result.get("people_merged", 0)),
            "entities_ended": int(result.get("entities_ended", 0)),  # their last evidence pruned
            "relations_ended": int(result.get("relations_ended", 0)),
            "sessions_closed": int(result["sessions_closed"]),
            "cognify_seconds": round(seconds, 3),
            "frames_per_second": rate(int(result.get("processed", 0)), seconds),
            **totals,
        }
    )


@dg.asset(
    partitions_def=harvest_sources,
    deps=[staged_vectors],
    group_name=HARVEST_GROUP,
    kinds={"sqlite"},
    automation_condition=FOLLOW_UPSTREAM,
    op_tags=writing_step(),
    pool=WRITE_POOL,
)
def vector_index(
    context: dg.AssetExecutionContext, mind_home: MindHomeResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    """Vectors for every frame that lacks a current one, loaded from ``staged_vectors`` (a chunk
    made by another embedder than the mind's is refused); a frame no chunk covers is embedded
    here. Completes the harvest of the staged scan (its fingerprint is recorded) when the whole
    chain ran in this run."""
    key = parse_source_partition_key(context.partition_key)
    store = mind_home.staging()
    with _staging_store():
        staged = staged_scan_info(store.scan_url(key.workspace, key.source))
        chunks = store.chunk_urls(key.workspace, key.source)
    complete = _materialized_in_run(context, iframe_imports) and _materialized_in_run(
        context, cognified_frames
    )
    model = embedder.build()
    with _staging_store(), _writing(context, mind_home, key.workspace, model) as mind:
        began = time.perf_counter()
        loaded = load_vectors(mind, chunks, progress_log(context.log, "frames embedded"))
        seconds = time.perf_counter() - began
        scrubbed = None
        if complete and staged is not None and staged.fingerprint:
            registered = get_registered(mind, key.source)  # as it was before this harvest
            complete = complete_harvest(mind, key.source, staged.fingerprint)
            # frames rewritten under a new policy: the knowledge too, and the old text gone
            scrubbed = settle_redaction(mind, registered, effective_policy(mind.db, key.source))
        gaps = index_gaps(mind.db, key.source)
        totals = mind_totals(mind)
    return dg.MaterializeResult(
        metadata={
            "vectors_written": loaded.written,
            "vectors_loaded": loaded.loaded,
            "vectors_embedded_here": loaded.embedded_here,
            "vector_chunks": len(chunks),
            "load_seconds": round(seconds, 3),
            "vectors_per_second": rate(loaded.written, seconds),
            "source_frames": gaps.checked,
            "source_frames_unindexed": gaps.failures,
            "harvest_complete": bool(complete and staged is not None),
            **({} if scrubbed is None else {"scrubbed_after_policy_change": scrubbed}),
            **_embedder_metadata(model),
            **totals,
        }
    )


@dg.asset(
    partitions_def=mind_workspaces,
    deps=[dg.AssetDep(vector_index, partition_mapping=dg.AllPartitionMapping())],
    group_name=MIND_GROUP,
    kinds={"sqlite"},
    op_tags=writing_step(),
    pool=WRITE_POOL,
)
def reconciled_indexes(
    context: dg.AssetExecutionContext,
    config: UpkeepConfig,
    mind_home: MindHomeResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    """The mind's full-text and vector indexes made to agree with its frames again (missing and
    stale rows repaired, orphans swept), then checked: the frames changed since the last pass
    (the day's changes), or every frame with ``full``."""
    workspace = context.partition_key
    model = embedder.build()
    with _writing(context, mind_home, workspace, model) as mind:
        began = time.perf_counter()
        repaired = mind.reconcile(full=config.full)
        seconds = time.perf_counter() - began
        health = mind.doctor(full=config.full)
        totals = mind_totals(mind)
    return dg.MaterializeResult(
        metadata={
            "fts_fixed": repaired.fts_fixed,
            "vectors_fixed": repaired.vectors_fixed,
            "orphans_removed": repaired.orphans_removed,
            "frames_examined": repaired.frames_examined,
            "full_pass": repaired.full,
            "problems_after": ", ".join(health.problems) or "none",
            "reconcile_seconds": round(seconds, 3),
            **totals,
        }
    )


@dg.asset(
    partitions_def=mind_workspaces,
    deps=[reconciled_indexes],
    group_name=MIND_GROUP,
    kinds={"sqlite"},
    op_tags=writing_step(),
    pool=WRITE_POOL,
)
def compacted_frames(
    context: dg.AssetExecutionContext,
    config: CompactionConfig,
    mind_home: MindHomeResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    """Old temporary and deprecated frames pruned and long P-frame chains folded into their
    I-frame; the indexes are reconciled afterwards so folded frames are searchable again."""
    workspace = context.partition_key
    model = embedder.build()
    with _writing(context, mind_home, workspace, model) as mind:
        began = time.perf_counter()
        compacted = mind.frames.compact(config.max_temp_age_days, config.max_deprecated_age_days)
        repaired = mind.reconcile()
        seconds = time.perf_counter() - began
        totals = mind_totals(mind)
    return dg.MaterializeResult(
        metadata={
            "temporary_pruned": compacted.temporary_pruned,
            "deprecated_pruned": compacted.deprecated_pruned,
            "pframes_merged": compacted.p_frames_merged,
            "vectors_refreshed": repaired.vectors_fixed,
            "compaction_seconds": round(seconds, 3),
            **totals,
        }
    )


@dg.asset(
    partitions_def=snapshot_days,
    deps=[dg.AssetDep(compacted_frames, partition_mapping=dg.AllPartitionMapping())],
    group_name=ANALYTICS_GROUP,
    kinds={"parquet", "duckdb"},
    op_tags=writing_step(),
    pool=WRITE_POOL,
)
def memory_snapshots(
    context: dg.AssetExecutionContext, config: SnapshotConfig, mind_home: MindHomeResource
) -> dg.MaterializeResult:
    """Every mind of the home as Parquet, hive-partitioned by workspace and this day (re-running
    a day replaces it), and the analytics report (charts and tables) over all snapshots so far.
    Read-only: snapshots never wait for a mind's writer."""
    began = time.perf_counter()
    with _snapshot_destination():
        taken = write_snapshot(
            mind_home.home(),
            None,
            mind_home.snapshot_root(),
            context.partition_key,
            include_embeddings=config.include_embeddings,
            full=config.full,
        )
        report = write_report(Analytics(taken.root), f"{taken.root}/{REPORTS_DIR}/{taken.snapshot_date}")
    seconds = time.perf_counter() - began
    minds = taken.minds
    tables = sorted({table for summary in minds.values() for table in summary.rows})
    rows_table = ["| mind | " + " | ".join(tables) + " |", "|---|" + "---|" * len(tables)]
    rows_table += [
        f"| {name} | " + " | ".join(f"{summary.rows.get(t, 0):,}" for t in tables) + " |"
        for name, summary in sorted(minds.items())
    ]
    return dg.MaterializeResult(
        metadata={
            "snapshot_date": taken.snapshot_date,
            "minds": len(minds),
            "frames": sum(s.rows.get("frames", 0) for s in minds.values()),
            "frames_written": sum(s.rows_written.get("frames", 0) for s in minds.values()),
            "entities": sum(s.rows.get("entities", 0) for s in minds.values()),
            "relations": sum(s.rows.get("relations", 0) for s in minds.values()),
            "invalid_values": sum(sum(s.invalid_values.values()) for s in minds.values()),
            "rows_per_mind": dg.MetadataValue.md("\n".join(rows_table)),
            "snapshot_root": dg.MetadataValue.path(taken.root),
            "report": dg.MetadataValue.path(str(report)),
            "snapshot_seconds": round(seconds, 3),
            # earlier days' partitions deleted because they held what a forget took
            "stale_snapshots_deleted": sum(len(s.stale_removed) for s in minds.values()),
        }
    )
