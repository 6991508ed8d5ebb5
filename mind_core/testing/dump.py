"""A canonical dump of a mind: everything a harvest writes, keyed by content instead of ids, so
two minds built by different histories (a clean run vs a crash and a rerun) can be compared.
A source's ledger identity is random, so it is shown by the order it first appears in."""

from __future__ import annotations

import json
from typing import Any

from mind_core.mind import Mind


def canonical_dump(mind: Mind) -> dict[str, Any]:
    db = mind.db
    content_of = {r["id"]: r["content_hash"] for r in db.query("SELECT id, content_hash FROM memory_frames")}
    frames = []
    identities: dict[str, str] = {}
    for r in db.query("SELECT * FROM memory_frames ORDER BY id"):
        meta = json.loads(r["metadata"])
        origin = meta.get("provenance")
        if isinstance(origin, dict) and origin.get("source_identity"):
            identity = origin["source_identity"]
            origin["source_identity"] = identities.setdefault(identity, f"identity-{len(identities) + 1}")
        frames.append(
            (
                r["id"],
                r["frame_type"],
                r["gop_id"],
                r["t"],
                r["content"],
                r["importance"],
                r["source"],
                r["created_at"],
                r["content_hash"],
                r["embedded_hash"],
                json.dumps(meta, sort_keys=True),
            )
        )
    ledger = [
        tuple(r)
        for r in db.query(
            "SELECT source, item_key, content_hash, frame_id FROM harvest_ledger ORDER BY source, item_key"
        )
    ]
    fts = [(r[0], r[1]) for r in db.query("SELECT rowid, content FROM memory_frames_fts ORDER BY rowid")]
    vec = [
        (r[0], bytes(r[1])) for r in db.query("SELECT rowid, embedding FROM memory_frames_vec ORDER BY rowid")
    ]
    entity_name = {
        r["id"]: (r["entity_type"], r["name"]) for r in db.query("SELECT * FROM knowledge_entities")
    }
    entities = sorted(
        (r["entity_type"], r["name"], r["properties"], r["valid_to"] is None)
        for r in db.query("SELECT * FROM knowledge_entities")
    )
    relations = sorted(
        (entity_name[r["source_id"]], entity_name[r["target_id"]], r["relation_type"], r["properties"])
        for r in db.query("SELECT * FROM knowledge_relations")
    )
    links = sorted((entity_name[r[0]], content_of[r[1]]) for r in db.query("SELECT * FROM kg_entity_frames"))
    sessions = sorted((r["gop_id"], r["project_id"], r["status"]) for r in db.query("SELECT * FROM sessions"))
    return {
        "frames": frames,
        "ledger": ledger,
        "fts": fts,
        "vec": vec,
        "entities": entities,
        "relations": relations,
        "links": links,
        "sessions": sessions,
    }
