"""The ``harvest`` code location (loaded by workspace.yaml)."""

from __future__ import annotations

import os
from typing import Any

import dagster as dg
from mind_harvest.pipelines.alerts import AlertsResource, failure_alert_sensor
from mind_harvest.pipelines.assets import (
    cognified_frames,
    compacted_frames,
    harvest_items,
    iframe_imports,
    memory_snapshots,
    reconciled_indexes,
    staged_vectors,
    vector_index,
)
from mind_harvest.pipelines.checks import ALL_CHECKS
from mind_harvest.pipelines.executors import harvest_executor
from mind_harvest.pipelines.failed_sources import record_failed_sources
from mind_harvest.pipelines.forget import forget_job
from mind_harvest.pipelines.freshness import (
    scheduled_sources_fresh,
    source_freshness_job,
    source_freshness_schedule,
)
from mind_harvest.pipelines.jobs import harvest_job, memory_snapshot_job, mind_upkeep_job
from mind_harvest.pipelines.resources import EmbedderResource, MindHomeResource, PluginManagerResource
from mind_harvest.pipelines.schedules import daily_memory_snapshot, daily_mind_upkeep
from mind_harvest.pipelines.sensors import harvest_automation_sensor, harvest_sources_sensor

ASSETS = [
    harvest_items,
    staged_vectors,
    iframe_imports,
    cognified_frames,
    vector_index,
    reconciled_indexes,
    compacted_frames,
    memory_snapshots,
]


# Where Dagster keeps the values steps hand each other (the chunk numbers and the chunks'
# summaries of staged_vectors): Dagster's file system IO manager under this fsspec URL. Unset: the
# instance's storage folder, which only processes of one machine share.
STEP_OUTPUTS_URL_ENV = "MIND_HARVEST_STEP_OUTPUTS_URL"


def default_resources() -> dict[str, Any]:
    """The real resources: the mind home from $MIND_HOME, the in-process model, installed plugins,
    the failure alerts of ``$MIND_HARVEST_ALERT_*``, and the step outputs under ``$MIND_HARVEST_STEP_OUTPUTS_URL`` when it is set."""
    resources: dict[str, Any] = {
        "mind_home": MindHomeResource(),
        "embedder": EmbedderResource(),
        "plugins": PluginManagerResource(),
        "alerts": AlertsResource.from_env(),
    }
    step_outputs = os.environ.get(STEP_OUTPUTS_URL_ENV)
    if step_outputs:
        resources["io_manager"] = dg.FilesystemIOManager(base_dir=step_outputs)
    return resources


defs = dg.Definitions(
    assets=ASSETS,
    asset_checks=[*ALL_CHECKS, scheduled_sources_fresh],
    jobs=[harvest_job, mind_upkeep_job, memory_snapshot_job, source_freshness_job, forget_job],
    sensors=[harvest_sources_sensor, harvest_automation_sensor, record_failed_sources, failure_alert_sensor],
    schedules=[daily_mind_upkeep, daily_memory_snapshot, source_freshness_schedule],
    resources=default_resources(),
    executor=harvest_executor,
)
