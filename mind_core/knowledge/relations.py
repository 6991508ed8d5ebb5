"""Relation rows: typed edges between entities, created, counted per sighting, retired.

``upsert_relation`` / ``upsert_relations`` keep one active relation per (source, target, type);
an undirected type (``co_occurs_with``) is one row for both directions. A repeated sighting is
not a new version (the fact was already believed): it raises ``properties.count`` and keeps the
higher confidence, and moves ``valid_from`` back when the sighting is older.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.knowledge.entities import EntityRows
from mind_core.knowledge.model import (
    UNDIRECTED_RELATION_TYPES,
    Relation,
    RelationSighting,
    load_properties,
    relation_from_row,
)
from mind_core.knowledge.validation import (
    dump_properties,
    require_confidence,
    require_id,
    require_instant,
    require_text,
    validity_span,
)
from mind_core.knowledge.versions import earlier
from mind_core.store.db import IN_LIST, in_list


@dataclass
class _HeldRelation:
    """An active relation being upserted in bulk: what an update rewrites."""

    id: int
    properties: dict[str, Any]
    confidence: float
    valid_from: str


def _next_count(properties: Mapping[str, Any]) -> int:
    """``properties.count`` after one more sighting (a malformed count restarts from 1)."""
    previous = properties.get("count")
    return (previous if isinstance(previous, int) and not isinstance(previous, bool) else 1) + 1


def _relation_key(source_id: int, target_id: int, relation_type: str) -> tuple[str, int, int]:
    """What makes two relations the same one: undirected types ignore the direction."""
    if relation_type in UNDIRECTED_RELATION_TYPES and target_id < source_id:
        return relation_type, target_id, source_id
    return relation_type, source_id, target_id


class RelationRows(EntityRows):
    """The ``knowledge_relations`` table of a graph."""

    def create_relation(
        self,
        source_id: int,
        target_id: int,
        relation_type: str,
        confidence: float = 1.0,
        properties: Mapping[str, Any] | None = None,
        valid_from: str | None = None,
        valid_to: str | None = None,
    ) -> Relation:
        """Insert a relation (no dedup: ``upsert_relation`` is the deduplicating path)."""
        require_text(relation_type, "relation_type")
        conf = require_confidence(confidence)
        props_json = dump_properties(properties)
        source = self._entity_by_id(require_id(source_id, "source_id"))
        self._entity_by_id(require_id(target_id, "target_id"))
        self._validate_relation(source.entity_type, relation_type)
        now = self.clock()
        start, end = validity_span(valid_from, valid_to, now)
        cursor = self.db.execute(
            "INSERT INTO knowledge_relations"
            " (source_id, target_id, relation_type, confidence, properties, valid_from, valid_to, recorded_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (source_id, target_id, relation_type, conf, props_json, start, end, now),
        )
        return self._relation_by_id(cursor.lastrowid)

    def get_relation(self, relation_id: int) -> Relation | None:
        row = self.db.query_one(
            "SELECT * FROM knowledge_relations WHERE id = ?", (require_id(relation_id, "relation_id"),)
        )
        return None if row is None else relation_from_row(row)

    def _relation_by_id(self, relation_id: int) -> Relation:
        relation = self.get_relation(relation_id)
        if relation is None:
            raise NotFoundError(f"no knowledge relation with id {relation_id}")
        return relation

    def get_relations_from(self, source_id: int, relation_type: str | None = None) -> list[Relation]:
        """Active outgoing relations, optionally of one type."""
        return self._active_relations("source_id", source_id, relation_type)

    def get_relations_to(self, target_id: int, relation_type: str | None = None) -> list[Relation]:
        """Active incoming relations, optionally of one type."""
        return self._active_relations("target_id", target_id, relation_type)

    def _active_relations(self, column: str, entity_id: int, relation_type: str | None) -> list[Relation]:
        sql = f"SELECT * FROM knowledge_relations WHERE {column} = ? AND valid_to IS NULL"
        params: list[Any] = [require_id(entity_id, column)]
        if relation_type:
            sql += " AND relation_type = ?"
            params.append(relation_type)
        return [relation_from_row(r) for r in self.db.query(sql + " ORDER BY id", params)]

    def retire_relation(self, relation_id: int) -> bool:
        """End the relation's validity now; False when it was already retired."""
        return self._retire("relation", self._relation_by_id(relation_id).id)

    def find_relation(self, source_id: int, target_id: int, relation_type: str) -> Relation | None:
        """The oldest active relation of this type between the two entities.

        For undirected types (``co_occurs_with``) either direction counts.
        """
        directions = [(source_id, target_id)]
        if relation_type in UNDIRECTED_RELATION_TYPES and source_id != target_id:
            directions.append((target_id, source_id))
        clause = " OR ".join("(source_id = ? AND target_id = ?)" for _ in directions)
        row = self.db.query_one(
            f"SELECT * FROM knowledge_relations WHERE relation_type = ? AND valid_to IS NULL AND ({clause})"
            " ORDER BY id LIMIT 1",
            (relation_type, *(v for pair in directions for v in pair)),
        )
        return None if row is None else relation_from_row(row)

    def upsert_relation(
        self,
        source_id: int,
        target_id: int,
        relation_type: str,
        confidence: float = 1.0,
        properties: Mapping[str, Any] | None = None,
    ) -> tuple[int, bool]:
        """``(id, created)`` keeping one active relation per (source, target, type).

        A repeat sighting increments ``properties["count"]`` (a new relation starts at 1) and
        keeps the higher confidence; the existing properties are otherwise kept.
        """
        require_text(relation_type, "relation_type")
        conf = require_confidence(confidence)
        dump_properties(properties)  # reject unusable properties before any write
        with self.db.transaction():
            existing = self.find_relation(
                require_id(source_id, "source_id"), require_id(target_id, "target_id"), relation_type
            )
            if existing is None:
                props = dict(properties or {})
                props.setdefault("count", 1)
                return self.create_relation(source_id, target_id, relation_type, conf, props).id, True
            props = dict(existing.properties)
            props["count"] = _next_count(props)
            self.db.execute(
                "UPDATE knowledge_relations SET properties = ?, confidence = ? WHERE id = ?",
                (dump_properties(props), max(existing.confidence, conf), existing.id),
            )
            return existing.id, False

    def upsert_relations(
        self,
        sightings: Sequence[RelationSighting],
        on_invalid: Callable[[RelationSighting, InvalidInputError], None] | None = None,
    ) -> list[tuple[int, bool] | None]:
        """``upsert_relation`` for many sightings, with the same outcome as calling it for each in
        order, in one transaction and a few statements (the bulk path of cognify).

        Returns ``(id, created)`` per sighting; ``created`` is True only for the sighting that
        created the relation. A sighting the validation schema rejects raises, or, with
        ``on_invalid``, is reported to it and gets None. Unknown entity ids raise ``NotFoundError``.
        """
        checked: set[int] = set()  # property mappings shared by many sightings are checked once
        for sighting in sightings:
            require_id(sighting.source_id, "source_id")
            require_id(sighting.target_id, "target_id")
            require_text(sighting.relation_type, "relation_type")
            require_confidence(sighting.confidence)
            if id(sighting.properties) not in checked:
                dump_properties(sighting.properties)
                checked.add(id(sighting.properties))
        if not sightings:
            return []
        with self.db.transaction():
            types = self._entity_types_of({i for s in sightings for i in (s.source_id, s.target_id)})
            held = self._active_relations_between(sightings)
            results: list[tuple[int, bool] | None] = []
            changed: dict[int, _HeldRelation] = {}
            moved_back: dict[int, str] = {}  # relations a sighting shows valid before their valid_from
            for sighting in sightings:
                key = _relation_key(sighting.source_id, sighting.target_id, sighting.relation_type)
                relation = held.get(key)
                if relation is not None:
                    relation.properties["count"] = _next_count(relation.properties)
                    relation.confidence = max(relation.confidence, float(sighting.confidence))
                    changed[relation.id] = relation
                    if sighting.valid_from is not None:
                        start = require_instant(sighting.valid_from, "valid_from")
                        if earlier(start, relation.valid_from):
                            relation.valid_from = start
                            moved_back[relation.id] = start
                    results.append((relation.id, False))
                    continue
                try:
                    self._validate_relation(types[sighting.source_id], sighting.relation_type)
                except InvalidInputError as exc:
                    if on_invalid is None:
                        raise
                    on_invalid(sighting, exc)
                    results.append(None)
                    continue
                props = dict(sighting.properties or {})
                props.setdefault("count", 1)
                now = self.clock()
                start = now if sighting.valid_from is None else require_instant(sighting.valid_from, "valid_from")
                relation_id = self.db.execute(
                    "INSERT INTO knowledge_relations (source_id, target_id, relation_type, confidence,"
                    " properties, valid_from, valid_to, recorded_at) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
                    (
                        sighting.source_id,
                        sighting.target_id,
                        sighting.relation_type,
                        float(sighting.confidence),
                        dump_properties(props),
                        start,
                        now,
                    ),
                ).lastrowid
                held[key] = _HeldRelation(relation_id, props, float(sighting.confidence), start)
                results.append((relation_id, True))
            self.db.executemany(
                "UPDATE knowledge_relations SET properties = ?, confidence = ? WHERE id = ?",
                [(dump_properties(r.properties), r.confidence, r.id) for r in changed.values()],
            )
            for relation_id, start in moved_back.items():
                self.extend_validity_back("relation", relation_id, start)
        return results

    def _entity_types_of(self, entity_ids: Iterable[int]) -> dict[int, str]:
        ids = sorted(entity_ids)
        rows = self.db.query(
            f"SELECT id, entity_type FROM knowledge_entities WHERE id IN ({IN_LIST})", (in_list(ids),)
        )
        types = {row["id"]: row["entity_type"] for row in rows}
        missing = [i for i in ids if i not in types]
        if missing:
            raise NotFoundError(f"no knowledge entity with id {missing[0]}")
        return types

    def _active_relations_between(
        self, sightings: Sequence[RelationSighting]
    ) -> dict[tuple[str, int, int], _HeldRelation]:
        """The oldest active relation per sighting key, found through ``idx_relations_pair``."""
        probes = {(s.source_id, s.target_id, s.relation_type) for s in sightings}
        probes |= {(t, s, r) for s, t, r in probes if r in UNDIRECTED_RELATION_TYPES}
        rows = self.db.query(
            "SELECT r.id, r.source_id, r.target_id, r.relation_type, r.confidence, r.properties, r.valid_from"
            " FROM json_each(?) j JOIN knowledge_relations r"
            " ON r.source_id = json_extract(j.value, '$[0]') AND r.target_id = json_extract(j.value, '$[1]')"
            " AND r.relation_type = json_extract(j.value, '$[2]') WHERE r.valid_to IS NULL ORDER BY r.id",
            (in_list(sorted(probes)),),
        )
        found: dict[tuple[str, int, int], _HeldRelation] = {}
        for row in rows:
            key = _relation_key(row["source_id"], row["target_id"], row["relation_type"])
            if key not in found:
                found[key] = _HeldRelation(
                    row["id"], load_properties(row["properties"]), float(row["confidence"]), row["valid_from"]
                )
        return found
