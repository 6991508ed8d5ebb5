"""Daily: every mind's indexes reconciled and its frames compacted (one run per mind), and late in
the day every mind snapshotted for analysts (so a day's partition holds that day's final state).
Both cost what the day changed: reconcile and doctor look at the frames changed since their last
pass, the snapshot rewrites only the frames files with changes (a full pass: run config
``full: true`` of ``reconciled_indexes`` or ``memory_snapshots``)."""

import dagster as dg
from mind_harvest.pipelines.jobs import WORKSPACE_TAG, memory_snapshot_job, mind_upkeep_job
from mind_harvest.pipelines.partitions import mind_workspaces

UPKEEP_CRON = "0 3 * * *"
SNAPSHOT_CRON = "30 23 * * *"


@dg.schedule(
    job=mind_upkeep_job,
    cron_schedule=UPKEEP_CRON,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
def daily_mind_upkeep(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest] | dg.SkipReason:
    """Reconcile and compact each mind, at 03:00 UTC (the run key makes it once per mind a day)."""
    workspaces = context.instance.get_dynamic_partitions(mind_workspaces.name)
    if not workspaces:
        return dg.SkipReason("no minds yet: register a source (`mind sources add`) first")
    day = context.scheduled_execution_time.date().isoformat()
    return [
        dg.RunRequest(partition_key=workspace, run_key=f"{workspace}@{day}", tags={WORKSPACE_TAG: workspace})
        for workspace in sorted(workspaces)
    ]


@dg.schedule(
    job=memory_snapshot_job,
    cron_schedule=SNAPSHOT_CRON,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
def daily_memory_snapshot(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    """Snapshot every mind at 23:30 UTC into the day's partition (its final state that day)."""
    if not context.instance.get_dynamic_partitions(mind_workspaces.name):
        return dg.SkipReason("no minds yet: nothing to snapshot")
    day = context.scheduled_execution_time.date().isoformat()
    return dg.RunRequest(partition_key=day, run_key=f"snapshot@{day}")
