"""The query services: ``mind serve`` (HTTP JSON) and ``mind mcp`` (MCP over stdio)."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import click

from mind_core.cli.base import (
    EXIT_FAILED,
    EXIT_OK,
    EXTERNAL_URL_OPTION,
    RECORD_ACCESS_OPTION,
    CommandArgs,
    common_options_hiding,
    example,
    make_embedder,
    mind_command,
)
from mind_core.limits import DEFAULT_HEADER_TIMEOUT_SECONDS
from mind_core.store.home import MindHome

if TYPE_CHECKING:
    from fastapi import FastAPI

    from mind_core.query.service import ServiceConfig

MAX_DEFAULT_WORKERS = 4
SERVE_SETTINGS_ENV = "MIND_HARVEST_SERVE_SETTINGS"


def default_workers() -> int:
    """Worker processes of ``mind serve``: one per core the process may use, at most
    ``MAX_DEFAULT_WORKERS``, where the kernel says how many that is (Linux); one elsewhere."""
    if not sys.platform.startswith("linux"):
        return 1
    return max(1, min(MAX_DEFAULT_WORKERS, len(os.sched_getaffinity(0))))


def warn_if_no_mind(home: MindHome, workspace: str) -> None:
    """A service whose default workspace has no mind yet starts anyway (``sources add`` may
    create it while it runs), but says so on stderr, naming the minds there are: a typo shows."""
    if not home.mind_path(workspace).is_file():
        print(
            f"warning: {home.missing_mind(workspace)}; serving anyway: it answers once "
            "`mind sources add` creates it",
            file=sys.stderr,
            flush=True,
        )


@click.command("serve", epilog=example("mind serve --port 8787"))
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; off loopback a token is required.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8787, show_default=True, help="Port to listen on (0: any free port).")
@click.option("--token", help="Bearer token (or $MIND_HARVEST_SERVE_TOKEN); required off loopback.")
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=default_workers,
    envvar="MIND_HARVEST_SERVE_WORKERS",
    show_default="one per core, at most 4; 1 off Linux",
    help="Worker processes answering on the one port, each with its own model and minds (or "
    "$MIND_HARVEST_SERVE_WORKERS).",
)
@click.option(
    "--header-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_HEADER_TIMEOUT_SECONDS,
    envvar="MIND_HARVEST_SERVE_HEADER_TIMEOUT",
    metavar="SECONDS",
    show_default=True,
    help="Seconds a request line and its headers may take to arrive, from the connection's "
    "opening or the request's first byte; then the connection is closed (or "
    "$MIND_HARVEST_SERVE_HEADER_TIMEOUT).",
)
@click.option(
    "--allow-ingest",
    is_flag=True,
    envvar="MIND_HARVEST_ALLOW_INGEST",
    help="Accept POST /ingest (adding memories; needs --token too); read-only without it (or "
    "$MIND_HARVEST_ALLOW_INGEST=1).",
)
@RECORD_ACCESS_OPTION
@EXTERNAL_URL_OPTION
@common_options_hiding("json")
@mind_command
def serve(args: CommandArgs) -> int:
    """HTTP JSON query service.

    Recall, stats and health over HTTP; API docs at /docs.
    """
    from mind_core.query.http_server import (
        LOG_FORMAT,
        SERVE_TOKEN_ENV,
        QueryServer,
        listening_socket,
        serve_with_workers,
        socket_url,
    )
    from mind_core.query.routes.ingest import ALLOW_INGEST_ENV

    level = logging.WARNING if args.quiet else logging.INFO
    logging.basicConfig(level=level, stream=sys.stderr, format=LOG_FORMAT)
    if args.allow_ingest:  # the ingest route reads it at each request, in every worker process
        os.environ[ALLOW_INGEST_ENV] = "1"
    settings = ServeSettings(
        home=str(MindHome(args.home).root),
        workspace=args.workspace,
        embedder=args.embedder,
        token=args.token or os.environ.get(SERVE_TOKEN_ENV),
        external_url=args.external_url,
        record_access=args.record_access,
    )
    home = MindHome(args.home)
    warn_if_no_mind(home, args.workspace)
    try:
        sock = listening_socket(args.host, args.port, settings.token)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILED
    url = socket_url(sock)
    print(
        f"listening on {url} (API docs at {url}/docs{'?token=TOKEN' if settings.token else ''}; "
        f"minds in {home.root}, default workspace "
        f"{args.workspace!r}; token "
        f"{'required' if settings.token else 'off'}; {args.workers} worker process"
        f"{'es' if args.workers > 1 else ''}; Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    if args.workers > 1:
        make_embedder(args.embedder)  # its warning (a degraded model) once, not once per worker
        settings.to_environment()
        serve_with_workers(
            f"{__name__}:{worker_app.__name__}", args.workers, sock, level, args.header_timeout
        )
        return EXIT_OK
    servers: list[QueryServer] = []

    def on_signal(signum: int, frame: object) -> None:
        """Stop the server, also one still starting. (uvicorn replaces this handler while it
        runs, then restores it and raises the signal it caught once more: harmless.)"""
        for server in servers:
            server.stop()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    server = QueryServer(settings.service_config(warn=True), sock=sock, header_timeout=args.header_timeout)
    servers.append(server)
    try:
        server.serve()
    finally:
        server.close()
    return EXIT_OK


@dataclass
class ServeSettings:
    """What ``mind serve`` builds its service from; JSON in the environment of its worker
    processes (uvicorn starts each as a fresh interpreter that imports ``worker_app``)."""

    home: str
    workspace: str
    embedder: str | None
    token: str | None = None
    external_url: str | None = None
    record_access: bool = False

    def to_environment(self) -> None:
        os.environ[SERVE_SETTINGS_ENV] = json.dumps(asdict(self))

    @classmethod
    def from_environment(cls) -> ServeSettings:
        return cls(**json.loads(os.environ[SERVE_SETTINGS_ENV]))

    def service_config(self, warn: bool = False) -> ServiceConfig:
        from mind_core.query.service import ServiceConfig
        from mind_core.retrieval import configured_retrievers

        return ServiceConfig(
            home=MindHome(self.home),
            default_workspace=self.workspace,
            embedder=make_embedder(self.embedder, warn=warn),
            token=self.token,
            retrievers=configured_retrievers(self.external_url),
            record_access=self.record_access,
        )


def worker_app() -> FastAPI:
    """The app of one worker process of ``mind serve --workers`` (uvicorn's app factory)."""
    from mind_core.query.app import create_app
    from mind_core.query.service import QueryService

    return create_app(QueryService(ServeSettings.from_environment().service_config()))


@click.command("mcp", epilog=example("mind mcp --workspace team"))
@RECORD_ACCESS_OPTION
@EXTERNAL_URL_OPTION
@common_options_hiding("json", "quiet")
@mind_command
def mcp(args: CommandArgs) -> int:
    """MCP server over stdio, for assistants.

    Tools recall and save memories, entities, relations, identity and awareness.
    """
    from mind_core.query.mcp import build_mcp_server
    from mind_core.query.mcp_tools import MindTools, OnFirstUse

    def retrievers() -> list:
        from mind_core.retrieval import configured_retrievers

        return configured_retrievers(args.external_url)

    home = MindHome(args.home)
    warn_if_no_mind(home, args.workspace)
    tools = MindTools(
        home,
        args.workspace,
        OnFirstUse(lambda: make_embedder(args.embedder)),
        OnFirstUse(retrievers),
        record_access=args.record_access,
    )
    try:
        build_mcp_server(tools).run("stdio")
    finally:
        tools.close()
    return EXIT_OK
