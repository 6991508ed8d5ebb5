"""The ``mind`` command: register sources, harvest them, and look after the minds.

Exit codes: 0 success (items skipped for bad input are reported, not fatal); 1 a command failed
at run time (a harvested source missing, failed or empty, or a prune refused); 2 bad usage or
input (unknown kind, missing path, invalid name); 3 ``doctor`` found problems it did not repair.
Errors are one line on stderr; ``--debug`` shows the traceback.

Plugins add commands through the ``register_commands`` hook (``mind_core.plugins``); they are
added to a fresh root group at each ``main`` call, so a plugin registered at run time counts.
"""

from __future__ import annotations

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
from mind_core.cli.harvest import harvest
from mind_core.cli.kg import kg
from mind_core.cli.maintenance import compact, doctor, reindex, stats
from mind_core.cli.recall import recall
from mind_core.cli.serve import mcp, serve
from mind_core.cli.snapshot import analytics, snapshot
from mind_core.cli.sources import sources
from mind_core.errors import MindError
from mind_core.text_table import format_table

__all__ = [
    "EMBEDDER_ENV",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_PROBLEMS",
    "EXIT_USAGE",
    "build_cli",
    "format_table",
    "main",
]

DISTRIBUTION = "mind-harvest"
BUILT_IN_COMMANDS: tuple[click.Command, ...] = (
    sources,
    harvest,
    recall,
    stats,
    doctor,
    reindex,
    compact,
    kg,
    serve,
    mcp,
    snapshot,
    analytics,
)


def build_cli() -> click.Group:
    """The root group: the built-in commands, then those plugins add."""

    @click.group(
        "mind",
        cls=click.Group,
        epilog="\b\nExample:\n  mind sources add ~/Downloads/chatgpt-export.zip && mind harvest",
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    @click.version_option(package_name=DISTRIBUTION, prog_name="mind", message="%(prog)s %(version)s")
    def root() -> None:
        """Harvest your history into a searchable mind."""

    for command in BUILT_IN_COMMANDS:
        root.add_command(command)
    add_plugin_commands(root)
    return root


def add_plugin_commands(root: click.Group) -> None:
    """Let each ``register_commands`` implementation add its commands. A plugin that fails or
    tries to replace a built-in command is reported on stderr; the command line still works."""
    from mind_core.plugins import get_plugin_manager

    built_in = dict(root.commands)
    for impl in get_plugin_manager().hook.register_commands.get_hookimpls():
        try:
            impl.function(cli=root)
        except Exception as exc:
            print(f"warning: plugin {impl.plugin_name!r} could not add its commands: {exc}", file=sys.stderr)
        for name, command in built_in.items():
            if root.commands.get(name) is not command:
                print(f"warning: plugin {impl.plugin_name!r} may not replace `mind {name}`", file=sys.stderr)
                root.add_command(command, name)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mind`` with ``argv`` (default: the process's arguments); returns the exit code."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = build_cli().main(args=args, prog_name="mind", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return EXIT_USAGE if isinstance(exc, click.UsageError) else exc.exit_code
    except click.Abort:
        print("interrupted", file=sys.stderr)
        return EXIT_FAILED
    except MindError as exc:  # raised by a plugin's command
        return report_error(exc, EXIT_FAILED, "--debug" in args)
    return EXIT_OK if code is None else int(code)
