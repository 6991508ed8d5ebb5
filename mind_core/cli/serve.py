"""The query services: ``mind serve`` (HTTP JSON) and ``mind mcp`` (MCP over stdio)."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading

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
from mind_core.store.home import MindHome

MAX_DEFAULT_WORKERS = 4


def default_workers() -> int:
    """Worker processes of ``mind serve``: one per core, at most ``MAX_DEFAULT_WORKERS``, where
    processes can be forked safely (Linux); one elsewhere (macOS's system libraries are not safe
    to use after a fork, and Windows has none)."""
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
@RECORD_ACCESS_OPTION
@EXTERNAL_URL_OPTION
@common_options_hiding("json")
@mind_command
def serve(args: CommandArgs) -> int:
    """HTTP JSON query service.

    Recall, stats and health over HTTP; API docs at /docs.
    """
    from mind_core.query.http_server import (
        SERVE_TOKEN_ENV,
        QueryServer,
        listening_socket,
        run_workers,
        socket_url,
    )
    from mind_core.query.service import ServiceConfig
    from mind_core.retrieval import configured_retrievers

    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    token = args.token or os.environ.get(SERVE_TOKEN_ENV)
    home = MindHome(args.home)
    warn_if_no_mind(home, args.workspace)
    try:
        sock = listening_socket(args.host, args.port, token)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILED
    stopping = threading.Event()
    servers: list[QueryServer] = []

    def on_signal(signum: int, frame: object) -> None:
        """Stop the running server, or the one still starting. (uvicorn replaces this handler
        while it runs, then restores it and raises the signal it caught once more: harmless.)"""
        stopping.set()
        for server in servers:
            server.stop()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    url = socket_url(sock)
    print(
        f"listening on {url} (API docs at {url}/docs; minds in {home.root}, default workspace "
        f"{args.workspace!r}; token "
        f"{'required' if token else 'off'}; {args.workers} worker process"
        f"{'es' if args.workers > 1 else ''}; Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )

    first = os.getpid()

    def serve_one() -> None:
        """One worker: its own embedder, minds and event loop (built after the fork)."""
        config = ServiceConfig(
            home=home,
            default_workspace=args.workspace,
            embedder=make_embedder(args.embedder, warn=os.getpid() == first),
            token=token,
            retrievers=configured_retrievers(args.external_url),
            record_access=args.record_access,
        )
        server = QueryServer(config, sock=sock)
        servers.append(server)
        try:
            if not stopping.is_set():
                server.serve()
        finally:
            server.close()

    run_workers(args.workers, serve_one)
    return EXIT_OK


@click.command("mcp", epilog=example("mind mcp --workspace team"))
@RECORD_ACCESS_OPTION
@EXTERNAL_URL_OPTION
@common_options_hiding("json", "quiet")
@mind_command
def mcp(args: CommandArgs) -> int:
    """MCP server over stdio, for assistants.

    Tools recall and save memories, entities, relations, identity and awareness.
    """
    from mind_core.query.mcp import MindTools, OnFirstUse, build_mcp_server

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
