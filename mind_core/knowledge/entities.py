"""Entity rows: creating, changing and retiring them, and finding them by id, type, name or in text.

An entity is found by its ``(entity_type, lower(name))`` key through ``idx_entities_type_lname``;
``upsert_entity`` keeps one active entity per key. Names are compared as SQLite's ``lower()``
folds them (ASCII only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.knowledge.model import Entity, entity_from_row
from mind_core.knowledge.validation import (
    ValidationSchema,
    dump_properties,
    require_count,
    require_id,
    require_text,
    validity_span,
)
from mind_core.knowledge.versions import Versions
from mind_core.store.db import IN_LIST, escape_like, in_list, well_formed

# Longest entity name (in words) that find_entities_in_text can recognise.
MAX_NAME_WORDS = 6
MIN_TEXT_MATCH_LENGTH = 3
_POSSESSIVES = ("'s", "\u2019s")
_TEXT_TOKEN_EDGES = "\"'`.,;:!?()[]{}<>*_~|/\\-\u2018\u2019\u201c\u201d"


def text_name_candidates(text: str, max_words: int = MAX_NAME_WORDS) -> set[str]:
    """Lower-cased word n-grams of ``text`` that an entity name could equal.

    Words are whitespace-separated tokens. Punctuation inside an n-gram is kept ("u.s. army",
    "node.js"), so a sentence break ("Alice. Johnson") does not fuse two words into a name;
    punctuation at the n-gram's two ends is stripped, and a trailing possessive ('s) is also
    tried without it ("Falcon's" -> "falcon").
    """
    tokens = text.lower().split()
    candidates: set[str] = set()
    for start in range(len(tokens)):
        for end in range(start + 1, min(start + max_words, len(tokens)) + 1):
            gram = " ".join(tokens[start:end]).strip(_TEXT_TOKEN_EDGES)
            if len(gram) < MIN_TEXT_MATCH_LENGTH:
                continue
            candidates.add(gram)
            if gram.endswith(_POSSESSIVES) and len(gram) - 2 >= MIN_TEXT_MATCH_LENGTH:
                candidates.add(gram[:-2].strip(_TEXT_TOKEN_EDGES))
    return candidates


class EntityRows(Versions, ValidationSchema):
    """The ``knowledge_entities`` table of a graph."""

    def create_entity(
        self,
        entity_type: str,
        name: str,
        properties: Mapping[str, Any] | None = None,
        valid_from: str | None = None,
        valid_to: str | None = None,
    ) -> Entity:
        """Insert a new entity (no dedup: ``upsert_entity`` is the deduplicating path)."""
        require_text(entity_type, "entity_type")
        require_text(name, "name")
        props_json = dump_properties(properties)
        self._validate_entity(entity_type, properties or {})
        now = self.clock()
        start, end = validity_span(valid_from, valid_to, now)
        cursor = self.db.execute(
            "INSERT INTO knowledge_entities (entity_type, name, properties, valid_from, valid_to, recorded_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (entity_type, name, props_json, start, end, now),
        )
        return self._entity_by_id(cursor.lastrowid)

    def get_entity(self, entity_id: int) -> Entity | None:
        """The entity, retired or not; None when the id does not exist."""
        row = self.db.query_one(
            "SELECT * FROM knowledge_entities WHERE id = ?", (require_id(entity_id, "entity_id"),)
        )
        return None if row is None else entity_from_row(row)

    def _entity_by_id(self, entity_id: int) -> Entity:
        entity = self.get_entity(entity_id)
        if entity is None:
            raise NotFoundError(f"no knowledge entity with id {entity_id}")
        return entity

    def update_entity(
        self, entity_id: int, name: str | None = None, properties: Mapping[str, Any] | None = None
    ) -> Entity:
        """Change name and/or properties, keeping the previous version in ``knowledge_versions``
        and stamping ``recorded_at``."""
        self._entity_by_id(entity_id)
        now = self.clock()
        self._keep_version("entity", entity_id, now)
        sets, params = ["recorded_at = ?"], [now]
        if name is not None:
            sets.append("name = ?")
            params.append(require_text(name, "name"))
        if properties is not None:
            sets.append("properties = ?")
            params.append(dump_properties(properties))
        self.db.execute(f"UPDATE knowledge_entities SET {', '.join(sets)} WHERE id = ?", (*params, entity_id))
        return self._entity_by_id(entity_id)

    def retire_entity(self, entity_id: int) -> bool:
        """End the entity's validity now; False when it was already retired (its end is kept).

        Its relations stay as they are, as in the original; retire them explicitly if needed.
        """
        return self._retire("entity", self._entity_by_id(entity_id).id)

    def get_entities_by_type(self, entity_type: str, limit: int = 500) -> list[Entity]:
        if not entity_type:
            return self.get_entities(limit)
        rows = self.db.query(
            "SELECT * FROM knowledge_entities WHERE entity_type = ? AND valid_to IS NULL ORDER BY name, id LIMIT ?",
            (entity_type, require_count(limit, "limit")),
        )
        return [entity_from_row(r) for r in rows]

    def get_entities(self, limit: int = 200, offset: int = 0) -> list[Entity]:
        rows = self.db.query(
            "SELECT * FROM knowledge_entities WHERE valid_to IS NULL ORDER BY name, id LIMIT ? OFFSET ?",
            (require_count(limit, "limit"), require_count(offset, "offset")),
        )
        return [entity_from_row(r) for r in rows]

    def search_entities(self, query: str, limit: int = 100) -> list[Entity]:
        """Active entities whose name contains ``query`` (ASCII case-insensitive, wildcards literal)."""
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string, got {query!r}")
        rows = self.db.query(
            "SELECT * FROM knowledge_entities WHERE name LIKE ? ESCAPE '\\' AND valid_to IS NULL"
            " ORDER BY name, id LIMIT ?",
            (f"%{escape_like(well_formed(query))}%", require_count(limit, "limit")),
        )
        return [entity_from_row(r) for r in rows]

    def get_entity_type_counts(self) -> list[tuple[str, int]]:
        """``(type, active count)`` pairs, most common type first."""
        rows = self.db.query(
            "SELECT entity_type AS type, COUNT(*) AS count FROM knowledge_entities WHERE valid_to IS NULL"
            " GROUP BY entity_type ORDER BY count DESC, type"
        )
        return [(r["type"], r["count"]) for r in rows]

    def get_entity_count(self) -> int:
        return int(self.db.scalar("SELECT COUNT(*) FROM knowledge_entities WHERE valid_to IS NULL"))

    def find_entity(self, entity_type: str, name: str) -> Entity | None:
        """The oldest active entity of this type whose name equals ``name`` ignoring ASCII case.

        Uses the ``(entity_type, lower(name))`` index, so it sees every entity of the type.
        """
        row = self.db.query_one(
            "SELECT * FROM knowledge_entities WHERE entity_type = ? AND lower(name) = lower(?)"
            " AND valid_to IS NULL ORDER BY id LIMIT 1",
            (require_text(entity_type, "entity_type"), require_text(name, "name")),
        )
        return None if row is None else entity_from_row(row)

    def upsert_entity(
        self, entity_type: str, name: str, properties: Mapping[str, Any] | None = None
    ) -> tuple[int, bool]:
        """``(id, created)``: the active entity with this type and name, created when absent.

        An existing entity is returned unchanged (its properties are not merged).
        """
        with self.db.transaction():
            existing = self.find_entity(entity_type, name)
            if existing is not None:
                return existing.id, False
            return self.create_entity(entity_type, name, properties).id, True

    def find_entities_in_text(self, text: str, limit: int = 12) -> list[Entity]:
        """Active entities (name of 3+ chars) named in ``text`` as whole words, longest name first.

        Instead of testing every entity name against the text (the original's ``instr`` over
        all rows), the text's word n-grams (up to ``MAX_NAME_WORDS`` words, see
        ``text_name_candidates``) are looked up through the ``(entity_type, lower(name))``
        index, so the cost follows the text's length, not the graph's size. Matching is on
        whole words: "rust" is not found in "trust". Case folding is SQLite's (ASCII).
        """
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be a string, got {text!r}")
        require_count(limit, "limit")
        candidates = text_name_candidates(text)
        if not candidates or limit == 0:
            return []
        types = self._entity_types()
        if not types:
            return []
        rows = self.db.query(
            f"SELECT * FROM knowledge_entities WHERE entity_type IN ({IN_LIST})"
            f" AND lower(name) IN ({IN_LIST}) AND valid_to IS NULL"
            " AND length(name) >= ? ORDER BY length(name) DESC, id LIMIT ?",
            (in_list(types), in_list(candidates), MIN_TEXT_MATCH_LENGTH, limit),
        )
        return [entity_from_row(r) for r in rows]

    def _entity_types(self) -> list[str]:
        """Distinct entity types by hopping through idx_entities_type (a loose index scan), so
        the cost grows with the number of types, not of entities."""
        rows = self.db.query(
            "WITH RECURSIVE t(v) AS (SELECT MIN(entity_type) FROM knowledge_entities"
            " UNION ALL SELECT (SELECT MIN(entity_type) FROM knowledge_entities WHERE entity_type > t.v)"
            " FROM t WHERE t.v IS NOT NULL) SELECT v FROM t WHERE v IS NOT NULL"
        )
        return [r[0] for r in rows]
