"""What the distribution installs: mind_core and, under the distribution's own namespace, the
built-in plugins (mind_harvest.plugins) and the Dagster code location (mind_harvest.pipelines),
from the repository's top-level plugins/ and pipelines/ folders. Nothing generic such as
``plugins`` or ``pipelines`` lands at the top of site-packages."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

MAPPED = {"mind_harvest.plugins": "plugins", "mind_harvest.pipelines": "pipelines"}


def setuptools_config() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def test_the_package_list_is_every_package_folder() -> None:
    found = {
        ".".join(init.parent.relative_to(REPO_ROOT).parts)
        for init in (REPO_ROOT / "mind_core").rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    config = setuptools_config()
    assert set(config["packages"]) == found | set(MAPPED)
    assert config["package-dir"] == MAPPED
    assert not [p for folder in MAPPED.values() for p in (REPO_ROOT / folder).iterdir() if p.is_dir() and (p / "__init__.py").exists()]


def test_no_code_imports_the_folders_by_their_repository_names() -> None:
    found = []
    for root in ("mind_core", "plugins", "pipelines", "tests", "benchmarks", "deploy"):
        for path in (REPO_ROOT / root).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                found += [f"{path.relative_to(REPO_ROOT)}: {n}" for n in names if n.split(".")[0] in {"plugins", "pipelines"}]
    assert found == []


@pytest.mark.slow
def test_the_wheel_holds_no_top_level_plugins_or_pipelines(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy: building in place would leave build/ in the repository
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO_ROOT / name, source / name)
    for folder in ("mind_core", "plugins", "pipelines"):
        shutil.copytree(REPO_ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("*.whl")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist() if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"mind_core", "mind_harvest"}
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"mind_harvest/plugins/chatgpt.py", "mind_harvest/pipelines/definitions.py", "mind_harvest/pipelines/dagster.yaml"} <= names
