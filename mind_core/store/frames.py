"""Layer 2: memory frames (I = keyframe, P = delta on an I-frame, B = cross-reference).

Every write mirrors the content into FTS5 in the same transaction. Vectors are written by the
search module; an update or delete here drops the frame's vectors so the index never serves
stale or orphaned rows (``reconcile`` re-embeds what is missing).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.knowledge.graph import KnowledgeGraph
from mind_core.search.filters import SourceFilter
from mind_core.store.compaction import CompactionResult, compact
from mind_core.store.db import IN_LIST, Database, in_list
from mind_core.store.schema import content_hash
from mind_core.timestamps import is_valid_iso_timestamp, normalize_iso, now_iso

log = logging.getLogger(__name__)


FRAME_TYPES = ("I", "P", "B")
IMPORTANCE_LEVELS = ("critical", "important", "normal", "temporary", "deprecated")
FRAME_SOURCES = ("user_stated", "tool_verified", "agent_inferred", "import", "system")
IMPORTANCE_MULTIPLIERS = {
    "critical": 2.0,
    "important": 1.5,
    "normal": 1.0,
    "temporary": 0.7,
    "deprecated": 0.3,
}


def get_importance_multiplier(importance: str) -> float:
    return IMPORTANCE_MULTIPLIERS.get(importance, 1.0)


@dataclass
class Frame:
    id: int
    frame_type: str
    gop_id: str
    t: int
    base_frame_id: int | None
    content: str
    importance: str
    source: str
    access_count: int
    created_at: str
    last_accessed: str
    content_hash: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    inserted: bool = field(default=False, compare=False)  # True when this call wrote the row

    @classmethod
    def from_row(cls, row: Any, inserted: bool = False) -> Frame:
        keys = row.keys()
        raw_meta = row["metadata"] if "metadata" in keys else "{}"
        try:
            metadata = json.loads(raw_meta or "{}")
        except ValueError:
            metadata = {}
        return cls(
            id=row["id"],
            frame_type=row["frame_type"],
            gop_id=row["gop_id"],
            t=row["t"],
            base_frame_id=row["base_frame_id"],
            content=row["content"],
            importance=row["importance"],
            source=row["source"],
            access_count=row["access_count"],
            created_at=row["created_at"],
            last_accessed=row["last_accessed"],
            content_hash=row["content_hash"] if "content_hash" in keys else None,
            metadata=metadata if isinstance(metadata, dict) else {},
            inserted=inserted,
        )

    def to_dict(self) -> dict[str, Any]:
        data = self.__dict__.copy()
        data.pop("inserted", None)
        return data


def _check_choice(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise InvalidInputError(f"invalid {what} {value!r}; expected one of {', '.join(allowed)}")


def resolve_created_at(created_at: str | None, metadata: dict[str, Any], now: str | None = None) -> str:
    """Honour a caller's ISO-8601 timestamp with a zone (normalized to UTC, original kept).

    Anything else falls back to now with a warning naming the value, as the original does.
    """
    if created_at is None:
        return now or now_iso()
    if is_valid_iso_timestamp(created_at):
        metadata.setdefault("original_created_at", created_at)
        return normalize_iso(created_at)
    log.warning("invalid created_at timestamp %r: falling back to now", created_at)
    return now or now_iso()


def time_bound(value: str, *, end: bool) -> str:
    """A since/until bound as a canonical instant. A date, a year-month ("2010-06") or a year
    ("2010") covers its whole span: as a start its first instant, as an end its last, so
    ``--since 2010 --until 2010`` is all of 2010."""
    text = value.strip()
    try:
        if re.fullmatch(r"\d{4}(?:-\d{2})?", text):
            start = datetime.strptime(text, "%Y-%m" if "-" in text else "%Y").replace(tzinfo=UTC)
            if not end:
                return normalize_iso(start.isoformat())
            after = (
                start.replace(year=start.year + 1)
                if "-" not in text
                else start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
            )
            return normalize_iso((after - timedelta(milliseconds=1)).isoformat())
        if len(text) == 10 and text[4] == "-" and text[7] == "-":
            return normalize_iso(text + ("T23:59:59.999Z" if end else "T00:00:00.000Z"))
        return normalize_iso(text)
    except (ValueError, IndexError) as exc:
        raise InvalidInputError(
            f"invalid time bound {value!r}: expected an ISO-8601 date or timestamp"
        ) from exc


@dataclass
class NewFrame:
    """One keyframe to write with ``FrameStore.create_i_frames``."""

    gop_id: str
    content: str
    importance: str = "normal"
    source: str = "user_stated"
    created_at: str | None = None
    metadata: dict[str, Any] | None = None


class FrameStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- writes ----------------------------------------------------------------------------
    def create_i_frame(
        self,
        gop_id: str,
        content: str,
        importance: str = "normal",
        source: str = "user_stated",
        created_at: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Frame:
        """A keyframe, dedup-guarded over all frames: a duplicate is touched and returned."""
        return self.create_i_frames([NewFrame(gop_id, content, importance, source, created_at, metadata)])[0]

    def create_i_frames(self, specs: list[NewFrame]) -> list[Frame]:
        """Many keyframes in one transaction, each dedup-guarded like ``create_i_frame``.

        The bulk path of a harvest: one lookup for all hashes, then ``executemany`` for the frame
        and FTS rows (ids are assigned explicitly inside the write lock, so they are known).
        Returns one frame per spec, in order: the new frame, or the existing duplicate (touched).
        """
        for spec in specs:
            self._check_write(spec.content, spec.importance, spec.source)
        digests = [content_hash(spec.content) for spec in specs]
        with self.db.transaction():
            existing: dict[str, int] = {}
            for row in self.db.query(
                f"SELECT content_hash, MAX(id) AS id FROM memory_frames WHERE content_hash IN ({IN_LIST}) "
                "GROUP BY content_hash",
                (in_list(dict.fromkeys(digests)),),
            ):
                existing[row["content_hash"]] = row["id"]
            gops = {spec.gop_id for spec in specs}
            missing = [
                g for g in gops if self.db.query_one("SELECT 1 FROM sessions WHERE gop_id = ?", (g,)) is None
            ]
            if missing:
                raise NotFoundError(f"unknown session {missing[0]!r}: create it with sessions.ensure() first")
            next_t = {
                g: self.db.scalar("SELECT COALESCE(MAX(t), -1) + 1 FROM memory_frames WHERE gop_id = ?", (g,))
                for g in gops
            }
            next_id = (
                max(
                    self.db.scalar("SELECT COALESCE(MAX(id), 0) FROM memory_frames"),
                    self.db.scalar(
                        "SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence WHERE name = 'memory_frames'"
                    )
                    or 0,
                )
                + 1
            )
            results: list[Frame | int] = []
            rows = []
            now = now_iso()
            for spec, digest in zip(specs, digests, strict=True):
                if digest in existing:
                    results.append(existing[digest])
                    continue
                meta = dict(spec.metadata or {})
                when = resolve_created_at(spec.created_at, meta, now)
                frame = Frame(
                    id=next_id,
                    frame_type="I",
                    gop_id=spec.gop_id,
                    t=next_t[spec.gop_id],
                    base_frame_id=None,
                    content=spec.content,
                    importance=spec.importance,
                    source=spec.source,
                    access_count=0,
                    created_at=when,
                    last_accessed=when,
                    content_hash=digest,
                    metadata=meta,
                    inserted=True,
                )
                existing[digest] = next_id
                next_id += 1
                next_t[spec.gop_id] += 1
                results.append(frame)
                rows.append(frame)
            self.db.executemany(
                "INSERT INTO memory_frames (id, frame_type, gop_id, t, base_frame_id, content, importance, source, "
                "created_at, last_accessed, content_hash, metadata) VALUES (?, 'I', ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        f.id,
                        f.gop_id,
                        f.t,
                        f.content,
                        f.importance,
                        f.source,
                        f.created_at,
                        f.last_accessed,
                        f.content_hash,
                        json.dumps(f.metadata) if f.metadata else "{}",
                    )
                    for f in rows
                ],
            )
            self.db.executemany(
                "INSERT INTO memory_frames_fts (rowid, content) VALUES (?, ?)",
                [(f.id, f.content) for f in rows],
            )
            duplicate_ids = [r for r in results if isinstance(r, int)]
            for frame_id in duplicate_ids:
                self.touch(frame_id)
            touched = self.get_many(duplicate_ids) if duplicate_ids else {}
        return [r if isinstance(r, Frame) else touched[r] for r in results]

    def create_p_frame(
        self,
        gop_id: str,
        content: str,
        base_frame_id: int,
        importance: str = "normal",
        source: str = "user_stated",
        created_at: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Frame:
        """A delta against an I-frame (no dedup, as in the original)."""
        self._check_write(content, importance, source)
        base = self.get_by_id(base_frame_id)
        if base is None:
            raise NotFoundError(f"base frame {base_frame_id} does not exist")
        return self._insert(
            "P",
            gop_id,
            content,
            base_frame_id,
            importance,
            source,
            created_at,
            metadata,
            content_hash(content),
        )

    def create_b_frame(
        self, gop_id: str, content: str, base_frame_id: int, referenced_frame_ids: list[int]
    ) -> Frame:
        """A cross-reference frame; its content is ``{"description", "references"}`` JSON."""
        if self.get_by_id(base_frame_id) is None:
            raise NotFoundError(f"base frame {base_frame_id} does not exist")
        if not all(isinstance(i, int) for i in referenced_frame_ids):
            raise InvalidInputError("referenced frame ids must be integers")
        body = json.dumps({"description": content, "references": list(referenced_frame_ids)})
        return self._insert(
            "B", gop_id, body, base_frame_id, "normal", "user_stated", None, None, content_hash(body)
        )

    def _check_write(self, content: str, importance: str, source: str) -> None:
        if not isinstance(content, str):
            raise InvalidInputError("frame content must be a string")
        _check_choice(importance, IMPORTANCE_LEVELS, "importance")
        _check_choice(source, FRAME_SOURCES, "source")

    def _insert(
        self,
        frame_type: str,
        gop_id: str,
        content: str,
        base_frame_id: int | None,
        importance: str,
        source: str,
        created_at: str | None,
        metadata: dict[str, Any] | None,
        digest: str,
    ) -> Frame:
        meta = dict(metadata or {})
        when = resolve_created_at(created_at, meta)
        # One frame row and its FTS row are written together without a savepoint per frame (the
        # hot path of a harvest); if the FTS insert fails the frame row is removed again.
        # No RETURNING: it halves SQLite's insert rate; the row is built from what was written.
        t = self.db.scalar("SELECT COALESCE(MAX(t), -1) + 1 FROM memory_frames WHERE gop_id = ?", (gop_id,))
        meta_json = json.dumps(meta) if meta else "{}"
        try:
            frame_id = self.db.execute(
                "INSERT INTO memory_frames (frame_type, gop_id, t, base_frame_id, content, importance, source, "
                "created_at, last_accessed, content_hash, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    frame_type,
                    gop_id,
                    t,
                    base_frame_id,
                    content,
                    importance,
                    source,
                    when,
                    when,
                    digest,
                    meta_json,
                ),
            ).lastrowid
        except self.db.errors.IntegrityError as exc:
            if self.db.query_one("SELECT 1 FROM sessions WHERE gop_id = ?", (gop_id,)) is None:
                raise NotFoundError(
                    f"unknown session {gop_id!r}: create it with sessions.ensure() first"
                ) from exc
            raise InvalidInputError(f"frame rejected by the database: {exc}") from exc
        try:
            self.db.execute(
                "INSERT INTO memory_frames_fts (rowid, content) VALUES (?, ?)", (frame_id, content)
            )
        except BaseException:
            self.db.execute("DELETE FROM memory_frames WHERE id = ?", (frame_id,))
            raise
        return Frame(
            id=frame_id,
            frame_type=frame_type,
            gop_id=gop_id,
            t=t,
            base_frame_id=base_frame_id,
            content=content,
            importance=importance,
            source=source,
            access_count=0,
            created_at=when,
            last_accessed=when,
            content_hash=digest,
            metadata=meta,
            inserted=True,
        )

    def touch(self, frame_id: int) -> int | None:
        """Count an access (recall, dedup hit); returns the new access count."""
        row = self.db.query_one(
            "UPDATE memory_frames SET access_count = access_count + 1, last_accessed = ? WHERE id = ? "
            "RETURNING access_count",
            (now_iso(), frame_id),
        )
        return None if row is None else row[0]

    def update(
        self,
        frame_id: int,
        content: str,
        importance: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Frame | None:
        """Rewrite a frame; FTS is refreshed, its vectors dropped until re-embedded."""
        if not isinstance(content, str):
            raise InvalidInputError("frame content must be a string")
        if importance is not None:
            _check_choice(importance, IMPORTANCE_LEVELS, "importance")
        with self.db.transaction():
            frame = self.get_by_id(frame_id)
            if frame is None:
                return None
            new_importance = importance or frame.importance
            new_meta = frame.metadata if metadata is None else metadata
            if content == frame.content and new_importance == frame.importance and new_meta == frame.metadata:
                return frame
            self.db.execute(
                "UPDATE memory_frames SET content = ?, importance = ?, content_hash = ?, metadata = ? WHERE id = ?",
                (content, new_importance, content_hash(content), json.dumps(new_meta), frame_id),
            )
            if content != frame.content:
                self.db.execute("DELETE FROM memory_frames_fts WHERE rowid = ?", (frame_id,))
                self.db.execute(
                    "INSERT INTO memory_frames_fts (rowid, content) VALUES (?, ?)", (frame_id, content)
                )
                drop_vectors(self.db, [frame_id])
            return self.get_by_id(frame_id)

    def delete(self, frame_id: int) -> bool:
        """Remove a frame with its FTS row, vectors and knowledge links; references to it become NULL.

        The facts it stated are noted as having lost evidence; those left with none are ended (not
        deleted) by ``KnowledgeGraph.end_facts_without_evidence`` after the knowledge step.
        """
        with self.db.transaction():
            KnowledgeGraph(self.db).note_evidence_lost([frame_id])
            self.db.execute(
                "UPDATE memory_frames SET base_frame_id = NULL WHERE base_frame_id = ?", (frame_id,)
            )
            drop_vectors(self.db, [frame_id])
            self.db.execute("DELETE FROM memory_frames_fts WHERE rowid = ?", (frame_id,))
            self.db.execute("DELETE FROM kg_entity_frames WHERE frame_id = ?", (frame_id,))
            self.db.execute("DELETE FROM kg_relation_frames WHERE frame_id = ?", (frame_id,))
            return self.db.execute("DELETE FROM memory_frames WHERE id = ?", (frame_id,)).rowcount > 0

    def compact(self, max_temp_age_days: int = 30, max_deprecated_age_days: int = 90) -> CompactionResult:
        return compact(self, max_temp_age_days, max_deprecated_age_days)

    # -- reads -----------------------------------------------------------------------------
    def find_duplicate(self, content: str) -> Frame | None:
        row = self.db.query_one(
            "SELECT * FROM memory_frames WHERE content_hash = ? ORDER BY id DESC LIMIT 1",
            (content_hash(content),),
        )
        return Frame.from_row(row) if row else None

    def get_by_id(self, frame_id: int) -> Frame | None:
        row = self.db.query_one("SELECT * FROM memory_frames WHERE id = ?", (frame_id,))
        return Frame.from_row(row) if row else None

    def get_many(self, frame_ids: list[int]) -> dict[int, Frame]:
        rows = self.db.query(f"SELECT * FROM memory_frames WHERE id IN ({IN_LIST})", (in_list(frame_ids),))
        return {row["id"]: Frame.from_row(row) for row in rows}

    def get_latest_i_frame(self, gop_id: str) -> Frame | None:
        row = self.db.query_one(
            "SELECT * FROM memory_frames WHERE gop_id = ? AND frame_type = 'I' ORDER BY t DESC LIMIT 1",
            (gop_id,),
        )
        return Frame.from_row(row) if row else None

    def get_p_frames_since_last_i(self, gop_id: str) -> list[Frame]:
        latest = self.get_latest_i_frame(gop_id)
        if latest is None:
            return []
        rows = self.db.query(
            "SELECT * FROM memory_frames WHERE gop_id = ? AND frame_type = 'P' AND t > ? ORDER BY t ASC",
            (gop_id, latest.t),
        )
        return [Frame.from_row(r) for r in rows]

    def get_gop_frames(self, gop_id: str) -> list[Frame]:
        rows = self.db.query("SELECT * FROM memory_frames WHERE gop_id = ? ORDER BY t ASC", (gop_id,))
        return [Frame.from_row(r) for r in rows]

    def reconstruct_state(self, gop_id: str) -> dict[str, Any]:
        return {"iframe": self.get_latest_i_frame(gop_id), "pframes": self.get_p_frames_since_last_i(gop_id)}

    def get_b_frame_references(self, frame_id: int) -> list[int]:
        frame = self.get_by_id(frame_id)
        if frame is None or frame.frame_type != "B":
            return []
        try:
            references = json.loads(frame.content).get("references", [])
        except (ValueError, AttributeError):
            return []
        return [r for r in references if isinstance(r, int)]

    def get_recent(self, limit: int = 50) -> list[Frame]:
        rows = self.db.query("SELECT * FROM memory_frames ORDER BY id DESC LIMIT ?", (int(limit),))
        return [Frame.from_row(r) for r in rows]

    def list(self, limit: int = 50) -> list[Frame]:
        return self.get_recent(limit)

    def get_recent_filtered(
        self, limit: int = 50, since: str | None = None, until: str | None = None
    ) -> list[Frame]:
        """Newest frames whose event time lies in [since, until], compared as instants."""
        clauses, params = time_clauses("created_at", since, until)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self.db.query(
            f"SELECT * FROM memory_frames {where} ORDER BY id DESC LIMIT ?", [*params, int(limit)]
        )
        return [Frame.from_row(r) for r in rows]

    def get_stats(self) -> dict[str, Any]:
        total = self.db.scalar("SELECT COUNT(*) FROM memory_frames")
        by_type = {t: 0 for t in FRAME_TYPES}
        for row in self.db.query("SELECT frame_type, COUNT(*) AS n FROM memory_frames GROUP BY frame_type"):
            by_type[row["frame_type"]] = row["n"]
        by_importance = {i: 0 for i in IMPORTANCE_LEVELS}
        for row in self.db.query("SELECT importance, COUNT(*) AS n FROM memory_frames GROUP BY importance"):
            by_importance[row["importance"]] = row["n"]
        return {"total": total, "byType": by_type, "byImportance": by_importance}


def time_clauses(column: str, since: str | None, until: str | None) -> tuple[list[str], list[str]]:
    """SQL conditions comparing ``column`` as an instant (julianday), whatever its stored format."""
    clauses: list[str] = []
    params: list[str] = []
    if since:
        clauses.append(f"julianday({column}) >= julianday(?)")
        params.append(time_bound(since, end=False))
    if until:
        clauses.append(f"julianday({column}) <= julianday(?)")
        params.append(time_bound(until, end=True))
    return clauses, params


def scope_clauses(
    alias: str,
    gop_id: str | None,
    since: str | None,
    until: str | None,
    source: SourceFilter | None = None,
) -> tuple[list[str], list[Any]]:
    """SQL conditions keeping the frames (table alias ``alias``, or "" for none) of one session,
    of an event-time range and matching a source filter; no conditions for what is not given."""
    prefix = f"{alias}." if alias else ""
    clauses, time_params = time_clauses(f"{prefix}created_at", since, until)
    params: list[Any] = list(time_params)
    if gop_id:
        clauses, params = [f"{prefix}gop_id = ?", *clauses], [gop_id, *params]
    if source is not None and not source.empty:
        source_sql, source_params = source.clauses(alias)
        clauses, params = [*clauses, *source_sql], [*params, *source_params]
    return clauses, params


def delete_vector_rows(db: Database, frame_ids: Sequence[int]) -> None:
    """Delete the frame vectors and chunk vectors of these frames (vec0 has no cascades)."""
    # imported here: vector_codes brings numpy, and this module is imported by what only validates
    # requests (the query models, so `mind mcp` before its first tool call)
    from mind_core.search import vector_codes

    rows = [(frame_id,) for frame_id in frame_ids]
    db.executemany("DELETE FROM memory_frames_vec WHERE rowid = ?", rows)
    vector_codes.remove(db, "memory_frames_vec", frame_ids)
    chunk_rows = db.query(f"SELECT id FROM memory_frame_chunks WHERE frame_id IN ({IN_LIST})", (in_list(frame_ids),))
    if chunk_rows:
        chunk_ids = [(row[0],) for row in chunk_rows]
        db.executemany("DELETE FROM memory_frame_chunks_vec WHERE rowid = ?", chunk_ids)
        vector_codes.remove(db, "memory_frame_chunks_vec", [chunk_id for (chunk_id,) in chunk_ids])
        db.executemany("DELETE FROM memory_frame_chunks WHERE id = ?", chunk_ids)


def drop_vectors(db: Database, frame_ids: Sequence[int]) -> None:
    """Delete these frames' vectors and mark them as not embedded."""
    delete_vector_rows(db, frame_ids)
    db.executemany("UPDATE memory_frames SET embedded_hash = NULL WHERE id = ?", [(i,) for i in frame_ids])
