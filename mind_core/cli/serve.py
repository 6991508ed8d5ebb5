"""The query services: ``mind serve`` (HTTP JSON) and ``mind mcp`` (MCP over stdio)."""

from __future__ import annotations

import logging
import os
import signal
import sys

import click

from mind_core.cli.base import (
    EXIT_FAILED,
    EXIT_OK,
    EXTERNAL_URL_OPTION,
    RECORD_ACCESS_OPTION,
    CommandArgs,
    common_options,
    example,
    make_embedder,
    mind_command,
)
from mind_core.home import MindHome


@click.command("serve", epilog=example("mind serve --port 8787"))
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; off loopback a token is required.",
)
@click.option("--port", type=int, default=8787, show_default=True, help="Port to listen on.")
@click.option("--token", help="Bearer token (or $MIND_HARVEST_SERVE_TOKEN); required off loopback.")
@RECORD_ACCESS_OPTION
@EXTERNAL_URL_OPTION
@common_options
@mind_command
def serve(args: CommandArgs) -> int:
    """HTTP JSON query service.

    Recall, stats and health over HTTP; API docs at /docs.
    """
    from mind_core.query.http_server import SERVE_TOKEN_ENV, QueryServer
    from mind_core.query.service import ServiceConfig
    from mind_core.retrieval import configured_retrievers

    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    token = args.token or os.environ.get(SERVE_TOKEN_ENV)
    config = ServiceConfig(
        home=MindHome(args.home),
        default_workspace=args.workspace,
        embedder=make_embedder(args.embedder),
        token=token,
        retrievers=configured_retrievers(args.external_url),
        record_access=args.record_access,
    )
    try:
        server = QueryServer(config, args.host, args.port)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILED
    print(
        f"listening on {server.url} (API docs at {server.url}/docs; minds in {config.home.root}; "
        f"token {'required' if token else 'off'}; Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    # uvicorn stops on SIGINT/SIGTERM, then raises the signal again for the handler in place
    # before it started; by then the service has shut down cleanly, so that one is ignored.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    try:
        server.serve()
    finally:
        server.close()
    return EXIT_OK


@click.command("mcp", epilog=example("mind mcp --workspace team"))
@RECORD_ACCESS_OPTION
@EXTERNAL_URL_OPTION
@common_options
@mind_command
def mcp(args: CommandArgs) -> int:
    """MCP server over stdio, for assistants.

    Tools recall and save memories, entities, relations, identity and awareness.
    """
    from mind_core.query.mcp import MindTools, OnFirstUse, build_mcp_server

    def retrievers() -> list:
        from mind_core.retrieval import configured_retrievers

        return configured_retrievers(args.external_url)

    tools = MindTools(
        MindHome(args.home),
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
