"""The path a daily ``mind harvest`` takes most often, a source unchanged since its last harvest,
imports only what it uses: no orchestrator (Dagster), no columnar or analytics stack (pyarrow,
DuckDB), no model runtime (ONNX Runtime, torch), no ANN library. Each of these costs tens to
hundreds of milliseconds of CPU per command, and the unchanged re-harvest should cost about what
``mind stats`` costs (issue #31).

The command runs as a person runs it (``python -m mind_core.cli harvest``) in a fresh
interpreter with ``-X importtime``, whose report names every module the process imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mind_core.testing.exports import write_chatgpt_export
from tests.conftest import REPO_ROOT

NOT_ON_THE_UNCHANGED_PATH = (
    "dagster",
    "pyarrow",
    "duckdb",
    "onnxruntime",
    "torch",
    "sentence_transformers",
    "transformers",
    "usearch",
)


def mind(args: list[str], env: dict[str, str], *python_options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *python_options, "-m", "mind_core.cli", *args],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def imported_packages(importtime_report: str) -> set[str]:
    """Top-level packages named in a ``-X importtime`` report (``import time: self | cumulative | name``)."""
    names = set()
    for line in importtime_report.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and name != "imported package":
                names.add(name.split(".")[0])
    return names


def test_an_unchanged_source_harvested_again_imports_no_heavy_package(tmp_path: Path) -> None:
    export = write_chatgpt_export(tmp_path / "export" / "conversations.json", 2, 4)
    base = ["--home", str(tmp_path / "home"), "--embedder", "mock", "-q"]
    env = {"DAGSTER_HOME": ""}
    assert mind(["sources", "add", str(export), "--name", "gpt", *base], env).returncode == 0
    first = mind(["harvest", *base], env)
    assert first.returncode == 0, first.stderr
    again = mind(["harvest", "--json", *base], env, "-X", "importtime")
    assert again.returncode == 0, again.stderr
    assert '"skipped": true' in again.stdout
    loaded = imported_packages(again.stderr)
    assert "mind_core" in loaded  # the report is read right
    assert loaded.isdisjoint(NOT_ON_THE_UNCHANGED_PATH), sorted(loaded & set(NOT_ON_THE_UNCHANGED_PATH))
