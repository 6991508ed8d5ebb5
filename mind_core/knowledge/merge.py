"""Merging duplicate entities: two rows found to be one person, project or place.

A merge is a correction of belief, not an event in the world: the duplicate never held, so it
is ended at its own ``valid_from`` and marked ``merged_into``; valid-time reads no longer show
it, while transaction-time reads from before the merge still do (its versions are kept).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mind_core.errors import InvalidInputError
from mind_core.knowledge.model import MERGED_INTO, Relation, credit_extractors, relation_from_row
from mind_core.knowledge.relations import RelationRows
from mind_core.knowledge.validation import dump_properties, require_id


def _count(properties: Mapping[str, Any]) -> int:
    """A relation's sightings (``properties.count``; 1 when missing or malformed)."""
    count = properties.get("count")
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _carried_names(
    name: str, properties: Mapping[str, Any], duplicate_name: str, duplicate: Mapping[str, Any]
) -> dict[str, Any]:
    """``properties`` with the duplicate's name, its aliases and its addresses added (a merged
    person keeps every name and address they were known by)."""
    carried = dict(properties)
    aliases = _strings(carried.get("aliases"))
    for alias in [duplicate_name, *_strings(duplicate.get("aliases"))]:
        if alias not in aliases and alias.lower() != name.lower():
            aliases.append(alias)
    if aliases:
        carried["aliases"] = aliases
    addresses = _strings(carried.get("addresses"))
    added = [a for a in _strings(duplicate.get("addresses")) if a.lower() not in {b.lower() for b in addresses}]
    if added:
        carried["addresses"] = addresses + added
    return carried


class EntityMerging(RelationRows):
    """``merge_entity`` and the carrying over of the duplicate's relations and evidence."""

    def merge_entity(self, duplicate_id: int, into_id: int) -> bool:
        """Record that two entities are one: ``duplicate_id`` (a first-name mention, a second
        spelling) is ``into_id``. A correction of belief, not an event: the duplicate is ended at
        its own ``valid_from`` (it never held) with ``properties.merged_into``, so no valid-time
        query shows it and ``known_at`` before the merge still does (its versions are kept).
        Its frame links move to ``into_id``, which takes its name and aliases into ``aliases``,
        its addresses, its earlier
        ``valid_from`` and its ``extractors``; each of its active relations is carried over (a
        relation ``into_id`` already has gains its ``count``; one between the two ends with it)
        and ended the same way, the frames stating it now stating the carried one. False when the
        duplicate was no longer active."""
        duplicate = self._entity_by_id(require_id(duplicate_id, "duplicate_id"))
        into = self._entity_by_id(require_id(into_id, "into_id"))
        if duplicate.id == into.id:
            raise InvalidInputError("an entity cannot be merged into itself")
        if not duplicate.active or not into.active:
            return False
        with self.db.transaction():
            self.db.execute(
                "INSERT OR IGNORE INTO kg_entity_frames (entity_id, frame_id)"
                " SELECT ?, frame_id FROM kg_entity_frames WHERE entity_id = ?",
                (into.id, duplicate.id),
            )
            self.db.execute("DELETE FROM kg_entity_frames WHERE entity_id = ?", (duplicate.id,))
            for relation in self._active_relations_touching(duplicate.id):
                self._carry_relation(relation, duplicate.id, into.id)
            properties = _carried_names(into.name, into.properties, duplicate.name, duplicate.properties)
            properties = credit_extractors(properties, duplicate.properties.get("extractors") or ()) or properties
            if properties != into.properties:
                self.update_entity(into.id, properties=properties)
            self.extend_validity_back("entity", into.id, duplicate.valid_from)
            self.update_entity(duplicate.id, properties={**duplicate.properties, MERGED_INTO: into.id})
            self._retire("entity", duplicate.id, duplicate.valid_from)
        return True

    def _active_relations_touching(self, entity_id: int) -> list[Relation]:
        rows = self.db.query(
            "SELECT * FROM knowledge_relations WHERE (source_id = ? OR target_id = ?) AND valid_to IS NULL ORDER BY id",
            (entity_id, entity_id),
        )
        return [relation_from_row(r) for r in rows]

    def _carry_relation(self, relation: Relation, duplicate_id: int, into_id: int) -> None:
        """``relation`` of the duplicate as a relation of ``into_id``, then ended as never held."""
        source = into_id if relation.source_id == duplicate_id else relation.source_id
        target = into_id if relation.target_id == duplicate_id else relation.target_id
        carried_to: int | None = None
        if source != target:
            held = self.find_relation(source, target, relation.relation_type)
            if held is None:
                carried_to = self.create_relation(
                    source,
                    target,
                    relation.relation_type,
                    relation.confidence,
                    relation.properties,
                    valid_from=relation.valid_from,
                ).id
            else:
                carried_to = held.id
                properties = dict(held.properties)
                properties["count"] = _count(held.properties) + _count(relation.properties)
                self.db.execute(
                    "UPDATE knowledge_relations SET properties = ?, confidence = ? WHERE id = ?",
                    (dump_properties(properties), max(held.confidence, relation.confidence), held.id),
                )
                self.extend_validity_back("relation", held.id, relation.valid_from)
            self.db.execute(  # the frames stating it now state the carried relation
                "INSERT OR IGNORE INTO kg_relation_frames (relation_id, frame_id)"
                " SELECT ?, frame_id FROM kg_relation_frames WHERE relation_id = ?",
                (carried_to, relation.id),
            )
        now = self.clock()
        self._keep_version("relation", relation.id, now)
        self.db.execute(
            "UPDATE knowledge_relations SET properties = ?, recorded_at = ? WHERE id = ?",
            (dump_properties({**relation.properties, MERGED_INTO: carried_to}), now, relation.id),
        )
        self._retire("relation", relation.id, relation.valid_from)
