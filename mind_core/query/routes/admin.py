"""The service and its minds: liveness, the harvest sources of a mind, counts per mind, and
forgetting (``POST /admin/forget``: the one engine call of ``mind forget``,
``mind_core.privacy.requests.forget_in``).

Forgetting deletes for good, so it needs the bearer token, and a server without one refuses it
to everyone (403: anything on the machine could forget otherwise); without ``yes`` it is a dry
run. The mind is opened writable for the call, under its write lock, and never created."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from starlette.exceptions import HTTPException
from starlette.responses import Response

from mind_core.privacy.requests import forget_in
from mind_core.query.json_answer import JSONAnswer
from mind_core.query.models.forget import ForgetBody, ForgetResponse
from mind_core.query.models.requests import WorkspaceQuery
from mind_core.query.models.service import HealthResponse, StatsResponse
from mind_core.query.models.sources import SourcesResponse
from mind_core.query.routes.dependencies import (
    INVALID,
    NO_MIND,
    READS_A_MIND,
    WITH_BODY,
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
NO_TOKEN = "The server has no token: forgetting needs one (start it with --token)"


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


@router.post(
    "/admin/forget",
    response_model=ForgetResponse,
    response_model_exclude_none=True,
    summary="Forget a person, a source, a query's matches, frames or a time range (dry run unless yes).",
    response_description="What would go (yes false) or what went, with the audit entry.",
    responses=error_responses({**WITH_BODY, 403: NO_TOKEN}),
)
def forget(body: ForgetBody, request: Request, service: Service) -> Response:
    """The same as `mind forget` and the MCP tool forget_memory: without `yes`, what would go
    (counts, the first frames, and for a person how many other frames would have their name and
    address replaced); with it, the frames go with everything derived from them, a person's
    mentions are replaced, tombstones keep a later harvest from bringing it back, the mind's
    files are scrubbed, the audit log records `http:<by>`, and earlier snapshots are marked
    stale. `allow_return` lifts an earlier forget's tombstones instead."""
    if not request.app.state.bearer_token:
        raise HTTPException(403, "this server has no token, and forgetting needs one: start it with --token")
    workspace = body.workspace or service.config.default_workspace
    answer = forget_in(
        service.config.home, workspace, body.request(), body.actor("http"), service.pool.embedder
    )
    return JSONAnswer(ForgetResponse.model_validate(answer).model_dump(exclude_none=True))
