"""What the knowledge graph holds: entities, relations and the sightings that create them, as
values, and how a stored row (or an earlier version's JSON copy of one) reads as such a value.

Rows written by other tools (the original, a hand edit) may hold anything in ``properties``;
reading them never fails, a non-object reads as no properties.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

CO_OCCURS_WITH = "co_occurs_with"
# Relation types whose direction carries no meaning: one row stands for both directions.
UNDIRECTED_RELATION_TYPES = frozenset({CO_OCCURS_WITH})

# The property of an entity or relation merged into another (``merge_entity``): the other's id.
MERGED_INTO = "merged_into"


@dataclass(frozen=True)
class Entity:
    id: int
    entity_type: str
    name: str
    properties: dict[str, Any]
    valid_from: str
    valid_to: str | None
    recorded_at: str

    @property
    def active(self) -> bool:
        return self.valid_to is None


@dataclass(frozen=True)
class Relation:
    id: int
    source_id: int
    target_id: int
    relation_type: str
    confidence: float
    properties: dict[str, Any]
    valid_from: str
    valid_to: str | None
    recorded_at: str

    @property
    def active(self) -> bool:
        return self.valid_to is None


@dataclass(frozen=True)
class RelationSighting:
    """One observation of a relation for ``upsert_relations``; ``properties`` apply only when
    the relation is created."""

    source_id: int
    target_id: int
    relation_type: str
    confidence: float = 1.0
    properties: Mapping[str, Any] | None = None
    valid_from: str | None = None  # the supporting frame's event time; None = now


def load_properties(text: str | None) -> dict[str, Any]:
    """Rows written by other tools may hold anything; a non-object reads as no properties."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def credit_extractors(properties: Mapping[str, Any], found_by: Iterable[str]) -> dict[str, Any] | None:
    """``properties`` with the names of ``found_by`` added to its ``extractors`` list (a
    structure entity's single ``extractor`` counts as the first), or None when all were there:
    an entity records every extractor that found it, first sighting first."""
    stated = properties.get("extractors")
    known = [name for name in stated if isinstance(name, str)] if isinstance(stated, list) else []
    if not known and isinstance(properties.get("extractor"), str):
        known = [properties["extractor"]]
    added = [name for name in dict.fromkeys(found_by) if name not in known]
    return {**properties, "extractors": known + added} if added else None


# SQLite's lower() folds ASCII only; a name compared or keyed in Python must fold the same way,
# or a non-ASCII name would be looked up under another key than idx_entities_type_lname's.
_ASCII_FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def ascii_lower(text: str) -> str:
    """``text`` lower-cased as SQLite's ``lower()`` does it (ASCII letters only)."""
    return text.translate(_ASCII_FOLD)


def entity_from_row(row: Any) -> Entity:
    """An entity from a ``knowledge_entities`` row or a version's JSON copy of one."""
    return Entity(
        id=row["id"],
        entity_type=row["entity_type"],
        name=row["name"],
        properties=load_properties(row["properties"]),
        valid_from=row["valid_from"],
        valid_to=row["valid_to"],
        recorded_at=row["recorded_at"],
    )


def relation_from_row(row: Any) -> Relation:
    """A relation from a ``knowledge_relations`` row or a version's JSON copy of one."""
    return Relation(
        id=row["id"],
        source_id=row["source_id"],
        target_id=row["target_id"],
        relation_type=row["relation_type"],
        confidence=float(row["confidence"]),
        properties=load_properties(row["properties"]),
        valid_from=row["valid_from"],
        valid_to=row["valid_to"],
        recorded_at=row["recorded_at"],
    )
