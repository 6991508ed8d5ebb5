"""Jobs: the harvest of one source, the upkeep of one mind, the day's snapshot. Their runs carry workspace (and
source) tags, so runs can be filtered by mind in the UI and limited per mind by run-queue rules."""

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
from pipelines.partitions import harvest_sources, mind_workspaces, parse_source_partition_key

WORKSPACE_TAG = "mind_harvest/workspace"
SOURCE_TAG = "mind_harvest/source"


def _source_run_tags(partition_key: str) -> dict[str, str]:
    key = parse_source_partition_key(partition_key)
    return {WORKSPACE_TAG: key.workspace, SOURCE_TAG: key.source}


def _mind_run_tags(partition_key: str) -> dict[str, str]:
    return {WORKSPACE_TAG: partition_key}


def _tagged_by_partition(partitions_def: dg.PartitionsDefinition, tags_for_key) -> dg.PartitionedConfig:
    """No run config of its own; every run of a partition (launchpad, job backfill) gets its mind's
    tags, which the run queue of the shipped dagster.yaml limits to one run in progress per mind."""
    return dg.PartitionedConfig(
        partitions_def=partitions_def,
        run_config_for_partition_key_fn=lambda _key: {},
        tags_for_partition_key_fn=tags_for_key,
    )


harvest_job = dg.define_asset_job(
    "harvest_job",
    selection=dg.AssetSelection.assets(
        harvest_items, staged_vectors, iframe_imports, cognified_frames, vector_index
    ),
    description="Scan, embed (in chunks), import, cognify and load the vectors of one harvest source "
    "(partition '<workspace>/<source>').",
    config=_tagged_by_partition(harvest_sources, _source_run_tags),
)

mind_upkeep_job = dg.define_asset_job(
    "mind_upkeep_job",
    selection=dg.AssetSelection.assets(reconciled_indexes, compacted_frames),
    description="Reconcile the indexes of one mind, then compact it.",
    config=_tagged_by_partition(mind_workspaces, _mind_run_tags),
)

memory_snapshot_job = dg.define_asset_job(
    "memory_snapshot_job",
    selection=dg.AssetSelection.assets(memory_snapshots),
    description="Snapshot every mind to Parquet for one day and refresh the analytics report.",
)
