"""The knowledge graph: entities by name, and entities, relations and neighbours on both time
axes (valid_at: what held in the world then; known_at: what the mind had learnt by then)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from starlette.responses import Response

from mind_core.query.json_answer import JSONAnswer
from mind_core.query.models.graph import (
    EntitiesResponse,
    GraphEntitiesResponse,
    GraphRelationsResponse,
    NeighboursResponse,
)
from mind_core.query.models.requests import (
    EntitiesQuery,
    GraphEntitiesQuery,
    GraphRelationsQuery,
    NeighboursQuery,
)
from mind_core.query.routes.dependencies import (
    NO_MIND,
    READS_A_MIND,
    error_responses,
    query_service,
    require_token,
    single_values,
)
from mind_core.query.service import QueryService

router = APIRouter(dependencies=[Depends(require_token)])
Service = Annotated[QueryService, Depends(query_service)]


@router.get(
    "/entities",
    tags=["recall"],
    response_model=EntitiesResponse,
    summary="Knowledge-graph entities whose name contains the query.",
    response_description="At most limit entities, by name.",
    responses=error_responses(READS_A_MIND),
    dependencies=[Depends(single_values(EntitiesQuery))],
)
def entities(request: Annotated[EntitiesQuery, Query()], service: Service) -> Response:
    """Find an entity's id and type by part of its name (case-insensitive); a type no entity
    can have is refused with the types there are."""
    return JSONAnswer(service.entities(request))


@router.get(
    "/kg/entities",
    tags=["knowledge graph"],
    response_model=GraphEntitiesResponse,
    summary="Entities (of one type) as they held at valid_at and as the mind knew them at known_at.",
    response_description="The entities on the time axes asked for, by name.",
    responses=error_responses(READS_A_MIND),
    dependencies=[Depends(single_values(GraphEntitiesQuery))],
)
def kg_entities(request: Annotated[GraphEntitiesQuery, Query()], service: Service) -> Response:
    """valid_at: what held in the world then (valid time); known_at: what the mind had learnt
    by then (transaction time). The same answer as `mind kg entities --json` and the MCP tool
    kg_entities."""
    return JSONAnswer(service.graph_entities(request))


@router.get(
    "/kg/relations",
    tags=["knowledge graph"],
    response_model=GraphRelationsResponse,
    summary="Relations (of one type) with the entities they join, on both time axes.",
    response_description="The relations on the time axes asked for, with their entities' names.",
    responses=error_responses(READS_A_MIND),
    dependencies=[Depends(single_values(GraphRelationsQuery))],
)
def kg_relations(request: Annotated[GraphRelationsQuery, Query()], service: Service) -> Response:
    """A type the graph does not hold is refused with the types it does. The same answer as
    `mind kg relations --json` and the MCP tool kg_relations."""
    return JSONAnswer(service.graph_relations(request))


@router.get(
    "/kg/neighbours",
    tags=["knowledge graph"],
    response_model=NeighboursResponse,
    summary="An entity's relations, in and out, with the entities at their other end, on both time axes.",
    response_description="The entities of that name and their relations, the strongest first.",
    responses=error_responses(
        {
            **READS_A_MIND,
            404: "No entity of that name (as known at known_at), or " + NO_MIND[0].lower() + NO_MIND[1:],
        }
    ),
    dependencies=[Depends(single_values(NeighboursQuery))],
)
def kg_neighbours(request: Annotated[NeighboursQuery, Query()], service: Service) -> Response:
    """Every entity of that name answers (a person and a concept may share one); typed
    relations come before co-occurrences. The same answer as `mind kg neighbours --json`."""
    return JSONAnswer(service.neighbours(request))
