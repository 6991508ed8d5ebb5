"""Recall, search and frames: what the minds know about a query, and a result's whole frame."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi import Path as PathParam
from starlette.responses import Response

from mind_core import limits
from mind_core.query.json_answer import JSONAnswer
from mind_core.query.models.frames import FrameResponse, SearchResponse
from mind_core.query.models.recall import RecallResponse
from mind_core.query.models.requests import (
    RecallQuery,
    RecallRequest,
    SearchQuery,
    SearchRequest,
    WorkspaceQuery,
)
from mind_core.query.routes.dependencies import (
    NO_MIND,
    READS_A_MIND,
    WITH_BODY,
    error_responses,
    query_service,
    require_token,
    single_values,
)
from mind_core.query.service import QueryService

router = APIRouter(tags=["recall"], dependencies=[Depends(require_token)])
Service = Annotated[QueryService, Depends(query_service)]
RECALLED = "The answer: at most limit results across the minds read, the best first."
SEARCHED = "At most limit frames of the mind, the best first, each as stored."


@router.get(
    "/recall",
    response_model=RecallResponse,
    summary="Combined recall: workspace + personal memory (+ external sources).",
    response_description=RECALLED,
    responses=error_responses(READS_A_MIND),
    dependencies=[Depends(single_values(RecallQuery))],
)
def recall_get(request: Annotated[RecallQuery, Query()], service: Service) -> Response:
    """What the minds know about the query: the workspace mind and the personal mind searched
    together (keyword and vector lanes, weighed by the relevance profile), and external
    sources asked when local memory is thin. The same answer as `mind recall --json` and the
    MCP tool recall_memory. Repeat a list parameter for several values: tags=a&tags=b."""
    return JSONAnswer(service.recall(request))


@router.post(
    "/recall",
    response_model=RecallResponse,
    summary="Combined recall, the request as a JSON body.",
    response_description=RECALLED,
    responses=error_responses(WITH_BODY),
)
def recall_post(request: RecallRequest, service: Service) -> Response:
    """GET /recall with its parameters as a JSON object: the same answer. Types are strict
    (a limit is a number, explain a boolean)."""
    return JSONAnswer(service.recall(request))


@router.get(
    "/search",
    response_model=SearchResponse,
    summary="Hybrid search in one mind: keyword and vector lanes fused (convex by default).",
    response_description=SEARCHED,
    responses=error_responses(READS_A_MIND),
    dependencies=[Depends(single_values(SearchQuery))],
)
def search_get(request: Annotated[SearchQuery, Query()], service: Service) -> Response:
    """One mind's frames for the query, each whole as stored (where recall answers a shaped
    result per memory), optionally within one session (a conversation or thread)."""
    return JSONAnswer(service.search(request))


@router.post(
    "/search",
    response_model=SearchResponse,
    summary="Hybrid search, the request as a JSON body.",
    response_description=SEARCHED,
    responses=error_responses(WITH_BODY),
)
def search_post(request: SearchRequest, service: Service) -> Response:
    """GET /search with its parameters as a JSON object: the same answer."""
    return JSONAnswer(service.search(request))


@router.get(
    "/frames/{frame_id}",
    response_model=FrameResponse,
    summary="One frame with its provenance and entities.",
    response_description="The frame as stored, where it came from, and the entities it mentions.",
    responses=error_responses(
        {**READS_A_MIND, 404: "No such frame in the mind, or " + NO_MIND[0].lower() + NO_MIND[1:]}
    ),
    dependencies=[Depends(single_values(WorkspaceQuery))],
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
    service: Service,
) -> Response:
    """A recall result's whole frame: its complete metadata (a mail thread's message ids,
    participants and files, left out of recall results), its provenance and entities."""
    return JSONAnswer(service.frame(frame_id, request.workspace))
