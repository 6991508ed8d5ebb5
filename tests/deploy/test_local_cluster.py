"""The harvest on a real cluster (``make cluster``'s pieces, marker ``cluster``): Dagster's instance
on PostgreSQL, the Celery executor on a Redis broker, an "any" and a "home" worker, the daemon.
A job backfill over three sources of two minds runs to success; the run's own events say where
each step ran (dagster-celery records the worker's name on every step it executes): stateless
steps on both workers, writing steps on the home worker only; and the minds are the ones a
single-process harvest of the same sources makes."""

from pathlib import Path

import dagster as dg
import pytest

from deploy.local_cluster import ClusterSettings, LocalCluster
from deploy.step_events import step_records
from mind_core.home import MindHome
from mind_core.mind import Mind
from pipelines.resources import MindHomeResource
from tests.exports import write_chatgpt_export
from tests.harvest.dump import canonical_dump
from tests.pipelines import doubles
from tests.pipelines.harness import add_partitions, harvest, register

pytestmark = pytest.mark.cluster

LOCATION = ("-m", "tests.pipelines.queued_location", "-a", "defs")
# (workspace, source, conversations, seed): two sources of one mind, one of another
SOURCES = [("alpha", "chats", 12, 1), ("alpha", "more", 10, 2), ("beta", "chats", 8, 3)]
RUNS_TIMEOUT_S = 300


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
        for name, value in cluster.instance_env.items():
            monkeypatch.setenv(name, value)
        with dg.DagsterInstance.get() as instance:
            assert type(instance.run_storage).__name__ == "PostgresRunStorage"
            add_partitions(instance, *keys)
            cluster.launch_backfill("harvest_job", keys)
            records = cluster.wait_for_runs(instance, len(keys), RUNS_TIMEOUT_S)
            assert [r.dagster_run.status for r in records] == [dg.DagsterRunStatus.SUCCESS] * len(keys), (
                [(r.dagster_run.tags.get("dagster/partition"), r.dagster_run.status) for r in records],
                cluster.logs,
            )
            steps = [step for r in records for step in step_records(instance, r.dagster_run.run_id).values()]

    home_queue, shared_queue = settings.queues.home, settings.queues.shared
    stateless_on, writing_on = set(), set()
    placements = [(step.step, step.queue, step.workers) for step in steps]
    for step in steps:
        assert step.succeeded and step.queue in (home_queue, shared_queue), step
        assert len(step.workers) == 1, step  # executed once, on one worker
        (writing_on if step.queue == home_queue else stateless_on).update(step.workers)
    assert _dumps(minds) == expected
    assert writing_on == {"home"}, placements
    assert stateless_on == {"any", "home"}, placements
