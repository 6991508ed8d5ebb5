"""Asset checks: the promises of a harvest, verified against what it wrote.

- ``harvest_items``: the source gave items (ERROR: a source whose every record fails, that holds
  nothing its plugin recognises, or whose path is gone, with the reason as the check's
  description; the import step then records that outcome and fails the run before anything is
  imported) and its error rate stays below a threshold (WARN).
- ``iframe_imports``: no message imported twice (ledger against frames); every message that had a
  time kept it (provenance time against the frame's time).
- ``vector_index``: full text and vectors cover every frame of the source; the mind's embedding
  fingerprint is the configured embedder's.
- ``reconciled_indexes``: the whole mind's indexes agree with its frames (``doctor``).

Checks only read minds, so they never wait for a mind's writer slot.
"""

import warnings
from collections.abc import Callable

import dagster as dg
from mind_harvest.pipelines.assets import harvest_items, iframe_imports, reconciled_indexes, vector_index
from mind_harvest.pipelines.metadata import audit_table, errors_table
from mind_harvest.pipelines.partitions import harvest_sources, mind_workspaces, parse_source_partition_key
from mind_harvest.pipelines.resources import EmbedderResource, MindHomeResource

from mind_core.embeddings import at_width
from mind_core.harvest.audit import AuditFinding, duplicate_imports, index_gaps, timestamps_not_kept
from mind_core.harvest.outcome import staged_outcome
from mind_core.harvest.staging import staged_scan_info
from mind_core.harvest.staging_store import StagingStoreError
from mind_core.harvest.stores import FAILING_STATUSES
from mind_core.search.vector_index import VectorIndex, meta_fingerprint

DEFAULT_MAX_ERROR_RATE = 0.05


def partitioned_check(**kwargs) -> Callable[[Callable[..., dg.AssetCheckResult]], dg.AssetChecksDefinition]:
    """``dg.asset_check`` with a ``partitions_def``: each partition (source, mind) gets its own
    result, so one failing source is not hidden by the next one passing. Partitioned checks are a
    preview feature in Dagster 1.13, chosen on purpose; the preview notice is not repeated on
    every load."""

    def decorate(function: Callable[..., dg.AssetCheckResult]) -> dg.AssetChecksDefinition:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dg.PreviewWarning)
            return dg.asset_check(**kwargs)(function)

    return decorate


class ErrorRateConfig(dg.Config):
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE  # share of records that may fail before a warning


def _staged(context: dg.AssetCheckExecutionContext, mind_home: MindHomeResource):
    key = parse_source_partition_key(context.partition_key)
    path = mind_home.scan_url(key.workspace, key.source)
    try:
        staged = staged_scan_info(path)
    except StagingStoreError as exc:
        raise dg.Failure(description=str(exc)) from None
    if staged is None:
        raise dg.Failure(f"no staged scan of {key} at {path}")
    return staged


def _audit_result(finding: AuditFinding, passed_text: str, failed_text: str) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=finding.ok,
        severity=dg.AssetCheckSeverity.ERROR,
        description=passed_text if finding.ok else failed_text.format(failures=finding.failures),
        metadata={
            "checked": finding.checked,
            "failures": finding.failures,
            "examples": audit_table(finding.examples),
        },
    )


@partitioned_check(asset=harvest_items, partitions_def=harvest_sources)
def source_parsed(context: dg.AssetCheckExecutionContext, mind_home: MindHomeResource) -> dg.AssetCheckResult:
    """The scan read at least one item: a source whose every record failed, or where the plugin
    recognised nothing (an empty folder, an export of another kind), is not imported (the import
    step records the outcome and fails, nothing downstream runs) and the description says why.
    Not a blocking check: the import step, on the mind's home node, must run to record it."""
    staged = _staged(context, mind_home)
    key = parse_source_partition_key(context.partition_key)
    source = mind_home.registered_source(key.workspace, key.source)
    outcome = staged_outcome(staged, str(source.source_path), frames=0)
    failed = outcome.status in FAILING_STATUSES
    return dg.AssetCheckResult(
        passed=not failed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=f"{outcome.status}: {outcome.reason}" if failed else f"{staged.items} item(s) read",
        metadata={
            "status": outcome.status,
            "items": staged.items,
            "errors": staged.error_count,
            "first_errors": errors_table(staged.errors, staged.error_count),
        },
    )


@partitioned_check(asset=harvest_items, partitions_def=harvest_sources)
def error_rate_below_threshold(
    context: dg.AssetCheckExecutionContext, config: ErrorRateConfig, mind_home: MindHomeResource
) -> dg.AssetCheckResult:
    """The share of records that failed to parse stays below ``max_error_rate`` (a warning: the
    readable items are still worth importing)."""
    staged = _staged(context, mind_home)
    return dg.AssetCheckResult(
        passed=staged.error_rate <= config.max_error_rate,
        severity=dg.AssetCheckSeverity.WARN,
        description=f"{staged.error_rate:.1%} of {staged.events} record(s) failed (threshold {config.max_error_rate:.1%})",
        metadata={
            "error_rate": round(staged.error_rate, 4),
            "max_error_rate": config.max_error_rate,
            "errors": staged.error_count,
            "first_errors": errors_table(staged.errors, staged.error_count),
        },
    )


@partitioned_check(asset=iframe_imports, partitions_def=harvest_sources)
def no_item_imported_twice(
    context: dg.AssetCheckExecutionContext, mind_home: MindHomeResource
) -> dg.AssetCheckResult:
    """Every frame of the source is the one frame the ledger names for its message."""
    key = parse_source_partition_key(context.partition_key)
    with mind_home.open_mind(key.workspace, readonly=True) as mind:
        finding = duplicate_imports(mind.db, key.source)
    return _audit_result(
        finding,
        "every frame is the ledger's one frame of its message",
        "{failures} frame(s) copy a message the ledger maps to another frame (or to none)",
    )


@partitioned_check(asset=iframe_imports, partitions_def=harvest_sources)
def timestamps_kept(
    context: dg.AssetCheckExecutionContext, mind_home: MindHomeResource
) -> dg.AssetCheckResult:
    """Every message that had a valid time became a frame with that time."""
    key = parse_source_partition_key(context.partition_key)
    with mind_home.open_mind(key.workspace, readonly=True) as mind:
        finding = timestamps_not_kept(mind.db, key.source)
    return _audit_result(
        finding,
        "every timed message kept its time",
        "{failures} frame(s) lost their message's time",
    )


@partitioned_check(asset=vector_index, partitions_def=harvest_sources)
def indexes_cover_frames(
    context: dg.AssetCheckExecutionContext, mind_home: MindHomeResource
) -> dg.AssetCheckResult:
    """Full text and a current vector for every frame of the source."""
    key = parse_source_partition_key(context.partition_key)
    with mind_home.open_mind(key.workspace, readonly=True) as mind:
        finding = index_gaps(mind.db, key.source)
    return _audit_result(
        finding,
        "every frame is in the full-text index and has a current vector",
        "{failures} frame(s) missing from the full-text index or without a current vector",
    )


@partitioned_check(asset=vector_index, partitions_def=harvest_sources)
def embedding_fingerprint_matches(
    context: dg.AssetCheckExecutionContext, mind_home: MindHomeResource, embedder: EmbedderResource
) -> dg.AssetCheckResult:
    """The mind's vectors were made by the configured embedder (same provider, model, weights),
    the embedder's vectors fitted to the mind's width (as they are written)."""
    key = parse_source_partition_key(context.partition_key)
    with mind_home.open_mind(key.workspace, readonly=True) as mind:
        index = VectorIndex(mind.db, None)
        stored = index.stored_fingerprint()
        width = index.dimensions
    expected = meta_fingerprint(at_width(embedder.build(), width) if width else embedder.build())
    matches = stored == expected and width == int(expected["embedding_dim"])
    return dg.AssetCheckResult(
        passed=matches,
        severity=dg.AssetCheckSeverity.ERROR,
        description="the mind's vectors match the embedder"
        if matches
        else f"the mind holds {stored or 'no recorded'} vectors ({width} wide); the embedder makes {expected}",
        metadata={"stored": str(stored), "expected": str(expected), "vector_width": width},
    )


@partitioned_check(asset=reconciled_indexes, partitions_def=mind_workspaces)
def mind_indexes_consistent(
    context: dg.AssetCheckExecutionContext, mind_home: MindHomeResource
) -> dg.AssetCheckResult:
    """The whole mind: no frame missing from or stale in an index, no orphan rows, intact file."""
    with mind_home.open_mind(context.partition_key, readonly=True) as mind:
        report = mind.doctor()
    counts = {"frames": report.frames, **{finding.check: finding.count for finding in report.findings}}
    index_problems = report.problems  # read without an embedder: the fingerprint is checked per source
    return dg.AssetCheckResult(
        passed=not index_problems,
        severity=dg.AssetCheckSeverity.ERROR,
        description="indexes agree with the frames"
        if not index_problems
        else "problems: " + ", ".join(index_problems),
        metadata={**counts, "integrity_check": report.finding("integrity").detail},
    )


# The checks of one harvest source's partition, and with them the whole mind's.
SOURCE_CHECKS = [
    source_parsed,
    error_rate_below_threshold,
    no_item_imported_twice,
    timestamps_kept,
    indexes_cover_frames,
    embedding_fingerprint_matches,
]
ALL_CHECKS = [*SOURCE_CHECKS, mind_indexes_consistent]
