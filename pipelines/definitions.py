"""The ``harvest`` code location (loaded by workspace.yaml)."""

from __future__ import annotations

import dagster as dg

from pipelines.assets import (
    cognified_frames,
    compacted_frames,
    harvest_items,
    iframe_imports,
    memory_snapshots,
    reconciled_indexes,
    staged_vectors,
    vector_index,
)
from pipelines.checks import ALL_CHECKS
from pipelines.executors import run_executor
from pipelines.jobs import harvest_job, memory_snapshot_job, mind_upkeep_job
from pipelines.resources import EmbedderResource, MindHomeResource, PluginManagerResource
from pipelines.schedules import daily_memory_snapshot, daily_mind_upkeep
from pipelines.sensors import harvest_automation_sensor, harvest_sources_sensor

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


def default_resources() -> dict[str, dg.ConfigurableResource]:
    """The real resources: the mind home from $MIND_HOME, the in-process model, installed plugins."""
    return {
        "mind_home": MindHomeResource(),
        "embedder": EmbedderResource(),
        "plugins": PluginManagerResource(),
    }


defs = dg.Definitions(
    assets=ASSETS,
    asset_checks=ALL_CHECKS,
    jobs=[harvest_job, mind_upkeep_job, memory_snapshot_job],
    sensors=[harvest_sources_sensor, harvest_automation_sensor],
    schedules=[daily_mind_upkeep, daily_memory_snapshot],
    resources=default_resources(),
    executor=run_executor(),
)
