"""The code location as a test deployment loads it (``-m tests.pipelines.queued_location``): the
real assets, checks and jobs, with the fake embedder, for runs launched by a real daemon."""

from __future__ import annotations

import dagster as dg
from mind_harvest.pipelines.checks import ALL_CHECKS
from mind_harvest.pipelines.definitions import ASSETS, run_executor
from mind_harvest.pipelines.jobs import harvest_job, mind_upkeep_job
from mind_harvest.pipelines.resources import MindHomeResource

from tests.pipelines.doubles import CountingPluginsResource, FakeEmbedderResource

defs = dg.Definitions(
    assets=ASSETS,
    asset_checks=ALL_CHECKS,
    jobs=[harvest_job, mind_upkeep_job],
    resources={
        "mind_home": MindHomeResource(),
        "embedder": FakeEmbedderResource(),
        "plugins": CountingPluginsResource(),
    },
    executor=run_executor(),
)
