"""The harvest job with the multiprocess executor and the fake embedder, importable by the step
processes that Dagster starts (``dg.reconstructable(harvest_job)``)."""

from __future__ import annotations

import dagster as dg

from pipelines.checks import ALL_CHECKS
from pipelines.definitions import ASSETS
from pipelines.resources import MindHomeResource
from tests.pipelines.doubles import CountingPluginsResource, FakeEmbedderResource

# forkserver with this module (Dagster, the engine, the resolved job) preloaded: each step process
# is a cheap fork, not a new interpreter importing and resolving everything again. Checks are left
# out: this job is about concurrent writers.
EXECUTOR = dg.multiprocess_executor.configured(
    {
        "max_concurrent": 8,
        "start_method": {"forkserver": {"preload_modules": ["tests.pipelines.multiprocess_job"]}},
    }
)

_defs = dg.Definitions(
    assets=ASSETS,
    asset_checks=ALL_CHECKS,
    jobs=[
        dg.define_asset_job(
            "harvest_job",
            selection=dg.AssetSelection.assets(
                "harvest_items", "iframe_imports", "cognified_frames", "vector_index"
            ).without_checks(),
        )
    ],
    resources={
        "mind_home": MindHomeResource(),
        "embedder": FakeEmbedderResource(),
        "plugins": CountingPluginsResource(),
    },
    executor=EXECUTOR,
)

_job = _defs.resolve_job_def("harvest_job")  # resolved once, in the preloaded forkserver


def harvest_job() -> dg.JobDefinition:
    return _job


def run_partition(instance_ref: object, key: str, mind_home: str) -> None:
    """One run of the harvest job for one partition, in its own process (as a run launcher would)."""
    with dg.DagsterInstance.from_ref(instance_ref) as instance:
        dg.execute_job(
            dg.reconstructable(harvest_job),
            instance=instance,
            run_config={"resources": {"mind_home": {"config": {"root": mind_home}}}},
            tags={"dagster/partition": key},
        )
