"""The command line as a tool: version, help, plugin commands, progress and plain output."""

import io
import json
import re
from importlib.metadata import version

import click
import pytest
from click.testing import CliRunner

from mind_core.cli import EXIT_OK, EXIT_USAGE, build_cli, main
from mind_core.cli.maintenance import status_text
from mind_core.cli.output import StageProgress
from mind_core.plugins import get_plugin_manager, hookimpl, register_plugin, source_kinds
from mind_core.testing.exports import write_chatgpt_export
from mind_core.text_table import format_table, print_table


def run(capsys, *argv):
    code = main([*argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def all_commands(group: click.Group, prefix: tuple[str, ...] = ()):
    for name, command in group.commands.items():
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from all_commands(command, (*prefix, name))


def test_version_comes_from_the_package_metadata(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == EXIT_OK and out.strip() == f"mind {version('mind-harvest')}"


def test_every_argument_and_option_has_help_and_every_command_an_example():
    for path, command in all_commands(build_cli()):
        for param in command.params:
            assert param.help, f"mind {' '.join(path)}: {param.name} has no help text"
        if not isinstance(command, click.Group):
            assert "Example:" in (command.epilog or ""), f"mind {' '.join(path)} has no example"


def test_sources_add_help_lists_the_installed_kinds(capsys):
    code, out, _ = run(capsys, "sources", "add", "--help")
    assert code == EXIT_OK and "Installed kinds" in out
    assert source_kinds() and all(f"  {kind} " in out for kind in source_kinds())


@pytest.mark.parametrize(
    ("command", "options", "error"),
    [
        ("harvest", ("--no-such-option",), "error: no such option '--no-such-option'."),
        ("recall", ("x", "--scope", "everything"), "error: invalid value for '--scope': 'everything' is not"),
        ("recall", ("x", "--profile", "fast"), "error: invalid value for '--profile': 'fast' is not one of"),
        ("recall", (), "error: missing argument 'QUERY...'."),
        ("kg entities", ("--limit", "many"), "error: invalid value for '--limit': 'many' is not"),
    ],
)
def test_a_usage_error_is_one_error_line_and_a_hint_without_the_usage_block(capsys, command, options, error):
    code, out, err = run(capsys, *command.split(), *options)
    assert code == EXIT_USAGE and out == ""
    first, hint = err.splitlines()
    assert first.startswith(error) and hint == f"try 'mind {command} --help'"


def test_a_filter_naming_no_installed_kind_is_refused_with_the_kinds_there_are(tmp_path, capsys):
    code, out, err = run(capsys, "recall", "notmuch", "--source-kind", "nosuchkind", "--home", str(tmp_path))
    assert code == EXIT_USAGE and out == ""
    first = err.splitlines()[0]
    assert first.startswith("error: invalid value for '--source-kind': unknown kind 'nosuchkind': must be an installed plugin's kind or an item kind: ")
    assert all(kind in first for kind in (*source_kinds(), "note", "conversation"))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("recall", "xyz", "--limit", "0"), "limit must be between 1 and 100 (got 0)"),
        (("recall", "xyz", "--scope", "everything"), "everything"),
        (("stats", "--workspace", "nowhere"), "nowhere"),
        (("harvest", "--workspace", "no-such-space"), "no mind for workspace 'no-such-space'"),
        (("sources", "list", "--no-such-option"), "no such option"),
    ],
)
def test_with_json_an_error_is_a_json_object_on_stdout_with_the_same_exit_code(tmp_path, capsys, argv, message):
    home = ("--home", str(tmp_path / "home"))
    plain_code, _, plain_err = run(capsys, *argv, *home)
    code, out, err = run(capsys, *argv, *home, "--json")
    assert code == plain_code != EXIT_OK and message in plain_err
    answer = json.loads(out)
    assert message in answer["error"] and answer["exit_code"] == code
    assert "error:" not in err and "Traceback" not in err


class GreetingPlugin:
    """A third-party plugin adding a command, as llm's plugins do."""

    @hookimpl
    def register_commands(self, cli: click.Group) -> None:
        @cli.command("greet")
        @click.argument("name", help="Who to greet.")
        def greet(name: str) -> None:
            """Say hello."""
            click.echo(f"hello {name}")

        @cli.command("stats")
        def stats() -> None:
            """A plugin may not replace a built-in command."""
            click.echo("plugin stats")


@pytest.fixture
def greeting_plugin():
    register_plugin(GreetingPlugin(), name="greeting")
    yield
    get_plugin_manager(refresh=True)


def test_a_plugin_adds_a_command_that_runs(greeting_plugin, capsys):
    code, out, err = run(capsys, "greet", "Ada")
    assert code == EXIT_OK and out == "hello Ada\n"
    assert "may not replace `mind stats`" in err
    result = CliRunner().invoke(build_cli(), ["--help"])
    assert "greet" in result.output and "Say hello." in result.output
    code, out, _ = run(capsys, "stats", "--help")
    assert code == EXIT_OK and "Counts per mind" in out and "replace a built-in" not in out


def test_harvest_progress_is_plain_lines_on_stderr_when_not_a_terminal_and_silent_with_quiet(
    tmp_path, capsys
):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 2, 5)
    base = ["--home", str(tmp_path / "home"), "--embedder", "mock"]
    assert run(capsys, "sources", "add", "chatgpt", str(export), "--name", "gpt", *base)[0] == EXIT_OK
    code, out, err = run(capsys, "harvest", *base)
    assert code == EXIT_OK and "\033[" not in out + err
    stages = [line for line in err.splitlines() if line.startswith("[default/gpt] ")]
    imported = stages.index("[default/gpt] scan/import: 10")  # where the import ended
    assert stages[0].startswith("[default/gpt] scan/import: ")
    assert stages.index("[default/gpt] cognify/embed: 10/10") > imported
    assert out.splitlines()[0].split()[:4] == ["workspace", "source", "kind", "status"]
    code, out, err = run(capsys, "harvest", "--force", "-q", *base)
    assert code == EXIT_OK and not any(line.startswith("[default/gpt]") for line in err.splitlines())


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_stage_progress_on_a_terminal_draws_bars_with_done_and_total(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with StageProgress("default/gpt") as progress:
        progress("cognify", 4, 10)
        progress("cognify", 10, 10)
    assert "default/gpt cognify/embed" in terminal.getvalue() and "10/10" in terminal.getvalue()


def test_tables_are_plain_text_off_a_terminal_and_rich_on_one(monkeypatch):
    headers, rows = ("name", "count"), [("alpha", 1), ("beta [x]", 22)]
    plain = io.StringIO()
    print_table(headers, rows, stream=plain)
    assert plain.getvalue() == format_table(headers, rows) + "\n"
    assert plain.getvalue().splitlines()[1] == "--------  -----"
    monkeypatch.delenv("NO_COLOR", raising=False)
    terminal = Terminal()
    print_table(headers, rows, stream=terminal)
    assert "beta [x]" in terminal.getvalue() and "━" in terminal.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    plain_again = Terminal()
    print_table(headers, rows, stream=plain_again)
    assert plain_again.getvalue() == plain.getvalue()


def test_a_status_line_renders_nested_values_as_key_value_pairs_not_a_python_repr():
    line = status_text(
        {"state": "ok", "exported_with": {"torch": "2.13.0+cpu", "onnx": "1.19.0"}, "files": ["a", "b"]}
    )
    assert line == "state ok, exported_with (torch=2.13.0+cpu, onnx=1.19.0), files a, b"


@pytest.mark.parametrize(
    ("command", "unused"),
    [
        (("analytics", "sql"), ("--embedder", "--workspace")),
        (("analytics", "run"), ("--embedder", "--workspace")),
        (("analytics", "list"), ("--embedder", "--workspace")),
        (("analytics", "report"), ("--embedder", "--workspace")),
        (("snapshot",), ("--embedder",)),
        (("sources", "list"), ("--embedder",)),
        (("sources", "add"), ("--embedder",)),
        (("kg", "entities"), ("--embedder",)),
        (("kg", "relations"), ("--embedder",)),
        (("kg", "neighbours"), ("--embedder",)),
    ],
)
def test_a_command_lists_only_the_options_it_uses(capsys, command, unused):
    code, out, _ = run(capsys, *command, "--help")
    assert code == EXIT_OK and "--home" in out
    assert not [option for option in unused if option in out]


def test_analytics_list_takes_the_snapshot_root_like_the_other_analytics_commands(tmp_path, capsys):
    code, out, _ = run(capsys, "analytics", "list", "--root", str(tmp_path / "snapshots"))
    assert code == EXIT_OK and "top_entities" in out
    assert f"latest snapshots under {tmp_path / 'snapshots'}: none yet" in out


def test_the_interval_default_the_help_shows_is_the_one_a_new_source_gets(tmp_path, capsys):
    _, out, _ = run(capsys, "sources", "add", "--help")
    shown = re.search(r"auto-sync harvests\.\s+\[default:\s+\((\d+)\)", out)
    assert shown
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 1, 1)
    base = ("--home", str(tmp_path / "home"), "--json")
    run(capsys, "sources", "add", "chatgpt", str(export), "--name", "gpt", "--auto-sync", *base)
    _, out, _ = run(capsys, "sources", "list", *base)
    assert json.loads(out)[0]["sync_interval_hours"] == int(shown.group(1))


@pytest.mark.parametrize(
    ("argv", "error", "hint"),
    [
        (("recal", "foo"), "error: no such command 'recal'. Did you mean 'recall'?", "try 'mind --help'"),
        (("kg", "entitis"), "error: no such command 'entitis'. Did you mean 'entities'?", "try 'mind kg --help'"),
        (("recall", "notmuch", "--tag"), "error: option '--tag' requires an argument.", "try 'mind recall --help'"),
        (
            ("kg", "relations", "--type"),
            "error: option '--type' requires an argument.",
            "try 'mind kg relations --help'",
        ),
    ],
)
def test_typos_get_a_suggestion_and_a_missing_value_points_at_the_command_s_help(capsys, argv, error, hint):
    code, out, err = run(capsys, *argv)
    assert code == EXIT_USAGE and out == ""
    assert err.splitlines() == [error, hint]


@pytest.mark.parametrize(
    ("command", "unused"),
    [
        (("mcp",), ("--json", "--quiet")),
        (("serve",), ("--json",)),
        (("stats",), ("--embedder", "--quiet")),
        (("recall",), ("--quiet",)),
        (("sources", "add"), ("--quiet",)),
        (("kg", "entities"), ("--quiet",)),
        (("doctor",), ("--quiet",)),
    ],
)
def test_options_a_command_ignores_are_not_offered(capsys, command, unused):
    code, out, _ = run(capsys, *command, "--help")
    assert code == EXIT_OK and "--home" in out
    assert not [option for option in unused if option in out]


def all_help_pages():
    cli = build_cli()
    yield (), cli
    for name in cli.list_commands(click.Context(cli)):
        command = cli.get_command(click.Context(cli), name)
        yield (name,), command
        if isinstance(command, click.Group):
            for sub in command.list_commands(click.Context(command)):
                yield (name, sub), command.get_command(click.Context(command), sub)


def test_help_shows_defaults_one_way_and_lists_commands_uncut(capsys):
    for path, command in all_help_pages():
        code, out, _ = run(capsys, *path, "--help")
        assert code == EXIT_OK
        assert "(default:" not in out, f"mind {' '.join(path)} writes a default by hand"
        if isinstance(command, click.Group):
            listing = out.split("Commands:")[1].split("Example:")[0]
            assert "..." not in listing, f"mind {' '.join(path)} cuts a command's summary"
            assert "Example:" in out, f"mind {' '.join(path)} has no example"


def test_root_help_names_the_home_variable(capsys):
    _, out, _ = run(capsys, "--help")
    assert "MIND_HARVEST_HOME" in out and "MIND_HARVEST_EMBEDDER" in out


def test_path_options_are_typed_as_paths():
    for path, command in all_commands(build_cli()):
        for param in command.params:
            if param.name in ("home", "path"):
                assert isinstance(param.type, click.Path), f"mind {' '.join(path)} --{param.name}"


def test_the_kg_examples_use_types_the_extractors_make():
    from mind_core.knowledge.cognify import CO_OCCURS_WITH
    from mind_core.knowledge.extraction import ENTITY_TYPES
    from mind_core.knowledge.structure import CC, LINKS_TO, REPLIED_TO, SENT, TAGGED, TO, TYPE_WORDS

    made = {CO_OCCURS_WITH, CC, LINKS_TO, REPLIED_TO, SENT, TAGGED, TO, *ENTITY_TYPES, *TYPE_WORDS.values()}
    cli = build_cli()
    kg = cli.get_command(click.Context(cli), "kg")
    epilogs = [kg.epilog] + [command.epilog for command in kg.commands.values()]
    named = re.findall(r"--type (\w+)", "\n".join(epilogs))
    assert named and set(named) <= made


@pytest.mark.parametrize("command", [("harvest",), ("stats",), ("doctor",), ("snapshot",), ("sources", "list")])
def test_all_workspaces_with_a_workspace_is_a_usage_error(capsys, tmp_path, command):
    """--all-workspaces with -w named on the command line: which one was meant? Refused, not
    one of them silently ignored; without -w the default workspace's name is no conflict."""
    code, out, err = run(capsys, *command, "--all-workspaces", "-w", "team", "--home", str(tmp_path))
    assert code == EXIT_USAGE and out == ""
    assert err.splitlines()[0] == "error: --all-workspaces covers every mind: give it or --workspace, not both"
    code, _, err = run(capsys, *command, "--all-workspaces", "--home", str(tmp_path))
    assert "covers every mind" not in err
