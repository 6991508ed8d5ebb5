"""What the Dagster UI shows for a partition, read from the instance the way its GraphQL layer
reads it: an asset partition's status (the asset status cache behind the partitions bar), a
check's latest evaluation for a partition (with the run it belongs to), a backfill's status."""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg
from dagster._core.definitions.partitions.context import partition_loading_context
from dagster._core.storage.partition_status_cache import get_and_update_asset_status_cache_value
from mind_harvest.pipelines.partitions import harvest_sources


def partition_status(instance: dg.DagsterInstance, asset: str, partition: str) -> str:
    """``materialized``, ``failed``, ``in_progress`` or ``missing``, as the partitions bar colours it
    (green, red, blue, grey)."""
    value = get_and_update_asset_status_cache_value(instance, dg.AssetKey(asset), harvest_sources)
    if value is None:
        return "missing"
    with partition_loading_context(None, instance):  # dynamic partitions: keys from the instance
        subsets = {
            "failed": value.deserialize_failed_partition_subsets(harvest_sources),
            "in_progress": value.deserialize_in_progress_partition_subsets(harvest_sources),
            "materialized": value.deserialize_materialized_partition_subsets(harvest_sources),
        }
        for status, subset in subsets.items():
            if partition in subset.get_partition_keys():
                return status
    return "missing"


@dataclass(frozen=True)
class CheckStatus:
    status: str  # SUCCEEDED, FAILED, PLANNED (in a finished run: skipped), or NOT_EVALUATED
    run_id: str | None


def check_status(instance: dg.DagsterInstance, asset: str, check: str, partition: str) -> CheckStatus:
    """The latest evaluation of ``check`` for ``partition``, and the run it belongs to."""
    key = dg.AssetCheckKey(dg.AssetKey(asset), check)
    for info in instance.event_log_storage.get_asset_check_partition_info([key], partition_keys=[partition]):
        if info.partition_key == partition:
            return CheckStatus(info.latest_execution_status.value, info.latest_planned_run_id)
    return CheckStatus("NOT_EVALUATED", None)
