"""A worker lost in the middle of a harvest, on a running local cluster, and what it cost.

A ``harvest_job`` run of a source is queued; once one of its embedding chunks is running on the
chosen worker, either that worker's pool process is killed (SIGKILL, as the OOM killer kills the
process that runs the task: Celery puts the task back in its queue at once) or the whole worker
is (main process and pool, as a machine lost: the task stays unacknowledged in Redis until the
visibility timeout, then a worker of its queue takes it; ``LocalCluster.wait_for_runs`` starts
the lost worker again, as ``make cluster`` does). Then the run is awaited (and its automatic
retries, if the run failed) and measured from the runs' own event logs: the time from the kill
until the killed chunk finished on its second try, the chunks embedded more than once, the
run's time, how many runs it took. Used by ``tests/deploy/test_lost_workers.py`` (fake embedder)
and ``benchmarks/lost_workers.py`` (the real model).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import dagster as dg
from mind_harvest.pipelines.jobs import harvest_job

from deploy.local_cluster import ClusterError, LocalCluster, environment
from deploy.step_events import StepRecord, step_records

POOL, WORKER = "pool process", "whole worker"
CHUNK_OP = "embed_vector_chunk"


@dataclass(frozen=True)
class Recovery:
    kind: str  # POOL or WORKER
    killed_step: str
    killed_on: str  # the worker the chunk ran on when it was killed
    ran_again_on: str
    status: dg.DagsterRunStatus  # of the partition's last harvest run
    runs: int  # the first run and its automatic retries
    run_seconds: float  # first run's start to the last run's end
    recovery_seconds: float  # the kill to the killed chunk's success
    chunks: int
    chunks_redone: int  # chunk executions beyond one per chunk, over all the runs

    def describe(self) -> str:
        return (
            f"{self.kind} killed during {self.killed_step} on {self.killed_on}: run {self.status.value} "
            f"after {self.runs} run(s), {self.run_seconds:.1f} s; the chunk ran again on {self.ran_again_on}, "
            f"done {self.recovery_seconds:.1f} s after the kill; chunks redone {self.chunks_redone} of {self.chunks}"
        )


def launch_harvest(
    cluster: LocalCluster, key: str, run_config: dict[str, Any], tags: Mapping[str, str] | None = None
) -> None:
    """Queue the partition's harvest run with the config and tags a backfill gives it (the scan
    config read from the cluster's minds, the mind's tags), ``run_config`` merged over the config
    and ``tags`` added."""
    partitioned = harvest_job.config
    with environment({"MIND_HOME": str(cluster.settings.minds)}):  # where the job reads the registration
        config = _merge(partitioned.get_run_config_for_partition_key(key), run_config)
    cluster.launch_run(harvest_job.name, config, {**partitioned.get_tags_for_partition_key(key), **(tags or {})})


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for name, value in over.items():
        merged[name] = _merge(merged[name], value) if isinstance(value, dict) and isinstance(merged.get(name), dict) else value
    return merged


def _is_chunk(step: str) -> bool:
    return step.split("[", 1)[0].rsplit(".", 1)[-1] == CHUNK_OP


def harvest_runs(instance: dg.DagsterInstance, key: str) -> list[dg.DagsterRun]:
    """The partition's harvest runs (the first and its automatic retries), oldest first; runs of
    other jobs (the automation sensor's, following a harvest) are not part of the trial."""
    records = instance.get_run_records(dg.RunsFilter(tags={"dagster/partition": key}, job_name=harvest_job.name))
    return [r.dagster_run for r in sorted(records, key=lambda r: r.create_timestamp)]


def kill_mid_chunk(
    cluster: LocalCluster, instance: dg.DagsterInstance, keys: list[str], kind: str, worker: str, timeout: float
) -> tuple[str, str, float]:
    """Wait until a chunk of a run of one of ``keys`` is running on ``worker``, kill (``kind``);
    the partition, the chunk's step key and the time of the kill."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for key in keys:
            for run in harvest_runs(instance, key):
                for step in step_records(instance, run.run_id).values():
                    if _is_chunk(step.step) and step.workers[-1:] == (worker,) and step.started and not step.ended:
                        if kind == POOL:
                            cluster.kill_pool_processes(worker)
                        else:
                            cluster.kill_worker(worker)
                        return key, step.step, time.time()
        if cluster.exited():
            raise ClusterError(f"stopped before the kill: {', '.join(cluster.exited())}")
        time.sleep(0.2)
    raise ClusterError(f"no chunk of {keys} ran on {worker} within {timeout:.0f} s (logs {cluster.logs})")


def await_recovery(
    cluster: LocalCluster, instance: dg.DagsterInstance, kind: str, killed: tuple[str, str, float], timeout: float
) -> Recovery:
    """Wait for the killed partition's runs to end (``LocalCluster.wait_for_runs``), measure them."""
    key, step_key, killed_at = killed
    cluster.wait_for_runs(instance, [key], timeout, job=harvest_job.name)
    runs = harvest_runs(instance, key)
    records: list[dict[str, StepRecord]] = [step_records(instance, run.run_id) for run in runs]
    chunk_runs = [step for steps in records for step in steps.values() if _is_chunk(step.step)]
    chunks = {step.step for step in chunk_runs}
    executions = sum(max(len(step.workers), 1) for step in chunk_runs)
    tries = [steps[step_key] for steps in records if step_key in steps]
    finished = [t for t in tries if t.succeeded and t.ended]
    workers = [w for t in tries for w in t.workers]
    stats = [instance.get_run_stats(run.run_id) for run in runs]
    return Recovery(
        kind=kind,
        killed_step=step_key,
        killed_on=workers[0] if workers else "?",
        ran_again_on=workers[-1] if len(workers) > 1 else "-",
        status=runs[-1].status,
        runs=len(runs),
        run_seconds=(max(s.end_time or 0 for s in stats) - min(s.start_time or 0 for s in stats)),
        recovery_seconds=(finished[-1].ended - killed_at) if finished else float("nan"),
        chunks=len(chunks),
        chunks_redone=executions - len(chunks),
    )
