"""The harvest on a real cluster (``make cluster``'s pieces, marker ``cluster``): Dagster's instance
on PostgreSQL, the Celery executor on a Redis broker, an "any" and a "home" worker, the daemon;
one cluster for the module, stopped when its tests end (also when they fail).

A job backfill over three sources of two minds runs to success; the runs' own events say where
each step ran (dagster-celery records the worker's name on every step it executes): stateless
steps on both workers, writing steps on the home worker only; and the minds are the ones a
single-process harvest of the same sources makes. With the home worker down, a run's writing step
waits in the home queue and nothing is written until the worker is back."""

import time
from pathlib import Path

import dagster as dg
import pytest
import redis

from deploy.local_cluster import ClusterSettings, LocalCluster
from deploy.step_events import StepRecord, step_records
from mind_core.mind import Mind
from mind_core.store.home import MindHome
from mind_core.testing.dump import canonical_dump
from mind_core.testing.exports import write_chatgpt_export
from tests.deploy.cluster_harness import harvest_in_one_process, running_cluster
from tests.pipelines.harness import add_partitions, register

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

LOCATION = ("-m", "tests.pipelines.queued_location", "-a", "defs")
# (workspace, source, conversations, seed): two sources of one mind, one of another
SOURCES = [("alpha", "chats", 12, 1), ("alpha", "more", 10, 2), ("beta", "chats", 8, 3)]
RUNS_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The running cluster and its instance; the minds' folder is ``cluster.settings.minds``."""
    folder = tmp_path_factory.mktemp("cluster")
    settings = ClusterSettings(
        folder=folder, minds=folder / "minds", location=LOCATION, webserver=False, ephemeral=True
    )
    with running_cluster(settings) as (running, instance):
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        yield running, instance


def _register_all(home: MindHome, exports: dict[str, Path]) -> list[str]:
    return [
        register(home, workspace, "chatgpt", exports[f"{workspace}/{source}"], source)
        for workspace, source, _, _ in SOURCES
    ]


def _single_process_minds(tmp_path: Path, exports: dict[str, Path]) -> dict[str, dict]:
    """The same sources harvested by in-process runs, one after another in partition order."""
    home = MindHome(tmp_path / "reference")
    harvest_in_one_process(home, _register_all(home, exports))
    return _dumps(home)


def _dumps(home: MindHome) -> dict[str, dict]:
    dumps = {}
    for workspace in sorted({w for w, _, _, _ in SOURCES}):
        with Mind.open(home.mind_path(workspace), readonly=True) as mind:
            dumps[workspace] = canonical_dump(mind)
    return dumps


def test_a_backfill_on_the_cluster_runs_writes_home_and_equals_one_process(tmp_path, cluster):
    running, instance = cluster
    exports = {
        f"{workspace}/{source}": write_chatgpt_export(
            tmp_path / "exports" / workspace / source / "conversations.json", conversations, 6, seed=seed
        )
        for workspace, source, conversations, seed in SOURCES
    }
    expected = _single_process_minds(tmp_path, exports)

    minds = MindHome(running.settings.minds)
    keys = _register_all(minds, exports)
    add_partitions(instance, *keys)
    running.launch_backfill("harvest_job", keys)
    records = running.wait_for_runs(instance, keys, RUNS_TIMEOUT_S)
    assert [r.dagster_run.status for r in records] == [dg.DagsterRunStatus.SUCCESS] * len(keys), (
        [(r.dagster_run.tags.get("dagster/partition"), r.dagster_run.status) for r in records],
        running.logs,
    )
    steps = [step for r in records for step in step_records(instance, r.dagster_run.run_id).values()]

    queues = running.settings.queues
    stateless_on, writing_on = set(), set()
    placements = [(step.step, step.queue, step.workers) for step in steps]
    for step in steps:
        assert step.succeeded and step.queue in (queues.home, queues.shared, queues.untagged), step
        assert len(step.workers) == 1, step  # executed once, on one worker
        (stateless_on if step.queue == queues.shared else writing_on).update(step.workers)
    assert _dumps(minds) == expected
    assert writing_on == {"home"}, placements
    assert stateless_on == {"any", "home"}, placements


def test_with_the_home_worker_down_writing_steps_wait_in_its_queue_and_nothing_is_written(tmp_path, cluster):
    running, instance = cluster
    queues = running.settings.queues
    home_only = (queues.home, queues.untagged)  # the queues no worker but the home one serves
    minds = MindHome(running.settings.minds)
    export = write_chatgpt_export(tmp_path / "exports" / "conversations.json", 5, 4, seed=9)
    key = register(minds, "gamma", "chatgpt", export, "chats")
    with Mind.open(minds.mind_path("gamma"), readonly=True) as mind:
        before = canonical_dump(mind)
    running.stop_worker("home")
    try:
        add_partitions(instance, key)
        running.launch_backfill("harvest_job", [key])
        waiting = _first_step_on_queues(running, instance, key, home_only)
        assert not waiting.workers and waiting.started is None  # no worker took it
        broker = redis.Redis.from_url(running.env["MIND_HARVEST_CELERY_BROKER"])
        held = {
            queue: sum(broker.llen(k) for k in broker.scan_iter(f"{queue}*") if broker.type(k) == b"list")
            for queue in (*home_only, queues.shared)
        }
        broker.close()
        # the broker holds it in a home-only queue; nothing waits where another worker would take it
        assert held[waiting.queue] >= 1 and held[queues.shared] == 0, held
        with Mind.open(minds.mind_path("gamma"), readonly=True) as mind:
            assert canonical_dump(mind) == before  # nothing was written while the home worker was down
    finally:
        running.start_workers("home")
    (record,) = running.wait_for_runs(instance, [key], RUNS_TIMEOUT_S)
    steps = step_records(instance, record.dagster_run.run_id).values()
    assert record.dagster_run.status == dg.DagsterRunStatus.SUCCESS
    assert {s.workers for s in steps if s.queue in home_only} == {("home",)}
    with Mind.open(minds.mind_path("gamma"), readonly=True) as mind:
        assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames") == 20


def _first_step_on_queues(
    cluster: LocalCluster, instance: dg.DagsterInstance, key: str, queues: tuple[str, ...]
) -> StepRecord:
    """The first step of the partition's run submitted to one of ``queues``, once it is submitted."""
    deadline = time.monotonic() + RUNS_TIMEOUT_S
    while time.monotonic() < deadline and not cluster.exited():
        for run in instance.get_runs(dg.RunsFilter(tags={"dagster/partition": key})):
            submitted = [s for s in step_records(instance, run.run_id).values() if s.queue in queues]
            if submitted:
                return submitted[0]
        time.sleep(0.5)
    raise AssertionError(f"no step was submitted to {queues} (logs {cluster.logs})")
