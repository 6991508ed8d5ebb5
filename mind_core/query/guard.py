"""The HTTP service's outermost layer (plain ASGI middleware, around FastAPI): what every
request goes through before any route sees it, and what every answer carries.

No stack trace ever reaches a client: an unexpected error is a generic 500 with an error id, and
the details go to the log under that id.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

import anyio
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mind_core import limits
from mind_core.query.json_answer import JSONAnswer

log = logging.getLogger(__name__)

DOCS_ASSETS = "/docs/assets"
HTTP_VERSIONS = ("1.0", "1.1")


async def _send_json(send: Send, status: int, payload: dict[str, Any], close: bool = False) -> None:
    body = JSONAnswer(payload).body
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class RequestGuard:
    """Our outermost layer: HTTP versions other than 1.x refused, HEAD answered as GET without a
    body, the request body read under the size limit (a refused one is drained, within reason,
    so the client sees the 413), unexpected errors turned into a JSON 500 with an error id,
    no-sniff and no-store headers, and one log line per request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0

        cacheable = scope["path"].startswith(DOCS_ASSETS + "/")

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                extra = [(b"x-content-type-options", b"nosniff")]
                if not cacheable:  # answers come from minds that change under a harvest
                    extra.append((b"cache-control", b"no-store"))
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        try:
            await self._guarded(scope, receive, send_and_note)
        except ClientDisconnect:
            return  # the server logs the disconnect once (debug); nobody is left to answer
        except Exception:
            error_id = uuid.uuid4().hex[:12]
            log.exception("error id %s: %s %s failed", error_id, scope["method"], scope["path"])
            if not status:
                await _send_json(send_and_note, 500, {"error": "internal server error", "error_id": error_id})
        log.info(
            "%s %s %d %.1fms", scope["method"], scope["path"], status, (time.perf_counter() - started) * 1000
        )

    async def _guarded(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["http_version"] not in HTTP_VERSIONS:
            await _send_json(send, 400, {"error": f"HTTP/{scope['http_version']} is not supported"}, True)
            return
        if scope["method"] == "HEAD":  # the server itself leaves the body out of a HEAD answer
            scope = {**scope, "method": "GET"}
        body = await self._read_body(scope, receive, send)
        if body is None:
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()  # only a disconnect can come now
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    @staticmethod
    async def _read_body(scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The whole body, or None after answering 413/408 (or when the client left)."""
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        if declared is None and b"transfer-encoding" not in headers:
            return b""  # no body (a GET): nothing to wait for
        if declared is not None and int(declared) > limits.MAX_BODY_BYTES:
            if int(declared) <= limits.MAX_DRAIN_BYTES:
                await RequestGuard._drain(receive, int(declared))
            await _send_json(
                send, 413, {"error": f"request body larger than {limits.MAX_BODY_BYTES} bytes"}, True
            )
            return None
        chunks: list[bytes] = []
        size = 0
        try:
            with anyio.fail_after(limits.BODY_TIMEOUT_SECONDS):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limits.MAX_BODY_BYTES:
                        if message.get("more_body", False):
                            await RequestGuard._drain(receive, limits.MAX_DRAIN_BYTES - size)
                        await _send_json(
                            send,
                            413,
                            {"error": f"request body larger than {limits.MAX_BODY_BYTES} bytes"},
                            True,
                        )
                        return None
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(chunks)
        except TimeoutError:
            await _send_json(send, 408, {"error": "the request body did not arrive in time"}, True)
            return None

    @staticmethod
    async def _drain(receive: Receive, budget: int) -> None:
        while budget > 0:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                return
            budget -= len(message.get("body", b""))
