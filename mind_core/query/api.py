"""The HTTP face of the query service: a FastAPI app over ``QueryService``.

Every answer is JSON (errors too: ``{"error": ..., "error_id": ...}``), and no stack trace ever
reaches a client: an unexpected error is a generic 500 with an error id, and the details go to
the log under that id. Validation is the pydantic models' (``mind_core.query.models``), answered
400 with one readable line. A bearer token, when configured, guards every route but /health,
/openapi.json and /docs; only then does the OpenAPI document name a security scheme (Swagger
UI's Authorize button and lock icons), so a server without a token does not ask for one.
Swagger UI is served from the ``swagger_ui_bundle`` package's files, so /docs works without
network access.
"""

from __future__ import annotations

import functools
import hmac
import inspect
import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar, get_args, get_origin, get_type_hints

import anyio
import anyio.to_thread
from fastapi import FastAPI, Query, params
from fastapi import Path as PathParam
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter, ValidationError
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
from mind_core.query.models.fields import package_version
from mind_core.query.models.frames import FrameResponse, SearchResponse
from mind_core.query.models.graph import (
    EntitiesResponse,
    GraphEntitiesResponse,
    GraphRelationsResponse,
    NeighboursResponse,
)
from mind_core.query.models.recall import RecallResponse
from mind_core.query.models.requests import (
    EntitiesQuery,
    GraphEntitiesQuery,
    GraphRelationsQuery,
    NeighboursQuery,
    RecallQuery,
    RecallRequest,
    SearchQuery,
    SearchRequest,
    WorkspaceQuery,
)
from mind_core.query.models.service import ErrorResponse, HealthResponse, StatsResponse
from mind_core.query.models.sources import SourcesResponse
from mind_core.query.models.validation import describe_errors
from mind_core.query.service import QueryService, UnreadableMindError

log = logging.getLogger(__name__)

TITLE = "mind-harvest query service"
DESCRIPTION = (
    "Recall and search over mind-harvest minds. Scores: a result's `score` (0..1) is what results are "
    "ordered by (match times relevance); `match_score` (0..1) is 1.0 for the best match of both the "
    "keyword and the vector lane, at most 0.5 for one lane alone; with `explain`, the parts of both. "
    "`confident: false` means nothing matched well. Queries read only unless the server was started "
    "with `--record-access`."
)
DOCS_ASSETS = "/docs/assets"
OPENAPI_URL = "/openapi.json"
HTTP_VERSIONS = ("1.0", "1.1")
BEARER_SCHEME = "bearerAuth"
BEARER_SECURITY_SCHEME = {
    "type": "http",
    "scheme": "bearer",
    "description": "This server was started with a token: send it as a bearer token.",
}
# what a route says in the OpenAPI document when it needs the token, and what ModelRoute enforces
BEARER_REQUIRED: dict[str, Any] = {"security": [{BEARER_SCHEME: []}]}
# Endpoints that run in worker threads at once (the others wait their turn, in order). Their work
# is Python under one GIL: more threads only fight over it. In the reliability run's comparison on
# a quiet machine, one thread against four: CPU per request 2.66 against 4.64 ms, 365 against 268
# requests/s, p95 133 against 192 ms (closed loop) and 27 against 47 ms at an equal rate; with
# AnyIO's default of 40 an overloaded server spent up to twice the CPU per request. Answers that
# need no mind (health, the OpenAPI document, refusals) never wait for it: the event loop gives them.
ENDPOINT_THREADS = 1
# With external sources a recall may wait seconds on one (an HTTP source up to its timeout, a
# plugin's as long as it takes): such waits must not hold up the answers of the minds themselves,
# so the threads are AnyIO's usual number.
ENDPOINT_THREADS_WITH_EXTERNAL_SOURCES = 40
# The error answers an endpoint lists in the OpenAPI document: only those it can give.
INVALID = "Invalid input: the one line names the parameter and its rule"
NO_MIND = "No mind for the workspace named (the message lists the minds there are)"
UNREADABLE = "The mind cannot be read: corrupt, not a mind, or vectors of another embedder's space"
TOO_LARGE = f"Request body larger than {limits.MAX_BODY_BYTES} bytes"
UNEXPECTED = "Unexpected error (details in the server log under error_id)"
UNAUTHORIZED = "A valid bearer token is required"
READS_A_MIND = {400: INVALID, 404: NO_MIND, 409: UNREADABLE}
WITH_BODY = {**READS_A_MIND, 413: TOO_LARGE}


def error_responses(errors: dict[int, str], guarded: bool) -> dict[int | str, dict[str, Any]]:
    listed = {**errors, **({401: UNAUTHORIZED} if guarded else {}), 500: UNEXPECTED}
    return {
        status: {"model": ErrorResponse, "description": description}
        for status, description in sorted(listed.items())
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


# -- routes -------------------------------------------------------------------------------------
def refuse_repeated_parameters(request: Request, lists: frozenset[str] = frozenset()) -> None:
    """A scalar parameter given twice (``?limit=5&limit=50``) is refused, not read as one of its
    values; a list parameter (``lists``) is repeated by design (``?tags=a&tags=b``, OpenAPI's
    default form for a query array, which Swagger UI sends)."""
    names = Counter(name for name, _ in request.query_params.multi_items() if name not in lists)
    repeated = sorted(name for name, count in names.items() if count > 1)
    if repeated:
        raise InvalidInputError(f"parameter(s) given more than once: {', '.join(repeated)}")


def token_given(request: Request, token: str | None) -> bool:
    """Whether the request carries the server's bearer token (compared in constant time), or the
    server needs none (``token`` None)."""
    if not token:
        return True
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def require_token(request: Request, token: str | None) -> None:
    if not token_given(request, token):
        raise HTTPException(401, "a valid bearer token is required", {"WWW-Authenticate": "Bearer"})


def _is_json(content_type: str | None) -> bool:
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def json_body(request: Request) -> Any:
    """The body decoded by our rules: sent as JSON, strict UTF-8, and nested no deeper than the
    parser recurses (a deeper one is a 400, not a RecursionError)."""
    body = await request.body()
    if not body:
        raise InvalidInputError("a JSON object body is required")
    if not _is_json(request.headers.get("content-type")):
        raise InvalidInputError("send the body as JSON (Content-Type: application/json)")
    try:
        return json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidInputError("the body is not valid UTF-8") from None
    except RecursionError:
        raise InvalidInputError("the body's JSON is nested too deeply") from None
    except ValueError as exc:
        raise InvalidInputError(f"the body is not valid JSON: {exc}") from None


class TypedText:
    """A value from the URL, quoted in an error as the user typed it: ``?limit=0`` reads
    ``(got 0)``, not ``(got '0')``, as the CLI and MCP (where it is a number) say it."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def invalid_input(
    exc: ValidationError, where: tuple[str, ...] = (), numeric: frozenset[str] = frozenset()
) -> InvalidInputError:
    """Pydantic's errors as one readable line; ``where``: the parameter a bare value was for;
    ``numeric``: the URL parameters that take numbers (their text is shown unquoted)."""
    errors = []
    for error in exc.errors():
        loc = (*where, *error["loc"])
        if loc and loc[0] in numeric and isinstance(error.get("input"), str):
            error = {**error, "input": TypedText(error["input"])}
        errors.append({**error, "loc": loc})
    return InvalidInputError(describe_errors(errors))


@dataclass(frozen=True)
class EndpointInputs:
    """What an endpoint takes, read once from its signature: path parameters
    (``Annotated[int, Path(...)]``), at most one request model, from the query string
    (``Annotated[Model, Query()]``) or else from a JSON body, and the ``Request`` itself."""

    path: dict[str, TypeAdapter[Any]]
    request_parameter: str | None = None
    numeric_path: frozenset[str] = frozenset()
    model_parameter: str | None = None
    model: type[BaseModel] | None = None
    from_body: bool = False
    list_fields: frozenset[str] = frozenset()
    numeric_fields: frozenset[str] = frozenset()

    @classmethod
    def of(cls, endpoint: Callable[..., Any]) -> EndpointInputs:
        hints = get_type_hints(endpoint, include_extras=True)
        path: dict[str, TypeAdapter[Any]] = {}
        found: dict[str, Any] = {}
        for name in inspect.signature(endpoint).parameters:
            hint = hints[name]
            base, *metadata = get_args(hint) if get_origin(hint) is Annotated else (hint,)
            if base is Request:
                found["request_parameter"] = name
            elif isinstance(base, type) and issubclass(base, BaseModel) and "model" not in found:
                found = {
                    "model_parameter": name,
                    "model": base,
                    "from_body": not any(isinstance(m, params.Query) for m in metadata),
                    "list_fields": frozenset(
                        field for field, info in base.model_fields.items() if _is_list(info.annotation)
                    ),
                    "numeric_fields": frozenset(
                        field for field, info in base.model_fields.items() if _is_numeric(info.annotation)
                    ),
                }
            elif any(isinstance(m, params.Path) for m in metadata):
                path[name] = TypeAdapter(hint)
            else:
                raise TypeError(
                    f"{endpoint.__name__}: '{name}' is neither a path parameter nor the request model"
                )
        numeric_path = frozenset(name for name in path if _is_numeric(hints[name]))
        return cls(path=path, numeric_path=numeric_path, **found)

    async def arguments(self, request: Request) -> dict[str, Any]:
        """The endpoint's arguments from ``request``; InvalidInputError when they break the contract."""
        arguments: dict[str, Any] = {} if self.request_parameter is None else {self.request_parameter: request}
        try:
            for name, adapter in self.path.items():
                arguments[name] = adapter.validate_python(request.path_params[name])
        except ValidationError as exc:
            raise invalid_input(exc, (name,), frozenset({name} & self.numeric_path)) from None
        if self.model is not None and self.model_parameter is not None:
            if self.from_body:
                values = await json_body(request)
            else:
                query = request.query_params
                values = {
                    name: query.getlist(name) if name in self.list_fields else value
                    for name, value in query.items()
                }
            try:
                arguments[self.model_parameter] = self.model.model_validate(values)
            except ValidationError as exc:
                raise invalid_input(exc, numeric=frozenset() if self.from_body else self.numeric_fields) from None
        return arguments


def _is_numeric(annotation: Any) -> bool:
    base, *_ = get_args(annotation) if get_origin(annotation) is Annotated else (annotation,)
    options = get_args(base) or (base,)
    return any(isinstance(o, type) and issubclass(o, int | float) and o is not bool for o in options)


def _is_list(annotation: Any) -> bool:
    return get_origin(annotation) is list or any(get_origin(a) is list for a in get_args(annotation))


class ModelRoute(APIRoute):
    """A route FastAPI documents from its endpoint's signature as usual, answered by a lean
    handler: repeated query parameters refused, the bearer token checked where the route's
    OpenAPI entry says it is needed, the request model validated by pydantic directly, and the
    endpoint run (a plain function in one of ``ENDPOINT_THREADS`` worker threads). FastAPI's
    own handler solves dependencies, parses a query model field by field and opens two exit
    stacks on every request, which under load cost more CPU than most answers themselves;
    errors raised here reach the app's exception handlers all the same (through Starlette's
    ExceptionMiddleware)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        answer = self.get_route_handler()

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            response = await answer(Request(scope, receive, send))
            await response(scope, receive, send)

        self.app = app

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        inputs = EndpointInputs.of(self.endpoint)
        needs_token = "security" in (self.openapi_extra or {})
        endpoint = self.endpoint
        on_event_loop = inspect.iscoroutinefunction(endpoint)

        async def answer(request: Request) -> Response:
            refuse_repeated_parameters(request, inputs.list_fields)
            if needs_token:
                require_token(request, request.app.state.bearer_token)
            arguments = await inputs.arguments(request)
            if on_event_loop:
                return await endpoint(**arguments)
            return await anyio.to_thread.run_sync(
                functools.partial(endpoint, **arguments), limiter=request.app.state.endpoint_threads
            )

        return answer


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
EndpointT = TypeVar("EndpointT", bound=Callable[..., Any])


def create_app(service: QueryService) -> FastAPI:
    """The FastAPI app answering for ``service``; the token comes from its config."""
    app = FastAPI(
        title=TITLE,
        description=DESCRIPTION,
        version=package_version(),
        openapi_url=None,  # served below, encoded once
        docs_url=None,
        redoc_url=None,
        redirect_slashes=False,
        # no telemetry leaves this service: FastAPI need not look for OpenTelemetry providers
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
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

    app.state.bearer_token = service.config.token
    guarded = bool(service.config.token)
    app.state.endpoint_threads = anyio.CapacityLimiter(
        ENDPOINT_THREADS_WITH_EXTERNAL_SOURCES if service.config.retrievers else ENDPOINT_THREADS
    )

    def route(
        method: str, path: str, *, public: bool = False, errors: dict[int, str] | None = None, **doc: Any
    ) -> Callable[[EndpointT], EndpointT]:
        """Register an endpoint on the app itself (an included router would add a layer of
        route matching to every request); with a token, every route but the public ones needs it.
        ``errors``: the error answers it can give besides 401 and 500 (the OpenAPI document lists
        them); the endpoint's docstring is its description."""

        def register(endpoint: EndpointT) -> EndpointT:
            app.router.add_api_route(
                path,
                endpoint,
                methods=[method],
                route_class_override=ModelRoute,
                responses=None if public else error_responses(errors or {}, guarded),
                openapi_extra=BEARER_REQUIRED if guarded and not public else None,
                **doc,
            )
            return endpoint

        return register

    # Routes are matched in the order they are added: the most requested come first.
    @route(
        "GET",
        "/recall",
        tags=["recall"],
        response_model=RecallResponse,
        summary="Combined recall: workspace + personal memory (+ external sources).",
        response_description="The answer: at most limit results across the minds read, the best first.",
        errors=READS_A_MIND,
    )
    def recall_get(request: Annotated[RecallQuery, Query()]) -> Response:
        """What the minds know about the query: the workspace mind and the personal mind searched
        together (keyword and vector lanes, weighed by the relevance profile), and external
        sources asked when local memory is thin. The same answer as `mind recall --json` and the
        MCP tool recall_memory. Repeat a list parameter for several values: tags=a&tags=b."""
        return JSONAnswer(service.recall(request))

    @route(
        "POST",
        "/recall",
        tags=["recall"],
        response_model=RecallResponse,
        summary="Combined recall, the request as a JSON body.",
        response_description="The answer: at most limit results across the minds read, the best first.",
        errors=WITH_BODY,
    )
    def recall_post(request: RecallRequest) -> Response:
        """GET /recall with its parameters as a JSON object: the same answer. Types are strict
        (a limit is a number, explain a boolean)."""
        return JSONAnswer(service.recall(request))

    @route(
        "GET",
        "/search",
        tags=["recall"],
        response_model=SearchResponse,
        summary="Hybrid search in one mind: keyword and vector lanes fused (convex by default).",
        response_description="At most limit frames of the mind, the best first, each as stored.",
        errors=READS_A_MIND,
    )
    def search_get(request: Annotated[SearchQuery, Query()]) -> Response:
        """One mind's frames for the query, each whole as stored (where recall answers a shaped
        result per memory), optionally within one session (a conversation or thread)."""
        return JSONAnswer(service.search(request))

    @route(
        "POST",
        "/search",
        tags=["recall"],
        response_model=SearchResponse,
        summary="Hybrid search, the request as a JSON body.",
        response_description="At most limit frames of the mind, the best first, each as stored.",
        errors=WITH_BODY,
    )
    def search_post(request: SearchRequest) -> Response:
        """GET /search with its parameters as a JSON object: the same answer."""
        return JSONAnswer(service.search(request))

    @route(
        "GET",
        "/health",
        public=True,
        tags=["service"],
        response_model=HealthResponse,
        summary="Liveness and which minds exist.",
        response_description="The service answers: its version and the minds of its home.",
    )
    async def health(request: Request) -> Response:  # a few stat calls: not worth a worker thread
        """Needs no token, even when the server has one: for monitors and load balancers. Without
        the token such a server names none of its minds."""
        return JSONAnswer(service.health(minds_shown=token_given(request, request.app.state.bearer_token)))

    @route(
        "GET",
        "/frames/{frame_id}",
        tags=["recall"],
        response_model=FrameResponse,
        summary="One frame with its provenance and entities.",
        response_description="The frame as stored, where it came from, and the entities it mentions.",
        errors={**READS_A_MIND, 404: "No such frame in the mind, or " + NO_MIND[0].lower() + NO_MIND[1:]},
    )
    def frame(
        frame_id: Annotated[
            int,
            PathParam(
                ge=1,
                le=limits.MAX_FRAME_ID,
                description="The frame's id in its mind (a result's metadata.frame_id).",
                examples=[42],
            ),
        ],
        request: Annotated[WorkspaceQuery, Query()],
    ) -> Response:
        """A recall result's whole frame: its complete metadata (a mail thread's message ids,
        participants and files, left out of recall results), its provenance and entities."""
        return JSONAnswer(service.frame(frame_id, request.workspace))

    @route(
        "GET",
        "/sources",
        tags=["minds"],
        response_model=SourcesResponse,
        summary="Registered harvest sources of a mind.",
        response_description="The mind's sources with their last harvest.",
        errors=READS_A_MIND,
    )
    def sources(request: Annotated[WorkspaceQuery, Query()]) -> Response:
        """Each source with its last harvest and counts, in the fields of `mind sources list
        --json` and the MCP tool list_sources."""
        return JSONAnswer(service.sources(request.workspace))

    @route(
        "GET",
        "/entities",
        tags=["recall"],
        response_model=EntitiesResponse,
        summary="Knowledge-graph entities whose name contains the query.",
        response_description="At most limit entities, by name.",
        errors=READS_A_MIND,
    )
    def entities(request: Annotated[EntitiesQuery, Query()]) -> Response:
        """Find an entity's id and type by part of its name (case-insensitive); a type no entity
        can have is refused with the types there are."""
        return JSONAnswer(service.entities(request))

    @route(
        "GET",
        "/kg/entities",
        tags=["knowledge graph"],
        response_model=GraphEntitiesResponse,
        summary="Entities (of one type) as they held at valid_at and as the mind knew them at known_at.",
        response_description="The entities on the time axes asked for, by name.",
        errors=READS_A_MIND,
    )
    def kg_entities(request: Annotated[GraphEntitiesQuery, Query()]) -> Response:
        """valid_at: what held in the world then (valid time); known_at: what the mind had learnt
        by then (transaction time). The same answer as `mind kg entities --json` and the MCP tool
        kg_entities."""
        return JSONAnswer(service.graph_entities(request))

    @route(
        "GET",
        "/kg/relations",
        tags=["knowledge graph"],
        response_model=GraphRelationsResponse,
        summary="Relations (of one type) with the entities they join, on both time axes.",
        response_description="The relations on the time axes asked for, with their entities' names.",
        errors=READS_A_MIND,
    )
    def kg_relations(request: Annotated[GraphRelationsQuery, Query()]) -> Response:
        """A type the graph does not hold is refused with the types it does. The same answer as
        `mind kg relations --json` and the MCP tool kg_relations."""
        return JSONAnswer(service.graph_relations(request))

    @route(
        "GET",
        "/kg/neighbours",
        tags=["knowledge graph"],
        response_model=NeighboursResponse,
        summary="An entity's relations, in and out, with the entities at their other end, on both time axes.",
        response_description="The entities of that name and their relations, the strongest first.",
        errors={**READS_A_MIND, 404: "No entity of that name (as known at known_at), or " + NO_MIND[0].lower() + NO_MIND[1:]},
    )
    def kg_neighbours(request: Annotated[NeighboursQuery, Query()]) -> Response:
        """Every entity of that name answers (a person and a concept may share one); typed
        relations come before co-occurrences. The same answer as `mind kg neighbours --json`."""
        return JSONAnswer(service.neighbours(request))

    @route(
        "GET",
        "/stats",
        tags=["minds"],
        response_model=StatsResponse,
        summary="Counts per mind (every mind of the home without 'workspace'); an unreadable mind "
        "is listed with its error.",
        response_description="Frames, sessions, entities, relations, vectors and sources per mind.",
        errors={400: INVALID, 404: NO_MIND},
    )
    def stats(request: Annotated[WorkspaceQuery, Query()]) -> Response:
        """A mind that cannot be read is listed with its error, so the others still answer."""
        return JSONAnswer(service.stats(request.workspace))

    @route("GET", OPENAPI_URL, public=True, include_in_schema=False)
    async def openapi() -> Response:
        return Response(openapi_json(), media_type="application/json")

    @functools.cache
    def openapi_json() -> bytes:  # the document never changes while the app runs
        return JSONAnswer(app.openapi()).body

    @route("GET", "/docs", public=True, include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=OPENAPI_URL,
            title=f"{TITLE} - Swagger UI",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon-32x32.png",
            oauth2_redirect_url=None,
        )

    @route("GET", "/", public=True, include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("/docs")

    app.mount(DOCS_ASSETS, StaticFiles(directory=swagger_ui_path), name="swagger-ui-assets")
    _answer_errors_as_json(app)
    app.add_middleware(RequestGuard)
    app.openapi = lambda: _openapi_document(app, guarded)  # type: ignore[method-assign]
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

    def answer(status: int) -> Callable[[Request, Exception], Coroutine[Any, Any, Response]]:
        async def handler(request: Request, exc: Exception) -> Response:
            return error_answer(status, str(exc))

        return handler

    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(InvalidInputError, answer(400))
    app.add_exception_handler(NotFoundError, answer(404))
    app.add_exception_handler(FingerprintMismatchError, answer(409))
    app.add_exception_handler(UnreadableMindError, answer(409))


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A query parameter's schema without the ``null`` alternative: a URL cannot carry a null,
    only leave the parameter out, and ``anyOf [string, null]`` reads as ``string | (string |
    null)`` in Swagger UI."""
    options = schema.get("anyOf")
    if not options or len(options) != 2 or {"type": "null"} not in options:
        return schema
    [kept] = [option for option in options if option != {"type": "null"}]
    outer = {key: value for key, value in schema.items() if key not in ("anyOf", "default")}
    return {**kept, **outer}


def _openapi_document(app: FastAPI, guarded: bool) -> dict[str, Any]:
    """FastAPI's document of the routes, with three corrections: FastAPI documents invalid input
    as 422 with its own error shape, while this service answers it 400 with ``ErrorResponse``;
    a query parameter is never null (``_not_null``); and, when a token is required
    (``guarded``), the bearer scheme the routes name (``BEARER_REQUIRED``) is defined."""
    if app.openapi_schema is None:
        from fastapi.openapi.utils import get_openapi

        schema = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        for operations in schema["paths"].values():
            for operation in operations.values():
                operation["responses"].pop("422", None)
                for parameter in operation.get("parameters", []):
                    parameter["schema"] = _not_null(parameter["schema"])
                    examples = parameter["schema"].get("examples")
                    if examples and "example" not in parameter:  # what Swagger UI's "Try it out" starts with
                        parameter["example"] = examples[0]
        components = schema.setdefault("components", {})
        for name in ("HTTPValidationError", "ValidationError"):
            components.get("schemas", {}).pop(name, None)
        if guarded:
            components["securitySchemes"] = {BEARER_SCHEME: BEARER_SECURITY_SCHEME}
        app.openapi_schema = schema
    return app.openapi_schema
