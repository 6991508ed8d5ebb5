"""The harvest on a real cluster (``make cluster``'s pieces, marker ``cluster``): Dagster's instance
on PostgreSQL, the Celery executor on a Redis broker, an "any" and a "home" worker, the daemon.
A job backfill over three sources of two minds runs to success; the run's own events say where
each step ran (dagster-celery records the worker's name on every step it executes): stateless
steps on both workers, writing steps on the home worker only; and the minds are the ones a
single-process harvest of the same sources makes."""

import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import dagster as dg
import pytest

from deploy.local_cluster import REPO, ClusterSettings, LocalCluster
from mind_core.home import MindHome
from mind_core.mind import Mind
from pipelines.resources import MindHomeResource
from tests.exports import write_chatgpt_export
from tests.harvest.dump import canonical_dump
from tests.pipelines import doubles
from tests.pipelines.harness import add_partitions, harvest, register

pytestmark = pytest.mark.cluster

LOCATION = ("-m", "tests.pipelines.queued_location", "-a", "defs")
BIN = Path(sys.executable).parent
# (workspace, source, conversations, seed): two sources of one mind, one of another
SOURCES = [("alpha", "chats", 12, 1), ("alpha", "more", 10, 2), ("beta", "chats", 8, 3)]
RUNS_TIMEOUT_S = 300
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
WORKER_KEY = "Celery worker"  # the metadata dagster-celery's task puts on its "Executing steps" event
QUEUE_EVENT = 'Submitting celery task for step "{step}" to queue "'


def _register_all(home: MindHome, exports: dict[str, Path]) -> list[str]:
    return [
        register(home, workspace, "chatgpt", exports[f"{workspace}/{source}"], source)
        for workspace, source, _, _ in SOURCES
    ]


def _single_process_minds(tmp_path: Path, exports: dict[str, Path]) -> dict[str, dict]:
    """The same sources harvested by in-process runs, one after another in partition order."""
    home = MindHome(tmp_path / "reference")
    keys = _register_all(home, exports)
    resources = {
        "mind_home": MindHomeResource(root=str(home.root)),
        "embedder": doubles.FakeEmbedderResource(),
        "plugins": doubles.CountingPluginsResource(),
    }
    with dg.instance_for_test() as instance:
        add_partitions(instance, *keys)
        for key in keys:
            assert harvest(instance, resources, key).success
    return _dumps(home)


def _dumps(home: MindHome) -> dict[str, dict]:
    dumps = {}
    for workspace in sorted({w for w, _, _, _ in SOURCES}):
        with Mind.open(home.mind_path(workspace), readonly=True) as mind:
            dumps[workspace] = canonical_dump(mind)
    return dumps


def _where_steps_ran(instance: dg.DagsterInstance, run_id: str) -> tuple[dict[str, set], dict[str, str]]:
    """step key -> names of the Celery workers that executed it, and step key -> its queue, both
    read from the run's event log."""
    workers: dict[str, set] = defaultdict(set)
    queues: dict[str, str] = {}
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        event = entry.dagster_event
        metadata = event.engine_event_data.metadata if event.engine_event_data else {}
        if entry.step_key and WORKER_KEY in metadata:
            workers[entry.step_key].add(metadata[WORKER_KEY].value.split("@")[0])
        prefix = QUEUE_EVENT.format(step=entry.step_key)
        if entry.step_key and entry.user_message.startswith(prefix):
            queues[entry.step_key] = entry.user_message[len(prefix):].rstrip('".')
    return workers, queues


def test_a_backfill_on_the_cluster_runs_writes_home_and_equals_one_process(tmp_path, monkeypatch):
    exports = {
        f"{workspace}/{source}": write_chatgpt_export(
            tmp_path / "exports" / workspace / source / "conversations.json", conversations, 6, seed=seed
        )
        for workspace, source, conversations, seed in SOURCES
    }
    expected = _single_process_minds(tmp_path, exports)

    minds = MindHome(tmp_path / "minds")
    keys = _register_all(minds, exports)
    settings = ClusterSettings(
        folder=tmp_path / "cluster", minds=minds.root, location=LOCATION, webserver=False, ephemeral=True
    )
    with LocalCluster(settings) as cluster:
        for name in ("DAGSTER_HOME", *(k for k in cluster.env if k.startswith("MIND_HARVEST_PG_"))):
            monkeypatch.setenv(name, cluster.env[name])
        with dg.DagsterInstance.get() as instance:
            assert type(instance.run_storage).__name__ == "PostgresRunStorage"
            add_partitions(instance, *keys)
            subprocess.run(
                [str(BIN / "dagster"), "job", "backfill", *LOCATION, "-j", "harvest_job",
                 "--partitions", ",".join(keys), "--noprompt"],
                cwd=REPO, env=cluster.env, check=True, capture_output=True, timeout=180,
            )
            deadline = time.monotonic() + RUNS_TIMEOUT_S
            while time.monotonic() < deadline and not cluster.exited():
                records = instance.get_run_records()
                if len(records) == len(keys) and all(r.dagster_run.status in FINISHED for r in records):
                    break
                time.sleep(1)
            assert not cluster.exited(), f"stopped during the backfill: {cluster.exited()} (logs {cluster.logs})"
            records = instance.get_run_records()
            assert [r.dagster_run.status for r in records] == [dg.DagsterRunStatus.SUCCESS] * len(keys), (
                [(r.dagster_run.tags.get("dagster/partition"), r.dagster_run.status) for r in records],
                cluster.logs,
            )
            placements = [_where_steps_ran(instance, r.dagster_run.run_id) for r in records]

    home_queue, shared_queue = settings.queues.home, settings.queues.shared
    stateless_on, writing_on = set(), set()
    for workers, queues in placements:
        assert workers and set(workers) == set(queues)  # every step ran on a worker, via a queue
        for step, queue in queues.items():
            assert queue in (home_queue, shared_queue), (step, queue)
            assert len(workers[step]) == 1, (step, workers[step])  # executed once
            (writing_on if queue == home_queue else stateless_on).update(workers[step])
    assert _dumps(minds) == expected
    assert writing_on == {"home"}, placements
    assert stateless_on == {"any", "home"}, placements
