"""Sessions: the GOP (group of pictures) that frames belong to, one per conversation or thread."""

from __future__ import annotations

import secrets
import string
from typing import Any

from mind_core.errors import InvalidInputError
from mind_core.store.db import Database
from mind_core.timestamps import now_iso

STATUSES = ("active", "closed", "archived")
NOTES_PREFIX = "notes:"
_BASE36 = string.digits + string.ascii_lowercase


def new_gop_id() -> str:
    """``session:<ISO>:<6 chars>`` as the original makes it."""
    suffix = "".join(secrets.choice(_BASE36) for _ in range(6))
    return f"session:{now_iso()}:{suffix}"


class SessionStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def create(self, project_id: str | None = None, summary: str | None = None) -> dict[str, Any]:
        return self._insert(new_gop_id(), project_id, summary)

    def _insert(self, gop_id: str, project_id: str | None, summary: str | None) -> dict[str, Any]:
        row = self.db.execute(
            "INSERT INTO sessions (gop_id, project_id, status, started_at, summary) VALUES (?, ?, 'active', ?, ?) "
            "RETURNING *",
            (gop_id, project_id, now_iso(), summary),
        ).fetchone()
        return dict(row)

    def ensure_active(self, project_id: str | None = None) -> dict[str, Any]:
        """The newest active session that is not a harvested one, or a new one; BEGIN IMMEDIATE
        makes twins impossible. A harvested session holds one conversation, note or thread of a
        source: nothing else may be written into it."""
        with self.db.transaction():
            row = self.db.query_one(
                "SELECT * FROM sessions WHERE status = 'active' AND substr(gop_id, 1, 8) != 'harvest:'"
                " ORDER BY julianday(started_at) DESC, id DESC LIMIT 1"
            )
            return dict(row) if row else self._insert(new_gop_id(), project_id, None)

    def notes_session(self, day: str | None = None) -> dict[str, Any]:
        """The per-day session of frames written without one (``notes:YYYY-MM-DD``, UTC day)."""
        return self.ensure(f"{NOTES_PREFIX}{(day or now_iso())[:10]}", project_id="notes")

    def ensure(self, gop_id: str, project_id: str | None = None, summary: str | None = None) -> dict[str, Any]:
        """The session with this gop_id, created (active) if it does not exist yet."""
        if not isinstance(gop_id, str) or not gop_id.strip():
            raise InvalidInputError("gop_id must be a non-empty string")
        with self.db.transaction():
            self.db.execute(
                "INSERT OR IGNORE INTO sessions (gop_id, project_id, status, started_at, summary) "
                "VALUES (?, ?, 'active', ?, ?)",
                (gop_id, project_id, now_iso(), summary),
            )
            return dict(self.db.query_one("SELECT * FROM sessions WHERE gop_id = ?", (gop_id,)))

    def close(self, gop_id: str, summary: str | None = None) -> bool:
        cursor = self.db.execute(
            "UPDATE sessions SET status = 'closed', ended_at = ?, summary = COALESCE(?, summary) WHERE gop_id = ?",
            (now_iso(), summary, gop_id),
        )
        return cursor.rowcount > 0

    def archive(self, gop_id: str) -> bool:
        return self.db.execute("UPDATE sessions SET status = 'archived' WHERE gop_id = ?", (gop_id,)).rowcount > 0

    def get_by_project(self, project_id: str) -> list[dict[str, Any]]:
        rows = self.db.query(
            "SELECT * FROM sessions WHERE project_id = ? ORDER BY julianday(started_at) DESC, id DESC", (project_id,)
        )
        return [dict(r) for r in rows]

    def get_active(self) -> list[dict[str, Any]]:
        rows = self.db.query(
            "SELECT * FROM sessions WHERE status = 'active' ORDER BY julianday(started_at) DESC, id DESC"
        )
        return [dict(r) for r in rows]

    def get_by_gop_id(self, gop_id: str) -> dict[str, Any] | None:
        row = self.db.query_one("SELECT * FROM sessions WHERE gop_id = ?", (gop_id,))
        return dict(row) if row else None
