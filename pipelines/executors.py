"""How a run executes its steps: in the run's process (default), a process per step, a Celery task
per step (``deploy/``, ``make cluster``) or a Kubernetes pod per step (``deploy/k8s``).

The code location's executor is ``harvest_executor``, chosen by Dagster configuration: a run's
config picks the mode (``execution: {config: {mode: multiprocess}}`` in the launchpad, a job's
or a schedule's run config); a run that picks none gets the deployment's mode,
``$MIND_HARVEST_DAGSTER_EXECUTOR`` of the process that starts it (read when the run starts, not
when the code loads), else ``in_process``. The distributed executors' libraries are imported
only when chosen, so a single-machine install runs without them."""

from __future__ import annotations

import os

import dagster as dg
import yaml
from dagster._config import process_config
from dagster._core.definitions.configurable import ConfiguredDefinitionConfigSchema

from mind_core.errors import InvalidInputError

EXECUTOR_ENV = "MIND_HARVEST_DAGSTER_EXECUTOR"
K8S_CONFIG_ENV = "MIND_HARVEST_K8S_EXECUTOR_CONFIG"
# the `execution.config` of deploy/celery.yaml, which the workers read (a test keeps them equal)
CELERY_EXECUTOR_CONFIG = {
    "broker": {"env": "MIND_HARVEST_CELERY_BROKER"},
    "backend": {"env": "MIND_HARVEST_CELERY_BACKEND"},
    "config_source": {
        "broker_connection_retry_on_startup": True,
        # late acknowledgement: a task whose worker is lost goes back to its queue (deploy/README.md)
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "broker_transport_options": {
            "visibility_timeout": 3600,
            "unacked_restore_interval": 30,
            "unacked_restore_throttle": 1,
        },
    },
}


def celery_executor() -> dg.ExecutorDefinition:
    """Dagster's Celery executor with the broker and result backend of ``deploy/celery.yaml``
    (``$MIND_HARVEST_CELERY_BROKER``, ``$MIND_HARVEST_CELERY_BACKEND``): every step is a Celery
    task on the queue its ``dagster-celery/queue`` tag names. Imported only when chosen, so a
    single-machine install runs without dagster-celery."""
    from dagster_celery import celery_executor as executor

    return executor.configured(CELERY_EXECUTOR_CONFIG, name="celery")


def k8s_executor() -> dg.ExecutorDefinition:
    """Dagster's Kubernetes executor (a pod per step) configured by the YAML file that
    ``$MIND_HARVEST_K8S_EXECUTOR_CONFIG`` names (``deploy/k8s/executor.yaml``: the writing steps'
    pods pinned to the minds' home node with the minds' volume); without it, Dagster's defaults."""
    from dagster_k8s import k8s_job_executor

    path = os.environ.get(K8S_CONFIG_ENV)
    if not path:
        return k8s_job_executor
    with open(path, encoding="utf-8") as file:
        config = (yaml.safe_load(file) or {}).get("execution", {}).get("config", {})
    return k8s_job_executor.configured(config, name="k8s")


EXECUTORS = {
    "in_process": lambda: dg.in_process_executor,
    "multiprocess": lambda: dg.multiprocess_executor,
    "celery": celery_executor,
    "k8s": k8s_executor,
}


def run_executor(mode: str | None = None) -> dg.ExecutorDefinition:
    """The executor of ``mode``: ``in_process`` (all steps in the run's process, one after another,
    so they share the loaded model; a harvest's steps form a chain anyway), ``multiprocess`` (each
    step in its own process, isolated: a step that crashes its interpreter fails alone, at the
    cost of loading the model per step), ``celery`` (each step on a Celery worker, ``deploy/``) or
    ``k8s`` (a Kubernetes pod per step, ``deploy/k8s``). No mode: the deployment's
    (``$MIND_HARVEST_DAGSTER_EXECUTOR``, default ``in_process``)."""
    choice = mode or os.environ.get(EXECUTOR_ENV) or "in_process"
    if choice not in EXECUTORS:
        raise InvalidInputError(f"executor mode {choice!r}: use one of {', '.join(EXECUTORS)}")
    return EXECUTORS[choice]()


def _default_config(executor: dg.ExecutorDefinition) -> dict:
    """The chosen executor's own configuration, defaults filled in, as Dagster hands it over."""
    schema = executor.config_schema
    if isinstance(schema, ConfiguredDefinitionConfigSchema):  # a `.configured(...)` executor
        return schema.resolve_config({}).value["config"]
    return process_config(schema.config_type, {}).value


@dg.executor(
    name="harvest_executor",
    config_schema={
        "mode": dg.Field(
            str,
            is_required=False,
            description="in_process, multiprocess, celery or k8s; unset: $MIND_HARVEST_DAGSTER_EXECUTOR, "
            "else in_process",
        ),
    },
)
def harvest_executor(init_context: dg.InitExecutorContext):
    """Runs the steps with the executor of the run config's ``mode`` (see the module)."""
    chosen = run_executor(init_context.executor_config.get("mode"))
    context = dg.InitExecutorContext(
        job=init_context.job,
        executor_def=chosen,
        executor_config=_default_config(chosen),
        instance=init_context.instance,
    )
    executor = chosen.executor_creation_fn(context)
    if chosen.name == "celery":  # with several home nodes, each run's home steps go to its mind's node
        from mind_harvest.pipelines.home_routing import HomeRoutedCeleryExecutor

        executor = HomeRoutedCeleryExecutor.of(executor)
    return executor
