import shlex
import shutil
from pathlib import Path

from mind_harvest.pipelines.partitions import harvest_sources, mind_workspaces
from mind_harvest.pipelines.run_examples import (
    EXAMPLE_SOURCES,
    EXAMPLES,
    add_partitions,
    next_command,
    register_examples,
)

from mind_core.cli import main
from mind_core.harvest.catalog import read_catalog
from mind_core.store.home import MindHome


def test_every_bundled_example_present_is_registered_with_its_kind(tmp_path, home, instance):
    examples = tmp_path / "examples"
    shutil.copytree(EXAMPLES / "chatgpt", examples / "chatgpt")
    shutil.copytree(EXAMPLES / "vault", examples / "vault")
    assert register_examples(home, examples) == ["demo/chatgpt", "demo/vault"]
    sources = {s.source.source: s.source.kind for s in read_catalog(home).sources}
    assert sources == {"chatgpt": "chatgpt", "vault": "markdown"}
    add_partitions(instance, home)
    add_partitions(instance, home)  # idempotent, like the sensor's ticks
    assert sorted(instance.get_dynamic_partitions(harvest_sources.name)) == ["demo/chatgpt", "demo/vault"]
    assert instance.get_dynamic_partitions(mind_workspaces.name) == ["demo"]


def test_the_bundled_examples_cover_every_kind_make_run_registers():
    assert all((EXAMPLES / relative).exists() for _, _, relative in EXAMPLE_SOURCES)


def test_the_next_command_make_run_prints_answers_from_the_demo_mind(tmp_path, monkeypatch, capsys):
    home = MindHome(tmp_path / ".demo" / "home")
    examples = tmp_path / "examples"
    shutil.copytree(EXAMPLES / "vault", examples / "vault")
    register_examples(home, examples)
    monkeypatch.setenv("MIND_HARVEST_EMBEDDER", "mock")
    assert main(["harvest", "--home", str(home.root), "--workspace", "demo", "--quiet"]) == 0
    capsys.readouterr()

    command = shlex.split(next_command(home.root, cwd=tmp_path))
    assignment, executable, *argv = command
    assert assignment == "MIND_HOME=.demo/home"
    assert Path(executable).name == "mind" and Path(executable).exists()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MIND_HOME", assignment.split("=", 1)[1])
    assert main(argv) == 0
    assert "Project Falcon" in capsys.readouterr().out
