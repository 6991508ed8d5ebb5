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
    vector_index,
)

WORKSPACE_TAG = "mind_harvest/workspace"
SOURCE_TAG = "mind_harvest/source"

harvest_job = dg.define_asset_job(
    "harvest_job",
    selection=dg.AssetSelection.assets(harvest_items, iframe_imports, cognified_frames, vector_index),
    description="Scan, import, cognify and embed one harvest source (partition '<workspace>/<source>').",
)

mind_upkeep_job = dg.define_asset_job(
    "mind_upkeep_job",
    selection=dg.AssetSelection.assets(reconciled_indexes, compacted_frames),
    description="Reconcile the indexes of one mind, then compact it.",
)

memory_snapshot_job = dg.define_asset_job(
    "memory_snapshot_job",
    selection=dg.AssetSelection.assets(memory_snapshots),
    description="Snapshot every mind to Parquet for one day and refresh the analytics report.",
)
