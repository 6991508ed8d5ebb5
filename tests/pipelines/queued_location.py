"""The code location as a test deployment loads it (``-m tests.pipelines.queued_location``): the
real assets, checks and jobs, with the fake embedder, for runs launched by a real daemon."""

from __future__ import annotations

import dagster as dg
from mind_harvest.pipelines.checks import ALL_CHECKS
from mind_harvest.pipelines.definitions import ASSETS
from mind_harvest.pipelines.executors import harvest_executor
from mind_harvest.pipelines.failed_sources import record_failed_sources
from mind_harvest.pipelines.jobs import harvest_job, mind_upkeep_job
from mind_harvest.pipelines.resources import MindHomeResource

from tests.pipelines.doubles import CountingPluginsResource, FakeEmbedderResource

defs = dg.Definitions(
    assets=ASSETS,
    asset_checks=ALL_CHECKS,
    jobs=[harvest_job, mind_upkeep_job],
    sensors=[record_failed_sources],
    resources={
        "mind_home": MindHomeResource(),
        "embedder": FakeEmbedderResource(),
        "plugins": CountingPluginsResource(),
    },
    executor=harvest_executor,
)


def harvest_job_def() -> dg.JobDefinition:
    """``harvest_job`` of this location, for ``dg.reconstructable`` (runs whose steps may go to
    other processes)."""
    return defs.resolve_job_def("harvest_job")
