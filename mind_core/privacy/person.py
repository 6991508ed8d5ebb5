"""Who a ``--person`` forget is about, and where they are: names and addresses from the knowledge
graph, the frames they wrote, and the frames, facts and notes that mention them.

A person is named by a name, an alias or an address; the knowledge graph's matching entities
(``person`` entities, and any entity named like them or holding one of their addresses) add
their other names (``aliases``) and addresses, so "zq@example.org" finds "Zephyrine Quarlesworth"
and her other address; this repeats until nothing new is found, so two entities sharing one
address or one name are one person. The frames they wrote are those whose author or ``from``
header is one of these; every other mention is replaced by the placeholder
(``tombstones.PLACEHOLDER``): whole addresses first, then names as whole words outside any
address (an alias "Alex" never rewrites ``alex.b@example.com``). A one-word name that is only
the first word of one of their longer names ("Alex" of "Alex Botero-Lowry", a first-name
mention the graph merged) is not theirs alone: it stays, unless it is the name given.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from mind_core.privacy.keys import person_term
from mind_core.privacy.tombstones import ADDRESS, PLACEHOLDER
from mind_core.store.db import Database, escape_like

MAX_EXPANSION_ROUNDS = 10  # each round adds what the entities found in the last one name


@dataclass(frozen=True)
class Mentions:
    """Where a person is named in a text: their whole addresses, and their names as whole words
    outside any address (every address in the text is matched as one token first, so a name's
    words inside someone's address are never touched)."""

    regex: re.Pattern[str]
    addresses: frozenset[str]

    def _replace(self, match: re.Match[str]) -> str:
        address = match.group("address")
        if address is None or address.lower() in self.addresses:
            return PLACEHOLDER
        return address

    def sub(self, text: str) -> str:
        """``text`` with every mention replaced by the placeholder."""
        return self.regex.sub(self._replace, text)

    def found_in(self, text: str) -> bool:
        return self.sub(text) != text


@dataclass
class Person:
    """A person to forget: the entity ids that are them, their names and their addresses."""

    given: str
    entity_ids: set[int] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    addresses: set[str] = field(default_factory=set)

    @property
    def own_names(self) -> set[str]:
        """Their names without a one-word name that is only the first word of a longer one of
        theirs (a first name alone is not theirs alone), unless it was the name given."""
        firsts = {person_term(n).split()[0] for n in self.names if len(person_term(n).split()) > 1}
        given = person_term(self.given)
        return {
            n for n in self.names if len(person_term(n).split()) != 1 or person_term(n) not in firsts or person_term(n) == given
        }

    @property
    def terms(self) -> set[str]:
        """Their names and addresses as ``keys.person_term`` compares them."""
        return {person_term(v) for v in self.own_names | self.addresses} - {""}

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
        for value in self.addresses | self.own_names:
            words = (
                [escape_like(w) for w in re.findall(r"[^\W_]+", value)]
                if "@" not in value
                else [escape_like(value)]
            )
            for form in (words, [json.dumps(w)[1:-1] for w in words]):
                if form:
                    patterns.add("%" + "%".join(form) + "%")
        return sorted(patterns)

    def pattern(self) -> Mentions | None:
        """Their mentions: any address as one token (replaced when it is theirs), else one of
        their names (longest first, whole words only)."""
        alternatives = []
        for name in self.own_names:
            words = re.findall(r"[^\W_]+", name)
            if words:
                alternatives.append(r"[\W_]+".join(re.escape(w) for w in words))
        if not alternatives and not self.addresses:
            return None
        alternatives.sort(key=len, reverse=True)
        names = r"|(?<![^\W_])(?:" + "|".join(alternatives) + r")(?![^\W_])" if alternatives else ""
        regex = re.compile(f"(?P<address>{ADDRESS.pattern}){names}", re.IGNORECASE)
        return Mentions(regex, frozenset(a.lower() for a in self.addresses))


def redact(value: Any, pattern: Mentions) -> Any:
    """A string or JSON-like value with every mention ``pattern`` finds replaced by the placeholder."""
    if isinstance(value, str):
        return pattern.sub(value)
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
    addresses (``expand``)."""
    person = Person(given.strip())
    if "@" in given and " " not in given.strip():
        person.addresses.add(given.strip().strip("<>").lower())
    else:
        person.names.add(given.strip())
    return expand(db, person)


def expand(db: Database, person: Person) -> Person:
    """``person`` with the entities the knowledge graph holds of them and their names and
    addresses, round after round until one finds nothing new (an address found on the first
    entity finds the second, and that one's names a third)."""
    rows = db.query("SELECT id, entity_type, name, properties FROM knowledge_entities")
    for _ in range(MAX_EXPANSION_ROUNDS):
        terms = person.terms
        before = (len(person.names), len(person.addresses), len(person.entity_ids))
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
        if (len(person.names), len(person.addresses), len(person.entity_ids)) == before:
            break
    return person


def stated_identities(value: Any) -> tuple[str, str]:
    """``(name, address)`` a header value ``Name <address>`` (or a bare name or address) states
    of its author; either may be empty."""
    if not isinstance(value, str) or not value.strip():
        return "", ""
    addresses = ADDRESS.findall(value)
    name = value.split("<", 1)[0].strip().strip("\"'") if "<" in value else ("" if addresses else value.strip())
    return name, (addresses[0].lower() if addresses else "")
