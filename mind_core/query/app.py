"""The HTTP face of the query service: the FastAPI app over ``QueryService``.

Stock FastAPI request handling: the routers of ``mind_core.query.routes`` (one per resource),
validation by the pydantic request models, the token and the service as dependencies, and the
engine's errors answered by exception handlers (``error_answers``) as JSON with today's shapes and
status codes. ``RequestGuard`` (plain ASGI middleware) limits bodies and turns any unexpected
error into a JSON 500 with an error id. (``mind serve --workers``: each worker process builds its
own service and app, ``mind_core.cli.serve.worker_app``.)
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI

from mind_core.query.error_answers import answer_errors_as_json
from mind_core.query.guard import RequestGuard
from mind_core.query.json_answer import JSONAnswer
from mind_core.query.models.fields import package_version
from mind_core.query.openapi import serve_docs
from mind_core.query.routes import admin, ingest, knowledge, recall
from mind_core.query.service import QueryService

TITLE = "mind-harvest query service"
DESCRIPTION = (
    "Recall and search over mind-harvest minds. Scores: a result's `score` (0..1) is what results are "
    "ordered by (match times relevance); `match_score` (0..1) is 1.0 for the best match of both the "
    "keyword and the vector lane, at most 0.5 for one lane alone; with `explain`, the parts of both. "
    "`confident: false` means nothing matched well. Queries read only unless the server was started "
    "with `--record-access`."
)
OPENAPI_TAGS = [
    {"name": "recall", "description": "What the minds know: recall, search, frames, entities."},
    {
        "name": "knowledge graph",
        "description": "Entities and relations on both time axes: valid_at (when a fact held) "
        "and known_at (what the mind believed then).",
    },
    {"name": "minds", "description": "The minds of the home: harvest sources and counts."},
    {"name": "service", "description": "Liveness."},
]
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


def create_app(service: QueryService) -> FastAPI:
    """The FastAPI app answering for ``service``; the token comes from its config."""
    threads = ENDPOINT_THREADS_WITH_EXTERNAL_SOURCES if service.config.retrievers else ENDPOINT_THREADS

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # FastAPI runs a plain endpoint in AnyIO's default thread pool: its size is this loop's
        anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        # What exists now (modules, the app, its schemas, the service) lives as long as the
        # server: moved out of the collector's generations, a full collection does not walk it.
        gc.collect()
        gc.freeze()
        yield

    app = FastAPI(
        title=TITLE,
        description=DESCRIPTION,
        version=package_version(),
        openapi_url=None,  # served by openapi.serve_docs, encoded once
        docs_url=None,
        redoc_url=None,
        redirect_slashes=False,
        # no telemetry leaves this service: FastAPI need not look for OpenTelemetry providers
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
        default_response_class=JSONAnswer,
        generate_unique_id_function=lambda route: route.name,
        openapi_tags=OPENAPI_TAGS,
        lifespan=lifespan,
    )
    app.state.service = service
    app.state.bearer_token = service.config.token
    # Routes are matched in the order they are added: the most requested come first.
    routers = (recall.router, knowledge.router, admin.public, admin.router, ingest.router)
    for router in routers:
        app.include_router(router)
    serve_docs(app, routers)
    answer_errors_as_json(app)
    app.add_middleware(RequestGuard)
    return app

