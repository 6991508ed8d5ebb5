"""The harvest chain of a source partition: its assets in order, and whether the instance holds a
materialization of each (a mind harvested before the instance kept its history does not)."""

from __future__ import annotations

import dagster as dg

CHAIN = ("harvest_items", "staged_vectors", "iframe_imports", "cognified_frames", "vector_index")


def never_materialized(instance: dg.DagsterInstance, partition: str) -> bool:
    """Whether some asset of the harvest chain has no materialization for this source partition."""
    return any(
        not instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(name), asset_partitions=[partition]), limit=1
        ).records
        for name in CHAIN
    )
