"""Jobs: the harvest of one source, the upkeep of one mind, the day's snapshot. Their runs carry workspace (and
source) tags, so runs can be filtered by mind in the UI and limited per mind by run-queue rules."""

from __future__ import annotations

from typing import Any

import dagster as dg
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
from mind_harvest.pipelines.partitions import harvest_sources, mind_workspaces, parse_source_partition_key
from mind_harvest.pipelines.resources import MindHomeResource

from mind_core.errors import MindError

WORKSPACE_TAG = "mind_harvest/workspace"
SOURCE_TAG = "mind_harvest/source"


def _source_run_tags(partition_key: str) -> dict[str, str]:
    key = parse_source_partition_key(partition_key)
    return {WORKSPACE_TAG: key.workspace, SOURCE_TAG: key.source}


def _mind_run_tags(partition_key: str) -> dict[str, str]:
    return {WORKSPACE_TAG: partition_key}


def _no_run_config(_partition_key: str) -> dict[str, Any]:
    return {}


def _scan_run_config(partition_key: str) -> dict[str, Any]:
    """The source as registered in its mind, for the scan step's config: read where the run is
    made (the code location, on the home node: its sensor and backfills), so the scan itself opens
    no mind and can run on a worker that has none. A source that cannot be read here (no mind under
    this process's ``$MIND_HOME``, a locked or damaged file) gets no config: the scan step then
    reads the registry itself, and reports what is wrong."""
    key = parse_source_partition_key(partition_key)
    try:
        target = MindHomeResource().owning(key.workspace).scan_target(key.workspace, key.source)
    except MindError:
        return {}
    config = {
        "kind": target.kind,
        "source_path": target.source_path,
        "last_fingerprint": target.last_fingerprint,
        "max_file_bytes": target.rules.max_file_bytes,
        "follow_outside_links": target.rules.follow_outside_links,
        "exclude": list(target.rules.exclude),
        "redact": sorted(target.redaction.kinds),
    }
    return {"ops": {harvest_items.node_def.name: {"config": config}}}


def _tagged_by_partition(
    partitions_def: dg.PartitionsDefinition, tags_for_key, run_config_for_key=_no_run_config
) -> dg.PartitionedConfig:
    """Every run of a partition (launchpad, job backfill, sensor) gets its mind's tags, which the
    run queue of the shipped dagster.yaml limits to one run in progress per mind."""
    return dg.PartitionedConfig(
        partitions_def=partitions_def,
        run_config_for_partition_key_fn=run_config_for_key,
        tags_for_partition_key_fn=tags_for_key,
    )


harvest_job = dg.define_asset_job(
    "harvest_job",
    selection=dg.AssetSelection.assets(
        harvest_items, staged_vectors, iframe_imports, cognified_frames, vector_index
    ),
    description="Scan, embed (in chunks), import, cognify and load the vectors of one harvest source "
    "(partition '<workspace>/<source>').",
    config=_tagged_by_partition(harvest_sources, _source_run_tags, _scan_run_config),
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
