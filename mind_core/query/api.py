"""The HTTP face of the query service: a FastAPI app over ``QueryService``.

Every answer is JSON (errors too: ``{"error": ..., "error_id": ...}``), and no stack trace ever
reaches a client: an unexpected error is a generic 500 with an error id, and the details go to
the log under that id. Validation is the pydantic models' (``mind_core.query.models``), answered
400 with one readable line. A bearer token, when configured, guards every route but /health,
/openapi.json and /docs. Swagger UI is served from the ``swagger_ui_bundle`` package's files,
so /docs works without network access.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
import uuid
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, FastAPI, Query
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from swagger_ui_bundle import swagger_ui_path

from mind_core import limits
from mind_core.errors import FingerprintMismatchError, InvalidInputError, NotFoundError
from mind_core.query import models
from mind_core.query.service import QueryService, UnreadableMindError

log = logging.getLogger(__name__)

TITLE = "mind-harvest query service"
DESCRIPTION = (
    "Recall and search over mind-harvest minds. Scores: a result's `score` (0..1) is what results are "
    "ordered by (match times relevance); `match_score` (0..1) is 1.0 for the best match of both the "
    "keyword and the vector lane, at most 0.5 for one lane alone. `confident: false` means nothing "
    "matched well."
)
DOCS_ASSETS = "/docs/assets"
HTTP_VERSIONS = ("1.0", "1.1")
BEARER = HTTPBearer(
    auto_error=False,
    scheme_name="bearerAuth",
    description="Required when the server was started with a token.",
)
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": models.ErrorResponse, "description": description}
    for status, description in (
        (400, "Invalid input"),
        (401, "A valid bearer token is required"),
        (404, "No such mind, frame, entity or endpoint"),
        (409, "The mind cannot be read (corrupt, not a mind, or another embedder's vectors)"),
        (413, "Request body too large"),
        (500, "Unexpected error (details in the server log under error_id)"),
    )
}


class JSONAnswer(JSONResponse):
    """UTF-8 JSON of an answer model or plain data. A model is serialized by pydantic's own JSON
    encoder in the endpoint's worker thread (FastAPI's default would validate it again and encode
    it on the event loop); text UTF-8 cannot carry (a lone surrogate in stored content) is escaped."""

    def render(self, content: Any) -> bytes:
        try:
            if isinstance(content, BaseModel):
                return content.model_dump_json().encode("utf-8")
            return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        except (UnicodeEncodeError, PydanticSerializationError):
            data = content.model_dump(mode="json") if isinstance(content, BaseModel) else content
            return json.dumps(data, separators=(",", ":")).encode("ascii")


def error_answer(status: int, message: str, headers: dict[str, str] | None = None) -> JSONAnswer:
    return JSONAnswer({"error": message}, status_code=status, headers=headers)


class JSONBodyRequest(Request):
    """A request whose JSON body is decoded by our rules: strict UTF-8, and a body nested deeper
    than the parser recurses is a 400 (Starlette's ``json()`` would raise RecursionError)."""

    async def json(self) -> Any:
        body = await self.body()
        try:
            return json.loads(body.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise HTTPException(400, "the body is not valid UTF-8") from exc
        except RecursionError as exc:
            raise HTTPException(400, "the body's JSON is nested too deeply") from exc
        except ValueError as exc:
            raise HTTPException(400, f"the body is not valid JSON: {exc}") from exc


class JSONBodyRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def decode_with_our_rules(request: Request) -> Response:
            return await handler(JSONBodyRequest(request.scope, request.receive))

        return decode_with_our_rules


# -- ASGI middleware ------------------------------------------------------------------------------
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


# -- the app ------------------------------------------------------------------------------------
def create_app(service: QueryService) -> FastAPI:
    """The FastAPI app answering for ``service``; the token comes from its config."""
    app = FastAPI(
        title=TITLE,
        description=DESCRIPTION,
        version=models.package_version(),
        docs_url=None,
        redoc_url=None,
        redirect_slashes=False,
        default_response_class=JSONAnswer,
        generate_unique_id_function=lambda route: route.name,
        openapi_tags=[
            {"name": "recall", "description": "What the minds know: recall, search, frames, entities."},
            {
                "name": "knowledge graph",
                "description": "Entities and relations on both time axes: valid_at (when a fact held) "
                "and known_at (what the mind believed then).",
            },
            {"name": "minds", "description": "The minds of the home: harvest sources and counts."},
            {"name": "service", "description": "Liveness."},
        ],
    )

    # The dependencies are async so that they run on the event loop: a plain `def` would cost
    # each request two extra trips through the worker threads.
    async def require_token(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)],
    ) -> None:
        token = service.config.token
        if not token:
            return
        given = credentials.credentials.strip() if credentials is not None else ""
        if not hmac.compare_digest(given.encode(), token.encode()):
            raise HTTPException(401, "a valid bearer token is required", {"WWW-Authenticate": "Bearer"})

    async def refuse_repeated_parameters(request: Request) -> None:
        names = [name for name, _ in request.query_params.multi_items()]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise InvalidInputError(f"parameter(s) given more than once: {', '.join(repeated)}")

    public = APIRouter(route_class=JSONBodyRoute, dependencies=[Depends(refuse_repeated_parameters)])
    guarded = APIRouter(
        route_class=JSONBodyRoute,
        dependencies=[Depends(refuse_repeated_parameters), Depends(require_token)],
        responses=ERROR_RESPONSES,
    )

    @public.get(
        "/health",
        tags=["service"],
        response_model=models.HealthResponse,
        summary="Liveness and which minds exist.",
    )
    async def health() -> Response:  # a few stat calls: not worth a trip to a worker thread
        return JSONAnswer(service.health())

    @guarded.get(
        "/recall",
        tags=["recall"],
        response_model=models.RecallResponse,
        summary="Combined recall: workspace + personal memory (+ external sources).",
    )
    def recall_get(request: Annotated[models.RecallQuery, Query()]) -> Response:
        return JSONAnswer(service.recall(request))

    @guarded.post(
        "/recall",
        tags=["recall"],
        response_model=models.RecallResponse,
        summary="Combined recall, the request as a JSON body.",
    )
    def recall_post(request: models.RecallRequest) -> Response:
        return JSONAnswer(service.recall(request))

    @guarded.get(
        "/search",
        tags=["recall"],
        response_model=models.SearchResponse,
        summary="Hybrid search (keyword + vector, RRF) in one mind.",
    )
    def search_get(request: Annotated[models.SearchQuery, Query()]) -> Response:
        return JSONAnswer(service.search(request))

    @guarded.post(
        "/search",
        tags=["recall"],
        response_model=models.SearchResponse,
        summary="Hybrid search, the request as a JSON body.",
    )
    def search_post(request: models.SearchRequest) -> Response:
        return JSONAnswer(service.search(request))

    @guarded.get(
        "/frames/{frame_id}",
        tags=["recall"],
        response_model=models.FrameResponse,
        summary="One frame with its provenance and entities.",
    )
    def frame(
        frame_id: Annotated[int, PathParam(ge=1, le=limits.MAX_FRAME_ID)],
        request: Annotated[models.WorkspaceQuery, Query()],
    ) -> Response:
        return JSONAnswer(service.frame(frame_id, request.workspace))

    @guarded.get(
        "/sources",
        tags=["minds"],
        response_model=models.SourcesResponse,
        summary="Registered harvest sources of a mind.",
    )
    def sources(request: Annotated[models.WorkspaceQuery, Query()]) -> Response:
        return JSONAnswer(service.sources(request.workspace))

    @guarded.get(
        "/entities",
        tags=["recall"],
        response_model=models.EntitiesResponse,
        summary="Knowledge-graph entities whose name contains the query.",
    )
    def entities(request: Annotated[models.EntitiesQuery, Query()]) -> Response:
        return JSONAnswer(service.entities(request))

    @guarded.get(
        "/kg/entities",
        tags=["knowledge graph"],
        response_model=models.GraphEntitiesResponse,
        summary="Entities (of one type) as they held at valid_at and as the mind knew them at known_at.",
    )
    def kg_entities(request: Annotated[models.GraphEntitiesQuery, Query()]) -> Response:
        return JSONAnswer(service.graph_entities(request))

    @guarded.get(
        "/kg/relations",
        tags=["knowledge graph"],
        response_model=models.GraphRelationsResponse,
        summary="Relations (of one type) with the entities they join, on both time axes.",
    )
    def kg_relations(request: Annotated[models.GraphRelationsQuery, Query()]) -> Response:
        return JSONAnswer(service.graph_relations(request))

    @guarded.get(
        "/kg/neighbours",
        tags=["knowledge graph"],
        response_model=models.NeighboursResponse,
        summary="An entity's relations, in and out, with the entities at their other end, on both time axes.",
    )
    def kg_neighbours(request: Annotated[models.NeighboursQuery, Query()]) -> Response:
        return JSONAnswer(service.neighbours(request))

    @guarded.get(
        "/stats",
        tags=["minds"],
        response_model=models.StatsResponse,
        summary="Counts per mind (every mind of the home without 'workspace'); an unreadable mind "
        "is listed with its error.",
    )
    def stats(request: Annotated[models.WorkspaceQuery, Query()]) -> Response:
        return JSONAnswer(service.stats(request.workspace))

    app.include_router(public)
    app.include_router(guarded)
    app.mount(DOCS_ASSETS, StaticFiles(directory=swagger_ui_path), name="swagger-ui-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{TITLE} - Swagger UI",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon-32x32.png",
            oauth2_redirect_url=None,
        )

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/docs")

    _answer_errors_as_json(app)
    app.add_middleware(RequestGuard)
    app.openapi = lambda: _openapi_with_400s(app)  # type: ignore[method-assign]
    return app


def _answer_errors_as_json(app: FastAPI) -> None:
    def allowed_methods(scope: Scope) -> str:
        allowed = [
            method
            for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
            if any(
                route.matches({**scope, "method": "GET" if method == "HEAD" else method})[0] is Match.FULL
                for route in app.router.routes
            )
        ]
        return ", ".join(allowed)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        headers = dict(exc.headers or {})
        message = exc.detail
        if exc.status_code == 404 and exc.detail == "Not Found":
            message = f"no such endpoint {request.url.path!r}; see /docs"
        if exc.status_code == 405:
            headers["Allow"] = allowed_methods(request.scope)
            message = f"{request.method} is not allowed on {request.url.path}"
        return error_answer(exc.status_code, message, headers)

    async def invalid_request(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return error_answer(400, models.describe_errors(exc.errors(), located=True))

    def answer(status: int) -> Callable[[Request, Exception], Coroutine[Any, Any, Response]]:
        async def handler(request: Request, exc: Exception) -> Response:
            return error_answer(status, str(exc))

        return handler

    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(InvalidInputError, answer(400))
    app.add_exception_handler(NotFoundError, answer(404))
    app.add_exception_handler(FingerprintMismatchError, answer(409))
    app.add_exception_handler(UnreadableMindError, answer(409))


def _openapi_with_400s(app: FastAPI) -> dict[str, Any]:
    """FastAPI documents invalid input as 422 with its own error shape; this service answers it
    400 with ``ErrorResponse``, so the document says that instead."""
    if app.openapi_schema is None:
        from fastapi.openapi.utils import get_openapi

        schema = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        for operations in schema["paths"].values():
            for operation in operations.values():
                operation["responses"].pop("422", None)
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        app.openapi_schema = schema
    return app.openapi_schema
