"""``mind serve``: recall and search over HTTP, as JSON, with an OpenAPI description.

Built on the standard library's ``ThreadingHTTPServer``: the work behind every request is
synchronous SQLite and embedding calls, so an async stack would only add a thread pool and
dependencies we do not declare (starlette/uvicorn arrive only as the mcp package's own
dependencies). The handler is thin; routing and validation live in ``QueryService``.

Safety rules:
- Minds are opened read-only (a pool of read-only handles per mind file). Recalled frames are
  touched only with ``record_access=True`` (``--record-access``), through one separate writable
  connection per mind used for nothing else.
- Every input is validated: query length, limit bounds, known profile and scope, ISO time
  bounds, workspace names (no path traversal), no unknown parameters, bodies at most
  MAX_BODY_BYTES (413 beyond, without reading them).
- A bearer token is optional on a loopback address and mandatory on any other: the server
  refuses to start without one. /health and /openapi.json stay open.
- No stack trace ever reaches a client: an unexpected error is a generic 500 with an error id,
  and the details go to the log under that id.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mind_core.db import Database, well_formed
from mind_core.embeddings.base import Embedder
from mind_core.errors import FingerprintMismatchError, InvalidInputError, NotFoundError
from mind_core.home import PERSONAL, MindHome, validate_workspace_name
from mind_core.mind import Mind
from mind_core.retrieval import (
    MAX_LIMIT,
    SCOPES,
    CombinedRetrieval,
    ExternalRetriever,
    check_time_bounds,
    frame_provenance,
    record_access,
)
from mind_core.scoring import SCORING_PROFILES

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
MAX_BODY_BYTES = 64 * 1024
MAX_DRAIN_BYTES = 4 * 1024 * 1024
MAX_QUERY_CHARS = 2_000
MAX_ENTITY_LIMIT = 200
MAX_IDLE_HANDLES_PER_MIND = 8
SOCKET_TIMEOUT_SECONDS = 30
API_VERSION = "1.0.0"
SERVE_TOKEN_ENV = "MIND_HARVEST_SERVE_TOKEN"


class HttpError(Exception):
    """An answer other than 200 that the client caused (or may retry)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


# -- parameters ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Param:
    name: str
    type: str  # string | integer | boolean
    description: str
    required: bool = False
    default: Any = None
    enum: tuple[str, ...] | None = None
    minimum: int | None = None
    maximum: int | None = None
    max_length: int | None = None

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "description": self.description}
        for key, value in (
            ("default", self.default),
            ("enum", list(self.enum) if self.enum else None),
            ("minimum", self.minimum),
            ("maximum", self.maximum),
            ("maxLength", self.max_length),
        ):
            if value is not None:
                out[key] = value
        return out


def _convert(param: Param, value: Any, from_text: bool) -> Any:
    if param.type == "integer":
        if from_text and isinstance(value, str) and re.fullmatch(r"-?\d{1,12}", value):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidInputError(f"'{param.name}' must be an integer")
        if (param.minimum is not None and value < param.minimum) or (
            param.maximum is not None and value > param.maximum
        ):
            raise InvalidInputError(f"'{param.name}' must be from {param.minimum} to {param.maximum}")
        return value
    if param.type == "boolean":
        if from_text and isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
            value = value.lower() in ("true", "1")
        if not isinstance(value, bool):
            raise InvalidInputError(f"'{param.name}' must be true or false")
        return value
    if not isinstance(value, str):
        raise InvalidInputError(f"'{param.name}' must be a string")
    value = well_formed(value)  # JSON may carry lone surrogates ("\ud800"); UTF-8 cannot
    if param.max_length is not None and len(value) > param.max_length:
        raise InvalidInputError(f"'{param.name}' is longer than {param.max_length} characters")
    if param.required and not value.strip():
        raise InvalidInputError(f"'{param.name}' must not be empty")
    if param.enum is not None and value not in param.enum:
        raise InvalidInputError(f"unknown {param.name} {value!r}; expected one of {', '.join(param.enum)}")
    return value


def parse_params(params: Sequence[Param], raw: dict[str, Any], *, from_text: bool) -> dict[str, Any]:
    """Validated, typed values for ``params`` (defaults filled in); unknown names are refused."""
    known = {p.name for p in params}
    unknown = sorted(set(raw) - known)
    if unknown:
        allowed = ", ".join(sorted(known)) or "none"
        raise InvalidInputError(f"unknown parameter(s) {', '.join(unknown)}; allowed: {allowed}")
    values: dict[str, Any] = {}
    for param in params:
        if param.name not in raw or raw[param.name] is None:
            if param.required:
                raise InvalidInputError(f"'{param.name}' is required")
            values[param.name] = param.default
            continue
        values[param.name] = _convert(param, raw[param.name], from_text)
    return values


QUERY = Param("query", "string", "What to recall (free text).", required=True, max_length=MAX_QUERY_CHARS)
WORKSPACE = Param(
    "workspace",
    "string",
    "Workspace mind ('personal' for the personal mind; default: the server's).",
    max_length=64,
)
LIMIT = Param("limit", "integer", "Results per mind.", default=10, minimum=1, maximum=MAX_LIMIT)
PROFILE = Param("profile", "string", "Relevance profile.", default="balanced", enum=tuple(SCORING_PROFILES))
SINCE = Param(
    "since", "string", "Only frames at or after this ISO-8601 date/time (event time).", max_length=40
)
UNTIL = Param(
    "until", "string", "Only frames at or before this ISO-8601 date/time (event time).", max_length=40
)
EXPLAIN = Param("explain", "boolean", "Include lane ranks and score parts.", default=False)
SCOPE = Param("scope", "string", "Which memory to search.", default="all", enum=SCOPES)
SESSION = Param("session", "string", "Only frames of this session (gop_id).", max_length=300)
ENTITY_QUERY = Param("query", "string", "Substring of the entity name.", required=True, max_length=200)
ENTITY_TYPE = Param("type", "string", "Only entities of this type.", max_length=64)
ENTITY_LIMIT = Param(
    "limit", "integer", "Entities to return.", default=50, minimum=1, maximum=MAX_ENTITY_LIMIT
)


@dataclass(frozen=True)
class Route:
    name: str
    path: str
    methods: tuple[str, ...]
    summary: str
    params: tuple[Param, ...] = ()
    public: bool = False


ROUTES = (
    Route("health", "/health", ("GET",), "Liveness and which minds exist.", public=True),
    Route("openapi", "/openapi.json", ("GET",), "This description.", public=True),
    Route(
        "recall",
        "/recall",
        ("GET", "POST"),
        "Combined recall: workspace + personal memory (+ external sources when local coverage is weak).",
        (QUERY, WORKSPACE, SCOPE, LIMIT, PROFILE, SINCE, UNTIL, EXPLAIN),
    ),
    Route(
        "search",
        "/search",
        ("GET", "POST"),
        "Hybrid search (keyword + vector, RRF) in one mind.",
        (QUERY, WORKSPACE, LIMIT, PROFILE, SINCE, UNTIL, EXPLAIN, SESSION),
    ),
    Route(
        "frame", "/frames/{frame_id}", ("GET",), "One frame with its provenance and entities.", (WORKSPACE,)
    ),
    Route("sources", "/sources", ("GET",), "Registered harvest sources of a mind.", (WORKSPACE,)),
    Route(
        "entities",
        "/entities",
        ("GET",),
        "Knowledge-graph entities whose name contains the query.",
        (ENTITY_QUERY, WORKSPACE, ENTITY_TYPE, ENTITY_LIMIT),
    ),
    Route("stats", "/stats", ("GET",), "Counts per mind (all minds without 'workspace').", (WORKSPACE,)),
)
_FRAME_PATH = re.compile(r"^/frames/(\d{1,18})$")


def openapi_document() -> dict[str, Any]:
    """OpenAPI 3.1 for ROUTES, generated from the same Param lists the server validates with."""
    paths: dict[str, Any] = {}
    error = {"$ref": "#/components/responses/Error"}
    for route in ROUTES:
        operations: dict[str, Any] = {}
        for method in route.methods:
            op: dict[str, Any] = {
                "operationId": f"{route.name}_{method.lower()}",
                "summary": route.summary,
                "responses": {"200": {"description": "JSON result", "content": {"application/json": {}}}},
            }
            if not route.public:
                op["security"] = [{"bearerAuth": []}, {}]
                op["responses"].update({"400": error, "401": error, "404": error, "413": error, "500": error})
            parameters = []
            if route.name == "frame":
                parameters.append(
                    {
                        "name": "frame_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "integer", "minimum": 1},
                    }
                )
            if method == "POST":
                op["requestBody"] = {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "additionalProperties": False,
                                "required": [p.name for p in route.params if p.required],
                                "properties": {p.name: p.schema() for p in route.params},
                            }
                        }
                    },
                }
            else:
                parameters += [
                    {"name": p.name, "in": "query", "required": p.required, "schema": p.schema()}
                    for p in route.params
                ]
            if parameters:
                op["parameters"] = parameters
            operations[method.lower()] = op
        paths[route.path] = operations
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "mind-harvest query service",
            "version": API_VERSION,
            "description": (
                "Recall and search over mind-harvest minds. Scores: 'score' / 'match_score' is 0..1; "
                "1.0 is the best match of both the keyword and the vector lane, one lane alone gives at most 0.5."
            ),
        },
        "paths": paths,
        "components": {
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}},
            "responses": {
                "Error": {
                    "description": "Error",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"error": {"type": "string"}, "error_id": {"type": "string"}},
                            }
                        }
                    },
                }
            },
        },
    }


# -- minds --------------------------------------------------------------------------------------
class SerializedEmbedder:
    """One embedder shared by request threads, one call at a time (tokenizers are not re-entrant)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.provider = inner.provider
        self.model_name = inner.model_name
        self.dimensions = inner.dimensions
        self.degraded = bool(getattr(inner, "degraded", False))
        self._lock = threading.Lock()

    def embed(self, text: str) -> Any:
        with self._lock:
            return self.inner.embed(text)

    def embed_batch(self, texts: Sequence[str]) -> Any:
        with self._lock:
            return self.inner.embed_batch(texts)


class MindPool:
    """Read-only Mind handles per mind file, reused across requests; a handle serves one request
    at a time, so no SQLite connection is ever used by two threads at once."""

    def __init__(self, embedder: Embedder | None, max_idle: int = MAX_IDLE_HANDLES_PER_MIND) -> None:
        self.embedder = embedder
        self.max_idle = max_idle
        self._idle: dict[str, list[Mind]] = {}
        self._lock = threading.Lock()
        self._closed = False

    @contextlib.contextmanager
    def lease(self, path: Path) -> Iterator[Mind]:
        key = str(path)
        with self._lock:
            idle = self._idle.get(key)
            mind = idle.pop() if idle else None
        if mind is None:
            mind = Mind.open(path, embedder=self.embedder, readonly=True)
        try:
            yield mind
        finally:
            with self._lock:
                idle = self._idle.setdefault(key, [])
                keep = not self._closed and len(idle) < self.max_idle
                if keep:
                    idle.append(mind)
            if not keep:
                mind.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            minds = [m for idle in self._idle.values() for m in idle]
            self._idle.clear()
        for mind in minds:
            mind.close()


class AccessRecorder:
    """The one writable connection per mind that touches recalled frames (``--record-access``)."""

    def __init__(self) -> None:
        self._dbs: dict[str, Database] = {}
        self._lock = threading.Lock()

    def __call__(self, path: str, frame_ids: Sequence[int]) -> None:
        try:
            with self._lock:
                db = self._dbs.get(path)
                if db is None:
                    db = self._dbs[path] = Database(path)
                record_access(db, frame_ids)
        except Exception:
            log.exception("could not record access to %d frames of %s", len(frame_ids), path)

    def close(self) -> None:
        with self._lock:
            for db in self._dbs.values():
                db.close()
            self._dbs.clear()


def mind_stats(mind: Mind) -> dict[str, Any]:
    from mind_core.harvest.stores import HarvestSourceStore

    stats = mind.frames.get_stats()
    return {
        "frames": stats["total"],
        "by_type": stats["byType"],
        "sessions": mind.db.scalar("SELECT COUNT(*) FROM sessions"),
        "entities": mind.knowledge.get_entity_count(),
        "relations": mind.db.scalar("SELECT COUNT(*) FROM knowledge_relations WHERE valid_to IS NULL"),
        "vectors": mind.db.scalar("SELECT COUNT(*) FROM memory_frames WHERE embedded_hash IS NOT NULL"),
        "sources": len(HarvestSourceStore(mind.db).get_all()),
        "embedding": mind.search.vectors.stored_fingerprint(),
    }


def search_result_dict(result: Any) -> dict[str, Any]:
    data = result.to_dict()
    data["provenance"] = frame_provenance(result.frame)
    return data


# -- the service --------------------------------------------------------------------------------
@dataclass
class ServiceConfig:
    home: MindHome
    default_workspace: str
    embedder: Embedder | None = None
    token: str | None = None
    retrievers: list[ExternalRetriever] = field(default_factory=list)
    record_access: bool = False


class QueryService:
    """Routing, authentication and validation; knows nothing about sockets."""

    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        embedder = SerializedEmbedder(config.embedder) if config.embedder is not None else None
        self.pool = MindPool(embedder)
        self.access = AccessRecorder() if config.record_access else None
        self._openapi = openapi_document()

    def close(self) -> None:
        self.pool.close()
        if self.access is not None:
            self.access.close()

    # -- dispatch -------------------------------------------------------------------------
    def handle(
        self, method: str, target: str, headers: dict[str, str], body: bytes | None
    ) -> tuple[int, dict[str, Any]]:
        """(status, JSON payload) for one request; HttpError and input errors become 4xx."""
        parts = urlsplit(target)
        route, frame_id = self._route(parts.path)
        if method not in route.methods:
            raise HttpError(
                405, f"{method} is not allowed on {route.path}", {"Allow": ", ".join(route.methods)}
            )
        if not route.public:
            self._authenticate(headers.get("authorization"))
        if method == "POST":
            raw = self._json_body(body)
            from_text = False
        else:
            raw = self._query_params(parts.query)
            from_text = True
        args = parse_params(route.params, raw, from_text=from_text)
        handler: Callable[..., dict[str, Any]] = getattr(self, f"do_{route.name}")
        if route.name == "frame":
            return 200, handler(frame_id, **args)
        return 200, handler(**args)

    def _route(self, path: str) -> tuple[Route, int | None]:
        for route in ROUTES:
            if route.path == path:
                return route, None
        match = _FRAME_PATH.match(path)
        if match:
            return next(r for r in ROUTES if r.name == "frame"), int(match.group(1))
        raise HttpError(404, f"no such endpoint {path!r}; see /openapi.json")

    def _authenticate(self, header: str | None) -> None:
        token = self.config.token
        if not token:
            return
        scheme, _, given = (header or "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
            raise HttpError(401, "a valid bearer token is required", {"WWW-Authenticate": "Bearer"})

    @staticmethod
    def _query_params(query: str) -> dict[str, Any]:
        try:
            pairs = parse_qs(query, keep_blank_values=True, strict_parsing=False, max_num_fields=32)
        except ValueError as exc:
            raise InvalidInputError("too many query parameters") from exc
        repeated = sorted(k for k, v in pairs.items() if len(v) > 1)
        if repeated:
            raise InvalidInputError(f"parameter(s) given more than once: {', '.join(repeated)}")
        return {k: v[0] for k, v in pairs.items()}

    @staticmethod
    def _json_body(body: bytes | None) -> dict[str, Any]:
        if not body:
            raise InvalidInputError("a JSON object body is required")
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise InvalidInputError("the body is not valid UTF-8 JSON") from exc
        except RecursionError as exc:  # a small body can nest deeper than the parser recurses
            raise InvalidInputError("the body's JSON is nested too deeply") from exc
        if not isinstance(data, dict):
            raise InvalidInputError("the body must be a JSON object")
        return data

    # -- minds ----------------------------------------------------------------------------
    def _path(self, workspace: str | None) -> tuple[str, Path]:
        name = workspace or self.config.default_workspace
        if name == PERSONAL:
            return name, self.config.home.personal_path
        return name, self.config.home.workspace_path(validate_workspace_name(name))

    @contextlib.contextmanager
    def _mind(self, workspace: str | None) -> Iterator[Mind]:
        name, path = self._path(workspace)
        if not path.is_file():
            raise NotFoundError(f"no mind for workspace {name!r}")
        with self.pool.lease(path) as mind:
            yield mind

    # -- endpoints ------------------------------------------------------------------------
    def do_health(self) -> dict[str, Any]:
        home = self.config.home
        return {
            "status": "ok",
            "version": API_VERSION,
            "personal": home.personal_path.is_file(),
            "workspaces": home.workspaces(),
            "default_workspace": self.config.default_workspace,
            "external_sources": [r.name for r in self.config.retrievers],
            "auth": bool(self.config.token),
        }

    def do_openapi(self) -> dict[str, Any]:
        return self._openapi

    def do_recall(self, query: str, workspace: str | None, scope: str, **options: Any) -> dict[str, Any]:
        check_time_bounds(options["since"], options["until"])
        name, ws_path = self._path(workspace)
        if name == PERSONAL:
            ws_path = None  # type: ignore[assignment]
        elif workspace is not None and not ws_path.is_file() and scope != PERSONAL:
            raise NotFoundError(f"no mind for workspace {name!r}")
        personal_path = self.config.home.personal_path
        with contextlib.ExitStack() as stack:
            ws_mind = (
                stack.enter_context(self.pool.lease(ws_path))
                if ws_path is not None and scope != PERSONAL and ws_path.is_file()
                else None
            )
            personal_mind = (
                stack.enter_context(self.pool.lease(personal_path))
                if scope != "workspace" and personal_path.is_file()
                else None
            )
            retrieval = CombinedRetrieval(
                ws_mind,
                personal_mind,
                self.config.retrievers,
                record_access_on_recall=self.access is not None,
                access_writer=self.access,
            )
            result = retrieval.search(query, scope=scope, **options)
        return result.to_dict()

    def do_search(
        self, query: str, workspace: str | None, session: str | None, **options: Any
    ) -> dict[str, Any]:
        check_time_bounds(options["since"], options["until"])
        with self._mind(workspace) as mind:
            results = mind.search.search(query, gop_id=session, **options)
            return {"query": query, "results": [search_result_dict(r) for r in results]}

    def do_frame(self, frame_id: int, workspace: str | None) -> dict[str, Any]:
        with self._mind(workspace) as mind:
            frame = mind.frames.get_by_id(frame_id)
            if frame is None:
                raise NotFoundError(f"no frame {frame_id}")
            entities = mind.knowledge.entities_for_frame(frame_id)
            return {
                "frame": frame.to_dict(),
                "provenance": frame_provenance(frame),
                "entities": [{"id": e.id, "type": e.entity_type, "name": e.name} for e in entities],
            }

    def do_sources(self, workspace: str | None) -> dict[str, Any]:
        from mind_core.harvest.stores import HarvestSourceStore

        with self._mind(workspace) as mind:
            return {"sources": [s.__dict__ for s in HarvestSourceStore(mind.db).get_all()]}

    def do_entities(self, query: str, workspace: str | None, type: str | None, limit: int) -> dict[str, Any]:
        with self._mind(workspace) as mind:
            found = mind.knowledge.search_entities(query, limit if type is None else MAX_ENTITY_LIMIT * 5)
            if type is not None:
                found = [e for e in found if e.entity_type == type][:limit]
            return {"entities": [e.__dict__ for e in found]}

    def do_stats(self, workspace: str | None) -> dict[str, Any]:
        if workspace is not None:
            with self._mind(workspace) as mind:
                return {"minds": [{"workspace": workspace, **mind_stats(mind)}]}
        home = self.config.home
        names = ([PERSONAL] if home.personal_path.is_file() else []) + home.workspaces()
        minds = []
        for name in names:
            with self._mind(name) as mind:
                minds.append({"workspace": name, **mind_stats(mind)})
        return {"minds": minds}


# -- HTTP plumbing ------------------------------------------------------------------------------
def _json_bytes(payload: dict[str, Any]) -> bytes:
    """UTF-8 JSON; text that UTF-8 cannot carry (a lone surrogate in stored content) is escaped."""
    try:
        return json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(payload, ensure_ascii=True, default=str).encode("ascii")


class RequestHandler(BaseHTTPRequestHandler):
    server: MindHTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "mind-harvest"
    sys_version = ""
    timeout = SOCKET_TIMEOUT_SECONDS

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def _read_body(self) -> bytes | None:
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            raise HttpError(411, "send the body with a Content-Length, not chunked")
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            return None
        if not length_text.isdigit():
            self.close_connection = True
            raise HttpError(400, "invalid Content-Length")
        length = int(length_text)
        if length > MAX_BODY_BYTES:
            # Refused unparsed; a modest excess is read and dropped so the client gets the 413
            # instead of a connection reset, a larger one is not read at all.
            self.close_connection = True
            if length <= MAX_DRAIN_BYTES:
                remaining = length
                while remaining > 0:
                    chunk = self.rfile.read(min(remaining, 65_536))
                    if not chunk:
                        break
                    remaining -= len(chunk)
            raise HttpError(413, f"request body larger than {MAX_BODY_BYTES} bytes")
        return self.rfile.read(length) if length else b""

    def _serve(self, method: str) -> None:
        started = time.perf_counter()
        status, payload, extra = 500, {}, {}
        try:
            body = self._read_body()
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload = self.server.service.handle(method, self.path, headers, body)
        except HttpError as exc:
            status, payload, extra = exc.status, {"error": exc.message}, exc.headers
        except InvalidInputError as exc:
            status, payload = 400, {"error": str(exc)}
        except NotFoundError as exc:
            status, payload = 404, {"error": str(exc)}
        except FingerprintMismatchError as exc:
            status, payload = 409, {"error": str(exc)}
        except Exception:
            error_id = uuid.uuid4().hex[:12]
            log.exception("error id %s: %s %s failed", error_id, method, urlsplit(self.path).path)
            status, payload = 500, {"error": "internal server error", "error_id": error_id}
        self._send(status, payload, extra)
        log.info(
            "%s %s %d %.1fms",
            method,
            urlsplit(self.path).path,
            status,
            (time.perf_counter() - started) * 1000,
        )

    def _send(self, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None) -> None:
        data = _json_bytes(payload)
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Protocol errors (bad request line, unsupported method) as JSON, never an HTML page."""
        self.close_connection = True
        try:
            text = HTTPStatus(code).phrase
        except ValueError:
            text = "error"
        self._send(code, {"error": message or text})

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)


class MindHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], service: QueryService) -> None:
        self.service = service
        super().__init__(address, RequestHandler)

    def server_close(self) -> None:
        super().server_close()
        self.service.close()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def create_server(
    config: ServiceConfig, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT
) -> MindHTTPServer:
    """A bound (not yet serving) server; refuses a non-loopback address without a token."""
    if not is_loopback(host) and not config.token:
        raise InvalidInputError(
            f"refusing to listen on {host}: a non-loopback address needs a bearer token "
            f"(--token or ${SERVE_TOKEN_ENV})"
        )
    if config.default_workspace != PERSONAL:
        validate_workspace_name(config.default_workspace)
    return MindHTTPServer((host, port), QueryService(config))
