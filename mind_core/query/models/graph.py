"""The knowledge graph's answers: entities, relations and neighbours on both time axes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)


class Entity(BaseModel):
    """One version of a knowledge-graph entity, on both time axes."""

    id: int = Field(description="The entity's id in the mind's knowledge graph.")
    entity_type: str = Field(description="person, project, organization, topic ...")
    name: str = Field(description="The entity's name.")
    properties: dict[str, Any] = Field(description="What cognify learned about it (aliases, e-mail ...).")
    valid_from: str = Field(description="Since when it holds in the world (valid time, ISO-8601).")
    valid_to: str | None = Field(description="Until when it held; null: it still holds.")
    recorded_at: str = Field(description="When the mind learned this version (transaction time).")


ENTITY_EXAMPLE: dict[str, Any] = {
    "id": 7,
    "entity_type": "person",
    "name": "Bob Smith",
    "properties": {"email": "bob.smith@example.com", "aliases": ["Bob"]},
    "valid_from": "2024-03-11T08:02:00.000Z",
    "valid_to": None,
    "recorded_at": "2024-03-12T18:00:03.410Z",
}
RELATION_EXAMPLE: dict[str, Any] = {
    "id": 31,
    "relation_type": "replied_to",
    "source_id": 7,
    "source": "Bob Smith",
    "source_type": "person",
    "target_id": 12,
    "target": "PostgreSQL migration plan for Falcon",
    "target_type": "thread",
    "confidence": 1.0,
    "properties": {"count": 2},
    "valid_from": "2024-03-11T09:30:00.000Z",
    "valid_to": None,
    "recorded_at": "2024-03-12T18:00:03.410Z",
}


class EntitiesResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"entities": [ENTITY_EXAMPLE]}]})

    entities: list[Entity] = Field(description="At most limit entities whose name contains the query.")


class GraphAnswer(BaseModel):
    """The time axes a knowledge-graph answer was read on (None: not restricted / now)."""

    valid_at: str | None = Field(description="The valid-time instant asked for, as given; null: the current facts.")
    known_at: str | None = Field(
        description="The transaction-time instant asked for, as given; null: as the mind believes it now."
    )
    include_ended: bool = Field(False, description="Ended facts included (asked for, or by valid_at).")


class GraphEntitiesResponse(GraphAnswer):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "valid_at": "2024-03-12",
                    "known_at": None,
                    "include_ended": True,
                    "entities": [ENTITY_EXAMPLE],
                    "truncated": False,
                }
            ]
        }
    )

    entities: list[Entity] = Field(description="By name; each version as believed at known_at.")
    truncated: bool = Field(False, description="More entities match than limit: these are the first.")


class GraphRelation(BaseModel):
    id: int = Field(description="The relation's id in the mind's knowledge graph.")
    relation_type: str = Field(description="What joins the two: replied_to, sent, links_to, co_occurs_with ...")
    source_id: int = Field(description="The entity the relation goes from.")
    source: str | None = Field(description="The source entity's name as known at known_at.")
    source_type: str | None = Field(description="The source entity's type.")
    target_id: int = Field(description="The entity the relation goes to.")
    target: str | None = Field(description="The target entity's name as known at known_at.")
    target_type: str | None = Field(description="The target entity's type.")
    confidence: float = Field(description="0..1, how sure the extraction was (1: stated).")
    properties: dict[str, Any] = Field(description="What was learnt with it (count: how often it was seen ...).")
    valid_from: str = Field(description="Since when it holds in the world (valid time, ISO-8601).")
    valid_to: str | None = Field(description="Until when it held; null: it still holds.")
    recorded_at: str = Field(description="When the mind learned this version (transaction time).")


class GraphRelationsResponse(GraphAnswer):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "valid_at": None,
                    "known_at": None,
                    "include_ended": False,
                    "relations": [RELATION_EXAMPLE],
                    "truncated": False,
                }
            ]
        }
    )

    relations: list[GraphRelation] = Field(description="Typed relations before co-occurrences, each by id.")
    truncated: bool = Field(False, description="More relations match than limit: these are the first.")


class Neighbour(BaseModel):
    """One relation of an entity named so; ordered per entity (by id), typed relations before
    co-occurrences, then by confidence and sightings."""

    entity_id: int = Field(description="The entity asked about (one of the entities named so).")
    entity_type: str = Field(description="That entity's type: two entities may share a name.")
    entity: str = Field(description="That entity's name.")
    direction: Literal["out", "in"] = Field(description="out: the entity is the relation's source.")
    neighbour_id: int = Field(description="The entity at the relation's other end.")
    neighbour: str | None = Field(description="Its name as known at known_at.")
    neighbour_type: str | None = Field(description="Its type.")
    relation: GraphRelation = Field(description="The relation itself.")


class NeighboursResponse(GraphAnswer):
    name: str = Field(description="The name asked about, as given.")
    entities: list[Entity] = Field(description="The entities with this name (any type).")
    neighbours: list[Neighbour] = Field(description="At most limit relations of those entities, the strongest first.")
