"""Several home nodes under one Dagster instance, on a real cluster (``make cluster HOMES=...``,
marker ``cluster``): a homes file gives node home-a the workspaces w1 and w2 and node home-b the
workspace w3; each node is a Celery worker with its own minds folder listening on its own queue
and the shared one. One job backfill harvests a source into w1 (home-a) and one into w3 (home-b)
(two runs: each run costs a run process and a Celery task per step). The runs' events say
where each step ran: every step that opens a mind ran on its workspace's node only; each node's
folder holds its own minds only; and each mind equals the same source harvested in one process."""

from pathlib import Path

import dagster as dg
import pytest
import yaml

from deploy.local_cluster import ClusterSettings
from deploy.mind_comparison import mind_dump
from deploy.step_events import step_records
from mind_core.store.home import MindHome
from mind_core.testing.exports import write_chatgpt_export
from tests.deploy.cluster_harness import harvest_in_one_process, running_cluster
from tests.pipelines.harness import add_partitions, register

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

LOCATION = ("-m", "tests.pipelines.queued_location", "-a", "defs")
HOMES = {"home-a": ("w1", "w2"), "home-b": ("w3",)}
SOURCES = {"w1": (5, 1), "w3": (3, 3)}  # workspace -> (conversations, seed)
RUNS_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cluster")
    homes_file = folder / "homes-given.yaml"
    homes_file.write_text(yaml.safe_dump({"homes": [
        {"name": name, "queue": name, "workspaces": list(workspaces), "minds": f"minds-{name}"}
        for name, workspaces in HOMES.items()
    ]}))
    settings = ClusterSettings(
        folder=folder, minds=folder / "code-location", location=LOCATION, webserver=False, ephemeral=True,
        any_worker=False, homes_file=homes_file,
    )
    with running_cluster(settings) as running:
        yield running


def _exports(folder: Path) -> dict[str, Path]:
    return {
        workspace: write_chatgpt_export(folder / workspace / "conversations.json", conversations, 4, seed=seed)
        for workspace, (conversations, seed) in SOURCES.items()
    }


def _one_process_minds(folder: Path, exports: dict[str, Path]) -> dict[str, dict]:
    home = MindHome(folder)
    harvest_in_one_process(home, [register(home, workspace, "chatgpt", exports[workspace], "chats") for workspace in SOURCES])
    return {workspace: mind_dump(home.mind_path(workspace)) for workspace in SOURCES}


def test_each_mind_is_written_by_its_own_home_node_and_equals_one_process(tmp_path, cluster):
    running, instance = cluster
    exports = _exports(tmp_path / "exports")
    expected = _one_process_minds(tmp_path / "reference", exports)
    nodes = running.home_nodes
    owner = {workspace: name for name, workspaces in HOMES.items() for workspace in workspaces}
    keys = {
        workspace: register(MindHome(nodes[owner[workspace]].minds), workspace, "chatgpt", exports[workspace], "chats")
        for workspace in SOURCES
    }
    add_partitions(instance, *keys.values())
    running.launch_backfill("harvest_job", list(keys.values()))
    records = {
        r.dagster_run.tags["mind_harvest/workspace"]: r
        for r in running.wait_for_runs(instance, list(keys.values()), RUNS_TIMEOUT_S)
    }

    shared = running.settings.queues.shared
    for workspace in SOURCES:
        run = records[workspace].dagster_run
        assert run.status == dg.DagsterRunStatus.SUCCESS, (workspace, run.run_id, running.logs)
        steps = step_records(instance, run.run_id).values()
        writing = [(s.step, s.queue, s.workers) for s in steps if s.queue != shared]
        assert writing and all(s.succeeded and len(s.workers) == 1 for s in steps), list(steps)
        home = owner[workspace]
        assert {(queue, workers) for _, queue, workers in writing} == {(home, (home,))}, writing
        assert {s.workers[0] for s in steps if s.queue == shared} <= set(HOMES), list(steps)
        assert mind_dump(MindHome(nodes[home].minds).mind_path(workspace)) == expected[workspace], workspace
    for name, workspaces in HOMES.items():  # each node's folder: its own harvested minds, no other
        assert sorted(MindHome(nodes[name].minds).minds()) == sorted(set(workspaces) & set(SOURCES)), name

