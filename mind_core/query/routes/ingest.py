"""Adding memories over HTTP: POST /ingest takes items in the Universal JSON shape and runs them
through the harvest's import path (``mind_core.harvest.ingest``: ledger, dedup, cognify, vectors).

The query service reads its minds read-only; this is its one route that writes, so it is off
unless the server was started for it: with a bearer token (``--token``; a server without one
answers 403, whoever asks, since anything on the machine could write otherwise) and with
``MIND_HARVEST_ALLOW_INGEST=1`` in its environment (read at each request, so every worker process
of ``mind serve --workers`` sees it). The mind is opened writable for the call, under its write
lock, and never created: a workspace without a mind is a 404.
"""

from __future__ import annotations

import os
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from starlette.exceptions import HTTPException
from starlette.responses import Response

from mind_core.harvest.ingest import ingest_into, ingest_source_name
from mind_core.query.json_answer import JSONAnswer
from mind_core.query.models.ingest import IngestRequest, IngestResponse
from mind_core.query.routes.dependencies import WITH_BODY, error_responses, query_service, require_token
from mind_core.query.service import QueryService

ALLOW_INGEST_ENV = "MIND_HARVEST_ALLOW_INGEST"
SOURCE = ingest_source_name("http")
READ_ONLY = "The server is read-only: start it with --token and --allow-ingest to accept items"

router = APIRouter(tags=["ingest"], dependencies=[Depends(require_token)])
Service = Annotated[QueryService, Depends(query_service)]


def refusal(request: Request) -> str | None:
    """Why this server takes no items, or None when it does."""
    if not request.app.state.bearer_token:
        return "this server has no token, and adding memories needs one: start it with --token (and --allow-ingest)"
    if os.environ.get(ALLOW_INGEST_ENV) != "1":
        return f"this server is read-only: start it with --allow-ingest (or {ALLOW_INGEST_ENV}=1) to accept items"
    return None


@router.post(
    "/ingest",
    response_model=IngestResponse,
    summary="Add memories: Universal JSON items through the harvest's import path.",
    response_description="What was written: a harvest's counts, and the refused items by index.",
    responses=error_responses({**WITH_BODY, 403: READ_ONLY}),
)
def ingest(body: IngestRequest, request: Request, service: Service) -> Response:
    """One memory per message (or per item without messages), at its own time, held by the
    workspace's source `ingest:http`: sent again unchanged, nothing is written; an item with an
    id sent again changed updates its memories. Entities and relations are extracted and the
    memories embedded, so recall finds them at once. A bad item is reported by its index and
    the others are kept. The same as the MCP tool ingest_items."""
    if (reason := refusal(request)) is not None:
        raise HTTPException(403, reason)
    workspace = body.workspace or service.config.default_workspace
    report = ingest_into(service.config.home, workspace, SOURCE, body.items, service.pool.embedder)
    return JSONAnswer(IngestResponse.model_validate({"workspace": workspace, **report.to_dict()}))
