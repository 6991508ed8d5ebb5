"""Knowledge-graph queries on both time axes, answered the same way for ``mind kg ... --json``,
the HTTP service (``/kg/...``) and the MCP tools (``kg_*``): one request model in, one response
model out (``mind_core.query.models``), so the three surfaces return the same JSON.

Entities are named as the mind believed them at ``known_at``; ``valid_at`` restricts the entities
or relations asked for, not the names of the entities at a relation's ends (an entity that
ended keeps its name). Without ``valid_at`` the answer holds the current facts, those not ended
(by ``known_at``, or now); ``include_ended`` adds the ended ones, the graph's history.
"""

from __future__ import annotations

from typing import Any

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.knowledge.extraction import ENTITY_TYPES
from mind_core.knowledge.graph import KnowledgeGraph
from mind_core.knowledge.model import CO_OCCURS_WITH, Entity, Relation
from mind_core.query.models import graph as answers
from mind_core.query.models import requests


def entity_types(knowledge: KnowledgeGraph | None) -> set[str]:
    """The entity types a filter may name: those extraction makes and every one the graph holds
    (ended versions included: valid_at may ask for them)."""
    return {*ENTITY_TYPES, *_types_held(knowledge, "knowledge_entities", "entity_type")}


def relation_types(knowledge: KnowledgeGraph | None) -> set[str]:
    """The relation types the graph holds, ended versions included."""
    return _types_held(knowledge, "knowledge_relations", "relation_type")


def _types_held(knowledge: KnowledgeGraph | None, table: str, column: str) -> set[str]:
    if knowledge is None:
        return set()
    return {row[0] for row in knowledge.db.query(f"SELECT DISTINCT {column} FROM {table}")}


def require_known_type(value: str | None, known: set[str], what: str) -> None:
    """A type filter no entity or relation can match would answer an empty list, a typo
    (``persons``) with it: refused, naming the types there are, on every surface alike (the
    command line's --type, HTTP's type, MCP's entity_type and relation_type). A graph that holds
    no relations yet accepts any relation type: there is nothing to list."""
    if value is not None and known and value not in known:
        raise InvalidInputError(f"unknown {what} type {value!r}; known types: {', '.join(sorted(known))}")


def _axes(request: requests.GraphRequest) -> dict[str, Any]:
    """The time axes as the knowledge graph takes them: without ``valid_at``, only the facts not
    ended unless ``include_ended`` (with it, ``valid_at`` alone says which held)."""
    return {
        "valid_at": request.valid_at,
        "known_at": request.known_at,
        "include_ended": request.include_ended or request.valid_at is not None,
    }


def _strength(relation: Relation) -> tuple[bool, float, int]:
    """Stated or typed relations first, co-occurrences after; then confidence, then sightings."""
    count = relation.properties.get("count")
    sightings = count if isinstance(count, int) and not isinstance(count, bool) else 1
    return relation.relation_type == CO_OCCURS_WITH, -relation.confidence, -sightings


def _entity(entity: Entity) -> answers.Entity:
    return answers.Entity.model_validate(entity.__dict__)


def _known_entities(knowledge: KnowledgeGraph, ids: set[int], known_at: str | None) -> dict[int, Entity]:
    """The entities with these ids as believed at ``known_at``, by id."""
    if not ids:
        return {}
    return {e.id: e for e in knowledge.entities_as_of(known_at=known_at, limit=len(ids), ids=ids)}


def _ends(relations: list[Relation]) -> set[int]:
    return {i for r in relations for i in (r.source_id, r.target_id)}


def _relation(relation: Relation, entities: dict[int, Entity]) -> answers.GraphRelation:
    source, target = entities.get(relation.source_id), entities.get(relation.target_id)
    return answers.GraphRelation(
        id=relation.id,
        relation_type=relation.relation_type,
        source_id=relation.source_id,
        source=source.name if source else None,
        source_type=source.entity_type if source else None,
        target_id=relation.target_id,
        target=target.name if target else None,
        target_type=target.entity_type if target else None,
        confidence=relation.confidence,
        properties=relation.properties,
        valid_from=relation.valid_from,
        valid_to=relation.valid_to,
        recorded_at=relation.recorded_at,
    )


def graph_entities(
    knowledge: KnowledgeGraph | None, request: requests.GraphEntitiesRequest
) -> answers.GraphEntitiesResponse:
    """Entities (of ``request.type``) on both axes; a mind that does not exist knows none."""
    require_known_type(request.type, entity_types(knowledge), "entity")
    found = (
        []
        if knowledge is None  # one more than asked: whether the answer was cut
        else knowledge.entities_as_of(**_axes(request), entity_type=request.type, limit=request.limit + 1)
    )
    return answers.GraphEntitiesResponse(
        **_axes(request),
        entities=[_entity(e) for e in found[: request.limit]],
        truncated=len(found) > request.limit,
    )


def graph_relations(
    knowledge: KnowledgeGraph | None, request: requests.GraphRelationsRequest
) -> answers.GraphRelationsResponse:
    """Relations (of ``request.type``) on both axes, with the names of the entities they join."""
    require_known_type(request.type, relation_types(knowledge), "relation")
    if knowledge is None:
        return answers.GraphRelationsResponse(**_axes(request), relations=[])
    found = knowledge.relations_as_of(**_axes(request), relation_type=request.type, limit=request.limit + 1)
    truncated, found = len(found) > request.limit, found[: request.limit]
    entities = _known_entities(knowledge, _ends(found), request.known_at)
    return answers.GraphRelationsResponse(
        **_axes(request), relations=[_relation(r, entities) for r in found], truncated=truncated
    )


def neighbours(
    knowledge: KnowledgeGraph | None, request: requests.NeighboursRequest
) -> answers.NeighboursResponse:
    """The relations of every entity named ``request.name`` (ASCII case ignored, any type), on both axes,
    or, when none is, of every entity with that name among its ``aliases`` (a first name merged
    into the full one, a note's alias). Each row names the entity it belongs to; the strongest
    come first (``_strength``), so a person's replies come before the names that merely appeared
    beside theirs. NotFoundError when the mind knew neither at ``known_at``."""
    axes = _axes(request)
    current = {"known_at": request.known_at, "limit": 2**31, "include_ended": axes["include_ended"]}
    matches = (
        []
        if knowledge is None
        else knowledge.entities_as_of(**current, name=request.name.strip())
        or knowledge.entities_as_of(**current, alias=request.name.strip())
    )
    if knowledge is None or not matches:
        hint = "" if axes["include_ended"] else "; ended entities are left out unless include_ended (--include-ended)"
        raise NotFoundError(f"no entity named {request.name!r} (as known at {request.known_at or 'now'}){hint}")
    matches.sort(key=lambda e: e.id)
    # every relation of every match, the strongest first across them, then cut to the limit
    ranked = sorted(
        (
            (relation, entity)
            for entity in matches
            for relation in knowledge.relations_as_of(**axes, entity_id=entity.id, limit=2**31)
        ),
        key=lambda pair: (*_strength(pair[0]), pair[1].id, pair[0].id),  # equals: by entity, then relation
    )[: request.limit]
    entities = _known_entities(knowledge, _ends([relation for relation, _ in ranked]), request.known_at)
    found: list[answers.Neighbour] = []
    for relation, entity in ranked:
        outgoing = relation.source_id == entity.id
        other_id = relation.target_id if outgoing else relation.source_id
        other = entities.get(other_id)
        found.append(
            answers.Neighbour(
                entity_id=entity.id,
                entity_type=entity.entity_type,
                entity=entity.name,
                direction="out" if outgoing else "in",
                neighbour_id=other_id,
                neighbour=other.name if other else None,
                neighbour_type=other.entity_type if other else None,
                relation=_relation(relation, entities),
            )
        )
    return answers.NeighboursResponse(
        **axes,
        name=request.name,
        entities=[_entity(e) for e in matches],
        neighbours=found,
    )
