"""The service and its minds: liveness, the harvest sources of a mind, and counts per mind."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from mind_core.query.json_answer import JSONAnswer
from mind_core.query.models.requests import WorkspaceQuery
from mind_core.query.models.service import HealthResponse, StatsResponse
from mind_core.query.models.sources import SourcesResponse
from mind_core.query.routes.dependencies import (
    INVALID,
    NO_MIND,
    READS_A_MIND,
    error_responses,
    query_service,
    require_token,
    single_values,
    token_given,
)
from mind_core.query.service import QueryService

public = APIRouter(tags=["service"])
router = APIRouter(tags=["minds"], dependencies=[Depends(require_token)])
Service = Annotated[QueryService, Depends(query_service)]


@public.get(
    "/health",
    response_model=HealthResponse,
    summary="Liveness and which minds exist.",
    response_description="The service answers: its version and the minds of its home.",
)
async def health(request: Request, service: Service) -> Response:  # a few stat calls: no worker thread
    """Needs no token, even when the server has one: for monitors and load balancers. Without
    the token such a server names none of its minds."""
    return JSONAnswer(service.health(minds_shown=token_given(request)))


@router.get(
    "/sources",
    response_model=SourcesResponse,
    summary="Registered harvest sources of a mind.",
    response_description="The mind's sources with their last harvest.",
    responses=error_responses(READS_A_MIND),
    dependencies=[Depends(single_values(WorkspaceQuery))],
)
def sources(request: Annotated[WorkspaceQuery, Query()], service: Service) -> Response:
    """Each source with its last harvest and counts, in the fields of `mind sources list
    --json` and the MCP tool list_sources."""
    return JSONAnswer(service.sources(request.workspace))


@router.get(
    "/stats",
    response_model=StatsResponse,
    summary="Counts per mind (every mind of the home without 'workspace'); an unreadable mind "
    "is listed with its error.",
    response_description="Frames, sessions, entities, relations, vectors and sources per mind.",
    responses=error_responses({400: INVALID, 404: NO_MIND}),
    dependencies=[Depends(single_values(WorkspaceQuery))],
)
def stats(request: Annotated[WorkspaceQuery, Query()], service: Service) -> Response:
    """A mind that cannot be read is listed with its error, so the others still answer."""
    return JSONAnswer(service.stats(request.workspace))
