"""What each `mind` command loads: commands that need no vector load no model at all, and the
query path loads ONNX Runtime and tokenizers, never torch or sentence-transformers.

Each check runs the CLI in a fresh interpreter (``python -c``) and reads ``sys.modules`` after
the commands, since a module imported once stays imported for the rest of a test session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mind_core.embeddings import inprocess as inprocess_module
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.store.home import DEFAULT_WORKSPACE, MindHome
from mind_core.testing.exports import write_chatgpt_export
from mind_core.testing.fakes import HashingEmbedder
from tests.conftest import REPO_ROOT

HEAVY = ("torch", "sentence_transformers", "transformers")
MODEL_RUNTIME = ("onnxruntime", "tokenizers")

_RUN_COMMANDS = """
import contextlib, io, json, sys
from mind_core.cli import main
codes, outputs = [], []
for argv in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        codes.append(main(argv))
    outputs.append(out.getvalue())
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {heavy})
print(json.dumps({{"codes": codes, "outputs": outputs, "loaded": loaded}}))
"""


def run_cli(commands: list[list[str]], env: dict[str, str], watched: tuple[str, ...] = HEAVY + MODEL_RUNTIME) -> dict:
    """Run ``mind`` commands in one fresh interpreter; their exit codes, outputs and the watched
    (heavy) modules they loaded."""
    code = _RUN_COMMANDS.format(heavy=repr(set(watched)))
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(commands)],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


class DefaultLike(HashingEmbedder):
    """Vectors with the fingerprint of the default in-process model."""

    provider = "inprocess"
    model_name = inprocess_module.MODEL_NAME
    runtime, quantization = inprocess_module.BACKENDS[inprocess_module.DEFAULT_BACKEND]


def harvested_home(tmp_path: Path, embedder) -> Path:
    home = tmp_path / "home"
    export = write_chatgpt_export(tmp_path / "export" / "conversations.json", 2, 4)
    with Mind.open(MindHome(home).mind_path(DEFAULT_WORKSPACE), embedder=embedder) as mind:
        register_source(mind, "chatgpt", export, "gpt")
        harvest(mind, "gpt")
    return home


@pytest.mark.slow
def test_commands_that_need_no_vector_load_no_model(tmp_path: Path) -> None:
    home = harvested_home(tmp_path, DefaultLike(1024))
    base = ["--home", str(home), "-q"]
    result = run_cli(
        [
            ["sources", "list", *base],
            ["stats", *base],
            ["doctor", *base],
            ["harvest", *base],  # unchanged since the harvest above: skipped
            ["recall", "conversation", "--keyword-only", *base],
        ],
        {"MIND_HARVEST_ONNX_CACHE": str(tmp_path / "no-cache-yet"), inprocess_module.BACKEND_ENV: ""},
    )
    assert result["codes"] == [0, 0, 0, 0, 0], result["outputs"]
    assert "unchanged" in result["outputs"][3]
    assert "missing" in result["outputs"][2]  # doctor reports the (not yet exported) ONNX cache
    assert result["loaded"] == []
    assert not list((tmp_path / "no-cache-yet").glob("all-MiniLM-*"))  # nothing was exported


def test_an_unchanged_harvest_already_in_the_history_imports_no_dagster(tmp_path: Path) -> None:
    home = tmp_path / "home"
    export = write_chatgpt_export(tmp_path / "export" / "conversations.json", 2, 4)
    base = ["--home", str(home), "--embedder", "mock", "-q"]
    env = {"DAGSTER_HOME": ""}
    first = run_cli([["sources", "add", str(export), "--name", "gpt", *base], ["harvest", *base]], env, ("dagster",))
    assert first["codes"] == [0, 0], first["outputs"]
    assert first["loaded"]  # the first harvest is recorded in the home's Dagster instance
    again = run_cli([["harvest", *base]], env, ("dagster",))
    assert again["codes"] == [0] and "unchanged" in again["outputs"][0]
    assert again["loaded"] == []


@pytest.mark.real_model
@pytest.mark.slow
def test_recall_loads_onnx_runtime_and_never_torch(tmp_path: Path, onnx_cache: Path, real_embedder) -> None:
    home = harvested_home(tmp_path, real_embedder)
    result = run_cli(
        [["recall", "conversation", "--json", "--home", str(home), "-q"]],
        {"MIND_HARVEST_ONNX_CACHE": str(onnx_cache), inprocess_module.BACKEND_ENV: real_embedder.backend},
    )
    assert result["codes"] == [0]
    assert json.loads(result["outputs"][0])["results"], "the recall found nothing"
    assert set(MODEL_RUNTIME) <= {m.split(".")[0] for m in result["loaded"]}
    assert not [m for m in result["loaded"] if m.split(".")[0] in HEAVY]


def test_the_dagster_embedder_is_onnx_and_loads_nothing_until_it_embeds() -> None:
    code = (
        "import json, sys; from mind_harvest.pipelines.resources import EmbedderResource; "
        "e = EmbedderResource().build(); "
        "print(json.dumps([e.runtime, e.quantization, sorted(m for m in sys.modules "
        f"if m.split('.')[0] in {set(HEAVY + MODEL_RUNTIME)!r})]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), inprocess_module.BACKEND_ENV: ""},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    runtime, quantization = inprocess_module.BACKENDS[inprocess_module.DEFAULT_BACKEND]
    assert json.loads(done.stdout.splitlines()[-1]) == [runtime, quantization, []]
