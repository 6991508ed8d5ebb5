"""How a run executes its steps, chosen by ``$MIND_HARVEST_DAGSTER_EXECUTOR`` when the code location
loads: in the run's process (default), a process per step, a Celery task per step (``deploy/``,
``make cluster``) or a Kubernetes pod per step (``deploy/k8s``). The distributed executors'
libraries are imported only when chosen, so a single-machine install runs without them."""

from __future__ import annotations

import os

import dagster as dg
import yaml

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


def run_executor() -> dg.ExecutorDefinition:
    """How a run executes its steps: by default all in the run's process, one after another, so
    they share the loaded model (a harvest's steps form a chain anyway); with
    ``MIND_HARVEST_DAGSTER_EXECUTOR=multiprocess`` each step in its own process, isolated (a step
    that crashes its interpreter fails alone) at the cost of loading the model per step; with
    ``celery`` each step on a Celery worker (``deploy/``, ``make cluster``), with ``k8s`` in a
    Kubernetes pod (``deploy/k8s``)."""
    choice = os.environ.get(EXECUTOR_ENV, "in_process")
    executors = {
        "in_process": lambda: dg.in_process_executor,
        "multiprocess": lambda: dg.multiprocess_executor,
        "celery": celery_executor,
        "k8s": k8s_executor,
    }
    if choice not in executors:
        raise InvalidInputError(f"{EXECUTOR_ENV}={choice!r}: use one of {', '.join(executors)}")
    return executors[choice]()
