"""``mind serve``'s server: the FastAPI app on uvicorn, bound to one address.

A bearer token is optional on a loopback address and mandatory on any other: the server refuses
to start without one. One worker process serves in this process (``QueryServer``); several are
uvicorn's own worker model (``serve_with_workers``): a supervisor that starts each worker as a
fresh interpreter on the one listening socket, restarts one that dies and stops them all on
SIGINT/SIGTERM. Each worker builds its own app from the factory it is named (its own embedder
and minds), and the kernel hands each connection to one of them.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import socket
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.supervisors import Multiprocess

from mind_core.errors import InvalidInputError
from mind_core.limits import DEFAULT_HEADER_TIMEOUT_SECONDS
from mind_core.query.app import create_app
from mind_core.query.http_protocol import JSONHttpToolsProtocol
from mind_core.query.service import QueryService, ServiceConfig

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
SERVE_TOKEN_ENV = "MIND_HARVEST_SERVE_TOKEN"
KEEP_ALIVE_SECONDS = 30
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listening_socket(host: str, port: int, token: str | None) -> socket.socket:
    """The server's socket, bound and listening (``port`` 0: any free port), so its address is
    known before a worker starts. Every worker process accepts on this one socket."""
    if not is_loopback(host) and not token:
        raise InvalidInputError(
            f"refusing to listen on {host}: a non-loopback address needs a bearer token "
            f"(--token or ${SERVE_TOKEN_ENV})"
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family)
    # Accepted connections inherit it: an answer's headers and body leave as two writes, and
    # with Nagle's algorithm the body would wait for the client's delayed ACK (~40 ms).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def socket_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def uvicorn_config(app: FastAPI | str, header_timeout: float, **options: Any) -> uvicorn.Config:
    """uvicorn's settings for the service: ``app`` itself, or the import string of an app
    factory (worker processes). A request head must arrive within ``header_timeout`` seconds
    (``JSONHttpToolsProtocol``: uvicorn has no such setting; the partial pickles, so worker
    processes get it too)."""
    return uvicorn.Config(
        app,
        http=functools.partial(JSONHttpToolsProtocol, header_timeout=header_timeout),  # type: ignore[arg-type]
        ws="none",
        lifespan="on",
        # uvloop where installed (every platform but Windows): libuv reads and writes the
        # sockets, so the event loop thread gives up and retakes the GIL less often
        loop="auto",
        access_log=False,
        # no proxy in front to trust: X-Forwarded-For must not change who the client is
        proxy_headers=False,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        server_header=False,
        **options,
    )


class QueryServer:
    """The service in this process, bound to ``host:port`` (0: any free port) or on ``sock``
    (``listening_socket``); ``serve()`` runs it until ``stop()`` (or SIGINT/SIGTERM when run in
    the main thread). A connection whose request head is not complete ``header_timeout`` seconds
    after it opened (or after the request's first byte) is closed."""

    def __init__(
        self,
        config: ServiceConfig,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        sock: socket.socket | None = None,
        header_timeout: float = DEFAULT_HEADER_TIMEOUT_SECONDS,
    ) -> None:
        self.socket = sock if sock is not None else listening_socket(host, port, config.token)
        self.host, self.port = self.socket.getsockname()[:2]
        try:
            self.service = QueryService(config)
        except BaseException:
            self.socket.close()
            raise
        self._server = uvicorn.Server(
            uvicorn_config(create_app(self.service), header_timeout, log_config=None)
        )

    @property
    def url(self) -> str:
        return socket_url(self.socket)

    def serve(self) -> None:
        self._server.run(sockets=[self.socket])

    def stop(self) -> None:
        self._server.should_exit = True

    def close(self) -> None:
        self.socket.close()
        self.service.close()


def serve_with_workers(
    app_factory: str,
    workers: int,
    sock: socket.socket,
    log_level: int,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT_SECONDS,
) -> None:
    """``workers`` processes answering on ``sock``, each with the app ``app_factory`` (an import
    string, ``module:function``) makes, until SIGINT/SIGTERM."""
    config = uvicorn_config(
        app_factory,
        header_timeout,
        factory=True,
        workers=workers,
        log_config=worker_log_config(log_level),
    )
    Multiprocess(config, sockets=[sock]).run()


def worker_log_config(level: int) -> dict[str, Any]:
    """The log of every worker process, as ``mind serve`` logs in its own: to stderr, ``level``
    and up (uvicorn configures it in each worker it starts)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": LOG_FORMAT}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain", "stream": "ext://sys.stderr"}},
        "root": {"handlers": ["stderr"], "level": logging.getLevelName(level)},
    }
