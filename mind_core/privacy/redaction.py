"""Redaction: secrets and personal data replaced by typed placeholders before a message is stored.

A ``Redactor`` applies one ``RedactionPolicy``: secrets (``patterns`` and detect-secrets'
plugins, ``secret_scanner``) become ``[secret:aws-key]``, ``[secret:github-token]``...; e-mail
addresses ``[email]``, phone numbers ``[phone]``, IBANs ``[iban]``, card numbers ``[card]``, and
the names of the people the knowledge graph knows ``[person]``. Where findings overlap, a secret
wins over personal data, then the longer one. ``mask`` shows a finding without giving it away
(for the dry run): a secret's public prefix and its length, an address's first letters, a
number's last digits.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from mind_core.privacy.patterns import Span, card_spans, email_spans, iban_spans, phone_spans, secret_spans
from mind_core.privacy.redaction_policy import RedactionPolicy, effective_policy
from mind_core.privacy.secret_scanner import detect_secrets_spans
from mind_core.store.db import Database

PERSON = "person"
# the order findings win in when they overlap (then the longer one)
PRIORITY = {"secret": 0, "iban": 1, "card": 2, "email": 3, "phone": 4, PERSON: 5}
# metadata keys that hold identifiers, not text: a Message-ID looks like an address but is none
# of a person's, and threading needs it as it is
IDENTIFIER_KEYS = frozenset({"message_id", "message_ids", "in_reply_to", "references", "thread_root", "id"})
SHORT_CHARS, SHORT_CACHE = 200, 4096
DIGIT = re.compile(r"\d")
MIN_NAME_WORDS = 2  # "Anne" alone is a word of too many sentences; "Anne Person" is a person
# the prefixes a kind of token always starts with: showing one tells the kind, not the secret
PUBLIC_PREFIX = re.compile(
    r"-----BEGIN [A-Z ]+-----|PuTTY-User-Key-File-\d|AKIA|ASIA|AIza|eyJ|gh[pousr]_|github_pat_|xox[abposr]-"
    r"|sk-(?:proj-|ant-|svcacct-|admin-)?|[sr]k_(?:live|test)_|glpat-|SG\.|npm_|pypi-"
)
PLACEHOLDER = re.compile(r"\[(?:secret:[a-z0-9-]+|email|phone|iban|card|person)\]")


@dataclass(frozen=True)
class Finding:
    """One thing to redact: its kind (``secret:aws-key``, ``email``...) and where it lies."""

    kind: str
    start: int
    end: int
    value: str

    @property
    def placeholder(self) -> str:
        return f"[{self.kind}]"

    @property
    def family(self) -> str:
        return self.kind.split(":", 1)[0]


def known_people(db: Database) -> list[str]:
    """The names (and aliases) of the current ``person`` entities, of two words or more."""
    names: set[str] = set()
    for row in db.query(
        "SELECT name, properties FROM knowledge_entities WHERE entity_type = 'person' AND valid_to IS NULL"
    ):
        try:
            properties = json.loads(row["properties"] or "{}")
        except ValueError:
            properties = {}
        aliases = properties.get("aliases") if isinstance(properties, dict) else None
        for name in [row["name"], *(aliases if isinstance(aliases, list) else [])]:
            if isinstance(name, str) and "@" not in name and len(re.findall(r"[^\W\d_]{2,}", name)) >= MIN_NAME_WORDS:
                names.add(name.strip())
    return sorted(names)


def _names_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    alternatives = sorted(
        {r"[\W_]+".join(re.escape(w) for w in re.findall(r"[^\W_]+", n)) for n in names} - {""},
        key=len,
        reverse=True,
    )
    if not alternatives:
        return None
    return re.compile(r"(?<![^\W_])(?:" + "|".join(alternatives) + r")(?![^\W_])", re.IGNORECASE)


class Redactor:
    """Finds and replaces what one policy redacts; ``people``: the names the ``people`` kind
    replaces (``known_people``)."""

    def __init__(self, policy: RedactionPolicy, people: Iterable[str] = ()) -> None:
        self.policy = policy
        self.names = _names_pattern(people) if "people" in policy.kinds else None
        self._finders: list[Callable[[str], Iterator[Span]]] = []
        if "secrets" in policy.kinds:
            self._finders += [secret_spans, detect_secrets_spans]
        if "email" in policy.kinds:
            self._finders.append(email_spans)
        # numbers: none of them in a text without a digit
        self._number_finders = [
            finder for kind, finder in (("card", card_spans), ("iban", iban_spans), ("phone", phone_spans))
            if kind in policy.kinds
        ]
        # a title, an author, a header: the same short strings come again and again
        self._find_short = lru_cache(maxsize=SHORT_CACHE)(self._find)

    @classmethod
    def for_source(cls, db: Database, source: str | None) -> Redactor:
        """The redactor of a harvest of ``source`` in this mind (its policy, the mind's people)."""
        policy = effective_policy(db, source)
        return cls(policy, known_people(db) if "people" in policy.kinds else ())

    @property
    def active(self) -> bool:
        return self.policy.active

    def find(self, text: str) -> list[Finding]:
        """What this policy redacts in ``text``, in order, never overlapping."""
        if not self.active or not text:
            return []
        return list(self._find_short(text) if len(text) <= SHORT_CHARS else self._find(text))

    def _find(self, text: str) -> tuple[Finding, ...]:
        spans: list[Span] = []
        for finder in self._finders:
            spans.extend(finder(text))
        if DIGIT.search(text) is not None:
            for finder in self._number_finders:
                spans.extend(finder(text))
        found = [Finding(k if k in PRIORITY else f"secret:{k}", s, e, text[s:e]) for k, s, e in spans if e > s]
        if self.names is not None:
            found += [Finding(PERSON, m.start(), m.end(), m.group(0)) for m in self.names.finditer(text)]
        found.sort(key=lambda f: (PRIORITY[f.family], f.start - f.end, f.start))
        kept: list[Finding] = []
        for finding in found:
            if not PLACEHOLDER.fullmatch(finding.value) and all(
                finding.end <= k.start or finding.start >= k.end for k in kept
            ):
                kept.append(finding)
        return tuple(sorted(kept, key=lambda f: f.start))

    def redact(self, text: str) -> tuple[str, list[Finding]]:
        """``text`` with every finding replaced by its placeholder, and the findings."""
        findings = self.find(text)
        for finding in reversed(findings):
            text = text[: finding.start] + finding.placeholder + text[finding.end :]
        return text, findings

    def redact_value(self, value: Any, found: list[Finding]) -> Any:
        """A JSON-like value with every string redacted (identifier keys left), findings added to ``found``."""
        if isinstance(value, str):
            text, findings = self.redact(value)
            found.extend(findings)
            return text
        if isinstance(value, dict):
            return {
                k: v if k in IDENTIFIER_KEYS else self.redact_value(v, found) for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.redact_value(v, found) for v in value]
        return value


def count_findings(findings: Iterable[Finding]) -> Counter[str]:
    """Per kind, the distinct values found (a message's address in its text and its headers is one)."""
    return Counter(kind for kind, _ in {(f.kind, f.value) for f in findings})


def mask(finding: Finding) -> str:
    """A finding shown without being given away: a secret's public prefix and its length, an
    address's first letters and top-level domain, a number's last digits, a name's initials."""
    value = finding.value
    if finding.family == "secret":
        prefix = PUBLIC_PREFIX.match(value)
        shown = prefix.group(0) if prefix and len(prefix.group(0)) <= len(value) // 2 else ""
        return f"{shown}… ({len(value)} chars)"
    if finding.kind == "email":
        local, _, domain = value.partition("@")
        top = domain.rsplit(".", 1)[-1]
        return f"{local[:1]}***@{domain[:1]}***.{top}"
    if finding.kind == PERSON:
        return " ".join(w[:1] + "." for w in re.findall(r"[^\W_]+", value))
    keep = {"card": 4, "phone": 2, "iban": 2}.get(finding.kind, 0)
    total = sum(c.isalnum() for c in value)
    seen, out = 0, []
    for char in value:
        if char.isalnum():
            seen += 1
            lead = finding.kind == "iban" and seen <= 2
            out.append(char if lead or seen > total - keep else "•")
        else:
            out.append(char)
    return "".join(out)


def preview(text: str, finding: Finding, findings: list[Finding], width: int = 40) -> str:
    """The finding masked within ``width`` characters of its text either side, the other
    findings there as their placeholders: a dry run shows where, never what."""
    start, end = max(0, finding.start - width), min(len(text), finding.end + width)
    parts, cursor = [], start
    for other in findings:
        if other.end <= start or other.start >= end:
            continue
        parts.append(text[cursor : max(cursor, other.start)])
        parts.append(mask(other) if other is finding else other.placeholder)
        cursor = max(cursor, other.end)
    parts.append(text[cursor:end])
    shown = " ".join("".join(parts).split())
    return ("…" if start > 0 else "") + shown + ("…" if end < len(text) else "")
