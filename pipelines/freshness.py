"""Freshness of the scheduled sources: an auto-sync source whose files changed must be harvested
within its own interval.

Each auto-sync source has its own interval (``mind sources add --auto-sync --interval-hours N``),
so one time window on the asset (Dagster's ``FreshnessPolicy`` or the superseded
``build_last_update_freshness_checks``) cannot say which source is late. ``scheduled_sources_fresh``,
a check of ``vector_index`` run every hour by ``source_freshness_schedule``, fails (WARN) for every
source whose files differ from its last complete harvest while its last harvest is older than
``OVERDUE_INTERVALS`` of its intervals: the sensor did not harvest it, or every harvest since
failed. An unchanged source is fresh however long ago it was harvested: there is nothing new.
"""

from __future__ import annotations

from datetime import timedelta

import dagster as dg
from mind_harvest.pipelines.assets import vector_index
from mind_harvest.pipelines.metadata import audit_table
from mind_harvest.pipelines.partitions import source_partition_key
from mind_harvest.pipelines.resources import MindHomeResource, PluginManagerResource

from mind_core.timestamps import format_utc, parse_instant, utc_now

OVERDUE_INTERVALS = 2  # one interval to become due, one more for the sensor and the run
CHECK_CRON = "17 * * * *"


def overdue_sources(mind_home: MindHomeResource, plugins: PluginManagerResource) -> list[dict[str, str]]:
    """The scheduled sources with changes waiting longer than ``OVERDUE_INTERVALS`` intervals."""
    now = utc_now()
    overdue = []
    for entry in mind_home.catalog(format_utc(now)).due:
        source = entry.source
        try:
            changed = plugins.fingerprint(source) != source.last_fingerprint
        except Exception as exc:  # a source that cannot even be fingerprinted cannot be harvested
            changed, why = True, f"cannot be read: {exc}"
        else:
            why = "its files changed"
        synced = parse_instant(source.last_synced_at) if source.last_synced_at else None
        allowed = timedelta(hours=OVERDUE_INTERVALS * source.sync_interval_hours)
        if changed and (synced is None or now - synced > allowed):
            overdue.append(
                {
                    "source": source_partition_key(entry.workspace, source.source),
                    "interval_hours": str(source.sync_interval_hours),
                    "last_harvest": source.last_synced_at or "never",
                    "last_status": source.last_status or "never harvested",
                    "why": why,
                }
            )
    return overdue


@dg.asset_check(
    asset=vector_index,
    name="scheduled_sources_fresh",
    description="Every auto-sync source whose files changed was harvested within "
    f"{OVERDUE_INTERVALS} of its intervals.",
)
def scheduled_sources_fresh(
    mind_home: MindHomeResource, plugins: PluginManagerResource
) -> dg.AssetCheckResult:
    overdue = overdue_sources(mind_home, plugins)
    return dg.AssetCheckResult(
        passed=not overdue,
        severity=dg.AssetCheckSeverity.WARN,
        description="every scheduled source is up to date"
        if not overdue
        else f"{len(overdue)} scheduled source(s) overdue: " + ", ".join(o["source"] for o in overdue),
        metadata={"overdue": len(overdue), "sources": audit_table(overdue)},
    )


source_freshness_job = dg.define_asset_job(
    "source_freshness_job",
    selection=dg.AssetSelection.checks(scheduled_sources_fresh),
    description="Check that the scheduled sources were harvested in time.",
)

source_freshness_schedule = dg.ScheduleDefinition(
    name="source_freshness_schedule",
    job=source_freshness_job,
    cron_schedule=CHECK_CRON,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
