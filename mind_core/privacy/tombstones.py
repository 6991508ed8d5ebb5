"""Tombstones: what a forget leaves in the ledger's place so a later harvest does not bring it back.

A tombstone is a keyed hash (``keys.keyed``), never the content: of a forgotten message's ledger
key (``item``), of a forgotten frame's content hash (``content``: the same text from another
source stays out too) and of a forgotten person's normalized names and addresses (``person``).
The import engine asks a ``HarvestGuard`` about every message: one a tombstone names is skipped,
as is one a forgotten person wrote; in the others the person's names and addresses are replaced
by ``PLACEHOLDER`` before anything is stored or embedded. The guard cannot read a hash back, so it
hashes the candidates a message holds (every address, every run of up to ``MAX_NAME_WORDS``
words) and compares.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mind_core.privacy.keys import keyed, mind_key, name_words, person_term
from mind_core.store.db import Database
from mind_core.store.schema import content_hash

PLACEHOLDER = "[forgotten person]"
MAX_NAME_WORDS = 6
TOMBSTONE_KINDS = ("item", "content", "person")
ADDRESS = re.compile(r"[\w.+'-]+@[\w-]+(?:\.[\w-]+)+", re.UNICODE)


def lay(db: Database, key: bytes, selector: str, kind: str, values: Iterable[str]) -> int:
    """Record tombstones of ``values`` (item keys, content hashes or person terms); returns how many."""
    rows = {(kind, keyed(key, kind, value), selector) for value in values if value}
    db.executemany(
        "INSERT OR IGNORE INTO privacy_tombstones (kind, digest, selector) VALUES (?, ?, ?)", sorted(rows)
    )
    return len(rows)


def lift(db: Database, selector: str, person_values: Iterable[str] = ()) -> int:
    """Remove the tombstones a forget with this selector laid, and those of these person terms
    (whichever forget laid them); returns how many went."""
    removed = db.execute("DELETE FROM privacy_tombstones WHERE selector = ?", (selector,)).rowcount
    key = mind_key(db)
    if key is not None:
        removed += db.executemany(
            "DELETE FROM privacy_tombstones WHERE kind = 'person' AND digest = ?",
            [(keyed(key, "person", person_term(v)),) for v in person_values if person_term(v)],
        ).rowcount
    return removed


def count_laid_by(db: Database, selector: str) -> int:
    return int(db.scalar("SELECT COUNT(*) FROM privacy_tombstones WHERE selector = ?", (selector,)) or 0)


@dataclass
class HarvestGuard:
    """The tombstones of one mind, read once per import."""

    key: bytes | None = None
    digests: dict[str, set[str]] = field(default_factory=lambda: {kind: set() for kind in TOMBSTONE_KINDS})

    @classmethod
    def load(cls, db: Database) -> HarvestGuard:
        guard = cls(mind_key(db))
        if guard.key is not None and db.table_exists("privacy_tombstones"):
            for row in db.query("SELECT kind, digest FROM privacy_tombstones"):
                guard.digests[row[0]].add(row[1])
        return guard

    @property
    def active(self) -> bool:
        return self.key is not None and any(self.digests.values())

    def _holds(self, kind: str, value: str) -> bool:
        return bool(value) and keyed(self.key, kind, value) in self.digests[kind]  # type: ignore[arg-type]

    def buries(self, item_key: str, content: str, authors: Iterable[Any]) -> bool:
        """Whether a message stays forgotten: its key or text was forgotten, or a forgotten
        person wrote it (``authors``: its author, its ``from`` header)."""
        if not self.active:
            return False
        if self._holds("item", item_key) or self._holds("content", content_hash(content)):
            return True
        return any(self._is_person(author) for author in authors if isinstance(author, str))

    def _is_person(self, value: str) -> bool:
        """A name, an address or a ``Name <address>`` header value of a forgotten person."""
        if not self.digests["person"]:
            return False
        candidates = [value, *ADDRESS.findall(value)]
        if "<" in value:
            candidates.append(value.split("<", 1)[0].strip().strip("\"'"))
        return any(self._holds("person", person_term(candidate)) for candidate in candidates)

    def redact_text(self, text: str) -> str:
        """``text`` with every forgotten person's address and name replaced by ``PLACEHOLDER``."""
        if not self.digests["person"] or not text:
            return text
        text = ADDRESS.sub(
            lambda m: PLACEHOLDER if self._holds("person", m.group(0).lower()) else m.group(0), text
        )
        inside = [m.span() for m in ADDRESS.finditer(text)]  # someone else's address: no name in it
        words = [w for w in name_words(text) if not any(start <= w.start() < end for start, end in inside)]
        spans: list[tuple[int, int]] = []
        index = 0
        while index < len(words):
            for size in range(min(MAX_NAME_WORDS, len(words) - index), 0, -1):
                run = words[index : index + size]
                if self._holds("person", " ".join(w.group(0).casefold() for w in run)):
                    spans.append((run[0].start(), run[-1].end()))
                    index += size
                    break
            else:
                index += 1
        for start, end in reversed(spans):
            text = text[:start] + PLACEHOLDER + text[end:]
        return text

    def redact_value(self, value: Any) -> Any:
        """A JSON-like value (a frame's metadata) with ``redact_text`` applied to every string."""
        if not self.digests["person"]:
            return value
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            return {k: self.redact_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact_value(v) for v in value]
        return value
