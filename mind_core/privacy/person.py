"""Who a ``--person`` forget is about, and where they are: names and addresses from the knowledge
graph, the frames they wrote, and the frames, facts and notes that mention them.

A person is named by a name, an alias or an address; the knowledge graph's matching entities
(``person`` entities, and any entity named like them or holding one of their addresses) add
their other names (``aliases``) and addresses, so "zq@example.org" finds "Zephyrine Quarlesworth"
and her other address. The frames they wrote are those whose author or ``from`` header is one of
these; every other mention is replaced by the placeholder (``tombstones.PLACEHOLDER``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from mind_core.privacy.keys import person_term
from mind_core.privacy.tombstones import ADDRESS, PLACEHOLDER
from mind_core.store.db import Database, escape_like


@dataclass
class Person:
    """A person to forget: the entity ids that are them, their names and their addresses."""

    given: str
    entity_ids: set[int] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    addresses: set[str] = field(default_factory=set)

    @property
    def terms(self) -> set[str]:
        """Their names and addresses as ``keys.person_term`` compares them."""
        return {person_term(v) for v in self.names | self.addresses} - {""}

    def is_them(self, value: Any) -> bool:
        """Whether an author or a ``Name <address>`` header value is this person."""
        if not isinstance(value, str) or not value.strip():
            return False
        candidates = [value, *ADDRESS.findall(value)]
        if "<" in value:
            candidates.append(value.split("<", 1)[0].strip().strip("\"'"))
        return any(person_term(c) in self.terms for c in candidates if person_term(c))

    def like_patterns(self) -> list[str]:
        """``LIKE`` patterns that every text mentioning them matches (and some that do not: the
        regex of ``redact`` decides); names as their words in order, JSON-escaped forms too."""
        patterns = set()
        for value in self.addresses | self.names:
            words = (
                [escape_like(w) for w in re.findall(r"[^\W_]+", value)]
                if "@" not in value
                else [escape_like(value)]
            )
            for form in (words, [json.dumps(w)[1:-1] for w in words]):
                if form:
                    patterns.add("%" + "%".join(form) + "%")
        return sorted(patterns)

    def pattern(self) -> re.Pattern[str] | None:
        """One regex for every address and name of theirs (longest first, whole words only)."""
        alternatives = [re.escape(a) for a in self.addresses]
        for name in self.names:
            words = re.findall(r"[^\W_]+", name)
            if words:
                alternatives.append(r"[\W_]+".join(re.escape(w) for w in words))
        if not alternatives:
            return None
        alternatives.sort(key=len, reverse=True)
        return re.compile(r"(?<![^\W_])(?:" + "|".join(alternatives) + r")(?![^\W_])", re.IGNORECASE)


def redact(value: Any, pattern: re.Pattern[str]) -> Any:
    """A string or JSON-like value with every match of ``pattern`` replaced by the placeholder."""
    if isinstance(value, str):
        return pattern.sub(PLACEHOLDER, value)
    if isinstance(value, dict):
        return {k: redact(v, pattern) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, pattern) for v in value]
    return value


def _properties(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def find_person(db: Database, given: str) -> Person:
    """The person ``given`` names, with what the knowledge graph knows of their other names and
    addresses (two rounds: an address found on the first entity finds the second)."""
    person = Person(given.strip())
    if "@" in given and " " not in given.strip():
        person.addresses.add(given.strip().strip("<>").lower())
    else:
        person.names.add(given.strip())
    rows = db.query("SELECT id, entity_type, name, properties FROM knowledge_entities")
    for _ in range(2):
        terms = person.terms
        for row in rows:
            properties = _properties(row["properties"])
            addresses = {a.lower() for a in _strings(properties.get("addresses"))}
            aliases = set(_strings(properties.get("aliases")))
            own = {person_term(row["name"])} | {person_term(a) for a in aliases} | addresses
            named = person_term(row["name"]) in terms
            if named or (row["entity_type"] == "person" and own & terms):
                person.entity_ids.add(row["id"])
                if row["entity_type"] == "person":
                    person.names |= {row["name"], *aliases}
                    person.addresses |= addresses
    return person
