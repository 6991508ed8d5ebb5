"""Layer 1: short-term working state (tasks, actions, pending items, flags); at most 10 active."""

from __future__ import annotations

import json
from typing import Any

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.store.db import Database
from mind_core.timestamps import normalize_iso, now_iso

CATEGORIES = ("task", "action", "pending", "flag")
MAX_ITEMS = 10

_ACTIVE = "(expires_at IS NULL OR julianday(expires_at) > julianday(?))"


class AwarenessLayer:
    def __init__(self, db: Database) -> None:
        self.db = db

    def add(
        self,
        category: str,
        content: str,
        priority: int = 0,
        metadata: dict[str, Any] | None = None,
        expires_at: str | None = None,
    ) -> dict[str, Any]:
        """Add an item; when 10 are already active the lowest-priority, oldest one is dropped.

        An item that is already expired when added never becomes active, so it makes no room:
        evicting a live item for it would leave fewer than 10 active.
        """
        if category not in CATEGORIES:
            raise InvalidInputError(f"unknown awareness category {category!r}; expected one of {', '.join(CATEGORIES)}")
        if not isinstance(content, str) or not content.strip():
            raise InvalidInputError("awareness content must be a non-empty string")
        if not isinstance(priority, int):
            raise InvalidInputError("awareness priority must be an integer")
        expires = None
        if expires_at is not None:
            try:
                expires = normalize_iso(expires_at)
            except ValueError as exc:
                raise InvalidInputError(f"invalid expires_at timestamp {expires_at!r}") from exc
        now = now_iso()
        with self.db.transaction():
            if expires is None or self.db.scalar("SELECT julianday(?) > julianday(?)", (expires, now)):
                self._make_room(now)
            cursor = self.db.execute(
                "INSERT INTO awareness (category, content, priority, metadata, created_at, expires_at) "
                "VALUES (?, ?, ?, ?, ?, ?) RETURNING *",
                (category, content, priority, json.dumps(metadata or {}), now, expires),
            )
            return _item(cursor.fetchone())

    def _make_room(self, now: str) -> None:
        active = self.db.query(
            f"SELECT id FROM awareness WHERE {_ACTIVE} ORDER BY priority ASC, created_at ASC, id ASC", (now,)
        )
        for row in active[: max(0, len(active) - MAX_ITEMS + 1)]:
            self.db.execute("DELETE FROM awareness WHERE id = ?", (row["id"],))

    def get_active(self) -> list[dict[str, Any]]:
        rows = self.db.query(
            f"SELECT * FROM awareness WHERE {_ACTIVE} ORDER BY priority DESC, created_at DESC, id DESC LIMIT ?",
            (now_iso(), MAX_ITEMS),
        )
        return [_item(r) for r in rows]

    def get_by_category(self, category: str) -> list[dict[str, Any]]:
        if category not in CATEGORIES:
            raise InvalidInputError(f"unknown awareness category {category!r}")
        return [item for item in self.get_active() if item["category"] == category]

    def update(self, item_id: int, **fields: Any) -> dict[str, Any]:
        allowed = {"content", "priority", "metadata", "expires_at"}
        if set(fields) - allowed:
            raise InvalidInputError(f"cannot update awareness field(s): {', '.join(sorted(set(fields) - allowed))}")
        if "metadata" in fields:
            fields["metadata"] = json.dumps(fields["metadata"] or {})
        if fields.get("expires_at") is not None:
            fields["expires_at"] = normalize_iso(fields["expires_at"])
        with self.db.transaction():
            if fields:
                assignments = ", ".join(f"{k} = ?" for k in fields)
                self.db.execute(f"UPDATE awareness SET {assignments} WHERE id = ?", [*fields.values(), item_id])
            row = self.db.query_one("SELECT * FROM awareness WHERE id = ?", (item_id,))
        if row is None:
            raise NotFoundError(f"no awareness item with id {item_id}")
        return _item(row)

    def remove(self, item_id: int) -> bool:
        return self.db.execute("DELETE FROM awareness WHERE id = ?", (item_id,)).rowcount > 0

    def clear(self, category: str | None = None) -> int:
        if category is None:
            return self.db.execute("DELETE FROM awareness").rowcount
        if category not in CATEGORIES:
            raise InvalidInputError(f"unknown awareness category {category!r}")
        return self.db.execute("DELETE FROM awareness WHERE category = ?", (category,)).rowcount

    def to_context(self) -> str:
        return "\n".join(f"[{i['category']}] {i['content']}" for i in self.get_active())


def _item(row: Any) -> dict[str, Any]:
    item = dict(row)
    try:
        item["metadata"] = json.loads(item["metadata"] or "{}")
    except ValueError:
        item["metadata"] = {}
    return item
