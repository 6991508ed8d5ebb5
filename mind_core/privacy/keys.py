"""The mind's own secret for keyed hashes: tombstones and the audit log name what was forgotten
only by an HMAC under it, so neither holds the content, and a guess ("was alice@example.com
forgotten?") cannot be checked from a copy of the tables without the key.

The key is random per mind, made at the first forget and kept in ``meta``; a copy of the whole
mind file carries it (the hashes protect the forgotten content's text, not its absence).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from mind_core.store.db import Database
from mind_core.store.schema import get_meta, set_meta

KEY_META = "privacy_hmac_key"
_NAME_WORD = re.compile(r"[^\W_]+")


def mind_key(db: Database, *, create: bool = False) -> bytes | None:
    """The mind's HMAC key; made (inside the caller's transaction) when ``create`` and missing."""
    stored = get_meta(db, KEY_META)
    if stored is None and create:
        stored = secrets.token_hex(32)
        set_meta(db, KEY_META, stored)
    return None if stored is None else bytes.fromhex(stored)


def keyed(key: bytes, kind: str, value: str) -> str:
    """HMAC-SHA256 of ``value`` under ``key``, separated by ``kind`` so an item key and a name
    that happen to be equal never share a digest."""
    return hmac.new(key, f"{kind}\x00{value}".encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def person_term(value: str) -> str:
    """How a person's name or address is compared: an address lower-cased, a name as its words
    case-folded without punctuation ("Zoë  O'Neil" is "zoë o neil")."""
    text = value.strip()
    if "@" in text and " " not in text:
        return text.strip("<>").lower()
    return " ".join(_NAME_WORD.findall(text.casefold()))


def name_words(text: str) -> list[re.Match[str]]:
    """The words of ``text`` with their spans, as ``person_term`` splits a name."""
    return list(_NAME_WORD.finditer(text))
