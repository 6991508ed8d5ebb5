"""The bitemporal knowledge graph: entities and typed relations that are valid over a time span.

Every entity and relation row carries ``valid_from`` / ``valid_to`` (NULL = still valid) and
``recorded_at``. Nothing is hard-deleted here: retiring sets ``valid_to``, and as-of queries
(``get_entities_valid_at``, ``get_relations_valid_at``) answer "what was true at instant T".

Two time axes. Valid time is when a fact held in the world: learned from a frame, it starts at
the frame's event time, and only explicit evidence ends it. Transaction time (``recorded_at``)
is when the mind came to believe the row's current version. A change (``update_entity``,
retiring, moving ``valid_from`` earlier) first copies the row as it was into
``knowledge_versions``, so ``entities_as_of`` / ``relations_as_of`` answer "what did the mind
believe at T" (``known_at``), "what held at T" (``valid_at``), or both. A repeated sighting
(a relation's count and confidence) is not a new version: the fact was already believed.

Time handling. Everything this class writes is canonical UTC ISO (``now_iso`` /
``normalize_iso``). Minds written by the original also hold SQLite's ``YYYY-MM-DD HH:MM:SS``
and callers' ISO strings with offsets, so every time comparison is made on instants with
``julianday(col)``, never on the strings (the original compared strings of mixed formats).

Errors. Lookups by id that may legitimately miss (``get_entity``, ``get_relation``,
``find_entity``) return None; traversals from an unknown id return empty results; writes that
need an existing row (update, retire, relate, link) raise ``NotFoundError``; malformed
arguments raise ``InvalidInputError``, as do validation-schema violations (with the
original's exact messages).
"""

from __future__ import annotations

import json
import math
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.store.db import Database, escape_like, well_formed
from mind_core.timestamps import normalize_iso, now_iso

CO_OCCURS_WITH = "co_occurs_with"
# Relation types whose direction carries no meaning: one row stands for both directions.
UNDIRECTED_RELATION_TYPES = frozenset({CO_OCCURS_WITH})

# The property of an entity or relation merged into another (``merge_entity``): the other's id.
MERGED_INTO = "merged_into"

# Bound parameter lists well below SQLite's limit; frontiers and id lists are chunked by this.
_CHUNK = 500
# Longest entity name (in words) that find_entities_in_text can recognise.
MAX_NAME_WORDS = 6
MIN_TEXT_MATCH_LENGTH = 3
_POSSESSIVES = ("'s", "\u2019s")
_TEXT_TOKEN_EDGES = "\"'`.,;:!?()[]{}<>*_~|/\\-\u2018\u2019\u201c\u201d"


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


@dataclass(frozen=True)
class EntityTypeRule:
    """What a validation schema demands of one entity type.

    ``allowed_relations=None`` means the type may have any outgoing relation (the original
    would crash on a rule without ``allowedRelations``).
    """

    required: tuple[str, ...] = ()
    allowed_relations: frozenset[str] | None = field(default=None)


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


_NOT_MERGED = f"NOT (json_valid(properties) AND json_type(properties, '$.{MERGED_INTO}') IS NOT NULL)"


def _aliases(properties: str | None) -> list[str]:
    aliases = load_properties(properties).get("aliases")
    return [a for a in aliases if isinstance(a, str)] if isinstance(aliases, list) else []


def _count(properties: Mapping[str, Any]) -> int:
    """A relation's sightings (``properties.count``; 1 when missing or malformed)."""
    count = properties.get("count")
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1


def _entity(row: Any) -> Entity:
    return Entity(
        id=row["id"],
        entity_type=row["entity_type"],
        name=row["name"],
        properties=load_properties(row["properties"]),
        valid_from=row["valid_from"],
        valid_to=row["valid_to"],
        recorded_at=row["recorded_at"],
    )


def _relation(row: Any) -> Relation:
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


def _relation_key(source_id: int, target_id: int, relation_type: str) -> tuple[str, int, int]:
    """What makes two relations the same one: undirected types ignore the direction."""
    if relation_type in UNDIRECTED_RELATION_TYPES and target_id < source_id:
        return relation_type, target_id, source_id
    return relation_type, source_id, target_id


@dataclass
class _HeldRelation:
    """An active relation being upserted in bulk: what an update rewrites."""

    id: int
    properties: dict[str, Any]
    confidence: float
    valid_from: str



def _chunks(values: Sequence[Any], size: int = _CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _placeholders(count: int) -> str:
    return ",".join("?" * count)


def _require_text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _require_id(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{what} must be an integer id, got {value!r}")
    return value


def _require_count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{what} must be a non-negative integer, got {value!r}")
    return value


def _require_confidence(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"confidence must be a finite number, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise InvalidInputError(f"confidence must lie in [0, 1], got {value!r}")
    return float(value)


def _dump_properties(properties: Mapping[str, Any] | None) -> str:
    if properties is None:
        return "{}"
    if not isinstance(properties, Mapping):
        raise InvalidInputError(f"properties must be a mapping, got {type(properties).__name__}")
    try:
        return json.dumps(dict(properties), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"properties are not JSON-serialisable: {exc}") from exc


def _instant(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be an ISO-8601 timestamp string, got {value!r}")
    try:
        return normalize_iso(value)
    except ValueError as exc:
        raise InvalidInputError(f"{what} is not a valid timestamp: {value!r}") from exc


def _validity(valid_from: str | None, valid_to: str | None, now: str) -> tuple[str, str | None]:
    start = now if valid_from is None else _instant(valid_from, "valid_from")
    end = None if valid_to is None else _instant(valid_to, "valid_to")
    if end is not None and end < start:  # both canonical, so string order is time order
        raise InvalidInputError(f"valid_to ({end}) is before valid_from ({start})")
    return start, end


_TABLES = {"entity": "knowledge_entities", "relation": "knowledge_relations"}
_COLUMNS = {
    "entity": ("id", "entity_type", "name", "properties", "valid_from", "valid_to", "recorded_at"),
    "relation": (
        "id",
        "source_id",
        "target_id",
        "relation_type",
        "confidence",
        "properties",
        "valid_from",
        "valid_to",
        "recorded_at",
    ),
}
_ROW_JSON = {kind: ", ".join(f"'{c}', {c}" for c in columns) for kind, columns in _COLUMNS.items()}


@dataclass(frozen=True)
class _RowFilter:
    """One condition of an as-of query: SQL for the live rows, the same test in Python for the
    versions (stored as JSON)."""

    sql: str
    params: tuple[Any, ...]
    keeps: Callable[[dict[str, Any]], bool]


# SQLite's lower() folds ASCII only; a name compared in Python must fold the same way.
_ASCII_FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _ascii_lower(text: str) -> str:
    return text.translate(_ASCII_FOLD)


def _now() -> str:
    return now_iso()  # looked up at each call, so a test's clock patched over the module applies


def _earlier(first: str, second: str) -> bool:
    """``first`` is an earlier instant than ``second`` (stored strings may mix formats)."""
    try:
        return normalize_iso(first) < normalize_iso(second)
    except ValueError:
        return False


def _not_before(end: str, start: str) -> str:
    """An ending no earlier than the start (a fact dated after the deletion ends as it begins)."""
    return start if _earlier(end, start) else end


def _holds_at(valid_from: str, valid_to: str | None, at: str) -> bool:
    try:
        return normalize_iso(valid_from) <= at and (valid_to is None or normalize_iso(valid_to) > at)
    except ValueError:
        return False


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


class KnowledgeGraph:
    """Entities and relations of one mind, with validity spans and as-of queries."""

    def __init__(self, db: Database, clock: Callable[[], str] | None = None) -> None:
        self.db = db
        self._schema: dict[str, EntityTypeRule] | None = None
        self.clock = clock or _now  # transaction time: when the mind records a version

    # -- validation ---------------------------------------------------------------------------
    def set_validation_schema(self, schema: Mapping[str, Any] | None) -> None:
        """Enforce required properties and allowed relations per entity type; None turns it off.

        Each value is an ``EntityTypeRule`` or a mapping with ``required`` and
        ``allowed_relations`` (the original's ``allowedRelations`` is accepted too).
        """
        if schema is None:
            self._schema = None
            return
        if not isinstance(schema, Mapping):
            raise InvalidInputError("validation schema must be a mapping of entity type to rule")
        rules: dict[str, EntityTypeRule] = {}
        for entity_type, rule in schema.items():
            if isinstance(rule, EntityTypeRule):
                rules[entity_type] = rule
                continue
            if not isinstance(rule, Mapping):
                raise InvalidInputError(f"validation rule for {entity_type!r} must be a mapping")
            allowed = rule.get("allowed_relations", rule.get("allowedRelations"))
            rules[entity_type] = EntityTypeRule(
                required=tuple(rule.get("required") or ()),
                allowed_relations=None if allowed is None else frozenset(allowed),
            )
        self._schema = rules

    def _validate_entity(self, entity_type: str, properties: Mapping[str, Any]) -> None:
        rule = self._schema.get(entity_type) if self._schema else None
        if rule is None:
            return
        for key in rule.required:
            if key not in properties:
                raise InvalidInputError(
                    f"Validation failed: required property '{key}' missing for type '{entity_type}'"
                )

    def _validate_relation(self, source_type: str, relation_type: str) -> None:
        rule = self._schema.get(source_type) if self._schema else None
        if rule is None or rule.allowed_relations is None:
            return
        if relation_type not in rule.allowed_relations:
            raise InvalidInputError(
                f"Validation failed: relation '{relation_type}' not allowed for type '{source_type}'"
            )

    # -- entities -----------------------------------------------------------------------------
    def create_entity(
        self,
        entity_type: str,
        name: str,
        properties: Mapping[str, Any] | None = None,
        valid_from: str | None = None,
        valid_to: str | None = None,
    ) -> Entity:
        """Insert a new entity (no dedup: ``upsert_entity`` is the deduplicating path)."""
        _require_text(entity_type, "entity_type")
        _require_text(name, "name")
        props_json = _dump_properties(properties)
        self._validate_entity(entity_type, properties or {})
        now = self.clock()
        start, end = _validity(valid_from, valid_to, now)
        cursor = self.db.execute(
            "INSERT INTO knowledge_entities (entity_type, name, properties, valid_from, valid_to, recorded_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (entity_type, name, props_json, start, end, now),
        )
        return self._entity_by_id(cursor.lastrowid)

    def get_entity(self, entity_id: int) -> Entity | None:
        """The entity, retired or not; None when the id does not exist."""
        row = self.db.query_one(
            "SELECT * FROM knowledge_entities WHERE id = ?", (_require_id(entity_id, "entity_id"),)
        )
        return None if row is None else _entity(row)

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
            params.append(_require_text(name, "name"))
        if properties is not None:
            sets.append("properties = ?")
            params.append(_dump_properties(properties))
        self.db.execute(f"UPDATE knowledge_entities SET {', '.join(sets)} WHERE id = ?", (*params, entity_id))
        return self._entity_by_id(entity_id)

    def retire_entity(self, entity_id: int) -> bool:
        """End the entity's validity now; False when it was already retired (its end is kept).

        Its relations stay as they are, as in the original; retire them explicitly if needed.
        """
        return self._retire("entity", self._entity_by_id(entity_id).id)

    def merge_entity(self, duplicate_id: int, into_id: int) -> bool:
        """Record that two entities are one: ``duplicate_id`` (a first-name mention, a second
        spelling) is ``into_id``. A correction of belief, not an event: the duplicate is ended at
        its own ``valid_from`` (it never held) with ``properties.merged_into``, so no valid-time
        query shows it and ``known_at`` before the merge still does (its versions are kept).
        Its frame links move to ``into_id``, which takes its name into ``aliases``, its earlier
        ``valid_from`` and its ``extractors``; each of its active relations is carried over (a
        relation ``into_id`` already has gains its ``count``; one between the two ends with it)
        and ended the same way, the frames stating it now stating the carried one. False when the
        duplicate was no longer active."""
        duplicate = self._entity_by_id(_require_id(duplicate_id, "duplicate_id"))
        into = self._entity_by_id(_require_id(into_id, "into_id"))
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
            properties = dict(into.properties)
            aliases = [a for a in properties.get("aliases", []) if isinstance(a, str)]
            if duplicate.name not in aliases and duplicate.name.lower() != into.name.lower():
                properties["aliases"] = [*aliases, duplicate.name]
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
        return [_relation(r) for r in rows]

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
                    (_dump_properties(properties), max(held.confidence, relation.confidence), held.id),
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
            (_dump_properties({**relation.properties, MERGED_INTO: carried_to}), now, relation.id),
        )
        self._retire("relation", relation.id, relation.valid_from)

    def get_entities_by_type(self, entity_type: str, limit: int = 500) -> list[Entity]:
        if not entity_type:
            return self.get_entities(limit)
        rows = self.db.query(
            "SELECT * FROM knowledge_entities WHERE entity_type = ? AND valid_to IS NULL ORDER BY name, id LIMIT ?",
            (entity_type, _require_count(limit, "limit")),
        )
        return [_entity(r) for r in rows]

    def get_entities(self, limit: int = 200, offset: int = 0) -> list[Entity]:
        rows = self.db.query(
            "SELECT * FROM knowledge_entities WHERE valid_to IS NULL ORDER BY name, id LIMIT ? OFFSET ?",
            (_require_count(limit, "limit"), _require_count(offset, "offset")),
        )
        return [_entity(r) for r in rows]

    def search_entities(self, query: str, limit: int = 100) -> list[Entity]:
        """Active entities whose name contains ``query`` (ASCII case-insensitive, wildcards literal)."""
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string, got {query!r}")
        rows = self.db.query(
            "SELECT * FROM knowledge_entities WHERE name LIKE ? ESCAPE '\\' AND valid_to IS NULL"
            " ORDER BY name, id LIMIT ?",
            (f"%{escape_like(well_formed(query))}%", _require_count(limit, "limit")),
        )
        return [_entity(r) for r in rows]

    def get_entity_type_counts(self) -> list[tuple[str, int]]:
        """``(type, active count)`` pairs, most common type first."""
        rows = self.db.query(
            "SELECT entity_type AS type, COUNT(*) AS count FROM knowledge_entities WHERE valid_to IS NULL"
            " GROUP BY entity_type ORDER BY count DESC, type"
        )
        return [(r["type"], r["count"]) for r in rows]

    def get_entity_count(self) -> int:
        return int(self.db.scalar("SELECT COUNT(*) FROM knowledge_entities WHERE valid_to IS NULL"))

    def get_entities_valid_at(self, instant: str, limit: int = 500) -> list[Entity]:
        """Entities whose span ``[valid_from, valid_to)`` contains ``instant``, retired or not."""
        at = _instant(instant, "instant")
        rows = self.db.query(
            "SELECT * FROM knowledge_entities WHERE julianday(valid_from) <= julianday(?)"
            " AND (valid_to IS NULL OR julianday(valid_to) > julianday(?)) ORDER BY id LIMIT ?",
            (at, at, _require_count(limit, "limit")),
        )
        return [_entity(r) for r in rows]

    def find_entity(self, entity_type: str, name: str) -> Entity | None:
        """The oldest active entity of this type whose name equals ``name`` ignoring ASCII case.

        Uses the ``(entity_type, lower(name))`` index, so it sees every entity of the type.
        """
        row = self.db.query_one(
            "SELECT * FROM knowledge_entities WHERE entity_type = ? AND lower(name) = lower(?)"
            " AND valid_to IS NULL ORDER BY id LIMIT 1",
            (_require_text(entity_type, "entity_type"), _require_text(name, "name")),
        )
        return None if row is None else _entity(row)

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

    # -- relations ----------------------------------------------------------------------------
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
        _require_text(relation_type, "relation_type")
        conf = _require_confidence(confidence)
        props_json = _dump_properties(properties)
        source = self._entity_by_id(_require_id(source_id, "source_id"))
        self._entity_by_id(_require_id(target_id, "target_id"))
        self._validate_relation(source.entity_type, relation_type)
        now = self.clock()
        start, end = _validity(valid_from, valid_to, now)
        cursor = self.db.execute(
            "INSERT INTO knowledge_relations"
            " (source_id, target_id, relation_type, confidence, properties, valid_from, valid_to, recorded_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (source_id, target_id, relation_type, conf, props_json, start, end, now),
        )
        return self._relation_by_id(cursor.lastrowid)

    def get_relation(self, relation_id: int) -> Relation | None:
        row = self.db.query_one(
            "SELECT * FROM knowledge_relations WHERE id = ?", (_require_id(relation_id, "relation_id"),)
        )
        return None if row is None else _relation(row)

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
        params: list[Any] = [_require_id(entity_id, column)]
        if relation_type:
            sql += " AND relation_type = ?"
            params.append(relation_type)
        return [_relation(r) for r in self.db.query(sql + " ORDER BY id", params)]

    def get_relations_valid_at(
        self,
        instant: str,
        source_id: int | None = None,
        target_id: int | None = None,
        relation_type: str | None = None,
        limit: int = 500,
    ) -> list[Relation]:
        """Relations whose own span contains ``instant`` (the endpoints' spans are not consulted)."""
        at = _instant(instant, "instant")
        sql = (
            "SELECT * FROM knowledge_relations WHERE julianday(valid_from) <= julianday(?)"
            " AND (valid_to IS NULL OR julianday(valid_to) > julianday(?))"
        )
        params: list[Any] = [at, at]
        if source_id is not None:
            sql += " AND source_id = ?"
            params.append(_require_id(source_id, "source_id"))
        if target_id is not None:
            sql += " AND target_id = ?"
            params.append(_require_id(target_id, "target_id"))
        if relation_type:
            sql += " AND relation_type = ?"
            params.append(relation_type)
        params.append(_require_count(limit, "limit"))
        return [_relation(r) for r in self.db.query(sql + " ORDER BY id LIMIT ?", params)]

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
        return None if row is None else _relation(row)

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
        _require_text(relation_type, "relation_type")
        conf = _require_confidence(confidence)
        _dump_properties(properties)  # reject unusable properties before any write
        with self.db.transaction():
            existing = self.find_relation(
                _require_id(source_id, "source_id"), _require_id(target_id, "target_id"), relation_type
            )
            if existing is None:
                props = dict(properties or {})
                props.setdefault("count", 1)
                return self.create_relation(source_id, target_id, relation_type, conf, props).id, True
            props = dict(existing.properties)
            previous = props.get("count")
            props["count"] = (
                previous if isinstance(previous, int) and not isinstance(previous, bool) else 1
            ) + 1
            self.db.execute(
                "UPDATE knowledge_relations SET properties = ?, confidence = ? WHERE id = ?",
                (_dump_properties(props), max(existing.confidence, conf), existing.id),
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
            _require_id(sighting.source_id, "source_id")
            _require_id(sighting.target_id, "target_id")
            _require_text(sighting.relation_type, "relation_type")
            _require_confidence(sighting.confidence)
            if id(sighting.properties) not in checked:
                _dump_properties(sighting.properties)
                checked.add(id(sighting.properties))
        if not sightings:
            return []
        with self.db.transaction():
            types = self._entity_types_of({i for s in sightings for i in (s.source_id, s.target_id)})
            held = self._active_relations_between(sightings)
            results: list[tuple[int, bool] | None] = []
            changed: dict[int, _HeldRelation] = {}
            earlier: dict[int, str] = {}  # relations a sighting shows valid before their valid_from
            for sighting in sightings:
                key = _relation_key(sighting.source_id, sighting.target_id, sighting.relation_type)
                relation = held.get(key)
                if relation is not None:
                    previous = relation.properties.get("count")
                    relation.properties["count"] = (
                        previous if isinstance(previous, int) and not isinstance(previous, bool) else 1
                    ) + 1
                    relation.confidence = max(relation.confidence, float(sighting.confidence))
                    changed[relation.id] = relation
                    if sighting.valid_from is not None:
                        start = _instant(sighting.valid_from, "valid_from")
                        if _earlier(start, relation.valid_from):
                            relation.valid_from = start
                            earlier[relation.id] = start
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
                start = now if sighting.valid_from is None else _instant(sighting.valid_from, "valid_from")
                relation_id = self.db.execute(
                    "INSERT INTO knowledge_relations (source_id, target_id, relation_type, confidence,"
                    " properties, valid_from, valid_to, recorded_at) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
                    (
                        sighting.source_id,
                        sighting.target_id,
                        sighting.relation_type,
                        float(sighting.confidence),
                        _dump_properties(props),
                        start,
                        now,
                    ),
                ).lastrowid
                held[key] = _HeldRelation(relation_id, props, float(sighting.confidence), start)
                results.append((relation_id, True))
            self.db.executemany(
                "UPDATE knowledge_relations SET properties = ?, confidence = ? WHERE id = ?",
                [(_dump_properties(r.properties), r.confidence, r.id) for r in changed.values()],
            )
            for relation_id, start in earlier.items():
                self.extend_validity_back("relation", relation_id, start)
        return results

    def _entity_types_of(self, entity_ids: Iterable[int]) -> dict[int, str]:
        ids = sorted(entity_ids)
        types: dict[int, str] = {}
        for chunk in _chunks(ids):
            rows = self.db.query(
                f"SELECT id, entity_type FROM knowledge_entities WHERE id IN ({_placeholders(len(chunk))})",
                list(chunk),
            )
            types.update({row["id"]: row["entity_type"] for row in rows})
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
        found: dict[tuple[str, int, int], _HeldRelation] = {}
        ordered = sorted(probes)
        for chunk in _chunks(ordered):
            rows = self.db.query(
                "SELECT r.id, r.source_id, r.target_id, r.relation_type, r.confidence, r.properties, r.valid_from"
                " FROM json_each(?) j JOIN knowledge_relations r"
                " ON r.source_id = json_extract(j.value, '$[0]') AND r.target_id = json_extract(j.value, '$[1]')"
                " AND r.relation_type = json_extract(j.value, '$[2]') WHERE r.valid_to IS NULL ORDER BY r.id",
                (json.dumps(list(chunk)),),
            )
            for row in rows:
                key = _relation_key(row["source_id"], row["target_id"], row["relation_type"])
                if key not in found:
                    found[key] = _HeldRelation(
                        row["id"],
                        load_properties(row["properties"]),
                        float(row["confidence"]),
                        row["valid_from"],
                    )
        return found

    # -- versions and the two time axes -------------------------------------------------------
    def _keep_version(self, kind: str, row_id: int, superseded_at: str) -> None:
        """Copy the row as it is now into ``knowledge_versions``, believed until ``superseded_at``."""
        table = _TABLES[kind]
        self.db.execute(
            "INSERT INTO knowledge_versions (kind, row_id, data, recorded_at, superseded_at)"
            f" SELECT ?, id, json_object({_ROW_JSON[kind]}), recorded_at, ? FROM {table} WHERE id = ?",
            (kind, superseded_at, row_id),
        )

    def _retire(self, kind: str, row_id: int, valid_to: str | None = None) -> bool:
        with self.db.transaction():
            table = _TABLES[kind]
            row = self.db.query_one(f"SELECT valid_from, valid_to FROM {table} WHERE id = ?", (row_id,))
            if row is None or row["valid_to"] is not None:
                return False
            now = self.clock()
            end = now if valid_to is None else _instant(valid_to, "valid_to")
            if valid_to is not None and _earlier(end, row["valid_from"]):
                raise InvalidInputError(f"valid_to ({end}) is before valid_from ({row['valid_from']})")
            self._keep_version(kind, row_id, now)
            self.db.execute(f"UPDATE {table} SET valid_to = ?, recorded_at = ? WHERE id = ?", (end, now, row_id))
            return True

    def end_validity(self, kind: str, row_id: int, valid_to: str) -> bool:
        """End an entity's or relation's validity at ``valid_to``, an instant the evidence gives
        (a note marked done when it was last edited), not now; the previous version is kept.
        False when it had already ended."""
        if kind not in _TABLES:
            raise InvalidInputError(f"kind must be 'entity' or 'relation', got {kind!r}")
        return self._retire(kind, _require_id(row_id, "id"), valid_to)

    def extend_validity_back(self, kind: str, row_id: int, valid_from: str) -> bool:
        """Move an entity's or relation's ``valid_from`` back to ``valid_from`` when evidence shows
        it held earlier (a mail from 2009 found after one from 2012); the previous version is
        kept. False when it already started at or before that instant."""
        if kind not in _TABLES:
            raise InvalidInputError(f"kind must be 'entity' or 'relation', got {kind!r}")
        start = _instant(valid_from, "valid_from")
        table = _TABLES[kind]
        with self.db.transaction():
            current = self.db.scalar(f"SELECT valid_from FROM {table} WHERE id = ?", (_require_id(row_id, "id"),))
            if current is None:
                raise NotFoundError(f"no knowledge {kind} with id {row_id}")
            if not _earlier(start, current):
                return False
            now = self.clock()
            self._keep_version(kind, row_id, now)
            self.db.execute(f"UPDATE {table} SET valid_from = ?, recorded_at = ? WHERE id = ?", (start, now, row_id))
            return True

    def entity_history(self, entity_id: int) -> list[Entity]:
        """Every version of an entity, oldest belief first, the current row last."""
        return [_entity(r) for r in self._history("entity", entity_id)]

    def relation_history(self, relation_id: int) -> list[Relation]:
        return [_relation(r) for r in self._history("relation", relation_id)]

    def _history(self, kind: str, row_id: int) -> list[dict[str, Any]]:
        rows = self.db.query(
            "SELECT data FROM knowledge_versions WHERE kind = ? AND row_id = ? ORDER BY id",
            (kind, _require_id(row_id, "id")),
        )
        versions = [json.loads(r["data"]) for r in rows]
        current = self.db.query_one(f"SELECT * FROM {_TABLES[kind]} WHERE id = ?", (row_id,))
        return versions + ([dict(current)] if current is not None else [])

    def entities_as_of(
        self,
        valid_at: str | None = None,
        known_at: str | None = None,
        entity_type: str | None = None,
        limit: int = 500,
        *,
        ids: Iterable[int] | None = None,
        name: str | None = None,
        alias: str | None = None,
        include_ended: bool = True,
    ) -> list[Entity]:
        """Entities as the mind believed them at ``known_at`` (transaction time; None = now)
        whose validity contains ``valid_at`` (valid time; None = any time, retired included,
        unless ``include_ended`` is False: then only those not ended by ``known_at``);
        ``ids``, ``name`` and ``alias`` (one of ``properties.aliases``; names ASCII
        case-insensitive) narrow them down in the query itself."""
        filters = [] if include_ended else [self._not_ended(known_at)]
        if entity_type is not None:
            filters.append(_RowFilter("entity_type = ?", (entity_type,), lambda r: r["entity_type"] == entity_type))
        if ids is not None:
            wanted = {_require_id(i, "id") for i in ids}
            filters.append(
                _RowFilter("id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(wanted)),), lambda r: r["id"] in wanted)
            )
        if name is not None:
            folded = _ascii_lower(_require_text(name, "name"))
            filters.append(_RowFilter("lower(name) = ?", (folded,), lambda r: _ascii_lower(r["name"]) == folded))
        if alias is not None:
            wanted_alias = _ascii_lower(_require_text(alias, "alias"))
            filters.append(
                _RowFilter(
                    "json_valid(properties) AND EXISTS (SELECT 1 FROM json_each(properties, '$.aliases') a"
                    " WHERE a.type = 'text' AND lower(a.value) = ?)",
                    (wanted_alias,),
                    lambda r: wanted_alias in {_ascii_lower(a) for a in _aliases(r["properties"])},
                )
            )
        found = [_entity(r) for r in self._as_of("entity", valid_at, known_at, filters)]
        return sorted(found, key=lambda e: (e.name.lower(), e.id))[: _require_count(limit, "limit")]

    def relations_as_of(
        self,
        valid_at: str | None = None,
        known_at: str | None = None,
        entity_id: int | None = None,
        relation_type: str | None = None,
        limit: int = 500,
        *,
        include_ended: bool = True,
    ) -> list[Relation]:
        """Relations on both axes, as ``entities_as_of``; ``entity_id`` keeps those touching it."""
        filters = [] if include_ended else [self._not_ended(known_at)]
        if entity_id is not None:
            touching = _require_id(entity_id, "entity_id")
            filters.append(
                _RowFilter(
                    "(source_id = ? OR target_id = ?)",
                    (touching, touching),
                    lambda r: touching in (r["source_id"], r["target_id"]),
                )
            )
        if relation_type is not None:
            filters.append(
                _RowFilter("relation_type = ?", (relation_type,), lambda r: r["relation_type"] == relation_type)
            )
        found = [_relation(r) for r in self._as_of("relation", valid_at, known_at, filters)]
        return sorted(found, key=lambda r: r.id)[: _require_count(limit, "limit")]

    def _not_ended(self, known_at: str | None) -> _RowFilter:
        """Rows whose validity had not ended by ``known_at`` (None = now): the current facts."""
        at = self.clock() if known_at is None else _instant(known_at, "known_at")
        return _RowFilter(
            "(valid_to IS NULL OR julianday(valid_to) > julianday(?))",
            (at,),
            lambda r: r["valid_to"] is None or _earlier(at, r["valid_to"]),
        )

    def _as_of(
        self, kind: str, valid_at: str | None, known_at: str | None, filters: Sequence[_RowFilter] = ()
    ) -> list[dict[str, Any]]:
        table = _TABLES[kind]
        at = None if valid_at is None else _instant(valid_at, "valid_at")
        # a row merged into another never held; before the merge its versions still show it
        clauses: list[str] = [_NOT_MERGED, *(f.sql for f in filters)]
        params: list[Any] = [p for f in filters for p in f.params]
        if at is not None:  # the live rows are filtered in SQL; the (fewer) versions below in Python
            clauses.append(
                "julianday(valid_from) <= julianday(?) AND (valid_to IS NULL OR julianday(valid_to) > julianday(?))"
            )
            params += [at, at]
        if known_at is not None:
            known = _instant(known_at, "known_at")
            clauses.append("julianday(recorded_at) <= julianday(?)")
            params.append(known)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = [dict(r) for r in self.db.query(f"SELECT * FROM {table}{where}", params)]
        if known_at is not None:
            versions = (
                json.loads(r["data"])
                for r in self.db.query(
                    "SELECT data FROM knowledge_versions WHERE kind = ? AND julianday(recorded_at) <= julianday(?)"
                    " AND julianday(superseded_at) > julianday(?)",
                    (kind, known, known),
                )
            )
            rows += [r for r in versions if all(f.keeps(r) for f in filters)]
        if at is None:
            return rows
        return [r for r in rows if _holds_at(r["valid_from"], r["valid_to"], at)]

    # -- traversal ----------------------------------------------------------------------------
    def traverse(self, start_id: int, relation_type: str, max_depth: int) -> list[Entity]:
        """Active entities reachable along active outgoing ``relation_type`` edges, in BFS order.

        The start is excluded; cycles are safe; a retired entity is neither returned nor crossed.
        """
        _require_id(start_id, "start_id")
        _require_count(max_depth, "max_depth")
        visited = {start_id}
        frontier = [start_id]
        reached: list[Entity] = []
        for _ in range(max_depth):
            if not frontier:
                break
            next_frontier: list[int] = []
            position = {entity_id: i for i, entity_id in enumerate(frontier)}
            rows: list[Any] = []
            for chunk in _chunks(frontier):
                rows += self.db.query(
                    "SELECT e.*, r.source_id AS edge_source, r.id AS edge_id FROM knowledge_relations r"
                    " JOIN knowledge_entities e ON e.id = r.target_id"
                    f" WHERE r.source_id IN ({_placeholders(len(chunk))}) AND r.relation_type = ?"
                    " AND r.valid_to IS NULL",
                    (*chunk, relation_type),
                )
            rows.sort(key=lambda row: (position[row["edge_source"]], row["edge_id"]))
            for row in rows:
                if row["id"] in visited:
                    continue
                visited.add(row["id"])
                if row["valid_to"] is None:
                    reached.append(_entity(row))
                    next_frontier.append(row["id"])
            frontier = next_frontier
        return reached

    def bfs_distances(self, start_id: int, max_depth: int) -> dict[int, int]:
        """``{entity id: hops}`` along active outgoing edges of any type, start excluded.

        As in the original, retired target entities are included (only the edges must be active).
        """
        _require_id(start_id, "start_id")
        distances = self._bfs([start_id], _require_count(max_depth, "max_depth"), undirected=False)
        distances.pop(start_id, None)
        return distances

    def entity_distances(self, seeds: Sequence[int], max_depth: int) -> dict[int, int]:
        """``{entity id: hops}`` from the nearest seed over active relations, either direction."""
        return self._bfs(list(seeds), max_depth, undirected=True)

    def _bfs(self, seeds: Sequence[int], max_depth: int, *, undirected: bool) -> dict[int, int]:
        distances = {seed: 0 for seed in seeds}
        frontier = list(distances)
        for depth in range(1, max_depth + 1):
            if not frontier:
                break
            next_frontier: list[int] = []
            for chunk in _chunks(frontier):
                marks = _placeholders(len(chunk))
                sql = f"SELECT target_id AS n FROM knowledge_relations WHERE source_id IN ({marks}) AND valid_to IS NULL"
                params: list[int] = list(chunk)
                if undirected:
                    sql += (
                        " UNION SELECT source_id AS n FROM knowledge_relations"
                        f" WHERE target_id IN ({marks}) AND valid_to IS NULL"
                    )
                    params += list(chunk)
                for row in self.db.query(sql, params):
                    neighbour = row["n"]
                    if neighbour not in distances:
                        distances[neighbour] = depth
                        next_frontier.append(neighbour)
            frontier = next_frontier
        return distances

    # -- entity <-> frame bridge --------------------------------------------------------------
    def link_entity_to_frame(self, entity_id: int, frame_id: int) -> bool:
        """Record that the frame mentions the entity; False when the link already existed."""
        return self.link_entities_to_frame([entity_id], frame_id) == 1

    def link_entities_to_frame(self, entity_ids: Iterable[int], frame_id: int) -> int:
        """Link many entities to one frame in one statement; returns how many links are new."""
        ids = [_require_id(e, "entity_id") for e in entity_ids]
        _require_id(frame_id, "frame_id")
        if not ids:
            return 0
        before = self.db.conn.total_changes
        try:
            self.db.executemany(
                "INSERT OR IGNORE INTO kg_entity_frames (entity_id, frame_id) VALUES (?, ?)",
                [(e, frame_id) for e in dict.fromkeys(ids)],
            )
        except self.db.errors.IntegrityError as exc:
            raise NotFoundError(
                f"cannot link entities {ids} to frame {frame_id}: unknown entity or frame"
            ) from exc
        return self.db.conn.total_changes - before

    def link_relations_to_frames(self, links: Iterable[tuple[int, int]]) -> int:
        """Record that frames state relations, from ``(relation id, frame id)`` pairs; returns how
        many links are new. A relation is current while some frame states it."""
        rows = list(dict.fromkeys((_require_id(r, "relation_id"), _require_id(f, "frame_id")) for r, f in links))
        if not rows:
            return 0
        before = self.db.conn.total_changes
        try:
            self.db.executemany(
                "INSERT OR IGNORE INTO kg_relation_frames (relation_id, frame_id) VALUES (?, ?)", rows
            )
        except self.db.errors.IntegrityError as exc:
            raise NotFoundError(f"cannot link relations to frames {rows[:3]}: unknown relation or frame") from exc
        return self.db.conn.total_changes - before

    def frames_for_relation(self, relation_id: int) -> list[int]:
        rows = self.db.query(
            "SELECT frame_id FROM kg_relation_frames WHERE relation_id = ? ORDER BY frame_id",
            (_require_id(relation_id, "relation_id"),),
        )
        return [r["frame_id"] for r in rows]

    def move_evidence(self, from_frame_ids: Sequence[int], to_frame_id: int) -> None:
        """What these frames state is now stated by ``to_frame_id`` (their text was folded into it)."""
        ids = json.dumps([_require_id(i, "frame_id") for i in from_frame_ids])
        target = _require_id(to_frame_id, "frame_id")
        for table, column in (("kg_entity_frames", "entity_id"), ("kg_relation_frames", "relation_id")):
            self.db.execute(
                f"INSERT OR IGNORE INTO {table} ({column}, frame_id) SELECT {column}, ? FROM {table}"
                " WHERE frame_id IN (SELECT value FROM json_each(?))",
                (target, ids),
            )

    def note_evidence_lost(self, frame_ids: Sequence[int]) -> None:
        """Remember, with the time, the facts these frames state, before the frames are deleted.

        They are not ended here: a harvest deletes the frames of vanished items before it learns
        from its new ones, and a section whose heading was renamed is a new frame stating the same
        facts. ``end_facts_without_evidence``, run after the knowledge step, ends what has none left.
        """
        ids = json.dumps([_require_id(i, "frame_id") for i in frame_ids])
        now = self.clock()
        for kind, table, column in (
            ("entity", "kg_entity_frames", "entity_id"),
            ("relation", "kg_relation_frames", "relation_id"),
        ):
            self.db.execute(
                f"INSERT OR IGNORE INTO kg_evidence_lost (kind, row_id, lost_at) SELECT DISTINCT ?, {column}, ?"
                f" FROM {table} WHERE frame_id IN (SELECT value FROM json_each(?))",
                (kind, now, ids),
            )

    def end_facts_without_evidence(self) -> dict[str, int]:
        """End the current facts that lost evidence (``note_evidence_lost``) and have none left,
        valid until the instant they lost it; a relation touching an entity so ended ends with it
        (a link to a deleted note no longer resolves). The previous versions are kept, as on every
        ending; facts that still have evidence stay as they are. Returns what was ended."""
        ended = {"entities": 0, "relations": 0}
        with self.db.transaction():
            lost_entities = self.db.query(
                "SELECT e.id, e.valid_from, l.lost_at FROM kg_evidence_lost l JOIN knowledge_entities e"
                " ON l.kind = 'entity' AND e.id = l.row_id WHERE e.valid_to IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM kg_entity_frames b WHERE b.entity_id = e.id) ORDER BY e.id"
            )
            ended_at: dict[int, str] = {}
            for row in lost_entities:
                end = _not_before(row["lost_at"], row["valid_from"])
                ended["entities"] += self._retire("entity", row["id"], end)
                ended_at[row["id"]] = row["lost_at"]
            lost_relations = self.db.query(
                "SELECT r.id, r.valid_from, l.lost_at FROM kg_evidence_lost l JOIN knowledge_relations r"
                " ON l.kind = 'relation' AND r.id = l.row_id WHERE r.valid_to IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM kg_relation_frames b WHERE b.relation_id = r.id)"
            )
            ends = {row["id"]: (row["valid_from"], row["lost_at"]) for row in lost_relations}
            for chunk in _chunks(sorted(ended_at)):
                marks = _placeholders(len(chunk))
                for row in self.db.query(
                    "SELECT id, valid_from, source_id, target_id FROM knowledge_relations WHERE valid_to IS NULL"
                    f" AND (source_id IN ({marks}) OR target_id IN ({marks}))",
                    (*chunk, *chunk),
                ):
                    end = ended_at.get(row["source_id"]) or ended_at[row["target_id"]]
                    ends.setdefault(row["id"], (row["valid_from"], end))
            for relation_id, (valid_from, lost_at) in sorted(ends.items()):
                ended["relations"] += self._retire("relation", relation_id, _not_before(lost_at, valid_from))
            self.db.execute("DELETE FROM kg_evidence_lost")
        return ended

    def entities_for_frame(self, frame_id: int) -> list[Entity]:
        rows = self.db.query(
            "SELECT e.* FROM kg_entity_frames b JOIN knowledge_entities e ON e.id = b.entity_id"
            " WHERE b.frame_id = ? ORDER BY e.id",
            (_require_id(frame_id, "frame_id"),),
        )
        return [_entity(r) for r in rows]

    def frames_for_entity(self, entity_id: int) -> list[int]:
        rows = self.db.query(
            "SELECT frame_id FROM kg_entity_frames WHERE entity_id = ? ORDER BY frame_id",
            (_require_id(entity_id, "entity_id"),),
        )
        return [r["frame_id"] for r in rows]

    # -- text and search support --------------------------------------------------------------
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
        _require_count(limit, "limit")
        candidates = text_name_candidates(text)
        if not candidates or limit == 0:
            return []
        types = self._entity_types()
        if not types:
            return []
        rows = self.db.query(
            f"SELECT * FROM knowledge_entities WHERE entity_type IN ({_placeholders(len(types))})"
            " AND lower(name) IN (SELECT value FROM json_each(?)) AND valid_to IS NULL"
            " AND length(name) >= ? ORDER BY length(name) DESC, id LIMIT ?",
            (*types, json.dumps(list(candidates)), MIN_TEXT_MATCH_LENGTH, limit),
        )
        return [_entity(r) for r in rows]

    def _entity_types(self) -> list[str]:
        """Distinct entity types by hopping through idx_entities_type (a loose index scan), so
        the cost grows with the number of types, not of entities."""
        rows = self.db.query(
            "WITH RECURSIVE t(v) AS (SELECT MIN(entity_type) FROM knowledge_entities"
            " UNION ALL SELECT (SELECT MIN(entity_type) FROM knowledge_entities WHERE entity_type > t.v)"
            " FROM t WHERE t.v IS NOT NULL) SELECT v FROM t WHERE v IS NOT NULL"
        )
        return [r[0] for r in rows]

    def frame_distances_from_entities(
        self, seed_entity_ids: Iterable[int], max_depth: int = 3, frame_ids: Iterable[int] | None = None
    ) -> dict[int, int]:
        """``{frame id: distance}`` for the contextual relevance score.

        Seeds are at distance 0. Distances are hop counts over active relations treated as
        undirected (the graph's edges are mostly co-occurrences, whose stored direction is
        arbitrary, and "Falcon is led by Alice" relates Alice to Falcon as much as the reverse);
        a multi-source BFS gives each entity its minimum distance over all seeds. Each frame
        takes the minimum distance of the entities linked to it in ``kg_entity_frames``.
        ``frame_ids``: only these frames (a search's candidates): a speaker named in a question
        reaches most of a chat mind, whose every frame would otherwise be read.
        """
        seeds = list(dict.fromkeys(_require_id(s, "seed entity id") for s in seed_entity_ids))
        _require_count(max_depth, "max_depth")
        if not seeds:
            return {}
        entity_distances = self._bfs(seeds, max_depth, undirected=True)
        frames: dict[int, int] = {}
        column, ids = ("entity_id", list(entity_distances)) if frame_ids is None else ("frame_id", list(frame_ids))
        for chunk in _chunks(ids):
            rows = self.db.query(
                f"SELECT entity_id, frame_id FROM kg_entity_frames WHERE {column} IN ({_placeholders(len(chunk))})",
                list(chunk),
            )
            for row in rows:
                distance = entity_distances.get(row["entity_id"])
                current = frames.get(row["frame_id"])
                if distance is not None and (current is None or distance < current):
                    frames[row["frame_id"]] = distance
        return frames
