"""Dagster and its integration libraries are installed at matching releases (dagster 1.13.N with
the libraries 0.29.N), pinned so, and import without dagster's version-mismatch warning; the
shipped instance caps the writing steps' pool."""

import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import version

import dagster as dg

from tests.conftest import REPO_ROOT

LIBRARIES = ("dagster-celery", "dagster-postgres", "dagster-k8s")


def _pins() -> dict[str, str]:
    pins = {}
    requirements = (REPO_ROOT / "deploy" / "requirements-dagster.txt").read_text().splitlines()
    dependencies = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for line in [*requirements, *dependencies]:
        name, _, pinned = line.partition("==")
        if name.startswith("dagster") and pinned:
            pins[name.strip()] = pinned.strip()
    return pins


def test_dagster_and_its_libraries_are_pinned_and_installed_at_matching_releases():
    pins = _pins()
    patch = pins["dagster"].split(".")[2]
    assert pins["dagster-webserver"] == pins["dagster"]
    assert {pins[library] for library in LIBRARIES} == {f"0.29.{patch}"}
    assert {name: version(name) for name in pins} == pins


def test_the_libraries_import_without_a_version_mismatch_warning():
    imported = subprocess.run(
        [sys.executable, "-W", "error::UserWarning:dagster_shared.libraries", "-c",
         "import dagster_celery, dagster_postgres, dagster_k8s"],
        capture_output=True, text=True, timeout=120,
    )
    assert imported.returncode == 0, imported.stderr
    assert "mismatch" not in imported.stderr.lower()


def test_the_shipped_instance_caps_the_writing_steps_pool(tmp_path):
    shutil.copyfile(REPO_ROOT / "pipelines" / "dagster.yaml", tmp_path / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 2
