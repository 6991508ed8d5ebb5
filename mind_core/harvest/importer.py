"""The import engine: harvest items become I-frames, idempotently and crash-safely.

One I-frame per message (a Markdown section, an email), with the message's own timestamp, in one
session per container (conversation / note / thread). A ledger row per message (source, key,
content hash, frame id) is written in the same transaction as the frames of its batch, so a crash
at any point followed by a rerun gives exactly the result of one clean run: a message already in
the ledger with the same hash is skipped without a write, a changed one updates its frame.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from mind_core.frames import Frame, NewFrame
from mind_core.harvest.items import HarvestError, HarvestItem, HarvestMessage, ScanEvent
from mind_core.harvest.source_metadata import ledger_digest, source_metadata
from mind_core.harvest.stores import HarvestRunStore, HarvestSourceStore
from mind_core.mind import Mind
from mind_core.timestamps import is_valid_iso_timestamp, now_iso

IMPORT_BATCH = 1000
TITLE_CHARS = 120
MAX_ERRORS_KEPT = 200
# A frame this long already costs ~1,600 chunk vectors; a 50 MB one-line "note" would cost 80,000
# and minutes of embedding, so longer messages keep their beginning and the cut is reported.
MAX_MESSAGE_CHARS = 1_000_000

Progress = Callable[[int, int | None], None]


@dataclass
class ImportSummary:
    source: str
    items_seen: int = 0
    messages_seen: int = 0
    frames_new: int = 0
    frames_updated: int = 0
    frames_unchanged: int = 0
    frames_duplicate: int = 0  # new messages whose content already existed as a frame
    timestamps_missing: int = 0
    error_count: int = 0
    errors: list[HarvestError] = field(default_factory=list)
    set_hash: str | None = None
    unchanged: bool = False  # the whole item set hashed the same as at the last sync
    pruned: int = 0
    duration_s: float = 0.0
    run_id: int | None = None
    new_frame_ids: list[int] = field(default_factory=list)
    updated_frame_ids: list[int] = field(default_factory=list)

    def add_error(self, error: HarvestError) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(error)

    def to_dict(self) -> dict[str, Any]:
        data = {
            k: v
            for k, v in self.__dict__.items()
            if k not in ("errors", "new_frame_ids", "updated_frame_ids")
        }
        data["errors"] = [str(e) for e in self.errors]
        return data


def gop_id_for(source_name: str, container_key: str) -> str:
    return f"harvest:{source_name}:{container_key}"


def ledger_key(item: HarvestItem, message: HarvestMessage) -> str:
    return f"{item.key}/{message.key}"


def speaker_of(message: HarvestMessage) -> str | None:
    if message.author:
        return message.author
    return message.role.capitalize() if message.role else None


def frame_content(item: HarvestItem, message: HarvestMessage) -> str:
    """What a frame stores: the title for context, the speaker, then the text itself."""
    title = " ".join((item.title or "Untitled").split())[:TITLE_CHARS]
    speaker = speaker_of(message)
    text = message.text.strip()
    return f"[{title}] {speaker}: {text}" if speaker else f"[{title}]\n{text}"


def provenance(source_name: str, kind: str, item: HarvestItem, message: HarvestMessage) -> dict[str, Any]:
    return {
        "source": source_name,
        "plugin": kind,
        "item_key": item.key,
        "item_kind": item.kind,
        "container": item.container_key,
        "title": item.title,
        "message_key": message.key,
        "role": message.role,
        "author": message.author,
        "timestamp": message.timestamp or item.timestamp,
        "path": item.metadata.get("path"),
    }


def set_hash(item_hashes: Iterable[str]) -> str:
    """Order-independent hash of a whole item set (the original's harvestSetHash, per message)."""
    return hashlib.sha256("\n".join(sorted(item_hashes)).encode()).hexdigest()


@dataclass
class _Pending:
    key: str
    digest: str
    gop_id: str
    content: str
    timestamp: str | None
    metadata: dict[str, Any]


def import_items(
    mind: Mind,
    source_name: str,
    events: Iterable[ScanEvent],
    *,
    kind: str,
    batch_size: int = IMPORT_BATCH,
    prune: bool = False,
    progress: Progress | None = None,
) -> ImportSummary:
    """Write the items of a scan into the mind; returns what was new, updated, unchanged, wrong."""
    started = time.perf_counter()
    summary = ImportSummary(source=source_name)
    sources = HarvestSourceStore(mind.db)
    runs = HarvestRunStore(mind.db)
    with mind.db.transaction():
        registered = sources.get_by_source(source_name)
        if registered is None:
            sources.upsert(source_name, source_name, kind=kind)
        previous_hash = registered.last_content_hash if registered else None
        runs.abandon_interrupted(source_name)
        summary.run_id = runs.start(source_name)
    item_hashes: list[str] = []
    seen_keys: set[str] | None = set() if prune else None
    ensured_gops: set[str] = set()
    pending: list[_Pending] = []

    def flush() -> None:
        if pending:
            _write_batch(mind, source_name, pending, ensured_gops, summary)
            runs.heartbeat(summary.run_id, summary.messages_seen)  # type: ignore[arg-type]
            pending.clear()
            if progress is not None:
                progress(summary.messages_seen, None)

    try:
        for event in events:
            if isinstance(event, HarvestError):
                summary.add_error(event)
                continue
            summary.items_seen += 1
            message_hashes = []
            for message in event.messages:
                if not isinstance(message.text, str) or not message.text.strip():
                    continue
                summary.messages_seen += 1
                key = ledger_key(event, message)
                if len(message.text) > MAX_MESSAGE_CHARS:
                    summary.add_error(
                        HarvestError(
                            str(event.metadata.get("path") or source_name),
                            f"message of {len(message.text):,} characters cut to its first "
                            f"{MAX_MESSAGE_CHARS:,}",
                            record=key,
                        )
                    )
                    message = replace(message, text=message.text[:MAX_MESSAGE_CHARS])
                content = frame_content(event, message)
                kept = source_metadata(event, message)
                digest = ledger_digest(content, kept)
                message_hashes.append(f"{key}\x00{digest}")
                if seen_keys is not None:
                    seen_keys.add(key)
                timestamp = message.timestamp or event.timestamp
                if not is_valid_iso_timestamp(timestamp):
                    summary.timestamps_missing += 1
                meta = {
                    "provenance": provenance(source_name, kind, event, message),
                    "source": kept,
                }
                pending.append(
                    _Pending(
                        key, digest, gop_id_for(source_name, event.container_key), content, timestamp, meta
                    )
                )
                if len(pending) >= batch_size:
                    flush()
            item_hashes.append(
                hashlib.sha256(
                    json.dumps([event.key, event.title, message_hashes], ensure_ascii=False).encode(
                        "utf-8", "surrogatepass"
                    )
                ).hexdigest()
            )
        flush()
        summary.set_hash = set_hash(item_hashes)
        summary.unchanged = summary.set_hash == previous_hash
        if seen_keys is not None and summary.error_count == 0:
            summary.pruned = _prune_unseen(mind, source_name, seen_keys)
        with mind.db.transaction():
            sources.record_sync(source_name, summary.items_seen, summary.frames_new, summary.set_hash)
            runs.complete(summary.run_id, summary.messages_seen, summary.messages_seen)  # type: ignore[arg-type]
    except BaseException as exc:
        runs.fail(summary.run_id, f"{type(exc).__name__}: {exc}", summary.messages_seen)  # type: ignore[arg-type]
        raise
    finally:
        summary.duration_s = time.perf_counter() - started
    return summary


def _write_batch(
    mind: Mind, source_name: str, pending: list[_Pending], ensured_gops: set[str], summary: ImportSummary
) -> None:
    """One transaction: sessions, new frames, changed frames, and their ledger rows."""
    db = mind.db
    with db.transaction():
        known: dict[str, Any] = {}
        keys = list(dict.fromkeys(p.key for p in pending))
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" for _ in chunk)
            for row in db.query(
                f"SELECT item_key, content_hash, frame_id FROM harvest_ledger WHERE source = ? AND item_key IN ({marks})",
                [source_name, *chunk],
            ):
                known[row["item_key"]] = row
        now = now_iso()
        new: list[_Pending] = []
        for p in pending:
            row = known.get(p.key)
            if row is None or (row["frame_id"] is None and row["content_hash"] != p.digest):
                new.append(p)
                known[p.key] = {
                    "content_hash": p.digest,
                    "frame_id": None,
                }  # a repeat in this batch is not new
            elif row["content_hash"] == p.digest:
                summary.frames_unchanged += 1
            else:
                current = mind.frames.get_by_id(row["frame_id"])
                merged = None if current is None else {**current.metadata, **p.metadata}
                frame = (
                    None if current is None else mind.frames.update(current.id, p.content, metadata=merged)
                )
                if frame is None:  # the frame was deleted since; write it again
                    new.append(p)
                    continue
                summary.frames_updated += 1
                summary.updated_frame_ids.append(frame.id)
                db.execute(
                    "UPDATE harvest_ledger SET content_hash = ?, last_seen = ? WHERE source = ? AND item_key = ?",
                    (p.digest, now, source_name, p.key),
                )
        if not new:
            return
        for gop_id in {p.gop_id for p in new} - ensured_gops:
            mind.sessions.ensure(gop_id, project_id=source_name)
            ensured_gops.add(gop_id)
        frames: list[Frame] = mind.frames.create_i_frames(
            [NewFrame(p.gop_id, p.content, "normal", "import", p.timestamp, p.metadata) for p in new]
        )
        rows = []
        for p, frame in zip(new, frames, strict=True):
            if frame.inserted:
                summary.frames_new += 1
                summary.new_frame_ids.append(frame.id)
            else:
                summary.frames_duplicate += 1
            rows.append((source_name, p.key, p.digest, frame.id, now, now))
        db.executemany(
            "INSERT INTO harvest_ledger (source, item_key, content_hash, frame_id, first_seen, last_seen) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(source, item_key) DO UPDATE SET "
            "content_hash = excluded.content_hash, frame_id = excluded.frame_id, last_seen = excluded.last_seen",
            rows,
        )


def _prune_unseen(mind: Mind, source_name: str, seen_keys: set[str]) -> int:
    """Delete the frames of messages that are no longer in the source (only when asked)."""
    db = mind.db
    with db.transaction():
        db.execute("CREATE TEMP TABLE IF NOT EXISTS harvest_seen (item_key TEXT PRIMARY KEY)")
        db.execute("DELETE FROM harvest_seen")
        db.executemany("INSERT OR IGNORE INTO harvest_seen VALUES (?)", [(k,) for k in seen_keys])
        gone = db.query(
            "SELECT item_key, frame_id FROM harvest_ledger WHERE source = ? "
            "AND item_key NOT IN (SELECT item_key FROM harvest_seen)",
            (source_name,),
        )
        removed = 0
        for row in gone:
            still_used = row["frame_id"] is not None and db.scalar(
                "SELECT COUNT(*) FROM harvest_ledger WHERE frame_id = ? AND NOT (source = ? AND item_key = ?)",
                (row["frame_id"], source_name, row["item_key"]),
            )
            if row["frame_id"] is not None and not still_used:
                removed += mind.frames.delete(row["frame_id"])
            db.execute(
                "DELETE FROM harvest_ledger WHERE source = ? AND item_key = ?", (source_name, row["item_key"])
            )
        db.execute("DELETE FROM harvest_seen")
    return removed
