"""Runs of one mind are serialized by Dagster's run queue, as a deployment runs them: a job
backfill over five sources of two minds submitted to the queue of the shipped dagster.yaml, a real
daemon launching the runs (each in its own process), the mind's tag limiting one run in progress
per mind. Verified from the run records Dagster keeps, not from log lines."""

import os
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from mind_harvest.pipelines.instance import prepare_dagster_home
from mind_harvest.pipelines.jobs import WORKSPACE_TAG

from mind_core.mind import Mind
from mind_core.testing.exports import write_chatgpt_export
from tests.pipelines.harness import add_partitions, register

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LOCATION = ["-m", "tests.pipelines.queued_location", "-a", "defs"]
SOURCES = {"alpha": 3, "beta": 2}
RUNS_TIMEOUT_S = 300
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


def test_a_backfill_runs_one_run_per_mind_at_a_time(tmp_path, home, monkeypatch):
    monkeypatch.setenv("MIND_HOME", str(home.root))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    keys = []
    for workspace, count in SOURCES.items():
        for n in range(count):
            export = write_chatgpt_export(tmp_path / workspace / f"s{n}" / "c.json", 100, 20, seed=n)
            keys.append(register(home, workspace, "chatgpt", export, f"s{n}"))
    instance_home = prepare_dagster_home(home)
    assert instance_home == home.root / "dagster"
    monkeypatch.setenv("DAGSTER_HOME", str(instance_home))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    with dg.DagsterInstance.get() as instance:
        add_partitions(instance, *keys)
        subprocess.run(
            [str(BIN / "dagster"), "job", "backfill", *LOCATION, "-j", "harvest_job",
             "--partitions", ",".join(keys), "--noprompt"],
            cwd=REPO, env=env, check=True, capture_output=True, timeout=180,
        )
        queued = instance.get_runs()
        assert len(queued) == len(keys)
        assert {run.status for run in queued} == {dg.DagsterRunStatus.QUEUED}
        assert sorted(run.tags[WORKSPACE_TAG] for run in queued) == sorted(k.split("/")[0] for k in keys)

        daemon = subprocess.Popen(
            [str(BIN / "dagster-daemon"), "run", *LOCATION],
            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + RUNS_TIMEOUT_S
            while time.monotonic() < deadline:
                records = instance.get_run_records()
                if all(r.dagster_run.status in FINISHED for r in records):
                    break
                time.sleep(1)
        finally:
            daemon.terminate()
            daemon.wait(60)
        records = instance.get_run_records()
    assert {r.dagster_run.status for r in records} == {dg.DagsterRunStatus.SUCCESS}, [
        (r.dagster_run.tags.get("dagster/partition"), r.dagster_run.status) for r in records
    ]
    for workspace, count in SOURCES.items():
        spans = sorted(
            (r.start_time, r.end_time) for r in records if r.dagster_run.tags[WORKSPACE_TAG] == workspace
        )
        assert len(spans) == count
        assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:], strict=False)), spans
        with Mind.open(home.mind_path(workspace), readonly=True) as mind:
            assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames") == count * 2000
            assert mind.doctor().ok
