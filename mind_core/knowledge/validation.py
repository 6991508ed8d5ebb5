"""What the knowledge graph accepts: checked arguments and the optional validation schema.

Malformed arguments raise ``InvalidInputError`` before anything is written, and so do
validation-schema violations, with the original's exact messages. Timestamps given by callers
are normalised to canonical UTC ISO here, so every time the graph writes compares as an instant.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mind_core.errors import InvalidInputError
from mind_core.timestamps import normalize_iso


@dataclass(frozen=True)
class EntityTypeRule:
    """What a validation schema demands of one entity type.

    ``allowed_relations=None`` means the type may have any outgoing relation (the original
    would crash on a rule without ``allowedRelations``).
    """

    required: tuple[str, ...] = ()
    allowed_relations: frozenset[str] | None = field(default=None)


def require_text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{what} must be a non-empty string, got {value!r}")
    return value


def require_id(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{what} must be an integer id, got {value!r}")
    return value


def require_count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{what} must be a non-negative integer, got {value!r}")
    return value


def require_confidence(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"confidence must be a finite number, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise InvalidInputError(f"confidence must lie in [0, 1], got {value!r}")
    return float(value)


def dump_properties(properties: Mapping[str, Any] | None) -> str:
    """``properties`` as the stored JSON object (keys sorted, so equal properties store equal)."""
    if properties is None:
        return "{}"
    if not isinstance(properties, Mapping):
        raise InvalidInputError(f"properties must be a mapping, got {type(properties).__name__}")
    try:
        return json.dumps(dict(properties), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"properties are not JSON-serialisable: {exc}") from exc


def require_instant(value: object, what: str) -> str:
    """A caller's timestamp as canonical UTC ISO."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be an ISO-8601 timestamp string, got {value!r}")
    try:
        return normalize_iso(value)
    except ValueError as exc:
        raise InvalidInputError(f"{what} is not a valid timestamp: {value!r}") from exc


def validity_span(valid_from: str | None, valid_to: str | None, now: str) -> tuple[str, str | None]:
    """A new row's ``(valid_from, valid_to)``: starting now unless told, never ending before it starts."""
    start = now if valid_from is None else require_instant(valid_from, "valid_from")
    end = None if valid_to is None else require_instant(valid_to, "valid_to")
    if end is not None and end < start:  # both canonical, so string order is time order
        raise InvalidInputError(f"valid_to ({end}) is before valid_from ({start})")
    return start, end


class ValidationSchema:
    """The graph's optional per-type rules: required properties and allowed outgoing relations."""

    _schema: dict[str, EntityTypeRule] | None = None

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
