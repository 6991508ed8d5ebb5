"""The homes file (several home nodes under one Dagster instance): parsed and checked, each
workspace's node and queue, and the code location reading each node's registries where the file
says (the sensor's catalog, a run's scan config)."""

from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.definitions.job_base import InMemoryJob
from mind_harvest.pipelines.executors import harvest_executor
from mind_harvest.pipelines.home_routing import HomeRoutedCeleryExecutor, home_queue_of_run
from mind_harvest.pipelines.homes import HOMES_ENV, configured_homes, read_homes
from mind_harvest.pipelines.jobs import harvest_job
from mind_harvest.pipelines.resources import MindHomeResource

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.store.home import MindHome
from mind_core.testing.exports import write_chatgpt_export
from tests.pipelines.harness import register

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "homes.example.yaml"


def _write(path: Path, homes: list) -> Path:
    path.write_text(yaml.safe_dump({"homes": homes}))
    return path


def test_the_example_file_gives_each_workspace_one_node_and_queue():
    homes = read_homes(EXAMPLE)
    assert [(n.name, n.queue, n.workspaces) for n in homes.nodes] == [
        ("home-a", "home-a", ("w1", "w2")),
        ("home-b", "home-b", ("w3",)),
    ]
    assert homes.owner("w3").name == "home-b" and homes.default.name == "home-a"
    assert home_queue_of_run(homes, "w2") == ("home-a", "home-a, the home of workspace w2")
    assert home_queue_of_run(homes, None)[0] == "home-a"  # a run tied to no mind: the first node
    with pytest.raises(NotFoundError, match=r"workspace 'w9' has no home node in .*homes.example.yaml"):
        home_queue_of_run(homes, "w9")


@pytest.mark.parametrize(
    ("homes", "message"),
    [
        ([], "non-empty list"),
        ([{"name": "a", "workspaces": ["w1"]}], "needs a 'name' and a 'queue'"),
        ([{"name": "a", "queue": "qa", "workspaces": ["w1"]}, {"name": "b", "queue": "qb", "workspaces": ["w1"]}],
         "home 2: workspace 'w1' is already held by 'a'"),
        ([{"name": "a", "queue": "q", "workspaces": ["w1"]}, {"name": "b", "queue": "q", "workspaces": ["w2"]}],
         "two homes share a queue"),
        ([{"name": "a", "queue": "q", "workspaces": ["no/slash"]}], "workspace"),
    ],
)
def test_a_wrong_homes_file_is_refused_naming_the_file(tmp_path, homes, message):
    path = _write(tmp_path / "homes.yaml", homes)
    with pytest.raises(InvalidInputError, match=message) as error:
        read_homes(path)
    assert str(path) in str(error.value) or "workspace" in message


def test_without_a_homes_file_there_is_one_home(monkeypatch, tmp_path):
    monkeypatch.delenv(HOMES_ENV, raising=False)
    assert configured_homes() is None
    resource = MindHomeResource(root=str(tmp_path))
    assert resource.owning("w1") is resource
    monkeypatch.setenv(HOMES_ENV, str(tmp_path / "missing.yaml"))
    with pytest.raises(InvalidInputError, match="missing.yaml"):
        configured_homes()


def test_the_code_location_reads_each_workspace_in_its_nodes_folder(monkeypatch, tmp_path):
    """The sensor's catalog spans the nodes (each node's own workspaces only), and a run's scan
    config is read from the node holding the mind."""
    folders = {name: tmp_path / f"minds-{name}" for name in ("a", "b")}
    export = write_chatgpt_export(tmp_path / "conversations.json", 2, 3)
    register(MindHome(folders["a"]), "w1", "chatgpt", export, "chats")
    register(MindHome(folders["b"]), "w3", "chatgpt", export, "chats")
    register(MindHome(folders["b"]), "stray", "chatgpt", export, "chats")  # in b's folder, held by no node
    homes_file = _write(tmp_path / "homes.yaml", [
        {"name": "a", "queue": "qa", "workspaces": ["w1"], "minds": "minds-a"},
        {"name": "b", "queue": "qb", "workspaces": ["w3"], "minds": "minds-b"},
    ])
    monkeypatch.setenv(HOMES_ENV, str(homes_file))
    monkeypatch.setenv("MIND_HOME", str(tmp_path / "code-location"))  # holds nothing

    catalog = MindHomeResource().catalog()
    assert sorted(catalog.minds) == ["w1", "w3"] and not catalog.unreadable
    assert sorted((s.workspace, s.source.source) for s in catalog.sources) == [("w1", "chats"), ("w3", "chats")]
    assert MindHomeResource().owning("w3").home().root == folders["b"]
    scan = harvest_job.config.get_run_config_for_partition_key("w3/chats")["ops"]["harvest_items"]["config"]
    assert scan["kind"] == "chatgpt" and scan["source_path"] == str(export)


def test_a_node_whose_minds_the_code_location_cannot_read_leaves_its_workspaces_unreadable(monkeypatch, tmp_path):
    """Across machines (Kubernetes) the file gives no node's folder: the code location's catalog
    holds none of their minds, and names each node's workspaces unreadable rather than removed, so
    the sensor keeps partitions added by hand; a run's scan then carries no config (its scan runs
    on the mind's node, which reads the registry there)."""
    homes_file = _write(tmp_path / "homes.yaml", [{"name": "a", "queue": "qa", "workspaces": ["w1"]}])
    monkeypatch.setenv(HOMES_ENV, str(homes_file))
    monkeypatch.setenv("MIND_HOME", str(tmp_path / "code-location"))
    catalog = MindHomeResource().catalog()
    assert not catalog.minds and not catalog.sources
    assert catalog.unreadable == {"w1": "held by home node a, whose minds this code location does not read"}
    assert harvest_job.config.get_run_config_for_partition_key("w1/chats") == {}


@dg.op
def _nothing() -> None:
    return None


@dg.job
def _one_step() -> None:
    _nothing()


def test_the_celery_mode_submits_through_the_home_routing_with_the_same_settings(monkeypatch):
    monkeypatch.setenv("MIND_HARVEST_CELERY_BROKER", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("MIND_HARVEST_CELERY_BACKEND", "redis://127.0.0.1:1/1")
    with dg.instance_for_test() as instance:
        context = dg.InitExecutorContext(
            job=InMemoryJob(_one_step), executor_def=harvest_executor, executor_config={"mode": "celery"},
            instance=instance,
        )
        executor = harvest_executor.executor_creation_fn(context)
    assert isinstance(executor, HomeRoutedCeleryExecutor)
    assert executor.broker == "redis://127.0.0.1:1/0" and executor.config_source.task_acks_late is True
    assert executor.config_source.broker_transport_options["visibility_timeout"] == 3600
