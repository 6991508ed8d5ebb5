"""What every ``mind`` command shares: exit codes, the common options, error handling, opening a mind.

A command is a function of the parsed options (``CommandArgs``) returning an exit code;
``mind_command`` turns it into a click callback that maps the engine's errors to one ``error:``
line and an exit code, so no traceback reaches a user (``--debug`` shows it).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import click
from click.core import ParameterSource

from mind_core.errors import InvalidInputError, MindError, NotFoundError
from mind_core.store.home import DEFAULT_WORKSPACE, HOME_ENV, MindHome

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PROBLEMS = 0, 1, 2, 3
EMBEDDER_ENV = "MIND_HARVEST_EMBEDDER"


class CommandArgs(SimpleNamespace):
    """The parsed arguments and options of one command, by their parameter names."""


def example(*lines: str) -> str:
    """A help epilog with examples; ``\\b`` keeps click from re-wrapping the command lines."""
    return "\b\nExample:\n" + "\n".join(f"  {line}" for line in lines)


# option name -> (its flags, its settings), in the order help lists them
COMMON_OPTIONS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "home": (
        ("--home",),
        {
            "type": click.Path(file_okay=False),
            "metavar": "DIR",
            "show_default": f"${HOME_ENV} or ~/.mind-harvest",
            "help": "Mind home folder.",
        },
    ),
    "workspace": (
        ("--workspace", "-w"),
        {
            "default": DEFAULT_WORKSPACE,
            "metavar": "NAME",
            "show_default": True,
            "help": "Workspace whose mind to use ('personal' for the personal mind).",
        },
    ),
    "embedder": (
        ("--embedder",),
        {
            "metavar": "PROVIDER",
            "show_default": f"${EMBEDDER_ENV} or inprocess",
            "help": "Embedding provider: inprocess, auto, ollama, voyage, openai, litellm, mock.",
        },
    ),
    "json": (("--json",), {"is_flag": True, "help": "Machine-readable JSON output instead of text."}),
    "debug": (("--debug",), {"is_flag": True, "help": "Show tracebacks of errors."}),
    "quiet": (("--quiet", "-q"), {"is_flag": True, "help": "No progress or informational output."}),
}


EXTERNAL_URL_OPTION = click.option(
    "--external-url",
    metavar="URL",
    help="External search service (POST {url}/search; or $MIND_HARVEST_EXTERNAL_URL; "
    "token from $MIND_HARVEST_EXTERNAL_TOKEN).",
)
# recall, serve and mcp read only by default: a recall counted as an access raised the
# popularity of what it returned, so the same query scored differently the next time
RECORD_ACCESS_OPTION = click.option(
    "--record-access",
    is_flag=True,
    help="Count each recall as an access of the memories it returns (writes access counts, which "
    "raise their popularity); default: read only.",
)


ALL_WORKSPACES_OPTION = click.option(
    "--all-workspaces", is_flag=True, help="Every mind in the home, the personal mind included."
)


def common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    return common_options_hiding()(func)


def common_options_hiding(*unused: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The common options, those named in ``unused`` (e.g. ``"embedder"``) hidden: help lists only
    the options a command uses, while a script passing one set of options to every command (as
    ``--embedder mock --workspace team``) still runs; the hidden ones are accepted and ignored."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for name, (flags, settings) in reversed(COMMON_OPTIONS.items()):
            func = click.option(*flags, **settings, hidden=name in unused)(func)
        return func

    return decorate


def mind_command(func: Callable[[CommandArgs], int]) -> Callable[..., int]:
    """The click callback of a command: its options as ``CommandArgs``; engine errors as one line."""

    @functools.wraps(func)
    def callback(**params: Any) -> int:
        args = CommandArgs(**params)
        if params.get("all_workspaces") and _given_on_command_line("workspace"):
            raise click.UsageError("--all-workspaces covers every mind: give it or --workspace, not both")
        try:
            return func(args)
        except (InvalidInputError, NotFoundError, LookupError) as exc:
            return report_error(exc, EXIT_USAGE, args.debug, as_json=getattr(args, "json", False))
        except MindError as exc:
            return report_error(exc, EXIT_FAILED, args.debug, as_json=getattr(args, "json", False))
        except BrokenPipeError:  # output piped into `head` and friends
            with contextlib.suppress(OSError):
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - stop the interpreter's flush from failing again
            return EXIT_OK

    return callback


def _given_on_command_line(parameter: str) -> bool:
    context = click.get_current_context(silent=True)
    return context is not None and context.get_parameter_source(parameter) == ParameterSource.COMMANDLINE


def report_error(exc: BaseException | str, code: int, debug: bool = False, *, as_json: bool = False) -> int:
    """One ``error:`` line on stderr; with ``--json``, ``{"error": ..., "exit_code": ...}`` on
    stdout instead, where a program reading the command's JSON looks (the exit code is the same)."""
    if debug and isinstance(exc, BaseException):
        traceback.print_exception(exc)
    if as_json:
        print(json.dumps({"error": str(exc), "exit_code": code}))
    else:
        print(f"error: {exc}", file=sys.stderr)
    return code


# -- minds --------------------------------------------------------------------------------------
def make_embedder(name: str | None, warn: bool = True) -> Any:
    """The embedder ``name`` (or $MIND_HARVEST_EMBEDDER, else in-process); ``warn``: print its
    status warning (a degraded model), which one of several worker processes does."""
    from mind_core.embeddings import create_embedding_provider

    provider = name or os.environ.get(EMBEDDER_ENV) or "inprocess"
    # Only `auto` may fall back to the mock: an explicitly chosen provider that cannot start
    # (e.g. the model package is missing) must fail, not bake meaningless vectors into a mind.
    # An explicit provider is not probed: its model loads at the first text embedded, so a
    # command that embeds nothing (unchanged source, fingerprint check) loads none.
    auto = provider == "auto"
    embedder = create_embedding_provider(provider, fallback_to_mock=auto, lazy=not auto)
    status = embedder.get_status()
    if warn and status.get("warning"):
        print(f"warning: {status['warning']}", file=sys.stderr)
    return embedder


def no_mind(home: MindHome, workspace: str) -> NotFoundError:
    """Every command's error for a workspace without a mind: the minds there are (a typo shows),
    and the command that makes one."""
    target = "" if workspace == DEFAULT_WORKSPACE else f" -w {workspace}"
    return NotFoundError(f"{home.missing_mind(workspace)}; `mind sources add PATH{target}` creates it")


def no_minds(home: MindHome) -> NotFoundError:
    """The error of an ``--all-workspaces`` command that needs a mind, in an empty home."""
    return NotFoundError(f"no minds in {home.root} yet; `mind sources add PATH` creates one")


def require_mind(args: CommandArgs, workspace: str | None = None) -> None:
    """Refuse a workspace without a mind, before anything opens (which would create one)."""
    home = MindHome(args.home)
    name = workspace or args.workspace
    if not home.mind_path(name).is_file():
        raise no_mind(home, name)


@contextlib.contextmanager
def open_mind(
    args: CommandArgs,
    workspace: str | None = None,
    *,
    embed: bool = True,
    rebuild: bool = False,
    write: bool = False,
    readonly: bool = False,
    create: bool = False,
) -> Iterator[Any]:
    """The mind of ``workspace``; with ``write``, held under the mind's OS write lock (the one
    Dagster steps take), so a harvest from the shell and a scheduled one take turns; with
    ``readonly``, opened for reading only (works on a mind this user cannot write). A missing
    mind is refused unless ``create`` (only ``sources add`` creates minds: a typo in a
    workspace name must not become a new mind)."""
    from mind_core.mind import Mind
    from mind_core.store.write_lock import mind_write_lock

    if not create:
        require_mind(args, workspace)
    path = MindHome(args.home).mind_path(workspace or args.workspace)
    with contextlib.ExitStack() as stack:
        if write and not stack.enter_context(mind_write_lock(path, blocking=False)):
            print(f"waiting for the other writer of {path} to finish ...", file=sys.stderr)
            stack.enter_context(mind_write_lock(path))
        embedder = make_embedder(args.embedder) if embed else None
        yield stack.enter_context(
            Mind.open(path, embedder=embedder, rebuild_vectors=rebuild, readonly=readonly)
        )


def selected_workspaces(args: CommandArgs) -> list[str]:
    """The minds a command with ``--all-workspaces`` covers: every mind of the home (the personal
    one included, ``MindHome.minds``), or the one ``--workspace`` names."""
    if args.all_workspaces:
        return MindHome(args.home).minds()
    return [args.workspace]
