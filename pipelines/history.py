"""One harvest history: a harvest by the ``mind`` command recorded in the mind home's Dagster
instance, as the materializations a Dagster run of that source's partition records.

``mind_core`` calls the ``harvest_finished`` hook after each source (it never imports Dagster);
``mind_harvest.pipelines.history_plugin``, registered through the ``mind_harvest`` entry-point group, answers
it with ``record_command_line_harvest``. No daemon or
webserver needs to run: the events go straight into the instance's storage, so the UI shows the
command line's harvests beside its own runs (tagged ``mind_harvest/recorded_by: command-line``).

- A harvested source (ok / partial): a materialization of each asset of the harvest chain for its
  partition, with the counts a run records.
- A failed, empty or missing source: an observation of ``harvest_items`` for the partition whose
  description is the status and the reason; no materialization (the partition keeps its last good
  state). Not a check evaluation: the instance keeps one run-less evaluation per check and
  partition, so a second failed harvest could not be recorded.
- An unchanged source: nothing new, unless the partition has never been materialized (a mind
  harvested before this history existed); then the chain is recorded as up to date.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
from mind_harvest.pipelines.instance import prepare_dagster_home, recorded_mark
from mind_harvest.pipelines.partitions import harvest_sources, mind_workspaces, source_partition_key

from mind_core.harvest.stores import FAILING_STATUSES
from mind_core.store.home import PERSONAL, MindHome

CHAIN = ("harvest_items", "staged_vectors", "iframe_imports", "cognified_frames", "vector_index")
RECORDED_BY = {"mind_harvest/recorded_by": "command-line"}


def _chain_metadata(report: Any) -> dict[str, dict[str, Any]]:
    imported = report.imported
    cognified = report.cognified or {}
    seconds = report.stage_seconds
    return {
        "harvest_items": {
            "source": report.source,
            "kind": str(report.kind),
            "items": imported.items_seen,
            "messages": imported.messages_seen,
            "errors": imported.error_count,
            "scan_seconds": round(seconds.get("scan", 0.0), 3),
        },
        "staged_vectors": {
            # the command line embeds in its own process, while it writes: no chunk files
            "chunks": 0,
            "texts_embedded": report.vectors_written,
        },
        "iframe_imports": {
            "items": imported.items_seen,
            "messages": imported.messages_seen,
            "frames_new": imported.frames_new,
            "frames_updated": imported.frames_updated,
            "frames_unchanged": imported.frames_unchanged,
            "frames_duplicate": imported.frames_duplicate,
            "errors": imported.error_count,
            "pruned": imported.pruned,
            "import_seconds": round(seconds.get("import", 0.0), 3),
        },
        "cognified_frames": {
            "frames_processed": int(cognified.get("processed", 0)),
            "entity_mentions": int(cognified.get("entities", 0)),
            "relations_created": int(cognified.get("relations", 0)),
            "vectors_written": int(cognified.get("vectors", 0)),
            "cognify_seconds": round(seconds.get("cognify", 0.0), 3),
        },
        "vector_index": {
            "vectors_written": report.vectors_written - int(cognified.get("vectors", 0)),
            "embed_seconds": round(seconds.get("vectors", 0.0), 3),
            "harvest_complete": report.status not in FAILING_STATUSES,
        },
    }


def never_materialized(instance: dg.DagsterInstance, partition: str) -> bool:
    """Whether some asset of the harvest chain has no materialization for this source partition."""
    return any(
        not instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(name), asset_partitions=[partition]), limit=1
        ).records
        for name in CHAIN
    )


def _failure(report: Any, partition: str) -> dg.AssetObservation:
    return dg.AssetObservation(
        asset_key="harvest_items",
        partition=partition,
        description=f"{report.status}: {report.reason}",
        metadata={"status": str(report.status), "reason": str(report.reason)},
        tags=RECORDED_BY,
    )


def record_harvest(instance: dg.DagsterInstance, workspace: str, report: Any) -> list[str]:
    """Record one command-line harvest in ``instance``; returns the asset names materialized."""
    partition = source_partition_key(workspace, report.source)
    for partitions_def, key in ((harvest_sources, partition), (mind_workspaces, workspace)):
        if not instance.has_dynamic_partition(partitions_def.name, key):
            instance.add_dynamic_partitions(partitions_def.name, [key])
    if report.status in FAILING_STATUSES:
        instance.report_runless_asset_event(_failure(report, partition))
        return []
    if report.skipped:
        if not never_materialized(instance, partition):
            return []
        metadata = {name: {"unchanged": True, "reason": str(report.reason)} for name in CHAIN}
    else:
        metadata = _chain_metadata(report)
    for name in CHAIN:
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                asset_key=name, partition=partition, metadata=metadata[name], tags=RECORDED_BY
            )
        )
    return list(CHAIN)


def record_command_line_harvest(mind_home: Path, workspace: str | None, report: Any) -> None:
    """Record a harvest of the ``mind`` command in the instance of its mind home; once the chain
    is recorded, a mark lets the next unchanged harvest skip the instance (``history_plugin``)."""
    folder = prepare_dagster_home(MindHome(mind_home))
    workspace = workspace or PERSONAL
    with dg.DagsterInstance.from_config(str(folder)) as instance:
        record_harvest(instance, workspace, report)
    if report.status not in FAILING_STATUSES:
        mark = recorded_mark(mind_home, workspace, report.source)
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.touch()
