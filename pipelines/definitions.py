"""The ``harvest`` code location (loaded by workspace.yaml)."""

from __future__ import annotations

import os

import dagster as dg

from mind_core.errors import InvalidInputError
from pipelines.assets import (
    cognified_frames,
    compacted_frames,
    harvest_items,
    iframe_imports,
    memory_snapshots,
    reconciled_indexes,
    vector_index,
)
from pipelines.checks import ALL_CHECKS
from pipelines.jobs import harvest_job, memory_snapshot_job, mind_upkeep_job
from pipelines.resources import EmbedderResource, MindHomeResource, PluginManagerResource
from pipelines.schedules import daily_memory_snapshot, daily_mind_upkeep
from pipelines.sensors import harvest_automation_sensor, harvest_sources_sensor

ASSETS = [
    harvest_items,
    iframe_imports,
    cognified_frames,
    vector_index,
    reconciled_indexes,
    compacted_frames,
    memory_snapshots,
]


EXECUTOR_ENV = "MIND_HARVEST_DAGSTER_EXECUTOR"


def celery_executor() -> dg.ExecutorDefinition:
    """Dagster's Celery executor with the broker and result backend of ``deploy/celery.yaml``
    (``$MIND_HARVEST_CELERY_BROKER``, ``$MIND_HARVEST_CELERY_BACKEND``): every step is a Celery
    task on the queue its ``dagster-celery/queue`` tag names. Imported only when chosen, so a
    single-machine install runs without dagster-celery."""
    from dagster_celery import celery_executor as executor

    return executor.configured(
        {
            "broker": {"env": "MIND_HARVEST_CELERY_BROKER"},
            "backend": {"env": "MIND_HARVEST_CELERY_BACKEND"},
            "config_source": {"broker_connection_retry_on_startup": True},
        },
        name="celery",
    )


def run_executor() -> dg.ExecutorDefinition:
    """How a run executes its steps: by default all in the run's process, one after another, so
    they share the loaded model (a harvest's steps form a chain anyway); with
    ``MIND_HARVEST_DAGSTER_EXECUTOR=multiprocess`` each step in its own process, isolated (a step
    that crashes its interpreter fails alone) at the cost of loading the model per step; with
    ``celery`` each step on a Celery worker (``deploy/``, ``make cluster``)."""
    choice = os.environ.get(EXECUTOR_ENV, "in_process")
    executors = {
        "in_process": lambda: dg.in_process_executor,
        "multiprocess": lambda: dg.multiprocess_executor,
        "celery": celery_executor,
    }
    if choice not in executors:
        raise InvalidInputError(f"{EXECUTOR_ENV}={choice!r}: use one of {', '.join(executors)}")
    return executors[choice]()


def default_resources() -> dict[str, dg.ConfigurableResource]:
    """The real resources: the mind home from $MIND_HOME, the in-process model, installed plugins."""
    return {
        "mind_home": MindHomeResource(),
        "embedder": EmbedderResource(),
        "plugins": PluginManagerResource(),
    }


defs = dg.Definitions(
    assets=ASSETS,
    asset_checks=ALL_CHECKS,
    jobs=[harvest_job, mind_upkeep_job, memory_snapshot_job],
    sensors=[harvest_sources_sensor, harvest_automation_sensor],
    schedules=[daily_mind_upkeep, daily_memory_snapshot],
    resources=default_resources(),
    executor=run_executor(),
)
