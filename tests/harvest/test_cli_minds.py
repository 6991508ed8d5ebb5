"""Which commands make minds, and what a command says about a workspace that has none.

Only a successful ``sources add`` creates a mind: a failed add, a read, a list or a typo in a
workspace name leaves the home as it was, and every command refuses a missing mind with the same
line (the minds there are, and the command that makes one).
"""

import json
from pathlib import Path

import pytest

from mind_core.cli import EXIT_OK, EXIT_USAGE, main
from mind_core.cli.serve import warn_if_no_mind
from mind_core.errors import InvalidInputError
from mind_core.harvest.pipeline import default_source_name
from mind_core.plugins import rank_sources
from mind_core.store.home import MindHome
from mind_core.testing.exports import write_chatgpt_export


def run(capsys, *argv):
    code = main([*argv])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out, out.err


def mind_files(home: Path) -> list[str]:
    return sorted(p.name for p in home.rglob("*.mind*"))


@pytest.mark.parametrize(
    "argv",
    [
        ("sources", "add", "/nonexistent/path"),
        ("sources", "add", "nosuchkind", "{export}"),
        ("sources", "add", "{export}", "--kind", "nosuchkind"),
        ("sources", "add", "{export}", "--name", "../bad"),
        ("sources", "remove", "x"),
        ("sources", "set", "x", "--auto-sync"),
    ],
)
def test_a_failed_sources_command_leaves_no_mind_behind(tmp_path, capsys, argv):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 1, 2)
    home = tmp_path / "home"
    code, _, err = run(capsys, *(a.format(export=export) for a in argv), "--home", str(home))
    assert code == EXIT_USAGE and err.startswith("error: ")
    assert mind_files(tmp_path) == []


COMMANDS_OF_A_WORKSPACE = [
    ("sources", "list"),
    ("sources", "remove", "gpt"),
    ("harvest",),
    ("recall", "hello"),
    ("stats",),
    ("doctor",),
    ("doctor", "--repair"),
    ("reindex",),
    ("compact",),
    ("kg", "entities"),
    ("kg", "relations"),
    ("kg", "neighbours", "Ada"),
    ("snapshot",),
]


@pytest.mark.parametrize("command", COMMANDS_OF_A_WORKSPACE)
def test_a_typo_in_a_workspace_is_refused_by_every_command_and_creates_nothing(tmp_path, capsys, command):
    home = tmp_path / "home"
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 1, 2)
    base = ("--home", str(home), "--embedder", "mock")
    assert run(capsys, "sources", "add", str(export), "-w", "team", *base)[0] == EXIT_OK
    code, out, err = run(capsys, *command, "-w", "tema", *base)
    assert code == EXIT_USAGE and out == ""
    assert err == "error: no mind for workspace 'tema' (minds: team); `mind sources add PATH -w tema` creates it\n"
    assert mind_files(home) == ["team.mind"]


def test_only_a_successful_sources_add_creates_the_mind(tmp_path, capsys):
    home = tmp_path / "home"
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 1, 2)
    code, out, _ = run(capsys, "sources", "add", str(export), "--home", str(home), "-w", "team")
    assert code == EXIT_OK and "added source" in out
    assert mind_files(home) == ["team.mind"]


@pytest.mark.parametrize("command", [("recall", "foo"), ("stats",), ("doctor",), ("sources", "list"), ("harvest",)])
def test_a_fresh_home_answers_alike_and_points_at_sources_add(tmp_path, capsys, command):
    code, out, err = run(capsys, *command, "--home", str(tmp_path / "home"), "--embedder", "mock")
    assert code == EXIT_USAGE and out == ""
    assert err == "error: no mind for workspace 'default' (minds: none yet); `mind sources add PATH` creates it\n"
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("command", [("stats",), ("doctor",), ("snapshot",)])
def test_all_workspaces_of_an_empty_home_say_how_to_make_a_mind(tmp_path, capsys, command):
    home = tmp_path / "home"
    code, _, err = run(capsys, *command, "--all-workspaces", "--home", str(home))
    assert code == EXIT_USAGE
    assert err == f"error: no minds in {home} yet; `mind sources add PATH` creates one\n"


def test_a_service_warns_that_its_workspace_has_no_mind_yet_naming_the_minds(tmp_path, capsys):
    home = MindHome(tmp_path / "home")
    home.workspace_path("team").parent.mkdir(parents=True)
    home.workspace_path("team").touch()
    warn_if_no_mind(home, "nosuch")
    err = capsys.readouterr().err
    assert err.startswith("warning: no mind for workspace 'nosuch' (minds: team); serving anyway")
    warn_if_no_mind(home, "team")
    assert capsys.readouterr().err == ""


def test_the_old_kind_path_form_and_kind_option_both_register(tmp_path, capsys):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 1, 2)
    base = ("--home", str(tmp_path / "home"), "--json")
    code, out, _ = run(capsys, "sources", "add", "chatgpt", str(export), "--name", "old", *base)
    assert code == EXIT_OK and json.loads(out)["kind"] == "chatgpt"
    code, out, _ = run(capsys, "sources", "add", str(export), "--kind", "chatgpt", "--name", "new", *base)
    assert code == EXIT_OK and json.loads(out)["kind"] == "chatgpt"
    code, _, err = run(capsys, "sources", "add", "chatgpt", str(export), "--kind", "chatgpt", "--home", str(tmp_path))
    assert code == EXIT_USAGE and "expected one PATH, got 2 arguments" in err
    # a path with a space, unquoted: two arguments, the first no kind but a path
    code, _, err = run(capsys, "sources", "add", str(tmp_path / "My"), "Exports", "--home", str(tmp_path))
    assert code == EXIT_USAGE and "quote a path with spaces" in err


def test_sources_add_without_arguments_names_the_missing_path(capsys):
    code, _, err = run(capsys, "sources", "add")
    assert code == EXIT_USAGE
    assert err.splitlines() == ["error: missing argument 'PATH'.", "try 'mind sources add --help'"]


def test_a_conversations_json_is_named_after_its_folder_so_two_exports_do_not_collide(tmp_path, capsys):
    first = write_chatgpt_export(tmp_path / "gpt-2023" / "conversations.json", 1, 2)
    second = write_chatgpt_export(tmp_path / "gpt-2024" / "conversations.json", 1, 2, seed=3)
    assert default_source_name(first, "chatgpt") == "gpt-2023"
    base = ("--home", str(tmp_path / "home"))
    assert "added source 'gpt-2023'" in run(capsys, "sources", "add", str(first), *base)[1]
    code, out, _ = run(capsys, "sources", "add", str(second), *base)
    assert code == EXIT_OK and "added source 'gpt-2024'" in out


def test_gemini_files_one_folder_down_are_detected(shared_data):
    ranked = rank_sources(shared_data / "chat-exports" / "gemini")
    assert ranked[0].kind == "gemini" and ranked[0].confidence >= 0.5
    assert not ranked[0].confident  # found below the folder: named, never grounds to refuse a kind


def test_gemini_export_registered_from_its_parent_folder(tmp_path, capsys, shared_data):
    code, out, err = run(capsys, "sources", "add", str(shared_data / "chat-exports" / "gemini"), "--home", str(tmp_path))
    assert code == EXIT_OK, err
    assert "added source 'gemini' (gemini, detected)" in out


def test_the_home_variable_is_mind_harvest_home_and_mind_home_still_works(tmp_path, monkeypatch):
    monkeypatch.delenv("MIND_HOME", raising=False)
    monkeypatch.setenv("MIND_HARVEST_HOME", str(tmp_path / "a"))
    assert MindHome().root == tmp_path / "a"
    monkeypatch.setenv("MIND_HOME", str(tmp_path / "a"))  # both naming one folder: fine
    assert MindHome().root == tmp_path / "a"
    monkeypatch.delenv("MIND_HARVEST_HOME")
    monkeypatch.setenv("MIND_HOME", str(tmp_path / "b"))
    assert MindHome().root == tmp_path / "b"
    monkeypatch.setenv("MIND_HARVEST_HOME", str(tmp_path / "a"))
    with pytest.raises(InvalidInputError, match="name different mind homes"):
        MindHome()
    assert MindHome(tmp_path / "c").root == tmp_path / "c"  # --home decides alone


def test_the_cli_reads_mind_harvest_home(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("MIND_HOME", raising=False)
    monkeypatch.setenv("MIND_HARVEST_HOME", str(tmp_path / "home"))
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 1, 2)
    assert run(capsys, "sources", "add", str(export))[0] == EXIT_OK
    assert mind_files(tmp_path / "home") == ["default.mind"]


def test_recall_of_the_personal_scope_without_a_personal_mind_names_that_mind(tmp_path, capsys):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 1, 2)
    base = ("--home", str(tmp_path / "home"), "--embedder", "mock")
    assert run(capsys, "sources", "add", str(export), "-w", "team", *base)[0] == EXIT_OK
    code, _, err = run(capsys, "recall", "hello", "--scope", "personal", "-w", "team", *base)
    assert code == EXIT_USAGE and err.startswith("error: no mind for workspace 'personal' (minds: team)")
