"""The import engine: harvest items become I-frames, idempotently and crash-safely.

One I-frame per message (a Markdown section, an email), with the message's own timestamp, in one
session per container (conversation / note / thread). A ledger row per message (source, key,
content hash, frame id) is written in the same transaction as the frames of its batch, so a crash
at any point followed by a rerun gives exactly the result of one clean run: a message already in
the ledger with the same hash is skipped without a write, a changed one updates its frame.

Frames are shared by dedup, so a changed message rewrites its frame in place only when the frame
is its own and nobody else holds it; otherwise it gets a new frame (``ownership``). A message
whose frame no longer holds its text (rewritten by someone else) gets its text back the same way.
Every import ends with the source's outcome (ok / partial / failed / empty), stored with it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from mind_core.harvest.items import (
    EMPTY_FILE_KEY,
    MAX_MESSAGE_CHARS,
    HarvestError,
    HarvestItem,
    HarvestMessage,
    ScanEvent,
)
from mind_core.harvest.outcome import judge_import
from mind_core.harvest.ownership import frame_metadata, frames_held, hand_over, held_by_others, owned_by
from mind_core.harvest.source_metadata import ledger_digest, same_source_metadata, source_metadata
from mind_core.harvest.stores import HarvestRunStore, HarvestSourceStore, SourceOutcome
from mind_core.mind import Mind
from mind_core.privacy.redaction import Finding, Redactor, count_findings
from mind_core.privacy.tombstones import HarvestGuard
from mind_core.store.db import IN_LIST, Database, escape_like, in_list
from mind_core.store.frames import Frame, NewFrame
from mind_core.store.schema import content_hash
from mind_core.timestamps import is_valid_iso_timestamp, now_iso

IMPORT_BATCH = 1000
# the provenance fields that hold a message's words (its keys, path and source name are left)
REDACTED_PROVENANCE = ("title", "author")
TITLE_CHARS = 120
MAX_ERRORS_KEPT = 200

Progress = Callable[[int, int | None], None]


@dataclass
class ImportSummary:
    source: str
    items_seen: int = 0
    messages_seen: int = 0
    frames_new: int = 0
    frames_updated: int = 0
    frames_unchanged: int = 0
    frames_duplicate: int = 0  # new messages whose content already existed as a frame: shared, not copied
    # the sources whose frames those messages share, with how many (this source's own name: an
    # identical message of its own; "": a frame no harvest wrote)
    frames_shared_with: dict[str, int] = field(default_factory=dict)
    frames_restored: int = 0  # messages whose frame had been rewritten under them, given their text back
    frames_metadata_refreshed: int = 0  # same text, new source metadata (frontmatter, tags): the owner's frame follows
    messages_forgotten: int = 0  # skipped: a tombstone of `mind forget` names them or their author
    # per kind (``secret:aws-key``, ``email``...), the values the redaction policy replaced: each
    # distinct value once per message, wherever in it (text, title, author, headers)
    redacted: dict[str, int] = field(default_factory=dict)
    messages_redacted: int = 0
    timestamps_missing: int = 0
    error_count: int = 0
    errors: list[HarvestError] = field(default_factory=list)
    set_hash: str | None = None
    unchanged: bool = False  # the whole item set hashed the same as at the last sync
    pruned: int = 0
    prune_refused: str | None = None  # why --prune deleted nothing
    status: str | None = None  # ok / partial / failed / empty (SOURCE_STATUSES)
    status_reason: str | None = None
    duration_s: float = 0.0
    run_id: int | None = None
    new_frame_ids: list[int] = field(default_factory=list)
    updated_frame_ids: list[int] = field(default_factory=list)

    def add_error(self, error: HarvestError) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(error)

    def count_redacted(self, findings: list[Finding]) -> None:
        if findings:
            self.messages_redacted += 1
            for kind, count in count_findings(findings).items():
                self.redacted[kind] = self.redacted.get(kind, 0) + count

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


def _held_messages(db: Database, source_name: str, item_key: str) -> list[str]:
    """The ledger keys the source holds for an item's messages."""
    rows = db.query(
        "SELECT item_key FROM harvest_ledger WHERE source = ? AND item_key LIKE ? ESCAPE '\\'",
        (source_name, escape_like(item_key) + "/%"),
    )
    return [row[0] for row in rows]


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


def provenance(
    source_name: str, kind: str, item: HarvestItem, message: HarvestMessage, identity: str | None = None
) -> dict[str, Any]:
    return {
        "source": source_name,
        "source_identity": identity,
        "plugin": kind,
        "item_key": item.key,
        "item_kind": item.kind,
        "container": item.container_key,
        "title": item.title,
        "message_key": message.key,
        "role": message.role,
        "author": message.author,
        "timestamp": message.timestamp or item.timestamp,
        # the message's own file first: a mail thread's messages lie in several files
        "path": message.metadata.get("path") or item.metadata.get("path"),
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
    allow_mass_delete: bool = False,
    progress: Progress | None = None,
) -> ImportSummary:
    """Write the items of a scan into the mind; returns what was new, updated, unchanged, wrong,
    and the source's outcome (also stored with the source). Each message is redacted under the
    source's policy (``mind_core.privacy.redaction_policy``) before anything of it is stored."""
    started = time.perf_counter()
    summary = ImportSummary(source=source_name)
    sources = HarvestSourceStore(mind.db)
    runs = HarvestRunStore(mind.db)
    with mind.db.transaction():
        registered = sources.get_by_source(source_name)
        if registered is None:
            registered = sources.upsert(source_name, source_name, kind=kind)
        identity = sources.identity_of(source_name)
        previous_hash = registered.last_content_hash
        runs.abandon_interrupted(source_name)
        summary.run_id = runs.start(source_name)
    item_hashes: list[str] = []
    seen_keys: set[str] | None = set() if prune else None
    ensured_gops: set[str] = set()
    pending: list[_Pending] = []
    guard = HarvestGuard.load(mind.db)
    redactor = Redactor.for_source(mind.db, source_name)

    def flush() -> None:
        if pending:
            _write_batch(mind, source_name, identity, pending, ensured_gops, summary)
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
            if event.metadata.get(EMPTY_FILE_KEY) and not event.messages:
                held = _held_messages(mind.db, source_name, event.key)
                if held:
                    if seen_keys is not None:
                        seen_keys.update(held)
                    summary.add_error(
                        HarvestError(
                            str(event.metadata.get("path") or source_name),
                            f"the file is now empty (0 bytes) but held {len(held)} message(s): kept them "
                            "(an emptied file is more often a failed save or sync than an edit); delete the "
                            "file and harvest with --prune to drop them",
                            record=event.key,
                        )
                    )
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
                if guard.active:
                    if guard.buries(key, content, (message.author, message.metadata.get("from"))):
                        summary.messages_forgotten += 1
                        continue
                    content, kept = guard.redact_text(content), guard.redact_value(kept)
                    if guard.buries(key, content, ()):
                        summary.messages_forgotten += 1
                        continue
                origin = guard.redact_value(provenance(source_name, kind, event, message, identity))
                if redactor.active:
                    found: list[Finding] = []
                    content, kept = redactor.redact_value(content, found), redactor.redact_value(kept, found)
                    for text_field in REDACTED_PROVENANCE:
                        origin[text_field] = redactor.redact_value(origin[text_field], found)
                    summary.count_redacted(found)
                digest = content_hash(content)  # the text the message's frame must hold
                message_hashes.append(f"{key}\x00{ledger_digest(content, kept)}")
                if seen_keys is not None:
                    seen_keys.add(key)
                timestamp = message.timestamp or event.timestamp
                if not is_valid_iso_timestamp(timestamp):
                    summary.timestamps_missing += 1
                meta = {"provenance": origin, "source": kept}
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
        if seen_keys is not None:
            if summary.error_count:
                summary.prune_refused = (
                    f"the scan reported {summary.error_count} error(s): a record that failed to read "
                    "is not gone, so nothing was pruned"
                )
            else:
                summary.pruned, summary.prune_refused = _prune_unseen(
                    mind, source_name, identity, seen_keys, allow_mass_delete
                )
        outcome = judge_import(
            kind,
            registered.source_path,
            summary.items_seen,
            summary.error_count,
            [str(e) for e in summary.errors],
            frames_held(mind.db, source_name),
        )
        summary.status, summary.status_reason = outcome.status, outcome.reason
        with mind.db.transaction():
            sources.record_outcome(source_name, outcome)
            if outcome.failing:  # no content hash: the next harvest compares against the last good one
                runs.fail(summary.run_id, outcome.reason or outcome.status, summary.messages_seen)  # type: ignore[arg-type]
            else:
                sources.record_sync(source_name, summary.items_seen, summary.frames_new, summary.set_hash)
                runs.complete(summary.run_id, summary.messages_seen, summary.messages_seen)  # type: ignore[arg-type]
    except BaseException as exc:
        reason = f"{type(exc).__name__}: {exc}"
        runs.fail(summary.run_id, reason, summary.messages_seen)  # type: ignore[arg-type]
        summary.status, summary.status_reason = "failed", reason
        sources.record_outcome(
            source_name,
            SourceOutcome(
                "failed",
                reason,
                summary.items_seen,
                frames_held(mind.db, source_name),
                summary.error_count,
                [str(e) for e in summary.errors],
            ),
        )
        raise
    finally:
        summary.duration_s = time.perf_counter() - started
    return summary


def _write_batch(
    mind: Mind,
    source_name: str,
    identity: str | None,
    pending: list[_Pending],
    ensured_gops: set[str],
    summary: ImportSummary,
) -> None:
    """One transaction: sessions, new frames, changed frames, and their ledger rows."""
    db = mind.db
    with db.transaction():
        known: dict[str, Any] = {}
        for row in db.query(
            "SELECT l.item_key, l.content_hash, l.frame_id, f.content_hash AS frame_hash, "
            "json_extract(f.metadata, '$.source') AS frame_source, "
            "json_extract(f.metadata, '$.provenance.source') AS frame_owner "
            "FROM harvest_ledger l LEFT JOIN memory_frames f ON f.id = l.frame_id "
            f"WHERE l.source = ? AND l.item_key IN ({IN_LIST})",
            (source_name, in_list(dict.fromkeys(p.key for p in pending))),
        ):
            known[row["item_key"]] = dict(row)
        now = now_iso()
        new: list[_Pending] = []
        replacing: dict[int, str] = {}  # index in ``new`` -> "updated" or "restored"
        left: list[int] = []  # frames this source owned and now leaves to the others holding them
        for p in pending:
            row = known.get(p.key)
            if row is None or (row["frame_id"] is None and row["content_hash"] != p.digest):
                new.append(p)
                known[p.key] = {"content_hash": p.digest, "frame_id": None, "frame_hash": None}
                continue
            if row["frame_id"] is None or (row["content_hash"] == p.digest and row["frame_hash"] == p.digest):
                # same text (a frame deleted since, by compaction or by hand, stays deleted); what the
                # plugin read about it (frontmatter, tags) may have changed: the owner's frame follows
                if (
                    row["frame_id"] is not None
                    and row["frame_owner"] == source_name
                    and not same_source_metadata(row["frame_source"], p.metadata["source"])
                ):
                    db.execute(
                        "UPDATE memory_frames SET metadata = json_set(metadata, '$.source', json(?)) WHERE id = ?",
                        (json.dumps(p.metadata["source"], ensure_ascii=False), row["frame_id"]),
                    )
                    summary.frames_metadata_refreshed += 1
                    summary.updated_frame_ids.append(row["frame_id"])
                else:
                    summary.frames_unchanged += 1
                continue
            frame_id = row["frame_id"]
            if row["content_hash"] == p.digest:  # the frame was rewritten under this message
                replacing[len(new)] = "restored"
                new.append(p)
                continue
            current = mind.frames.get_by_id(frame_id)
            mine = current is not None and owned_by(current.metadata, source_name, identity, p.key)
            if mine and not held_by_others(db, frame_id, source_name, p.key):
                frame = mind.frames.update(frame_id, p.content, metadata={**current.metadata, **p.metadata})  # type: ignore[union-attr]
                summary.frames_updated += 1
                summary.updated_frame_ids.append(frame.id)  # type: ignore[union-attr]
                db.execute(
                    "UPDATE harvest_ledger SET content_hash = ?, last_seen = ? WHERE source = ? AND item_key = ?",
                    (p.digest, now, source_name, p.key),
                )
                continue
            if mine:
                left.append(frame_id)
            replacing[len(new)] = "updated"
            new.append(p)
        if not new:
            return
        for gop_id in {p.gop_id for p in new} - ensured_gops:
            mind.sessions.ensure(gop_id, project_id=source_name)
            ensured_gops.add(gop_id)
        frames: list[Frame] = mind.frames.create_i_frames(
            [NewFrame(p.gop_id, p.content, "normal", "import", p.timestamp, p.metadata) for p in new]
        )
        rows = []
        for index, (p, frame) in enumerate(zip(new, frames, strict=True)):
            change = replacing.get(index)
            if change == "restored":
                summary.frames_restored += 1
            elif change == "updated":
                summary.frames_updated += 1
                summary.updated_frame_ids.append(frame.id)
            elif frame.inserted:
                summary.frames_new += 1
                summary.new_frame_ids.append(frame.id)
            else:
                summary.frames_duplicate += 1
                origin = frame.metadata.get("provenance")
                owner = str(origin.get("source") or "") if isinstance(origin, dict) else ""
                summary.frames_shared_with[owner] = summary.frames_shared_with.get(owner, 0) + 1
            rows.append((source_name, p.key, p.digest, frame.id, now, now))
        db.executemany(
            "INSERT INTO harvest_ledger (source, item_key, content_hash, frame_id, first_seen, last_seen) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(source, item_key) DO UPDATE SET "
            "content_hash = excluded.content_hash, frame_id = excluded.frame_id, last_seen = excluded.last_seen",
            rows,
        )
        hand_over(db, left, source_name)


def _prune_unseen(
    mind: Mind, source_name: str, identity: str | None, seen_keys: set[str], allow_mass_delete: bool
) -> tuple[int, str | None]:
    """Delete the frames of messages that are no longer in the source (only when asked).

    Only frames the source owns and nobody else holds are deleted. An empty scan of a source
    that has frames (an unmounted drive, an export now ``[]``) or a prune of more than half of the
    source's frames is refused unless ``allow_mass_delete``: returns (frames deleted, refusal).
    """
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
        gone_keys_of: dict[int, list[str]] = {}
        for row in gone:
            if row["frame_id"] is not None:
                gone_keys_of.setdefault(row["frame_id"], []).append(row["item_key"])
        doomed: list[int] = []
        left: list[int] = []
        for frame_id, gone_keys in gone_keys_of.items():
            metadata = frame_metadata(db, frame_id) or {}
            if not any(owned_by(metadata, source_name, identity, key) for key in gone_keys):
                continue  # another source's (or a removed one's, or a person's) frame: not ours to delete
            still_held = db.scalar(
                "SELECT COUNT(*) FROM harvest_ledger WHERE frame_id = ? AND NOT "
                "(source = ? AND item_key NOT IN (SELECT item_key FROM harvest_seen))",
                (frame_id, source_name),
            )
            (left if still_held else doomed).append(frame_id)
        held = frames_held(db, source_name)
        refusal = None
        if not allow_mass_delete and doomed:
            if not seen_keys:
                refusal = (
                    f"the scan found nothing while the source holds {held} frame(s) (an unmounted drive, "
                    "an emptied export?); pass --prune-allow-mass-delete to delete them"
                )
            elif 2 * len(doomed) > held:
                refusal = (
                    f"pruning would delete {len(doomed)} of the source's {held} frames (more than half); "
                    "pass --prune-allow-mass-delete to delete them"
                )
        if refusal is not None:
            db.execute("DELETE FROM harvest_seen")
            return 0, refusal
        removed = sum(1 for frame_id in doomed if mind.frames.delete(frame_id))
        db.executemany(
            "DELETE FROM harvest_ledger WHERE source = ? AND item_key = ?",
            [(source_name, row["item_key"]) for row in gone],
        )
        hand_over(db, left, source_name)
        db.execute("DELETE FROM harvest_seen")
    return removed, None

