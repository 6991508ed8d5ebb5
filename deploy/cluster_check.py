"""``make cluster-check``: the bundled examples (``examples/``) harvested on the running cluster end
to end, as a user would: registered in the cluster's minds, one ``harvest_job`` run per source
queued by a job backfill, launched by the daemon, steps on the Celery workers. Then verified:
every run succeeded, every step that opens a mind ran on the home worker, and the mind equals the
same examples harvested on one machine (in this process, one source after another): everything
but the vectors exactly, the vectors by count and cosine (the in-process model quantizes per
batch: ``deploy/mind_comparison.py``)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import dagster as dg
from mind_harvest.pipelines.partitions import parse_source_partition_key
from mind_harvest.pipelines.routing import STATELESS
from mind_harvest.pipelines.run_examples import QUIET_RUN_CONFIG, WORKSPACE, add_partitions, register_examples

from deploy.local_cluster import LocalCluster, environment
from deploy.mind_comparison import compare_minds, mind_dump
from deploy.step_events import step_records
from mind_core.store.home import MindHome
from mind_core.text_table import format_table

RUNS_TIMEOUT_S = 1800  # five small sources take 5 to 10 minutes on 2 loaded cores
MIN_COSINE = 0.999


def _one_machine_mind(root: Path, order: list[str]) -> dict:
    """The examples harvested by in-process runs of the harvest job, one source after another in
    ``order`` (the cluster's: a frame's id follows the order of the imports)."""
    from mind_harvest.pipelines.definitions import defs

    with environment({"MIND_HOME": str(root)}):
        home = MindHome(root)
        register_examples(home)
        job = defs.resolve_job_def("harvest_job")
        with dg.DagsterInstance.ephemeral() as instance:
            add_partitions(instance, home)
            for key in order:
                job.execute_in_process(QUIET_RUN_CONFIG, instance=instance, partition_key=key, raise_on_error=False)
    return mind_dump(home.mind_path(WORKSPACE))


def check_harvest(cluster: LocalCluster) -> bool:
    """Harvest, verify, print what was found; True when everything holds."""
    home = MindHome(cluster.settings.minds)
    keys = register_examples(home)
    problems = []
    with environment(cluster.instance_env), dg.DagsterInstance.get() as instance:
        add_partitions(instance, home)
        began = time.monotonic()
        print(f"cluster check: harvesting {len(keys)} example sources on the cluster ...", flush=True)
        cluster.launch_backfill("harvest_job", keys)
        # the harvest runs; runs the automation sensor adds after them are shown, not awaited
        cluster.wait_for_runs(instance, keys, RUNS_TIMEOUT_S, job="harvest_job")
        seconds = time.monotonic() - began
        runs = sorted(
            instance.get_run_records(dg.RunsFilter(tags={"dagster/partition": keys})), key=lambda r: r.start_time or 0
        )
        # the order the harvest runs imported in (a frame's id follows it)
        order = [r.dagster_run.tags["dagster/partition"] for r in runs if r.dagster_run.job_name == "harvest_job"]
        rows = []
        for record in runs:  # the backfill's runs, and any the automation sensor added so far
            run = record.dagster_run
            steps = step_records(instance, run.run_id).values()
            stateless_workers = sorted({w for s in steps if s.queue == cluster.settings.queues.shared for w in s.workers})
            writing_workers = sorted({w for s in steps if s.queue != cluster.settings.queues.shared for w in s.workers})
            rows.append([
                parse_source_partition_key(run.tags["dagster/partition"]).source, run.job_name, run.status.value,
                str(len(steps)), ", ".join(writing_workers), ", ".join(stateless_workers),
            ])
            if run.status != dg.DagsterRunStatus.SUCCESS and (run.job_name == "harvest_job" or run.is_finished):
                problems.append(f"the run of {run.tags['dagster/partition']} ended {run.status.value} ({run.run_id})")
            if set(writing_workers) - {"home"}:
                problems.append(f"{run.tags['dagster/partition']}: a step that opens a mind ran on {writing_workers}")
    print(format_table(["source", "job", "run", "steps", "writing steps on", f"{STATELESS} steps on"], rows,
                       [False, False, False, True, False, False]))
    print(f"cluster harvest: {seconds:.1f} s; harvesting the same examples on one machine ...", flush=True)
    with tempfile.TemporaryDirectory(prefix="mind-harvest-check-") as reference:
        comparison = compare_minds(mind_dump(home.mind_path(WORKSPACE)), _one_machine_mind(Path(reference), order))
    print(f"the cluster's mind against one machine's: {comparison.describe()}")
    if not comparison.equal(MIN_COSINE):
        problems.append(f"the mind differs from one machine's (cosine at least {MIN_COSINE} expected)")
    if comparison.vectors == 0:
        problems.append("no vectors were written")
    for problem in problems:
        print(f"  problem: {problem}")
    print(f"cluster check: {'FAILED' if problems else 'passed'}; stopping", flush=True)
    return not problems
