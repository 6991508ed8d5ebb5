"""The harvest_sources registry and the harvest_runs log (reference-behaviour §12.4).

Counters in harvest_sources are cumulative; ``get_stale`` is what scheduled syncs read.
Times are compared as instants (julianday), whatever format a row was written in.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from mind_core.errors import InvalidInputError
from mind_core.harvest.paths import stored_text
from mind_core.harvest.source_files import ReadingRules
from mind_core.privacy.redaction_policy import set_source_policy
from mind_core.store.db import Database
from mind_core.store.schema import get_meta, set_meta
from mind_core.timestamps import now_iso

ERROR_MESSAGE_LIMIT = 2000
# The outcome of a source's last harvest. Only ok records the fingerprint: a partial (some
# records could not be read), failed, empty or missing source is tried again by the next harvest
# instead of looking unchanged, and ``mind harvest`` exits non-zero for it.
# "interrupted": imported, but the harvest stopped (killed, or an error) before cognify, vectors
# and reconcile ended; the fingerprint is not recorded, so the next harvest finishes the work.
INTERRUPTED = "interrupted"
SOURCE_STATUSES = ("ok", "partial", "failed", "empty", "missing", INTERRUPTED)
FAILING_STATUSES = ("failed", "empty", "missing")
RETRIED_STATUSES = ("partial", INTERRUPTED, *FAILING_STATUSES)
FIRST_ERRORS_KEPT = 5
READING_RULES_KEY = "harvest_source_reading:"  # + the source's name, in ``meta`` (no schema change)


def new_identity() -> str:
    """A fresh ledger identity: frames record it, so a re-added name never claims old frames."""
    return secrets.token_hex(8)


@dataclass
class SourceOutcome:
    """What a source's last harvest found: its status, why, and its counts."""

    status: str
    reason: str | None = None
    items: int = 0
    frames: int = 0  # frames the source holds after the harvest
    errors: int = 0
    first_errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.status not in SOURCE_STATUSES:
            raise ValueError(f"unknown source status {self.status!r}")

    @property
    def failing(self) -> bool:
        return self.status in FAILING_STATUSES


@dataclass
class HarvestSource:
    id: int
    source: str
    display_name: str
    source_path: str | None
    kind: str | None
    last_synced_at: str | None
    items_imported: int
    frames_created: int
    auto_sync: bool
    sync_interval_hours: int
    last_content_hash: str | None
    last_fingerprint: str | None
    created_at: str
    identity: str | None = None
    last_status: str | None = None  # None: never harvested
    last_status_reason: str | None = None
    last_harvest_at: str | None = None
    last_items: int = 0
    last_frames: int = 0
    last_errors: int = 0
    last_first_errors: list[str] = field(default_factory=list)

    @classmethod
    def from_row(cls, row: Any) -> HarvestSource:
        data = dict(row)
        data["auto_sync"] = bool(data["auto_sync"])
        try:
            first_errors = json.loads(data.get("last_first_errors") or "[]")
        except ValueError:
            first_errors = []
        data["last_first_errors"] = first_errors if isinstance(first_errors, list) else []
        for counter in ("last_items", "last_frames", "last_errors"):
            data[counter] = data.get(counter) or 0
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__})


class HarvestSourceStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def upsert(
        self, source: str, display_name: str, source_path: str | None = None, kind: str | None = None
    ) -> HarvestSource:
        if not source or not isinstance(source, str):
            raise InvalidInputError("a harvest source needs a non-empty name")
        self.db.execute(
            "INSERT INTO harvest_sources (source, display_name, source_path, kind, created_at, identity) "
            "VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(source) DO UPDATE SET display_name = excluded.display_name, "
            "source_path = COALESCE(excluded.source_path, harvest_sources.source_path), "
            "kind = COALESCE(excluded.kind, harvest_sources.kind)",
            (source, display_name, source_path, kind, now_iso(), new_identity()),
        )
        return self.get_by_source(source)  # type: ignore[return-value]

    def identity_of(self, source: str) -> str | None:
        """The identity of the source's ledger (one is given to a source registered before identities)."""
        self.db.execute(
            "UPDATE harvest_sources SET identity = ? WHERE source = ? AND identity IS NULL",
            (new_identity(), source),
        )
        return self.db.scalar("SELECT identity FROM harvest_sources WHERE source = ?", (source,))

    def renew_identity(self, source: str) -> None:
        """A new identity with nothing synced yet: the next harvest scans everything into a new ledger."""
        self.db.execute(
            "UPDATE harvest_sources SET identity = ?, last_fingerprint = NULL, last_content_hash = NULL, "
            "last_status = NULL, last_status_reason = NULL, last_harvest_at = NULL, last_items = 0, "
            "last_frames = 0, last_errors = 0, last_first_errors = '[]' WHERE source = ?",
            (new_identity(), source),
        )

    def record_outcome(self, source: str, outcome: SourceOutcome) -> None:
        self.db.execute(
            "UPDATE harvest_sources SET last_status = ?, last_status_reason = ?, last_harvest_at = ?, "
            "last_items = ?, last_frames = ?, last_errors = ?, last_first_errors = ? WHERE source = ?",
            (
                outcome.status,
                None if outcome.reason is None else stored_text(outcome.reason),
                now_iso(),
                outcome.items,
                outcome.frames,
                outcome.errors,
                json.dumps(outcome.first_errors[:FIRST_ERRORS_KEPT]),
                source,
            ),
        )

    def set_status(self, source: str, status: str, reason: str | None) -> None:
        """The source's last status alone (the counts of its last import stay)."""
        self.db.execute(
            "UPDATE harvest_sources SET last_status = ?, last_status_reason = ? WHERE source = ?",
            (status, None if reason is None else stored_text(reason), source),
        )

    def record_sync(
        self,
        source: str,
        items_imported: int,
        frames_created: int,
        content_hash: str | None = None,
        fingerprint: str | None = None,
    ) -> None:
        self.db.execute(
            "UPDATE harvest_sources SET last_synced_at = ?, items_imported = items_imported + ?, "
            "frames_created = frames_created + ?, last_content_hash = COALESCE(?, last_content_hash), "
            "last_fingerprint = COALESCE(?, last_fingerprint) WHERE source = ?",
            (now_iso(), items_imported, frames_created, content_hash, fingerprint, source),
        )

    def set_auto_sync(self, source: str, enabled: bool, interval_hours: int | None = None) -> bool:
        if interval_hours is not None and interval_hours < 1:
            raise InvalidInputError("the sync interval must be at least 1 hour")
        cursor = self.db.execute(
            "UPDATE harvest_sources SET auto_sync = ?, sync_interval_hours = COALESCE(?, sync_interval_hours) "
            "WHERE source = ?",
            (1 if enabled else 0, interval_hours, source),
        )
        return cursor.rowcount > 0

    def get_by_source(self, source: str) -> HarvestSource | None:
        row = self.db.query_one("SELECT * FROM harvest_sources WHERE source = ?", (source,))
        return HarvestSource.from_row(row) if row else None

    def get_all(self) -> list[HarvestSource]:
        rows = self.db.query(
            "SELECT * FROM harvest_sources ORDER BY julianday(last_synced_at) DESC NULLS LAST, source ASC"
        )
        return [HarvestSource.from_row(r) for r in rows]

    def get_stale(self, now: str | None = None) -> list[HarvestSource]:
        """Auto-sync sources never synced, or whose interval has elapsed."""
        rows = self.db.query(
            "SELECT * FROM harvest_sources WHERE auto_sync = 1 AND (last_synced_at IS NULL OR "
            "julianday(last_synced_at) + sync_interval_hours / 24.0 <= julianday(?))",
            (now or now_iso(),),
        )
        return [HarvestSource.from_row(r) for r in rows]

    def reading_rules(self, source: str) -> ReadingRules:
        """How the source's files may be read (its size limit, whether links leading outside its
        folder are followed): the defaults unless set."""
        return ReadingRules.from_json(get_meta(self.db, READING_RULES_KEY + source))

    def set_reading_rules(self, source: str, rules: ReadingRules) -> None:
        set_meta(self.db, READING_RULES_KEY + source, rules.to_json())

    def remove(self, source: str) -> bool:
        self.db.execute("DELETE FROM meta WHERE key = ?", (READING_RULES_KEY + source,))
        set_source_policy(self.db, source, None)
        return self.db.execute("DELETE FROM harvest_sources WHERE source = ?", (source,)).rowcount > 0


class HarvestRunStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def start(self, source: str, total_items: int = 0, input_cache_path: str | None = None) -> int:
        now = now_iso()
        return self.db.execute(
            "INSERT INTO harvest_runs (source, status, total_items, started_at, updated_at, input_cache_path) "
            "VALUES (?, 'running', ?, ?, ?, ?)",
            (source, total_items, now, now, input_cache_path),
        ).lastrowid

    def heartbeat(self, run_id: int, items_saved: int, total_items: int | None = None) -> None:
        self.db.execute(
            "UPDATE harvest_runs SET items_saved = ?, total_items = COALESCE(?, total_items), updated_at = ? "
            "WHERE id = ? AND status = 'running'",
            (items_saved, total_items, now_iso(), run_id),
        )

    def complete(self, run_id: int, items_saved: int, total_items: int | None = None) -> None:
        now = now_iso()
        self.db.execute(
            "UPDATE harvest_runs SET status = 'completed', items_saved = ?, total_items = COALESCE(?, total_items), "
            "finished_at = ?, updated_at = ? WHERE id = ? AND status = 'running'",
            (items_saved, total_items, now, now, run_id),
        )

    def fail(self, run_id: int, message: str, items_saved: int | None = None) -> None:
        now = now_iso()
        self.db.execute(
            "UPDATE harvest_runs SET status = 'failed', error_message = ?, "
            "items_saved = COALESCE(?, items_saved), finished_at = ?, updated_at = ? "
            "WHERE id = ? AND status = 'running'",
            (str(message)[:ERROR_MESSAGE_LIMIT], items_saved, now, now, run_id),
        )

    def abandon_interrupted(self, source: str) -> int:
        """Runs of this source still marked running were cut off (crash, kill): mark them."""
        cursor = self.db.execute(
            "UPDATE harvest_runs SET status = 'abandoned', updated_at = ?, "
            "error_message = COALESCE(error_message, 'interrupted: the process ended before the run finished') "
            "WHERE source = ? AND status = 'running'",
            (now_iso(), source),
        )
        return cursor.rowcount

    def get(self, run_id: int) -> dict[str, Any] | None:
        row = self.db.query_one("SELECT * FROM harvest_runs WHERE id = ?", (run_id,))
        return dict(row) if row else None

    def get_all(self, limit: int = 50, source: str | None = None) -> list[dict[str, Any]]:
        where = "WHERE source = ?" if source else ""
        params: list[Any] = [source] if source else []
        rows = self.db.query(
            f"SELECT * FROM harvest_runs {where} ORDER BY julianday(started_at) DESC, id DESC LIMIT ?",
            [*params, int(limit)],
        )
        return [dict(r) for r in rows]
