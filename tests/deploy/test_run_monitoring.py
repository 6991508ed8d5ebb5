"""Run monitoring and run retries of ``deploy/dagster.yaml`` on a real cluster (marker ``cluster``):
a run past its maximum run time is stopped and failed by the daemon; a run whose process is killed
(SIGKILL, as a lost machine or the OOM killer would) as soon as it exists is failed, and retried
from failure to success. Who fails it depends on when the kill lands: the daemon launching it (the
launch breaks off), the code server that started it (it sees the process end), or the start
timeout (nobody reports it); the test accepts each of the three and prints which it was.

The cluster's instance is deploy/dagster.yaml with run monitoring polled every second and a start
timeout of START_TIMEOUT_S (shipped: 60 s and 300 s), so that both happen within the test; the
rules themselves (maximum run time, run retries) are the shipped ones. The code location is the
lost-worker one: the real assets and checks, the fake embedder slowed down, so a run embeds for
several seconds."""

import time

import dagster as dg
import psutil
import pytest
import yaml

from deploy.local_cluster import INSTANCE_CONFIG, ClusterSettings, LocalCluster
from deploy.lost_worker_trial import harvest_runs, launch_harvest
from deploy.mind_comparison import mind_dump
from mind_core.store.home import MindHome
from mind_core.testing.exports import write_chatgpt_export
from tests.deploy.cluster_harness import running_cluster
from tests.deploy.recovery_location import CHUNK_CONFIG
from tests.pipelines.harness import add_partitions, register

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

LOCATION = ("-m", "tests.deploy.recovery_location", "-a", "defs")
START_TIMEOUT_S = 20
MAX_RUNTIME_S = 3
TIMEOUT_S = 300
PARENT_TAG = "dagster/parent_run_id"
FAILED_BY = (  # the messages of the three ways a run whose process was killed is failed
    "error while dequeuing the run",  # the daemon's launch broke off
    "Run execution process for",  # the code server saw its run process end
    "taking longer than",  # the start timeout of run monitoring
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cluster")
    monitoring = yaml.safe_load(INSTANCE_CONFIG.read_text())["run_monitoring"]
    settings = ClusterSettings(
        folder=folder, minds=folder / "minds", location=LOCATION, webserver=False, ephemeral=True,
        any_worker=False,
        instance_overrides={"run_monitoring": {**monitoring, "poll_interval_seconds": 1,
                                               "start_timeout_seconds": START_TIMEOUT_S}},
    )
    with running_cluster(settings) as running:
        yield running


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    return write_chatgpt_export(tmp_path_factory.mktemp("exports") / "conversations.json", 4, 6, seed=5)


def _run_messages(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """The messages of the run's own events (run monitoring's among them)."""
    return [e.dagster_event.message or e.user_message for e in instance.all_logs(run_id) if e.dagster_event]


def test_a_run_past_its_maximum_run_time_is_stopped_and_failed(cluster, export):
    running, instance = cluster
    key = register(MindHome(running.settings.minds), "bounded", "chatgpt", export, "chats")
    add_partitions(instance, key)
    launch_harvest(running, key, CHUNK_CONFIG, {"dagster/max_runtime": str(MAX_RUNTIME_S), "dagster/max_retries": "0"})
    (record,) = running.wait_for_runs(instance, [key], TIMEOUT_S)
    run = record.dagster_run
    assert run.status == dg.DagsterRunStatus.FAILURE, (run.status, running.logs)
    assert f"Exceeded maximum runtime of {MAX_RUNTIME_S} seconds." in _run_messages(instance, run.run_id)
    assert len(harvest_runs(instance, key)) == 1  # dagster/max_retries 0: not retried
    steps = instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.STEP_SUCCESS).records
    assert not any(r.event_log_entry.step_key == "vector_index" for r in steps)  # stopped before the end


def _run_process(cluster: LocalCluster, timeout: float) -> psutil.Process:
    """The process the code server spawned to execute a run of this cluster, once it exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for process in psutil.process_iter(["cmdline"]):
            try:
                if "spawn_main" in " ".join(process.info["cmdline"] or ()) and \
                        process.environ().get("DAGSTER_HOME") == str(cluster.dagster_home):
                    return process
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        time.sleep(0.1)
    raise AssertionError(f"no run process appeared within {timeout:.0f} s (logs {cluster.logs})")


def test_a_run_whose_process_is_killed_is_failed_and_retried_from_failure_to_success(cluster, export):
    running, instance = cluster
    minds = MindHome(running.settings.minds)
    key = register(minds, "retried", "chatgpt", export, "chats")
    add_partitions(instance, key)
    launch_harvest(running, key, CHUNK_CONFIG)
    process = _run_process(running, TIMEOUT_S)
    process.kill()  # as a machine lost with the run's process would
    (first,) = harvest_runs(instance, key)[:1]
    killed_while = instance.get_run_by_id(first.run_id).status
    running.wait_for_runs(instance, [key], TIMEOUT_S)
    runs = harvest_runs(instance, key)
    failed_by = [m for m in _run_messages(instance, runs[0].run_id) if any(reason in m for reason in FAILED_BY)]
    print(f"\nrun process killed while the run was {killed_while.value}; failed by: {failed_by}; runs: "
          + ", ".join(f"{r.run_id[:8]} {r.status.value}" for r in runs))
    assert [r.status for r in runs] == [dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.SUCCESS], runs
    assert failed_by, "\n".join(_run_messages(instance, runs[0].run_id)[-8:])
    assert runs[1].tags[PARENT_TAG] == runs[0].run_id  # run retries re-executed it
    assert len(mind_dump(minds.mind_path("retried"))["vec"]) == 24  # every message embedded and loaded
