"""A source that failed its scan in Dagster gets its outcome recorded in its mind.

The scan step (``harvest_items``) runs on any worker and writes no mind: a source that is missing,
empty or entirely unreadable fails that step, with its reason and located errors, and nothing
downstream runs. Its outcome still belongs in the mind (``mind sources list``, ``mind doctor``,
the next ``--due`` harvest): ``record_failed_sources``, a run failure sensor of the code location
(which runs on the minds' home node), reads the failed run's staged scan and records it, as the
``mind`` command records its own failures. A staged scan names the run that staged it
(``RUN_LABEL``), so a later scan of the source is never recorded against an older failed run.
"""

from __future__ import annotations

import dagster as dg
from mind_harvest.pipelines.partitions import SEPARATOR, parse_source_partition_key
from mind_harvest.pipelines.resources import MindHomeResource

from mind_core.errors import MindError
from mind_core.harvest.outcome import staged_outcome
from mind_core.harvest.ownership import frames_held
from mind_core.harvest.pipeline import get_registered
from mind_core.harvest.staging import StagedScan, staged_scan_info
from mind_core.harvest.staging_store import StagingStoreError
from mind_core.harvest.stores import FAILING_STATUSES, HarvestSourceStore, SourceOutcome
from mind_core.mind import Mind
from mind_core.store.write_lock import mind_write_lock

RUN_LABEL = "dagster_run_id"  # the staged scan's label naming the run that staged it
PARTITION_TAG = "dagster/partition"


def record_failed_scan(mind: Mind, source: str, staged: StagedScan) -> SourceOutcome | None:
    """Record the outcome of ``staged`` for ``source`` when it is a failure (failed, empty,
    missing); returns that outcome, or None when the scan read items."""
    registered = get_registered(mind, source)
    outcome = staged_outcome(staged, str(registered.source_path), frames_held(mind.db, source))
    if outcome.status not in FAILING_STATUSES:
        return None
    with mind.db.transaction():
        HarvestSourceStore(mind.db).record_outcome(source, outcome)
    return outcome


def record_failed_run(mind_home: MindHomeResource, run: dg.DagsterRun) -> SourceOutcome | None:
    """Record the failed scan of ``run`` in its source's mind; None when the run failed for
    another reason (or is not a source partition's run)."""
    partition = run.tags.get(PARTITION_TAG, "")
    if SEPARATOR not in partition:
        return None
    key = parse_source_partition_key(partition)
    mind_home = mind_home.owning(key.workspace)  # with several home nodes, the one holding it
    try:
        staged = staged_scan_info(mind_home.scan_url(key.workspace, key.source))
    except StagingStoreError:
        return None
    if staged is None or staged.items or staged.labels.get(RUN_LABEL) != run.run_id:
        return None
    with mind_write_lock(mind_home.mind_path(key.workspace)), mind_home.open_mind(key.workspace) as mind:
        return record_failed_scan(mind, key.source, staged)


@dg.run_failure_sensor(
    name="record_failed_sources",
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Records in its mind the outcome of a source whose scan failed in a run "
    "(missing, empty or unreadable), as `mind harvest` does.",
)
def record_failed_sources(context: dg.RunFailureSensorContext, mind_home: MindHomeResource) -> None:
    try:
        outcome = record_failed_run(mind_home, context.dagster_run)
    except MindError as exc:  # a mind removed or damaged since: nothing to record it in
        context.log.warning(f"run {context.dagster_run.run_id}: outcome not recorded: {exc}")
        return
    if outcome is not None:
        partition = context.dagster_run.tags[PARTITION_TAG]
        context.log.info(f"{partition}: {outcome.status} recorded in its mind ({outcome.reason})")
