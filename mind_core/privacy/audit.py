"""The audit log of forgetting: who forgot what kind of thing, how much, and when.

A row never holds what was forgotten nor the selector's text (a person's name, a query): the
selector is kept as a keyed hash (``keys.keyed``), which is enough to tell two forgets of the same
thing apart from two different ones and to lift a forget's tombstones with ``--allow-return``.
"""

from __future__ import annotations

import getpass
import json
import os
from dataclasses import dataclass
from typing import Any

from mind_core.store.db import Database
from mind_core.timestamps import now_iso

AUDIT_ACTIONS = ("forget", "allow_return")


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: str
    actor: str
    action: str
    selector_kinds: list[str]
    selector: str
    counts: dict[str, int]


def current_actor() -> str:
    """The OS user running the forget (the caller may name someone else with ``--by``)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid:{os.getuid()}" if hasattr(os, "getuid") else "unknown"


def record(
    db: Database, actor: str, action: str, selector_kinds: list[str], selector: str, counts: dict[str, int]
) -> int:
    """Append one entry (inside the caller's transaction, so the log and the forget agree)."""
    if action not in AUDIT_ACTIONS:
        raise ValueError(f"unknown audit action {action!r}")
    return int(
        db.execute(
            "INSERT INTO privacy_audit (at, actor, action, selector_kinds, selector, counts) VALUES (?, ?, ?, ?, ?, ?)",
            (
                now_iso(),
                actor,
                action,
                json.dumps(sorted(selector_kinds)),
                selector,
                json.dumps(counts, sort_keys=True),
            ),
        ).lastrowid
    )


def entries(db: Database, limit: int = 100) -> list[AuditEntry]:
    """The latest entries, newest first."""
    rows = db.query("SELECT * FROM privacy_audit ORDER BY id DESC LIMIT ?", (int(limit),))
    return [_entry(row) for row in rows]


def _entry(row: Any) -> AuditEntry:
    return AuditEntry(
        row["id"],
        row["at"],
        row["actor"],
        row["action"],
        json.loads(row["selector_kinds"]),
        row["selector"],
        json.loads(row["counts"]),
    )
