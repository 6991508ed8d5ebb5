"""The one place the service leans on uvicorn's internals: its httptools protocol, extended.

The HTTP parser is llhttp (through httptools, uvicorn's fast protocol): it refuses malformed
requests such as two Content-Length headers, or one beside Transfer-Encoding. Stock uvicorn
answers such a request with a plain-text 400; this subclass makes every answer JSON (a malformed
request too), limits a request head in size (431), answers a client that half-closes its socket
after sending a complete request, gives a 400 to one that leaves mid-head or mid-body, and costs
a client that goes away before its answer one debug line in the log, never a traceback.

It overrides parser callbacks and reads attributes (``parser``, ``cycle``, ``transport``,
``client``) of ``uvicorn.protocols.http.httptools_impl.HttpToolsProtocol``, which is not a
public API: pyproject pins uvicorn and httptools exactly, and
tests/query/test_http_protocol.py names each upstream member relied on, so an upgrade that
moves one fails there first.
"""

from __future__ import annotations

import http
import json
import logging

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from mind_core.limits import MAX_REQUEST_HEAD_BYTES

log = logging.getLogger(__name__)


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
