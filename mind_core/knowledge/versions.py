"""The graph's two time axes: earlier versions, ending and back-dating facts, as-of reads.

Valid time (``valid_from`` / ``valid_to``, NULL = still valid) is when a fact held in the world.
Transaction time (``recorded_at``) is when the mind came to believe a row's current version.
Every change of belief first copies the row as it was into ``knowledge_versions`` (believed
until ``superseded_at``), so ``entities_as_of`` / ``relations_as_of`` answer "what did the mind
believe at T" (``known_at``), "what held at T" (``valid_at``), or both.

Stored times may mix formats (the original's ``YYYY-MM-DD HH:MM:SS``, callers' offsets), so SQL
compares them with ``julianday(col)`` and Python after ``normalize_iso``, never as strings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.knowledge.model import (
    MERGED_INTO,
    Entity,
    Relation,
    ascii_lower,
    entity_from_row,
    load_properties,
    relation_from_row,
)
from mind_core.knowledge.validation import require_count, require_id, require_instant, require_text
from mind_core.store.db import IN_LIST, Database, in_list
from mind_core.timestamps import normalize_iso

TABLES = {"entity": "knowledge_entities", "relation": "knowledge_relations"}
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
_NOT_MERGED = f"NOT (json_valid(properties) AND json_type(properties, '$.{MERGED_INTO}') IS NOT NULL)"


@dataclass(frozen=True)
class _RowFilter:
    """One condition of an as-of query: SQL for the live rows, the same test in Python for the
    versions (stored as JSON)."""

    sql: str
    params: tuple[Any, ...]
    keeps: Callable[[dict[str, Any]], bool]


def earlier(first: str, second: str) -> bool:
    """``first`` is an earlier instant than ``second`` (stored strings may mix formats)."""
    try:
        return normalize_iso(first) < normalize_iso(second)
    except ValueError:
        return False


def not_before(end: str, start: str) -> str:
    """An ending no earlier than the start (a fact dated after the deletion ends as it begins)."""
    return start if earlier(end, start) else end


def _aliases(properties: str | None) -> list[str]:
    """The names an entity is also known by (``properties.aliases``), from its stored JSON."""
    stated = load_properties(properties).get("aliases")
    return [a for a in stated if isinstance(a, str)] if isinstance(stated, list) else []


def _holds_at(valid_from: str, valid_to: str | None, at: str) -> bool:
    try:
        return normalize_iso(valid_from) <= at and (valid_to is None or normalize_iso(valid_to) > at)
    except ValueError:
        return False


class Versions:
    """Versions, validity changes and as-of reads over the entity and relation tables."""

    db: Database
    clock: Callable[[], str]  # transaction time: when the mind records a version

    def _keep_version(self, kind: str, row_id: int, superseded_at: str) -> None:
        """Copy the row as it is now into ``knowledge_versions``, believed until ``superseded_at``."""
        table = TABLES[kind]
        self.db.execute(
            "INSERT INTO knowledge_versions (kind, row_id, data, recorded_at, superseded_at)"
            f" SELECT ?, id, json_object({_ROW_JSON[kind]}), recorded_at, ? FROM {table} WHERE id = ?",
            (kind, superseded_at, row_id),
        )

    def _retire(self, kind: str, row_id: int, valid_to: str | None = None) -> bool:
        with self.db.transaction():
            table = TABLES[kind]
            row = self.db.query_one(f"SELECT valid_from, valid_to FROM {table} WHERE id = ?", (row_id,))
            if row is None or row["valid_to"] is not None:
                return False
            now = self.clock()
            end = now if valid_to is None else require_instant(valid_to, "valid_to")
            if valid_to is not None and earlier(end, row["valid_from"]):
                raise InvalidInputError(f"valid_to ({end}) is before valid_from ({row['valid_from']})")
            self._keep_version(kind, row_id, now)
            self.db.execute(f"UPDATE {table} SET valid_to = ?, recorded_at = ? WHERE id = ?", (end, now, row_id))
            return True

    def end_validity(self, kind: str, row_id: int, valid_to: str) -> bool:
        """End an entity's or relation's validity at ``valid_to``, an instant the evidence gives
        (a note marked done when it was last edited), not now; the previous version is kept.
        False when it had already ended."""
        if kind not in TABLES:
            raise InvalidInputError(f"kind must be 'entity' or 'relation', got {kind!r}")
        return self._retire(kind, require_id(row_id, "id"), valid_to)

    def extend_validity_back(self, kind: str, row_id: int, valid_from: str) -> bool:
        """Move an entity's or relation's ``valid_from`` back to ``valid_from`` when evidence shows
        it held earlier (a mail from 2009 found after one from 2012); the previous version is
        kept. False when it already started at or before that instant."""
        if kind not in TABLES:
            raise InvalidInputError(f"kind must be 'entity' or 'relation', got {kind!r}")
        start = require_instant(valid_from, "valid_from")
        table = TABLES[kind]
        with self.db.transaction():
            current = self.db.scalar(f"SELECT valid_from FROM {table} WHERE id = ?", (require_id(row_id, "id"),))
            if current is None:
                raise NotFoundError(f"no knowledge {kind} with id {row_id}")
            if not earlier(start, current):
                return False
            now = self.clock()
            self._keep_version(kind, row_id, now)
            self.db.execute(f"UPDATE {table} SET valid_from = ?, recorded_at = ? WHERE id = ?", (start, now, row_id))
            return True

    def entity_history(self, entity_id: int) -> list[Entity]:
        """Every version of an entity, oldest belief first, the current row last."""
        return [entity_from_row(r) for r in self._history("entity", entity_id)]

    def relation_history(self, relation_id: int) -> list[Relation]:
        return [relation_from_row(r) for r in self._history("relation", relation_id)]

    def _history(self, kind: str, row_id: int) -> list[dict[str, Any]]:
        rows = self.db.query(
            "SELECT data FROM knowledge_versions WHERE kind = ? AND row_id = ? ORDER BY id",
            (kind, require_id(row_id, "id")),
        )
        versions = [json.loads(r["data"]) for r in rows]
        current = self.db.query_one(f"SELECT * FROM {TABLES[kind]} WHERE id = ?", (row_id,))
        return versions + ([dict(current)] if current is not None else [])

    def get_entities_valid_at(self, instant: str, limit: int = 500) -> list[Entity]:
        """Entities whose span ``[valid_from, valid_to)`` contains ``instant``, retired or not."""
        at = require_instant(instant, "instant")
        rows = self.db.query(
            "SELECT * FROM knowledge_entities WHERE julianday(valid_from) <= julianday(?)"
            " AND (valid_to IS NULL OR julianday(valid_to) > julianday(?)) ORDER BY id LIMIT ?",
            (at, at, require_count(limit, "limit")),
        )
        return [entity_from_row(r) for r in rows]

    def get_relations_valid_at(
        self,
        instant: str,
        source_id: int | None = None,
        target_id: int | None = None,
        relation_type: str | None = None,
        limit: int = 500,
    ) -> list[Relation]:
        """Relations whose own span contains ``instant`` (the endpoints' spans are not consulted)."""
        at = require_instant(instant, "instant")
        sql = (
            "SELECT * FROM knowledge_relations WHERE julianday(valid_from) <= julianday(?)"
            " AND (valid_to IS NULL OR julianday(valid_to) > julianday(?))"
        )
        params: list[Any] = [at, at]
        if source_id is not None:
            sql += " AND source_id = ?"
            params.append(require_id(source_id, "source_id"))
        if target_id is not None:
            sql += " AND target_id = ?"
            params.append(require_id(target_id, "target_id"))
        if relation_type:
            sql += " AND relation_type = ?"
            params.append(relation_type)
        params.append(require_count(limit, "limit"))
        return [relation_from_row(r) for r in self.db.query(sql + " ORDER BY id LIMIT ?", params)]

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
            wanted = {require_id(i, "id") for i in ids}
            filters.append(_RowFilter(f"id IN ({IN_LIST})", (in_list(sorted(wanted)),), lambda r: r["id"] in wanted))
        if name is not None:
            folded = ascii_lower(require_text(name, "name"))
            filters.append(_RowFilter("lower(name) = ?", (folded,), lambda r: ascii_lower(r["name"]) == folded))
        if alias is not None:
            wanted_alias = ascii_lower(require_text(alias, "alias"))
            filters.append(
                _RowFilter(
                    "json_valid(properties) AND EXISTS (SELECT 1 FROM json_each(properties, '$.aliases') a"
                    " WHERE a.type = 'text' AND lower(a.value) = ?)",
                    (wanted_alias,),
                    lambda r: wanted_alias in {ascii_lower(a) for a in _aliases(r["properties"])},
                )
            )
        found = [entity_from_row(r) for r in self._as_of("entity", valid_at, known_at, filters)]
        return sorted(found, key=lambda e: (e.name.lower(), e.id))[: require_count(limit, "limit")]

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
            touching = require_id(entity_id, "entity_id")
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
        found = [relation_from_row(r) for r in self._as_of("relation", valid_at, known_at, filters)]
        return sorted(found, key=lambda r: r.id)[: require_count(limit, "limit")]

    def _not_ended(self, known_at: str | None) -> _RowFilter:
        """Rows whose validity had not ended by ``known_at`` (None = now): the current facts."""
        at = self.clock() if known_at is None else require_instant(known_at, "known_at")
        return _RowFilter(
            "(valid_to IS NULL OR julianday(valid_to) > julianday(?))",
            (at,),
            lambda r: r["valid_to"] is None or earlier(at, r["valid_to"]),
        )

    def _as_of(
        self, kind: str, valid_at: str | None, known_at: str | None, filters: Sequence[_RowFilter] = ()
    ) -> list[dict[str, Any]]:
        table = TABLES[kind]
        at = None if valid_at is None else require_instant(valid_at, "valid_at")
        # a row merged into another never held; before the merge its versions still show it
        clauses: list[str] = [_NOT_MERGED, *(f.sql for f in filters)]
        params: list[Any] = [p for f in filters for p in f.params]
        if at is not None:  # the live rows are filtered in SQL; the (fewer) versions below in Python
            clauses.append(
                "julianday(valid_from) <= julianday(?) AND (valid_to IS NULL OR julianday(valid_to) > julianday(?))"
            )
            params += [at, at]
        if known_at is not None:
            known = require_instant(known_at, "known_at")
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
