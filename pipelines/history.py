"""One harvest history: a harvest by the ``mind`` command recorded in the mind home's Dagster
instance as a run of its own, with what a Dagster run of that source's partition records.

``mind_core`` calls the ``harvest_finished`` hook after each source (it never imports Dagster);
``mind_harvest.pipelines.history_plugin``, registered through the ``mind_harvest`` entry-point
group, answers it with ``record_command_line_harvest``. No daemon or webserver needs to run: the
run (job ``command_line_harvest``, tagged ``mind_harvest/recorded_by: command-line`` and with the
mind's and source's tags) executes in the command's process against the instance, replaying
what the command did, so the UI shows the command line's harvests beside its own runs, each
failure linked to its own run.

- A harvested source (ok / partial): a materialization of each asset of the harvest chain for its
  partition, with the counts a Dagster run records, and the checks evaluated: ``source_parsed``
  and ``error_rate_below_threshold`` from what the scan read, the audits from the mind.
- A failed, empty or missing source: ``source_parsed`` fails (ERROR, with the reason and the
  located errors) and the run fails, so the chain's partition is a failed materialization, red
  as it is after a Dagster run of the same source (the partition's last good data stays).
- An unchanged source: nothing new, unless the partition has never been materialized (a mind
  harvested before this history existed); then the chain is recorded as up to date.

``embedding_fingerprint_matches`` is left to Dagster's runs: it compares the mind's vectors with
the code location's embedder, which the command line does not use.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
from mind_harvest.pipelines.chain import CHAIN, never_materialized
from mind_harvest.pipelines.check_results import (
    AUDITS,
    SOURCE_PARSED,
    audit_source,
    error_rate_result,
    source_parsed_result,
)
from mind_harvest.pipelines.checks import DEFAULT_MAX_ERROR_RATE, SOURCE_CHECKS
from mind_harvest.pipelines.instance import prepare_dagster_home, recorded_mark
from mind_harvest.pipelines.jobs import SOURCE_TAG, WORKSPACE_TAG
from mind_harvest.pipelines.metadata import errors_table
from mind_harvest.pipelines.partitions import harvest_sources, mind_workspaces, source_partition_key

from mind_core.harvest.pipeline import HARVEST_CACHE_KIB, HARVEST_MMAP_BYTES
from mind_core.harvest.stores import FAILING_STATUSES
from mind_core.mind import Mind
from mind_core.store.home import PERSONAL, MindHome

JOB_NAME = "command_line_harvest"
RECORDED_BY = {"mind_harvest/recorded_by": "command-line"}
# The recording run's own log stays out of the command's output (the command prints its summary).
QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# The checks a recorded harvest evaluates: every check of a source's partition but the embedder's.
RECORDED_CHECKS = [
    SOURCE_PARSED,
    *(spec for check in SOURCE_CHECKS for spec in check.check_specs if spec.name != "embedding_fingerprint_matches"),
]


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
            "first_errors": errors_table(imported.errors, imported.error_count),
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


def _failure(report: Any, partition: str) -> Iterator[dg.AssetCheckResult]:
    """The failed ``source_parsed`` of a failed harvest, then the failure of its run."""
    imported = report.imported
    errors = imported.errors if imported else []
    error_count = imported.error_count if imported else 0
    yield source_parsed_result(
        str(report.status), report.reason, imported.items_seen if imported else 0, errors, error_count
    )
    raise dg.Failure(
        description=f"{partition}: {report.status}: {report.reason}",
        metadata={
            "status": str(report.status),
            "reason": str(report.reason),
            "first_errors": errors_table(errors, error_count),
        },
    )


def _checks(report: Any, mind_path: Path, source: str) -> Iterator[dg.AssetCheckResult]:
    """The checks of a harvested source: what its scan read, then the audits of its frames."""
    imported = report.imported
    if imported is not None:
        yield source_parsed_result(
            str(report.status), report.reason, imported.items_seen, imported.errors, imported.error_count
        )
        yield error_rate_result(
            imported.errors,
            imported.error_count,
            imported.items_seen + imported.error_count,
            DEFAULT_MAX_ERROR_RATE,
            asset_key="harvest_items",
            check_name="error_rate_below_threshold",
        )
    # the audits pass over the source's frames: within the harvest's memory bounds, not the
    # search's memory map (whose pages would count in the command's memory)
    with Mind.open(mind_path, readonly=True) as mind, mind.db.memory_bounds(HARVEST_MMAP_BYTES, HARVEST_CACHE_KIB):
        for name in AUDITS:
            yield audit_source(mind.db, source, name)


def _recording_job(report: Any, partition: str, mind_path: Path) -> dg.JobDefinition:
    """A job whose one step replays ``report`` as the harvest chain's events for ``partition``."""

    @dg.multi_asset(
        name=JOB_NAME,
        specs=[dg.AssetSpec(name, partitions_def=harvest_sources, skippable=True) for name in CHAIN],
        check_specs=RECORDED_CHECKS,
        partitions_def=harvest_sources,
        can_subset=True,
    )
    def command_line_harvest():
        if report.status in FAILING_STATUSES:
            yield from _failure(report, partition)
            return
        if report.skipped:
            metadata = {name: {"unchanged": True, "reason": str(report.reason)} for name in CHAIN}
        else:
            metadata = _chain_metadata(report)
        for name in CHAIN:
            yield dg.MaterializeResult(asset_key=name, metadata=metadata[name], tags=RECORDED_BY)
        yield from _checks(report, mind_path, report.source)

    job = dg.define_asset_job(JOB_NAME, selection=[command_line_harvest])
    return dg.Definitions(assets=[command_line_harvest], jobs=[job]).resolve_job_def(JOB_NAME)


def record_harvest(
    instance: dg.DagsterInstance, workspace: str, report: Any, mind_path: Path
) -> dg.ExecuteInProcessResult | None:
    """Record one command-line harvest in ``instance`` as a run; None when there is nothing to
    record (an unchanged source whose chain the instance holds)."""
    partition = source_partition_key(workspace, report.source)
    for partitions_def, key in ((harvest_sources, partition), (mind_workspaces, workspace)):
        if not instance.has_dynamic_partition(partitions_def.name, key):
            instance.add_dynamic_partitions(partitions_def.name, [key])
    if report.skipped and report.status not in FAILING_STATUSES and not never_materialized(instance, partition):
        return None
    return _recording_job(report, partition, mind_path).execute_in_process(
        instance=instance,
        partition_key=partition,
        run_config=QUIET_RUN_CONFIG,
        tags={**RECORDED_BY, WORKSPACE_TAG: workspace, SOURCE_TAG: report.source},
        raise_on_error=False,
    )


def record_command_line_harvest(mind_home: Path, workspace: str | None, report: Any) -> None:
    """Record a harvest of the ``mind`` command in the instance of its mind home; once the chain
    is recorded, a mark lets the next unchanged harvest skip the instance (``history_plugin``)."""
    home = MindHome(mind_home)
    folder = prepare_dagster_home(home)
    workspace = workspace or PERSONAL
    with dg.DagsterInstance.from_config(str(folder)) as instance:
        record_harvest(instance, workspace, report, home.mind_path(workspace))
    if report.status not in FAILING_STATUSES:
        mark = recorded_mark(mind_home, workspace, report.source)
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.touch()
