"""Registering sources and materializing partitions the way the sensor and a run would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
from mind_harvest.pipelines.assets import (
    cognified_frames,
    harvest_items,
    iframe_imports,
    staged_vectors,
    vector_index,
)
from mind_harvest.pipelines.checks import SOURCE_CHECKS
from mind_harvest.pipelines.partitions import harvest_sources, mind_workspaces, source_partition_key

from mind_core.harvest.pipeline import register_source
from mind_core.mind import Mind
from mind_core.store.home import MindHome

HARVEST_ASSETS = [harvest_items, staged_vectors, iframe_imports, cognified_frames, vector_index]


def register(home: MindHome, workspace: str, kind: str, path: Path, name: str, **options: Any) -> str:
    """Register a source in the workspace's mind (as `mind sources add` does); its partition key."""
    with Mind.open(home.mind_path(workspace)) as mind:
        register_source(mind, kind, path, name, **options)
    return source_partition_key(workspace, name)


def add_partitions(instance: dg.DagsterInstance, *keys: str) -> None:
    instance.add_dynamic_partitions(harvest_sources.name, list(keys))
    workspaces = sorted({key.split("/")[0] for key in keys})
    instance.add_dynamic_partitions(mind_workspaces.name, workspaces)


def harvest(
    instance: dg.DagsterInstance, resources: dict, key: str, run_config: dict | None = None, **kwargs: Any
) -> dg.ExecuteInProcessResult:
    """One run of the harvest chain (assets and their checks) for one partition."""
    return dg.materialize(
        HARVEST_ASSETS + SOURCE_CHECKS,
        resources=resources,
        instance=instance,
        partition_key=key,
        run_config=run_config,
        **kwargs,
    )


def materialized(result: dg.ExecuteInProcessResult) -> dict[str, dict[str, Any]]:
    """Asset name -> metadata values of the run's materializations."""
    return {
        event.asset_key.to_user_string(): {k: v.value for k, v in event.materialization.metadata.items()}
        for event in result.get_asset_materialization_events()
    }


def check_results(result: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    return {evaluation.check_name: evaluation for evaluation in result.get_asset_check_evaluations()}
