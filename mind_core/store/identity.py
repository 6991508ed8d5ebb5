"""Layer 0: who the agent is. Exactly one row (CHECK id = 1)."""

from __future__ import annotations

from typing import Any

from mind_core.errors import InvalidInputError
from mind_core.store.db import Database
from mind_core.timestamps import now_iso

IDENTITY_FIELDS = ("name", "role", "department", "personality", "capabilities", "system_prompt")


class IdentityLayer:
    def __init__(self, db: Database) -> None:
        self.db = db

    def exists(self) -> bool:
        return self.db.scalar("SELECT COUNT(*) FROM identity") == 1

    def get(self) -> dict[str, Any] | None:
        row = self.db.query_one("SELECT * FROM identity WHERE id = 1")
        return dict(row) if row else None

    def set(self, **fields: str) -> dict[str, Any]:
        """Create the identity or update the given fields; unknown fields are refused."""
        unknown = set(fields) - set(IDENTITY_FIELDS)
        if unknown:
            raise InvalidInputError(f"unknown identity field(s): {', '.join(sorted(unknown))}")
        if not all(isinstance(v, str) for v in fields.values()):
            raise InvalidInputError("identity fields must be strings")
        now = now_iso()
        with self.db.transaction():
            if self.exists():
                if fields:
                    assignments = ", ".join(f"{k} = ?" for k in fields)
                    self.db.execute(
                        f"UPDATE identity SET {assignments}, updated_at = ? WHERE id = 1", [*fields.values(), now]
                    )
            else:
                if not fields.get("name"):
                    raise InvalidInputError("a new identity needs a name")
                columns = ", ".join(fields)
                marks = ", ".join("?" for _ in fields)
                self.db.execute(
                    f"INSERT INTO identity (id, {columns}, created_at, updated_at) VALUES (1, {marks}, ?, ?)",
                    [*fields.values(), now, now],
                )
        return self.get() or {}

    def to_context(self) -> str:
        """A short text block for a prompt (the original budgets identity under 500 tokens)."""
        identity = self.get()
        if not identity:
            return ""
        lines = [f"{field.replace('_', ' ').title()}: {identity[field]}" for field in IDENTITY_FIELDS if identity[field]]
        return "\n".join(lines)
