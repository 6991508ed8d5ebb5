"""The run queue of the shipped instances: Dagster's queued run coordinator, which also gives a
run made outside the jobs its mind's tags before it is queued.

The harvest and upkeep jobs tag each run with its mind (``mind_harvest/workspace``, from the
partition: ``pipelines/jobs.py``), and the queue lets one run per mind be in progress. Runs of
the same assets made another way carry only their partition: the automation sensor's, asset
backfills, a materialization from the asset graph. This coordinator reads their partition and
adds the same tags when the run is submitted, so every run of a mind waits behind the one in
progress, whoever made it. Configured in ``dagster.yaml`` as ``run_coordinator``; the limits stay
in its ``concurrency`` section.
"""

from __future__ import annotations

import dagster as dg
from dagster._core.storage.tags import PARTITION_NAME_TAG
from mind_harvest.pipelines.jobs import SOURCE_TAG, WORKSPACE_TAG
from mind_harvest.pipelines.partitions import harvest_sources, mind_workspaces, parse_source_partition_key


def mind_tags(instance: dg.DagsterInstance, run: dg.DagsterRun) -> dict[str, str]:
    """The tags the jobs would give ``run`` (its mind, and its source for a harvest source's
    partition), when it has none; empty for a run with them or of another partition."""
    key = run.tags.get(PARTITION_NAME_TAG)
    if key is None or WORKSPACE_TAG in run.tags:
        return {}
    if instance.has_dynamic_partition(harvest_sources.name, key):
        source = parse_source_partition_key(key)
        return {WORKSPACE_TAG: source.workspace, SOURCE_TAG: source.source}
    if instance.has_dynamic_partition(mind_workspaces.name, key):
        return {WORKSPACE_TAG: key}
    return {}


class MindRunCoordinator(dg.QueuedRunCoordinator):
    """Dagster's run queue; a run of a mind's partition without the mind's tag gets it first."""

    def submit_run(self, context: dg.SubmitRunContext) -> dg.DagsterRun:
        run = context.dagster_run
        tags = mind_tags(self._instance, run)
        if tags:
            self._instance.add_run_tags(run.run_id, tags)
            run = self._instance.get_run_by_id(run.run_id) or run
            context = dg.SubmitRunContext(run, context.workspace)
        return super().submit_run(context)
