"""Asset checks: the promises of a harvest, verified against what it wrote.

- ``harvest_items``: the source gave items (``source_parsed``, ERROR and blocking, evaluated by
  the scan step itself: ``mind_harvest.pipelines.check_results``) and its error rate stays below a
  threshold (WARN).
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
from mind_harvest.pipelines.check_results import audit_source, error_rate_result
from mind_harvest.pipelines.partitions import harvest_sources, mind_workspaces, parse_source_partition_key
from mind_harvest.pipelines.resources import EmbedderResource, MindHomeResource

from mind_core.embeddings import at_width
from mind_core.harvest.staging import staged_scan_info
from mind_core.harvest.staging_store import StagingStoreError
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


@partitioned_check(asset=harvest_items, partitions_def=harvest_sources)
def error_rate_below_threshold(
    context: dg.AssetCheckExecutionContext, config: ErrorRateConfig, mind_home: MindHomeResource
) -> dg.AssetCheckResult:
    """The share of records that failed to parse stays below ``max_error_rate`` (a warning: the
    readable items are still worth importing)."""
    staged = _staged(context, mind_home)
    return error_rate_result(staged.errors, staged.error_count, staged.events, config.max_error_rate)


def _audit(
    context: dg.AssetCheckExecutionContext, mind_home: MindHomeResource, check_name: str
) -> dg.AssetCheckResult:
    key = parse_source_partition_key(context.partition_key)
    with mind_home.open_mind(key.workspace, readonly=True) as mind:
        return audit_source(mind.db, key.source, check_name)


@partitioned_check(asset=iframe_imports, partitions_def=harvest_sources)
def no_item_imported_twice(
    context: dg.AssetCheckExecutionContext, mind_home: MindHomeResource
) -> dg.AssetCheckResult:
    """Every frame of the source is the one frame the ledger names for its message."""
    return _audit(context, mind_home, "no_item_imported_twice")


@partitioned_check(asset=iframe_imports, partitions_def=harvest_sources)
def timestamps_kept(
    context: dg.AssetCheckExecutionContext, mind_home: MindHomeResource
) -> dg.AssetCheckResult:
    """Every message that had a valid time became a frame with that time."""
    return _audit(context, mind_home, "timestamps_kept")


@partitioned_check(asset=vector_index, partitions_def=harvest_sources)
def indexes_cover_frames(
    context: dg.AssetCheckExecutionContext, mind_home: MindHomeResource
) -> dg.AssetCheckResult:
    """Full text and a current vector for every frame of the source."""
    return _audit(context, mind_home, "indexes_cover_frames")


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


# The checks of one harvest source's partition (besides ``source_parsed``, which the scan step
# evaluates), and with them the whole mind's.
SOURCE_CHECKS = [
    error_rate_below_threshold,
    no_item_imported_twice,
    timestamps_kept,
    indexes_cover_frames,
    embedding_fingerprint_matches,
]
ALL_CHECKS = [*SOURCE_CHECKS, mind_indexes_consistent]
