"""What a harvest redacts: the policy of a workspace, and of a source that sets its own.

A policy is a set of kinds: ``secrets`` (API keys, tokens, private keys, passwords), ``email``,
``phone``, ``iban``, ``card`` and ``people`` (the names of the people the knowledge graph knows,
first and last name). ``all`` is every kind but ``people``; ``personal`` is the four kinds of
personal data; ``none`` redacts nothing. The workspace's policy lives in its mind's ``meta``
(``redaction_policy``); a source may set its own (``harvest_source_redaction:<name>``), which
replaces the workspace's for that source. Nothing set: nothing is redacted.

``RedactionPolicy.mark`` joins a source's fingerprint, so a harvest after a change of policy
reads the source again and its frames are brought to the new policy.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from mind_core.errors import InvalidInputError
from mind_core.store.db import Database
from mind_core.store.schema import get_meta, set_meta

REDACTION_KINDS = ("secrets", "email", "phone", "iban", "card", "people")
PERSONAL_KINDS = ("email", "phone", "iban", "card")
KIND_GROUPS = {
    "all": ("secrets", *PERSONAL_KINDS),
    "personal": PERSONAL_KINDS,
    "none": (),
}
WORKSPACE_KEY = "redaction_policy"
SOURCE_KEY = "harvest_source_redaction:"  # + the source's name
# raised when what the detectors find changes, so sources under a policy are read again
RULES_VERSION = 2  # 2: addresses with letters of any script and "_"


@dataclass(frozen=True)
class RedactionPolicy:
    kinds: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, text: str | Iterable[str]) -> RedactionPolicy:
        """``"secrets,email"``, ``"all"``, ``"personal,people"``, ``"none"``; unknown words refused."""
        words = text.replace(",", " ").split() if isinstance(text, str) else list(text)
        kinds: set[str] = set()
        for word in (w.strip().lower() for w in words):
            if word in KIND_GROUPS:
                kinds.update(KIND_GROUPS[word])
            elif word in REDACTION_KINDS:
                kinds.add(word)
            else:
                raise InvalidInputError(
                    f"unknown redaction kind {word!r}: use {', '.join(REDACTION_KINDS)} "
                    f"or {', '.join(KIND_GROUPS)}"
                )
        return cls(frozenset(kinds))

    @property
    def active(self) -> bool:
        return bool(self.kinds)

    def describe(self) -> str:
        return ",".join(k for k in REDACTION_KINDS if k in self.kinds) or "none"

    def to_json(self) -> str:
        return json.dumps(sorted(self.kinds))

    @classmethod
    def from_json(cls, text: str | None) -> RedactionPolicy | None:
        try:
            data = json.loads(text) if text else None
        except ValueError:
            return None
        if not isinstance(data, list):
            return None
        return cls(frozenset(k for k in data if k in REDACTION_KINDS))

    @property
    def mark(self) -> str:
        """What a source's fingerprint carries of this policy: empty for no redaction (a mind
        harvested before redaction existed keeps its fingerprints), else a short digest."""
        if not self.active:
            return ""
        digest = hashlib.sha256(f"{RULES_VERSION}:{self.describe()}".encode()).hexdigest()[:12]
        return f"|redaction:{digest}"


def workspace_policy(db: Database) -> RedactionPolicy:
    return RedactionPolicy.from_json(get_meta(db, WORKSPACE_KEY)) or RedactionPolicy()


def source_policy(db: Database, source: str) -> RedactionPolicy | None:
    """The source's own policy, or None when it follows the workspace's."""
    return RedactionPolicy.from_json(get_meta(db, SOURCE_KEY + source))


def effective_policy(db: Database, source: str | None) -> RedactionPolicy:
    """The policy a harvest of ``source`` applies: its own, else the workspace's."""
    own = source_policy(db, source) if source else None
    return own if own is not None else workspace_policy(db)


def set_workspace_policy(db: Database, policy: RedactionPolicy) -> None:
    set_meta(db, WORKSPACE_KEY, policy.to_json())


def set_source_policy(db: Database, source: str, policy: RedactionPolicy | None) -> None:
    """Give the source its own policy, or (None) let it follow the workspace's again."""
    if policy is None:
        db.execute("DELETE FROM meta WHERE key = ?", (SOURCE_KEY + source,))
    else:
        set_meta(db, SOURCE_KEY + source, policy.to_json())
