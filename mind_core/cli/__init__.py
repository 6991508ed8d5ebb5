"""The ``mind`` command: register sources, harvest them, and look after the minds.

Exit codes: 0 success (items skipped for bad input are reported, not fatal); 1 a command failed
at run time (a harvested source missing, failed or empty, or a prune refused); 2 bad usage or
input (unknown kind, missing path, invalid name); 3 ``doctor`` found problems it did not repair.
Errors are one ``error:`` line on stderr, click's usage errors too (with a ``try 'mind COMMAND
--help'`` line under them instead of click's usage block); ``--debug`` shows the traceback.

Plugins add commands through the ``register_commands`` hook (``mind_core.plugins``); they are
added to a fresh root group at each ``main`` call, so a plugin registered at run time counts.

The root group imports a built-in command's module only when that command runs (or help lists
it), and asks plugins for their commands only when a name is not built-in or help lists them: a
command then loads what it uses and nothing more, which is what lets ``mind mcp`` answer an MCP
client's ``initialize`` within a second of starting.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence

import click

from mind_core.cli.base import (
    EMBEDDER_ENV,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_USAGE,
    report_error,
)
from mind_core.errors import MindError
from mind_core.store.home import HOME_ENV, HOME_ENV_ALIAS

__all__ = [
    "EMBEDDER_ENV",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_PROBLEMS",
    "EXIT_USAGE",
    "build_cli",
    "main",
]

DISTRIBUTION = "mind-harvest"
# command name -> the module defining it (the click command is the module's attribute of that name)
BUILT_IN_COMMANDS: dict[str, str] = {
    "sources": "mind_core.cli.sources",
    "harvest": "mind_core.cli.harvest",
    "recall": "mind_core.cli.recall",
    "stats": "mind_core.cli.maintenance",
    "doctor": "mind_core.cli.maintenance",
    "reindex": "mind_core.cli.maintenance",
    "compact": "mind_core.cli.maintenance",
    "kg": "mind_core.cli.kg",
    "serve": "mind_core.cli.serve",
    "mcp": "mind_core.cli.serve",
    "snapshot": "mind_core.cli.snapshot",
    "analytics": "mind_core.cli.snapshot",
    "forget": "mind_core.cli.forget",
    "redaction": "mind_core.cli.redaction",
}


ROOT_EPILOG = f"""\b
Example:
  mind sources add ~/Downloads/chatgpt-export.zip && mind harvest
  mind recall "postgres migration"

\b
Environment:
  {HOME_ENV:<27} the mind home (--home), default ~/.mind-harvest
  {HOME_ENV_ALIAS:<27} its older name, still read
  {EMBEDDER_ENV:<27} the embedding provider (--embedder), default inprocess
  {"MIND_HARVEST_SERVE_TOKEN":<27} the bearer token `mind serve` requires
  {"MIND_HARVEST_SERVE_WORKERS":<27} worker processes of `mind serve` (--workers)
  {"MIND_HARVEST_SERVE_HEADER_TIMEOUT":<27} seconds `mind serve` waits for a request's headers (--header-timeout)
  {"NO_COLOR":<27} plain output on a terminal too

Each command's --help has its options and an example; docs/usage.md has the whole guide."""


class MindGroup(click.Group):
    """The root group: built-in commands loaded by name, plugin commands added on first need."""

    _plugins_added = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._add_plugin_commands()
        return sorted({*BUILT_IN_COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in BUILT_IN_COMMANDS:
            command = getattr(importlib.import_module(BUILT_IN_COMMANDS[cmd_name]), cmd_name)
            assert isinstance(command, click.Command)
            return command
        self._add_plugin_commands()
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """Click's, with the typo suggestion (``Did you mean 'recall'?``) drawn from every
        command: the built-in ones are not in ``self.commands`` until they are loaded."""
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            raise click.exceptions.NoSuchCommand(
                exc.command_name, possibilities=self.list_commands(ctx), ctx=ctx
            ) from None

    def _add_plugin_commands(self) -> None:
        """Let each ``register_commands`` implementation add its commands. A plugin that fails or
        tries to replace a built-in command is reported on stderr; the command line still works."""
        if self._plugins_added:
            return
        self._plugins_added = True
        from mind_core.plugins import get_plugin_manager

        for impl in get_plugin_manager().hook.register_commands.get_hookimpls():
            try:
                impl.function(cli=self)
            except Exception as exc:
                print(f"warning: plugin {impl.plugin_name!r} could not add its commands: {exc}", file=sys.stderr)
            for name in BUILT_IN_COMMANDS.keys() & self.commands.keys():
                print(f"warning: plugin {impl.plugin_name!r} may not replace `mind {name}`", file=sys.stderr)
                del self.commands[name]


def build_cli() -> click.Group:
    """The root group: the built-in commands, then those plugins add."""

    @click.group(
        "mind",
        cls=MindGroup,
        epilog=ROOT_EPILOG,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    @click.version_option(package_name=DISTRIBUTION, prog_name="mind", message="%(prog)s %(version)s")
    def root() -> None:
        """Harvest your history into a searchable mind."""

    return root


def usage_message(exc: click.ClickException) -> str:
    """Click's message in the words of our own errors: a lower-case start (``invalid value for
    '--profile': ...``), so every error reads as one ``error: ...`` line."""
    message = exc.format_message()
    if message[:2].istitle():
        message = message[0].lower() + message[1:]
    return message


def help_command(cli: click.Group, args: Sequence[str]) -> str:
    """The command whose help a usage error points to: the deepest command ``args`` name
    (``mind recall`` for ``mind recall foo --tag``, whose parse error click reports from the root)."""
    path, current = ["mind"], cli
    for token in args:
        if not isinstance(current, click.Group):
            break
        if token.startswith("-"):
            continue
        command = current.get_command(click.Context(current), token)
        if command is None:
            break
        path.append(token)
        current = command
    return " ".join(path)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mind`` with ``argv`` (default: the process's arguments); returns the exit code."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = list(sys.argv[1:] if argv is None else argv)
    cli = build_cli()
    try:
        code = cli.main(args=args, prog_name="mind", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:  # `mind` or `mind kg` alone: the help
        exc.show()
        return EXIT_USAGE
    except click.ClickException as exc:
        code = EXIT_USAGE if isinstance(exc, click.UsageError) else exc.exit_code
        report_error(usage_message(exc), code, as_json="--json" in args)
        if isinstance(exc, click.UsageError) and "--json" not in args:
            print(f"try '{help_command(cli, args)} --help'", file=sys.stderr)
        return code
    except click.Abort:
        print("interrupted", file=sys.stderr)
        return EXIT_FAILED
    except MindError as exc:  # raised by a plugin's command
        return report_error(exc, EXIT_FAILED, "--debug" in args, as_json="--json" in args)
    return EXIT_OK if code is None else int(code)
