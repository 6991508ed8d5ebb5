"""The deployment files of deploy/ are valid for the programs that read them: the instance file
for Dagster's instance schema and dagster-postgres, the Celery file for dagster-celery's executor
schema, the Kubernetes files for dagster-k8s's executor schema and the Kubernetes API models; and
the copies of one rule (one run per mind, the home node's label, the minds' claim) agree."""

from pathlib import Path

import kubernetes.client
import pytest
import yaml
from dagster._config import validate_config
from dagster._core.instance.config import dagster_instance_config
from dagster_celery import celery_executor
from dagster_k8s import k8s_job_executor
from dagster_k8s.job import UserDefinedDagsterK8sConfig
from dagster_k8s.models import k8s_model_from_dict, k8s_snake_case_dict
from dagster_postgres import DagsterPostgresStorage
from mind_harvest.pipelines.executors import (
    CELERY_EXECUTOR_CONFIG,
    EXECUTOR_ENV,
    K8S_CONFIG_ENV,
    run_executor,
)
from mind_harvest.pipelines.run_queue import MindRunCoordinator

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
K8S = DEPLOY / "k8s"
PG_ENV = ("MIND_HARVEST_PG_HOST", "MIND_HARVEST_PG_PORT", "MIND_HARVEST_PG_USER", "MIND_HARVEST_PG_PASSWORD",
          "MIND_HARVEST_PG_DB")
HOME_LABEL = "mind-harvest/home"
MINDS_CLAIM = "mind-harvest-minds"
SOURCES_CLAIM = "mind-harvest-sources"
OBJECT_STORE_SECRET = "mind-harvest-object-store"
STATELESS_OPS = {"harvest_items", "embed_vector_chunk"}


def _load(path: Path):
    return yaml.safe_load(path.read_text())


def _valid(config_type, value) -> None:
    result = validate_config(config_type, value)
    assert result.success, [error.message for error in result.errors]


def test_every_yaml_file_parses():
    files = sorted(DEPLOY.rglob("*.yaml"))
    assert {f.relative_to(DEPLOY).as_posix() for f in files} >= {
        "dagster.yaml", "celery.yaml", "k8s/executor.yaml", "k8s/values.yaml", "k8s/minds-volume.yaml",
        "k8s/sources-volume.yaml", "k8s/object-store-secret.yaml",
    }
    for path in files:
        assert all(doc for doc in yaml.safe_load_all(path.read_text())), path


def test_the_instance_file_passes_dagsters_instance_schema_and_postgres_storage(monkeypatch):
    for name in PG_ENV:
        monkeypatch.setenv(name, "5432" if name.endswith("PORT") else "x")
    config, _custom_class = dagster_instance_config(str(DEPLOY), "dagster.yaml")
    postgres = config["storage"]["postgres"]
    _valid(DagsterPostgresStorage.config_type(), postgres)
    assert {value["env"] for value in postgres["postgres_db"].values() if isinstance(value, dict)} == set(PG_ENV)
    assert config["run_launcher"]["class"] == "DefaultRunLauncher"


def test_the_run_queue_is_the_same_everywhere():
    """One run in progress per mind: the single-machine instance, the team instance and the chart."""
    shipped = _load(REPO / "pipelines" / "dagster.yaml")["concurrency"]
    assert _load(DEPLOY / "dagster.yaml")["concurrency"] == shipped
    shipped_coordinator = _load(REPO / "pipelines" / "dagster.yaml")["run_coordinator"]
    chart = _load(K8S / "values.yaml")["dagsterDaemon"]["runCoordinator"]
    assert chart["type"] == "CustomRunCoordinator"
    custom = chart["config"]["customRunCoordinator"]
    assert (custom["module"], custom["class"]) == (shipped_coordinator["module"], shipped_coordinator["class"])
    assert custom["config"]["max_concurrent_runs"] == shipped["runs"]["max_concurrent_runs"]
    assert custom["config"]["tag_concurrency_limits"] == shipped["runs"]["tag_concurrency_limits"]
    _valid(MindRunCoordinator.config_type(), custom["config"])  # the coordinator accepts the chart's config


def test_the_workers_and_the_runs_share_one_celery_configuration():
    config = _load(DEPLOY / "celery.yaml")["execution"]["config"]
    _valid(celery_executor.config_schema.config_type, config)
    assert config == CELERY_EXECUTOR_CONFIG


def test_the_executor_is_chosen_by_the_environment(monkeypatch):
    monkeypatch.setenv(EXECUTOR_ENV, "celery")
    assert run_executor().name == "celery"
    monkeypatch.setenv(EXECUTOR_ENV, "k8s")
    monkeypatch.setenv(K8S_CONFIG_ENV, str(K8S / "executor.yaml"))
    assert run_executor().name == "k8s"
    monkeypatch.setenv(EXECUTOR_ENV, "spark")
    with pytest.raises(Exception, match="use one of in_process, multiprocess, celery, k8s"):
        run_executor()


def _home_placement(pod_spec: dict) -> tuple[list, list]:
    affinity = pod_spec.get("affinity") or {}
    terms = (affinity.get("node_affinity") or {}).get("required_during_scheduling_ignored_during_execution", {})
    claims = [v["persistent_volume_claim"]["claim_name"] for v in pod_spec.get("volumes", [])]
    return terms.get("node_selector_terms", []), claims


def test_the_k8s_executor_config_puts_steps_home_unless_stateless():
    config = _load(K8S / "executor.yaml")["execution"]["config"]
    _valid(k8s_job_executor.config_schema.config_type, config)
    default = UserDefinedDagsterK8sConfig.from_dict(config["step_k8s_config"])  # checked against the k8s models
    terms, claims = _home_placement(default.pod_spec_config)
    assert terms == [{"match_expressions": [{"key": HOME_LABEL, "operator": "In", "values": ["true"]}]}]
    assert claims == [MINDS_CLAIM]
    per_step = config["per_step_k8s_config"]
    assert set(per_step) == STATELESS_OPS
    for op, step_config in per_step.items():
        parsed = UserDefinedDagsterK8sConfig.from_dict(step_config)
        assert parsed.merge_behavior.value == "SHALLOW", op  # replaces the home placement, not merged into it
        terms, claims = _home_placement(parsed.pod_spec_config)
        assert terms == [] and MINDS_CLAIM not in claims, op
        secrets = [source["secret_ref"]["name"] for source in parsed.container_config["env_from"]]
        assert secrets == [OBJECT_STORE_SECRET], op  # every stateless pod reaches the object store
    # the scan reads the sources where the code server registered them: the same claim, the same path
    scan = UserDefinedDagsterK8sConfig.from_dict(per_step["harvest_items"])
    assert _home_placement(scan.pod_spec_config)[1] == [SOURCES_CLAIM]
    assert [(m["mount_path"], m["read_only"]) for m in scan.container_config["volume_mounts"]] == [("/sources", True)]
    values = _load(K8S / "values.yaml")
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    assert {"name": "sources", "mountPath": "/sources", "readOnly": True} in deployment["volumeMounts"]
    assert deployment["envSecrets"] == [{"name": OBJECT_STORE_SECRET}]


def test_the_sources_volume_and_the_object_store_secret_are_kubernetes_objects():
    kinds = {}
    for name in ("sources-volume.yaml", "object-store-secret.yaml"):
        for document in yaml.safe_load_all((K8S / name).read_text()):
            model = getattr(kubernetes.client, f"V1{document['kind']}")
            kinds[document["kind"]] = k8s_model_from_dict(model, k8s_snake_case_dict(model, document))
    volume, claim, secret = kinds["PersistentVolume"], kinds["PersistentVolumeClaim"], kinds["Secret"]
    assert claim.metadata.name == SOURCES_CLAIM and claim.spec.access_modes == ["ReadOnlyMany"]
    assert volume.spec.storage_class_name == claim.spec.storage_class_name
    assert secret.metadata.name == OBJECT_STORE_SECRET
    assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_S3"} <= set(secret.string_data)


def test_the_minds_volume_manifests_are_kubernetes_objects_on_the_home_node():
    documents = list(yaml.safe_load_all((K8S / "minds-volume.yaml").read_text()))
    kinds = {}
    for document in documents:
        api_version, kind = document["apiVersion"], document["kind"]
        model = getattr(kubernetes.client, f"V1{kind}")
        kinds[kind] = k8s_model_from_dict(model, k8s_snake_case_dict(model, document))
        assert api_version in ("v1", "storage.k8s.io/v1")
    assert set(kinds) == {"StorageClass", "PersistentVolume", "PersistentVolumeClaim"}
    volume, claim = kinds["PersistentVolume"], kinds["PersistentVolumeClaim"]
    assert claim.metadata.name == MINDS_CLAIM
    assert volume.spec.storage_class_name == claim.spec.storage_class_name == kinds["StorageClass"].metadata.name
    assert volume.spec.local is not None  # a node-local disk, never a network filesystem
    assert volume.spec.node_affinity.required.node_selector_terms[0].match_expressions[0].key == HOME_LABEL


def test_the_helm_values_put_the_code_server_home_and_the_runs_on_the_k8s_executor():
    values = _load(K8S / "values.yaml")
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    pod = k8s_snake_case_dict(
        kubernetes.client.V1PodSpec,
        {"affinity": deployment["affinity"], "volumes": deployment["volumes"], "containers": []},
    )
    k8s_model_from_dict(kubernetes.client.V1PodSpec, pod)
    for mount in deployment["volumeMounts"]:
        k8s_model_from_dict(kubernetes.client.V1VolumeMount, k8s_snake_case_dict(kubernetes.client.V1VolumeMount, mount))
    assert [v["persistentVolumeClaim"]["claimName"] for v in deployment["volumes"]] == [MINDS_CLAIM, SOURCES_CLAIM]
    assert deployment["includeConfigInLaunchedRuns"] == {"enabled": False}  # step pods stay unpinned
    assert deployment["dagsterApiGrpcArgs"] == ["-m", "mind_harvest.pipelines.definitions", "-a", "defs"]
    launcher = values["runLauncher"]
    assert launcher["type"] == "K8sRunLauncher"
    run_config = launcher["config"]["k8sRunLauncher"]["runK8sConfig"]
    parsed = UserDefinedDagsterK8sConfig.from_dict({"container_config": run_config["containerConfig"]})
    env = {item["name"]: item["value"] for item in parsed.container_config["env"]}
    assert env[EXECUTOR_ENV] == "k8s" and env[K8S_CONFIG_ENV].endswith("deploy/k8s/executor.yaml")
