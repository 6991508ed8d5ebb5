"""``mind serve``: the FastAPI app on uvicorn, bound to one address.

A bearer token is optional on a loopback address and mandatory on any other: the server refuses
to start without one. The HTTP parser is llhttp (through httptools, uvicorn's fast protocol): it
refuses malformed requests such as two Content-Length headers, or one beside Transfer-Encoding.
Its protocol class is extended so that every answer is JSON (a malformed request too), a request
head is limited in size, a client that half-closes its socket after sending a complete request
still gets the answer, one that leaves mid-head or mid-body gets a 400, and a client that goes
away before its answer costs one debug line in the log, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import http
import ipaddress
import json
import logging
import math
import os
import signal
import socket
import time
from collections.abc import Callable
from typing import Any

import httptools
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from mind_core.errors import InvalidInputError
from mind_core.limits import MAX_REQUEST_HEAD_BYTES
from mind_core.query.api import create_app
from mind_core.query.service import QueryService, ServiceConfig

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
SERVE_TOKEN_ENV = "MIND_HARVEST_SERVE_TOKEN"
KEEP_ALIVE_SECONDS = 30
PR_SET_PDEATHSIG = 1  # prctl(2)
WORKER_STOP_SECONDS = 10


class CoalescingTransport:
    """A socket transport whose writes within one turn of the event loop leave as one ``send``:
    uvicorn writes an answer's head and body separately, and with TCP_NODELAY each write is a
    system call and a packet of its own (the largest CPU cost of a small answer)."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(data)

    def flush(self) -> None:
        """Send what was written (before the event loop closes the socket on its own)."""
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class RequestRefused(Exception):
    """Raised from a parser callback to stop parsing a request that is answered with an error."""


class JSONHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with JSON protocol errors, a limit on the request head and
    careful end-of-input handling."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._in_message = False  # between the first byte of a request and its end
        self._head_complete = False
        self._head_bytes = 0
        self._refusal: tuple[int, str] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescingTransport(transport, self.loop))  # type: ignore[arg-type]

    def data_received(self, data: bytes) -> None:
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            pass  # no protocol is upgraded (no websockets): the request was answered as plain HTTP
        except httptools.HttpParserError as exc:
            status, message = self._refusal or (400, str(exc) or "malformed request")
            self._send_error(status, message)

    def send_400_response(self, msg: str) -> None:
        self._send_error(400, msg)

    def _send_error(self, status: int, message: str) -> None:
        body = json.dumps({"error": f"invalid HTTP request: {message.rstrip('.')}"}).encode()
        phrase = http.HTTPStatus(status).phrase
        self.transport.write(
            f"HTTP/1.1 {status} {phrase}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode()
            + body
        )
        self.transport.close()

    # parser callbacks: where in a request the connection is, and the size of the head
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_message, self._head_complete, self._head_bytes = True, False, 0

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_complete = True
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_message = False
        super().on_message_complete()

    def _count_head(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > MAX_REQUEST_HEAD_BYTES:
            self._refusal = (431, f"the request head is larger than {MAX_REQUEST_HEAD_BYTES} bytes")
            raise RequestRefused

    def eof_received(self) -> bool:
        """The client will send nothing more. uvicorn would close at once and drop an answer
        still being computed; here a complete request is answered first, an incomplete one is a
        400, and an idle connection simply closes."""
        self.transport.flush()  # type: ignore[attr-defined]  # the answer may be written, not sent
        if self._in_message and not self._head_complete:
            self._send_error(400, "the request ended before its headers were complete")
            return True
        cycle = self.cycle
        if cycle is None or cycle.response_started:
            return False
        if self._in_message:
            log.debug("client %s stopped sending in the body of %s %s", self._client(), *self._request())
            cycle.disconnected = True  # the app stops waiting for the rest of the body
            cycle.message_event.set()
            self._send_error(400, "the request ended before its body was complete")
            return True
        cycle.keep_alive = False  # answer, then close
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        if self.cycle is not None and not self.cycle.response_complete and not self.cycle.disconnected:
            log.debug("client %s went away before its answer to %s %s", self._client(), *self._request())
        super().connection_lost(exc)

    def _client(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "?"

    def _request(self) -> tuple[str, str]:
        return self.cycle.scope["method"], self.cycle.scope["path"]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listening_socket(host: str, port: int, token: str | None) -> socket.socket:
    """The server's socket, bound and listening (``port`` 0: any free port). Every worker process
    accepts on this one socket, and the kernel hands each connection to one of them."""
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


class QueryServer:
    """The service bound to ``host:port`` (0: any free port), or on ``sock`` (``listening_socket``)
    when several worker processes share it; ``serve()`` runs it until stopped."""

    def __init__(
        self,
        config: ServiceConfig,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        sock: socket.socket | None = None,
    ) -> None:
        self.socket = sock if sock is not None else listening_socket(host, port, config.token)
        self.host, self.port = self.socket.getsockname()[:2]
        try:
            self.service = QueryService(config)
        except BaseException:
            self.socket.close()
            raise
        self._server = uvicorn.Server(
            uvicorn.Config(
                create_app(self.service),
                http=JSONHttpToolsProtocol,
                ws="none",
                lifespan="off",
                # uvloop where installed (every platform but Windows): libuv reads and writes
                # the sockets, so the event loop thread, which every request passes through,
                # gives up and retakes the GIL less often while the worker threads hold it. At an
                # equal offered rate beside the standard loop: p95 0.82x, CPU per request 0.91x,
                # closed loop 1.03-1.12x the requests/s (alternating rounds, load average 6-10)
                loop="auto",
                access_log=False,
                # no proxy in front to trust: X-Forwarded-For must not change who the client is
                proxy_headers=False,
                log_config=None,
                timeout_keep_alive=KEEP_ALIVE_SECONDS,
                server_header=False,
            )
        )

    @property
    def url(self) -> str:
        return socket_url(self.socket)

    def serve(self) -> None:
        """Answer requests until ``stop()`` (or SIGINT/SIGTERM when run in the main thread)."""
        # What exists now (modules, the app, its schemas, the service) lives as long as the
        # server: moved out of the collector's generations (garbage collected first), a full
        # collection does not walk it.
        gc.collect()
        gc.freeze()
        self._server.run(sockets=[self.socket])

    def stop(self) -> None:
        self._server.should_exit = True

    def close(self) -> None:
        self.socket.close()
        self.service.close()


def run_workers(count: int, serve_one: Callable[[], None]) -> None:
    """``serve_one()`` in this process and in ``count - 1`` forked copies of it, each its own
    interpreter with its own GIL: a request's work is Python, so one process answers on one core
    at a time whatever its threads. Fork before ``serve_one`` opens a mind or loads a model (the
    children build their own). The children stop with this process: when its ``serve_one``
    returns (SIGINT/SIGTERM) they get SIGTERM and are waited for, and if it dies they get SIGTERM
    from the kernel (``PR_SET_PDEATHSIG``)."""
    children: list[int] = []
    if count > 1 and not hasattr(os, "fork"):
        log.warning("this platform cannot fork: serving with one process")
        count = 1
    for _ in range(count - 1):
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _stop_with(parent)
                serve_one()
            except BaseException:
                log.exception("worker process %d failed", os.getpid())
                code = 1
            finally:
                os._exit(code)
        children.append(pid)
    try:
        serve_one()
    finally:
        _stop_children(children)


def _stop_children(children: list[int]) -> None:
    """SIGTERM to each child, and SIGKILL to one still running after ``WORKER_STOP_SECONDS`` (a
    child still starting ignores SIGTERM until uvicorn installs its handler)."""
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + WORKER_STOP_SECONDS
    running = set(children)
    while running:
        for pid in list(running):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                running.discard(pid)
        if running and time.monotonic() > deadline:
            for pid in running:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            deadline = math.inf
        if running:
            time.sleep(0.05)


def _stop_with(parent: int) -> None:
    """Ask the kernel for SIGTERM when the parent process dies (Linux), then make sure it has not
    died already (between the fork and this call)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        os._exit(0)
