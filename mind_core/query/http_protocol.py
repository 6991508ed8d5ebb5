"""The one place the service leans on uvicorn's internals: its httptools protocol, extended.

The HTTP parser is llhttp (through httptools, uvicorn's fast protocol): it refuses malformed
requests such as two Content-Length headers, or one beside Transfer-Encoding. Stock uvicorn
answers such a request with a plain-text 400; this subclass makes every answer JSON (a malformed
request too), limits a request head in size (431) and in time (``header_timeout``), answers a
client that half-closes its socket after sending a complete request, gives a 400 to one that
leaves mid-head or mid-body, and costs a client that goes away before its answer one debug line
in the log, never a traceback.

uvicorn has no timeout for a request head: ``timeout_keep_alive`` runs only between requests and
any byte received cancels it, so a client that connects and sends nothing, or trickles a head
that never ends, would hold its connection open for ever (its issue #157 planned a
``--timeout-request-start`` that was never made). Here the head must be complete within
``header_timeout`` seconds of the connection (its first request) or of the request's first byte
(the next ones on a kept-alive connection); else the connection is closed, with a JSON 408 when
part of a head had come.

It overrides parser callbacks and reads attributes (``parser``, ``cycle``, ``transport``,
``client``, ``loop``) of ``uvicorn.protocols.http.httptools_impl.HttpToolsProtocol``, which is
not a public API: pyproject pins uvicorn and httptools exactly, and
tests/query/test_http_protocol.py names each upstream member relied on, so an upgrade that
moves one fails there first.
"""

from __future__ import annotations

import asyncio
import http
import json
import logging

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from mind_core.limits import DEFAULT_HEADER_TIMEOUT_SECONDS, MAX_REQUEST_HEAD_BYTES

log = logging.getLogger(__name__)


class RequestRefused(Exception):
    """Raised from a parser callback to stop parsing a request that is answered with an error."""


class JSONHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with JSON protocol errors, limits on the request head's size
    and on the time it takes to arrive (``header_timeout`` seconds; the server passes it with
    ``functools.partial``), and careful end-of-input handling."""

    def __init__(
        self, *args: object, header_timeout: float = DEFAULT_HEADER_TIMEOUT_SECONDS, **kwargs: object
    ) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._in_message = False  # between the first byte of a request and its end
        self._head_complete = False
        self._head_bytes = 0
        self._refusal: tuple[int, str] | None = None
        self._header_timeout = header_timeout
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

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
        self._await_head()

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_complete = True
        self._head_arrived()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_message = False
        super().on_message_complete()

    # the time a request head may take
    def _await_head(self) -> None:
        """Start the head's clock, unless it runs already (a connection's first request began
        on the clock its connection started)."""
        if self._head_deadline is None:
            self._head_deadline = self.loop.call_later(self._header_timeout, self._head_timed_out)

    def _head_arrived(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        if self.transport.is_closing():
            return
        if not self._in_message:  # connected and sent nothing: no request to answer
            self.transport.close()
            return
        log.debug("client %s sent no complete request head within %g s", self._client(), self._header_timeout)
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False  # a pipelined head stalled: finish the answer under way, then close
            return
        self._send_error(408, f"the request head did not arrive within {self._header_timeout:g} seconds")

    def _count_head(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > MAX_REQUEST_HEAD_BYTES:
            self._refusal = (431, f"the request head is larger than {MAX_REQUEST_HEAD_BYTES} bytes")
            raise RequestRefused

    def eof_received(self) -> bool:
        """The client will send nothing more. uvicorn would close at once and drop an answer
        still being computed; here a complete request is answered first, an incomplete one is a
        400, and an idle connection simply closes."""
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
        self._head_arrived()  # no clock left running for a closed connection
        if self.cycle is not None and not self.cycle.response_complete and not self.cycle.disconnected:
            log.debug("client %s went away before its answer to %s %s", self._client(), *self._request())
        super().connection_lost(exc)

    def _client(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "?"

    def _request(self) -> tuple[str, str]:
        return self.cycle.scope["method"], self.cycle.scope["path"]
