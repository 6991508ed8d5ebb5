"""``mind serve``: the FastAPI app on uvicorn, bound to one address.

A bearer token is optional on a loopback address and mandatory on any other: the server refuses
to start without one. The HTTP parser is h11 (it refuses malformed requests such as two
conflicting Content-Length headers); its protocol class is extended so that every answer is JSON
(a malformed request too), a client that half-closes its socket after sending a complete request
still gets the answer, one that leaves mid-body gets a 400, and a client that goes away before
its answer costs one debug line in the log, never a traceback.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from mind_core.errors import InvalidInputError
from mind_core.query.api import create_app
from mind_core.query.service import QueryService, ServiceConfig

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
SERVE_TOKEN_ENV = "MIND_HARVEST_SERVE_TOKEN"
KEEP_ALIVE_SECONDS = 30


class JSONH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, with JSON protocol errors and careful end-of-input handling."""

    def send_400_response(self, msg: str) -> None:
        body = json.dumps({"error": f"invalid HTTP request: {msg.rstrip('.')}"}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=400, headers=headers),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event))
        self.transport.close()

    def eof_received(self) -> bool:
        """The client will send nothing more. uvicorn would close at once and drop an answer
        still being computed; here a complete request is answered first, an incomplete one is a
        400, and an idle connection simply closes."""
        state = self.conn.their_state
        cycle = self.cycle
        if state is h11.IDLE:
            if self.conn.trailing_data[0]:
                self.send_400_response("the request ended before its headers were complete")
                return True
            return False
        if cycle is None or cycle.response_started:
            return False
        if state is h11.SEND_BODY:
            log.debug("client %s stopped sending in the body of %s %s", self._client(), *self._request())
            cycle.disconnected = True  # the app stops waiting for the rest of the body
            cycle.message_event.set()
            self.send_400_response("the request ended before its body was complete")
            return True
        if state is h11.DONE:
            cycle.keep_alive = False  # answer, then close
            return True
        return False

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


class QueryServer:
    """The service bound to ``host:port`` (0: any free port); ``serve()`` runs it until stopped."""

    def __init__(self, config: ServiceConfig, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
        if not is_loopback(host) and not config.token:
            raise InvalidInputError(
                f"refusing to listen on {host}: a non-loopback address needs a bearer token "
                f"(--token or ${SERVE_TOKEN_ENV})"
            )
        self.service = QueryService(config)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            self.socket = socket.create_server((host, port), family=family)
        except OSError:
            self.service.close()
            raise
        # Accepted connections inherit it: an answer's headers and body leave as two writes, and
        # with Nagle's algorithm the body would wait for the client's delayed ACK (~40 ms).
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.host, self.port = self.socket.getsockname()[:2]
        self._server = uvicorn.Server(
            uvicorn.Config(
                create_app(self.service),
                http=JSONH11Protocol,
                lifespan="off",
                # the standard event loop, not uvloop even where it is installed: the same
                # end-of-input semantics everywhere, and less CPU per request in our load runs
                loop="asyncio",
                access_log=False,
                log_config=None,
                timeout_keep_alive=KEEP_ALIVE_SECONDS,
                server_header=False,
            )
        )

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def serve(self) -> None:
        """Answer requests until ``stop()`` (or SIGINT/SIGTERM when run in the main thread)."""
        self._server.run(sockets=[self.socket])

    def stop(self) -> None:
        self._server.should_exit = True

    def close(self) -> None:
        self.socket.close()
        self.service.close()
