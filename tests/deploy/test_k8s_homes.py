"""The Kubernetes form of several home nodes (deploy/k8s/homes.yaml, deploy/k8s/values-homes.yaml)
is valid for the programs that read it: every manifest against the Kubernetes API models, the
homes file of its ConfigMap against the homes file's own reader; and the copies of one fact agree:
each home worker listens on its node's queue (and the shared one), is pinned to the node labelled
with its name, holds its minds on a local volume of that node, and every Dagster pod reads the
same homes file and Celery broker."""

from pathlib import Path

import kubernetes.client
import yaml
from dagster_k8s.job import UserDefinedDagsterK8sConfig
from dagster_k8s.models import k8s_model_from_dict, k8s_snake_case_dict
from mind_harvest.pipelines.executors import EXECUTOR_ENV
from mind_harvest.pipelines.homes import HOMES_ENV, read_homes
from mind_harvest.pipelines.routing import DEFAULT_ANY_QUEUE

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
HOME_LABEL = "mind-harvest/home"
MODELS = {
    ("apps/v1", "StatefulSet"): kubernetes.client.V1StatefulSet,
    ("apps/v1", "Deployment"): kubernetes.client.V1Deployment,
    ("v1", "Service"): kubernetes.client.V1Service,
    ("v1", "ConfigMap"): kubernetes.client.V1ConfigMap,
    ("v1", "PersistentVolume"): kubernetes.client.V1PersistentVolume,
}


def _objects() -> list:
    objects = []
    for document in yaml.safe_load_all((K8S / "homes.yaml").read_text()):
        model = MODELS[(document["apiVersion"], document["kind"])]
        objects.append(k8s_model_from_dict(model, k8s_snake_case_dict(model, document)))
    return objects


def _env(container) -> dict[str, str]:
    return {item.name: item.value for item in container.env if item.value is not None}


def _queues(container) -> list[str]:
    return container.command[container.command.index("-q") + 1].split(",")


def test_each_home_worker_is_pinned_to_its_node_with_its_queue_and_local_minds(tmp_path):
    objects = _objects()
    (config_map,) = [o for o in objects if isinstance(o, kubernetes.client.V1ConfigMap)]
    homes_file = tmp_path / "homes.yaml"
    homes_file.write_text(config_map.data["homes.yaml"])
    homes = read_homes(homes_file)
    assert [(n.name, n.workspaces) for n in homes.nodes] == [("home-a", ("w1", "w2")), ("home-b", ("w3",))]

    workers = {o.metadata.name: o for o in objects if isinstance(o, kubernetes.client.V1StatefulSet)}
    volumes = {o.metadata.name: o for o in objects if isinstance(o, kubernetes.client.V1PersistentVolume)}
    assert set(workers) == {f"mind-harvest-{node.name}" for node in homes.nodes}
    for node in homes.nodes:
        worker = workers[f"mind-harvest-{node.name}"]
        assert worker.spec.replicas == 1  # one writer per mind
        pod = worker.spec.template.spec
        (container,) = pod.containers
        assert pod.node_selector == {HOME_LABEL: node.name}
        assert _queues(container) == [node.queue, DEFAULT_ANY_QUEUE]
        assert container.command[container.command.index("-n") + 1] == node.name
        (claim,) = worker.spec.volume_claim_templates
        assert claim.spec.storage_class_name == "mind-harvest-local"
        assert {(m.name, m.mount_path) for m in container.volume_mounts} >= {(claim.metadata.name, "/minds")}
        assert _env(container)["MIND_HOME"] == "/minds"
        volume = volumes[f"mind-harvest-minds-{node.name}"]
        assert volume.spec.local is not None and volume.spec.storage_class_name == "mind-harvest-local"
        (term,) = volume.spec.node_affinity.required.node_selector_terms
        assert [(e.key, e.values) for e in term.match_expressions] == [(HOME_LABEL, [node.name])]

    (shared,) = [o for o in objects if isinstance(o, kubernetes.client.V1Deployment) and o.metadata.name == "mind-harvest-any"]
    (shared_container,) = shared.spec.template.spec.containers
    assert _queues(shared_container) == [DEFAULT_ANY_QUEUE]
    assert "/minds" not in {m.mount_path for m in shared_container.volume_mounts}  # no minds anywhere else
    containers = [shared_container, *(w.spec.template.spec.containers[0] for w in workers.values())]
    for container in containers:
        env = _env(container)
        assert env[HOMES_ENV] == "/etc/mind-harvest/homes.yaml"
        assert ("homes", "/etc/mind-harvest") in {(m.name, m.mount_path) for m in container.volume_mounts}
        assert env["MIND_HARVEST_STAGING_URL"].startswith("s3://")  # pods share no disk


def test_the_helm_values_run_the_celery_executor_with_the_same_homes_and_broker():
    values = yaml.safe_load((K8S / "values-homes.yaml").read_text())
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    pod = k8s_snake_case_dict(
        kubernetes.client.V1PodSpec, {"volumes": deployment["volumes"], "containers": []}
    )
    k8s_model_from_dict(kubernetes.client.V1PodSpec, pod)
    assert "affinity" not in deployment  # the code server holds no minds
    env = {item["name"]: item["value"] for item in deployment["env"]}
    assert env[EXECUTOR_ENV] == "celery" and env[HOMES_ENV] == "/etc/mind-harvest/homes.yaml"
    assert deployment["volumes"] == [{"name": "homes", "configMap": {"name": "mind-harvest-homes"}}]
    assert deployment["includeConfigInLaunchedRuns"] == {"enabled": True}  # the run pods route the steps
    run_config = values["runLauncher"]["config"]["k8sRunLauncher"]["runK8sConfig"]
    parsed = UserDefinedDagsterK8sConfig.from_dict({"container_config": run_config["containerConfig"]})
    assert {item["name"]: item["value"] for item in parsed.container_config["env"]} == {EXECUTOR_ENV: "celery"}
    (worker,) = [o for o in _objects() if isinstance(o, kubernetes.client.V1StatefulSet)][:1]
    worker_env = _env(worker.spec.template.spec.containers[0])
    for name in ("MIND_HARVEST_CELERY_BROKER", "MIND_HARVEST_CELERY_BACKEND", "MIND_HARVEST_STAGING_URL",
                 "MIND_HARVEST_STEP_OUTPUTS_URL"):
        assert env[name] == worker_env[name], name
