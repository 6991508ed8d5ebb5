"""The harvest sensor: partitions follow the sources registered in the minds, and due sources
whose content changed are harvested.

Each tick reads every mind of the home, or of every home node (``pipelines/homes.py``), read-only, and

- adds a ``harvest_sources`` partition for each newly registered source and removes the
  partitions of removed ones (the sources of a mind that cannot be read are left alone: a locked
  or damaged file is not a removal), and keeps ``mind_workspaces`` equal to the minds on disk;
- requests one ``harvest_job`` run per auto-sync source whose interval has elapsed and whose file
  fingerprint differs from the one of its last complete harvest. The run key is
  ``<partition>@<fingerprint>``, so the same content never starts a second run (Dagster drops a
  repeated run key), and the cursor remembers what was requested, so the next tick asks for
  nothing until the files change again. A run that failed is re-executed from the UI.
"""

import json

import dagster as dg
from mind_harvest.pipelines.jobs import SOURCE_TAG, WORKSPACE_TAG, harvest_job
from mind_harvest.pipelines.partitions import (
    SEPARATOR,
    harvest_sources,
    mind_workspaces,
    source_partition_key,
)
from mind_harvest.pipelines.resources import MindHomeResource, PluginManagerResource

from mind_core.errors import InvalidInputError
from mind_core.harvest.catalog import HomeCatalog

TICK_SECONDS = 30


def _source_keys(context: dg.SensorEvaluationContext, catalog: HomeCatalog) -> dict[tuple[str, str], str]:
    """(workspace, source) -> partition key, for every source that can be a partition."""
    keys: dict[tuple[str, str], str] = {}
    for entry in catalog.sources:
        try:
            key = source_partition_key(entry.workspace, entry.source.source)
        except InvalidInputError as exc:
            context.log.warning(
                f"source {entry.source.source!r} in {entry.workspace!r} has no partition: {exc}"
            )
            continue
        keys[(entry.workspace, entry.source.source)] = key
    return keys


def _partition_requests(
    context: dg.SensorEvaluationContext, catalog: HomeCatalog, source_keys: set[str]
) -> list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest]:
    known_sources = set(context.instance.get_dynamic_partitions(harvest_sources.name))
    unreadable = set(catalog.unreadable)
    stale_sources = {k for k in known_sources - source_keys if k.partition(SEPARATOR)[0] not in unreadable}
    known_minds = set(context.instance.get_dynamic_partitions(mind_workspaces.name))
    requests: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest] = []
    for partitions_def, add, delete in (
        (harvest_sources, source_keys - known_sources, stale_sources),
        (mind_workspaces, set(catalog.minds) - known_minds, known_minds - set(catalog.minds) - unreadable),
    ):
        if add:
            requests.append(partitions_def.build_add_request(sorted(add)))
        if delete:
            requests.append(partitions_def.build_delete_request(sorted(delete)))
    return requests


@dg.sensor(
    job=harvest_job,
    minimum_interval_seconds=TICK_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def harvest_sources_sensor(
    context: dg.SensorEvaluationContext, mind_home: MindHomeResource, plugins: PluginManagerResource
) -> dg.SensorResult:
    """Keeps the harvest partitions in step with the registered sources; harvests due sources
    whose files changed."""
    catalog = mind_home.catalog()
    for workspace, reason in catalog.unreadable.items():
        context.log.warning(f"mind {workspace!r} could not be read: {reason}")
    source_keys = _source_keys(context, catalog)
    requested: dict[str, str] = json.loads(context.cursor or "{}").get("requested", {})
    runs: list[dg.RunRequest] = []
    for entry in catalog.due:
        key = source_keys.get((entry.workspace, entry.source.source))
        if key is None:
            continue
        try:
            fingerprint = plugins.fingerprint(entry.source, entry.redaction)
        except Exception as exc:  # a plugin failing on one source must not stop the others
            context.log.warning(f"{key}: cannot fingerprint {entry.source.source_path}: {exc}")
            continue
        if fingerprint in (entry.source.last_fingerprint, requested.get(key)):
            continue
        runs.append(
            dg.RunRequest(
                partition_key=key,
                run_key=f"{key}@{fingerprint}",
                tags={WORKSPACE_TAG: entry.workspace, SOURCE_TAG: entry.source.source},
            )
        )
        requested[key] = fingerprint
    partition_keys = set(source_keys.values())
    cursor = {"requested": {k: v for k, v in sorted(requested.items()) if k in partition_keys}}
    return dg.SensorResult(
        run_requests=runs,
        dynamic_partitions_requests=_partition_requests(context, catalog, partition_keys),
        cursor=json.dumps(cursor),
    )


# Evaluates the automation conditions of the downstream harvest assets (declarative automation),
# so a harvest_items materialized on its own, e.g. from the UI, is followed by the rest of its chain.
harvest_automation_sensor = dg.AutomationConditionSensorDefinition(
    "harvest_automation_sensor",
    target=dg.AssetSelection.assets("iframe_imports", "cognified_frames", "staged_vectors", "vector_index"),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=TICK_SECONDS,
)
