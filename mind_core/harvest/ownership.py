"""Which source holds which frame: dedup shares frames, so no source may rewrite what others hold.

A frame belongs to the source message that made it, as its provenance records (source, ledger
identity, item and message key). Dedup lets other messages point their ledger rows at the same
frame: they hold it too. A source rewrites or deletes a frame in place only when it owns the frame
and no other ledger row holds it; otherwise an edit gets a frame of its own (copy-on-write) and the
shared frame stays as it is. When the owner lets go of a frame others still hold, the frame's
provenance is handed to one of them, so every frame names a source that still has its text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from mind_core.store.db import Database


def owned_by(metadata: dict[str, Any], source: str, identity: str | None, key: str) -> bool:
    """Whether a frame's provenance names this message of this source's current ledger.

    Frames written before ledgers had identities carry none; they count as the named source's.
    """
    origin = metadata.get("provenance")
    if not isinstance(origin, dict) or origin.get("source") != source:
        return False
    if f"{origin.get('item_key')}/{origin.get('message_key')}" != key:
        return False
    recorded = origin.get("source_identity")
    return recorded is None or identity is None or recorded == identity


def held_by_others(db: Database, frame_id: int, source: str, key: str) -> bool:
    """Whether a ledger row other than (source, key) points at this frame."""
    return bool(
        db.scalar(
            "SELECT 1 FROM harvest_ledger WHERE frame_id = ? AND NOT (source = ? AND item_key = ?) LIMIT 1",
            (frame_id, source, key),
        )
    )


def frame_metadata(db: Database, frame_id: int) -> dict[str, Any] | None:
    raw = db.scalar("SELECT metadata FROM memory_frames WHERE id = ?", (frame_id,))
    if raw is None:
        return None
    try:
        metadata = json.loads(raw or "{}")
    except ValueError:
        return {}
    return metadata if isinstance(metadata, dict) else {}


def hand_over(db: Database, frame_ids: Iterable[int], leaving_source: str) -> int:
    """Frames whose provenance names ``leaving_source`` and that another ledger row still holds
    are re-attributed to that holder (its source, identity and message key). Call after the
    leaving rows were moved or deleted. Returns how many frames changed hands.

    The holder's own title, speaker and text are those of the frame (the content is identical),
    so they stay; where its file lies is not known here and is left out.
    """
    moved = 0
    for frame_id in dict.fromkeys(frame_ids):
        metadata = frame_metadata(db, frame_id)
        origin = (metadata or {}).get("provenance")
        if not isinstance(origin, dict) or origin.get("source") != leaving_source:
            continue
        holder = db.query_one(
            "SELECT l.source, l.item_key, s.kind, s.identity FROM harvest_ledger l "
            "LEFT JOIN harvest_sources s ON s.source = l.source WHERE l.frame_id = ? "
            "ORDER BY l.source = ?, l.source, l.item_key LIMIT 1",
            (frame_id, leaving_source),
        )
        if holder is None:
            continue
        item_key, _, message_key = str(holder["item_key"]).rpartition("/")
        metadata["provenance"] = {  # type: ignore[index]
            **origin,
            "source": holder["source"],
            "plugin": holder["kind"] or origin.get("plugin"),
            "source_identity": holder["identity"],
            "item_key": item_key,
            "message_key": message_key,
            "container": None,
            "path": None,
            "handed_over_from": leaving_source,
        }
        db.execute("UPDATE memory_frames SET metadata = ? WHERE id = ?", (json.dumps(metadata), frame_id))
        moved += 1
    return moved


def forget_ledger(db: Database, source: str) -> int:
    """Drop a source's ledger (removed, or re-pointed at other files): its frames stay in the
    mind, no longer tracked; frames other sources hold are handed to them. Returns rows dropped."""
    held = [
        row[0]
        for row in db.query(
            "SELECT DISTINCT frame_id FROM harvest_ledger WHERE source = ? AND frame_id IS NOT NULL", (source,)
        )
    ]
    dropped = db.execute("DELETE FROM harvest_ledger WHERE source = ?", (source,)).rowcount
    hand_over(db, held, source)
    return dropped


def frames_held(db: Database, source: str) -> int:
    """Distinct frames the source's ledger points at."""
    return int(
        db.scalar(
            "SELECT COUNT(DISTINCT frame_id) FROM harvest_ledger WHERE source = ? AND frame_id IS NOT NULL",
            (source,),
        )
        or 0
    )
