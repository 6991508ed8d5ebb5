"""Small minds for the snapshot and analytics tests, built through the public APIs.

The mind holds imported frames with provenance the way the harvest engine writes it, frames of
other sources, timestamps in every spelling a mind meets (ours, the original's naive UTC, ISO with
offsets, an offset without colon, garbage), a knowledge graph with a retire-and-recreate history,
entity links, harvest bookkeeping rows, vectors (one of them stale) and a frame missing from FTS.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mind_core.mind import Mind
from mind_core.store.db import Database
from mind_core.store.frames import NewFrame
from mind_core.testing.fakes import HashingEmbedder


def provenance(source: str, plugin: str, kind: str, container: str, key: str, **extra: Any) -> dict:
    record = {
        "source": source,
        "plugin": plugin,
        "item_key": f"{source}:{container}:{key}",
        "item_kind": kind,
        "container": container,
        "title": extra.pop("title", f"title of {container}"),
        "message_key": key,
        "role": extra.pop("role", "user"),
        "author": extra.pop("author", None),
        "timestamp": extra.pop("timestamp", None),
        "path": extra.pop("path", f"/exports/{source}.zip"),
    }
    record.update(extra)
    return {"provenance": record}


# (gop, content, source, created_at as given to the API, provenance or None)
FRAMES: list[tuple[str, str, str, str | None, dict | None]] = [
    (
        "conv-a",
        "Alice Johnson leads Project Falcon",
        "import",
        "2024-01-10T09:00:00.000Z",
        provenance("chatgpt-main", "chatgpt", "conversation", "conv-a", "m1", timestamp="1704877200"),
    ),
    (
        "conv-a",
        "Falcon depends on PostgreSQL",
        "import",
        "2024-01-10T09:05:00.000Z",
        provenance("chatgpt-main", "chatgpt", "conversation", "conv-a", "m2", role="assistant"),
    ),
    (
        "conv-a",
        "Budget review with Bob Smith",
        "import",
        "2024-01-20T12:00:00.000Z",
        provenance("chatgpt-main", "chatgpt", "conversation", "conv-a", "m3"),
    ),
    (
        "conv-b",
        "Second conversation about the Falcon dashboard",
        "import",
        "2024-02-02T08:00:00.000Z",
        provenance("chatgpt-main", "chatgpt", "conversation", "conv-b", "m1"),
    ),
    (
        "notes",
        "# Roadmap\nFalcon ships in March",
        "import",
        "2024-02-15T10:00:00.000Z",
        provenance("vault", "markdown", "note", "roadmap.md", "s1", role=None, path="/vault/roadmap.md"),
    ),
    (
        "mail",
        "Invoice for February attached",
        "import",
        "2024-03-01T07:00:00.000Z",
        provenance("inbox", "email", "email", "thread-9", "msg-1", author="carol@example.com", role=None),
    ),
    ("manual", "I prefer tea over coffee", "user_stated", "2024-03-03T10:00:00.000Z", None),
    ("manual", "The test suite passed", "tool_verified", "2024-03-04T10:00:00.000Z", None),
]

# Timestamps a mind written by the original (or by hand) holds, set after insertion by SQL:
# frame index -> (stored text, the instant it means in ms since the epoch, or None if unreadable)
MIXED_CREATED_AT: dict[int, tuple[str, int | None]] = {
    2: ("2024-01-20 12:00:00", 1705752000000),  # the original's datetime('now') format
    3: ("2024-02-02T10:00:00+02:00", 1706860800000),  # ISO with an offset: 08:00 UTC
    4: ("2024-02-29T23:30:00-0100", 1709253000000),  # offset without colon: 2024-03-01 00:30 UTC
    7: ("not a timestamp", None),
}

GOPS = ("conv-a", "conv-b", "notes", "mail", "manual")


def add_frames(mind: Mind) -> list[int]:
    for gop in GOPS:
        mind.sessions.ensure(gop, project_id="falcon" if gop.startswith("conv") else None)
    created = mind.frames.create_i_frames(
        [
            NewFrame(gop, text, source=source, created_at=when, metadata=meta)
            for gop, text, source, when, meta in FRAMES
        ]
    )
    ids = [frame.id for frame in created]
    for index, (text, _) in MIXED_CREATED_AT.items():
        mind.db.execute("UPDATE memory_frames SET created_at = ? WHERE id = ?", (text, ids[index]))
    mind.sessions.close("conv-a", summary="Falcon kickoff")
    return ids


def add_knowledge(mind: Mind, frame_ids: list[int]) -> dict[str, int]:
    """Alice is retired on 2024-01-20 and recreated on 2024-02-01; her led_by relation likewise."""
    kg = mind.knowledge
    alice_old = kg.create_entity(
        "person", "Alice Johnson", valid_from="2024-01-10T09:00:00Z", valid_to="2024-01-20T12:00:00Z"
    ).id
    falcon = kg.create_entity("project", "Project Falcon", valid_from="2024-01-10T09:00:00Z").id
    postgres = kg.create_entity("technology", "PostgreSQL", valid_from="2024-01-10T09:05:00Z").id
    bob = kg.create_entity("person", "Bob Smith", valid_from="2024-01-20T12:00:00Z").id
    alice_new = kg.create_entity("person", "Alice Johnson", valid_from="2024-02-01T00:00:00Z").id
    kg.create_relation(
        falcon, alice_old, "led_by", valid_from="2024-01-10T09:00:00Z", valid_to="2024-01-20T12:00:00Z"
    )
    kg.create_relation(falcon, postgres, "depends_on", valid_from="2024-01-10T09:05:00Z")
    kg.create_relation(falcon, alice_new, "led_by", valid_from="2024-02-01T00:00:00Z")
    kg.update_entity(postgres, properties={"version": "16"})  # an earlier version in knowledge_versions
    # the original's naive format in a bitemporal column
    mind.db.execute("UPDATE knowledge_entities SET valid_from = '2024-01-20 12:00:00' WHERE id = ?", (bob,))
    links = {
        falcon: [frame_ids[0], frame_ids[1], frame_ids[3], frame_ids[4]],
        alice_old: [frame_ids[0]],
        alice_new: [frame_ids[3]],
        postgres: [frame_ids[1]],
        bob: [frame_ids[2]],
    }
    for entity_id, frames in links.items():
        for frame_id in frames:
            kg.link_entity_to_frame(entity_id, frame_id)
    return {
        "alice_old": alice_old,
        "alice_new": alice_new,
        "falcon": falcon,
        "postgres": postgres,
        "bob": bob,
    }


def add_harvest_rows(mind: Mind) -> None:
    db = mind.db
    db.executemany(
        "INSERT INTO harvest_sources (source, display_name, source_path, last_synced_at, items_imported, "
        "frames_created, auto_sync, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                "chatgpt-main",
                "ChatGPT export",
                "/exports/chatgpt.zip",
                "2024-03-05T10:00:00.000Z",
                2,
                4,
                1,
                "2024-01-01 08:00:00",
            ),
            (
                "vault",
                "Obsidian vault",
                "/vault",
                "2024-03-05T10:01:00.000Z",
                1,
                1,
                0,
                "2024-01-01T08:00:00Z",
            ),
            ("inbox", "Mailbox", "/mail", None, 1, 1, 0, "2024-01-01T08:00:00Z"),
        ],
    )
    db.executemany(
        "INSERT INTO harvest_runs (source, status, total_items, items_saved, started_at, updated_at, "
        "finished_at, error_message) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                "chatgpt-main",
                "completed",
                2,
                2,
                "2024-03-05T09:59:00.000Z",
                "2024-03-05T10:00:00.000Z",
                "2024-03-05T10:00:00.500Z",
                None,
            ),
            (
                "vault",
                "completed",
                1,
                1,
                "2024-03-05 10:00:30",
                "2024-03-05T10:01:00Z",
                "2024-03-05T10:01:00Z",
                None,
            ),
            (
                "inbox",
                "failed",
                3,
                1,
                "2024-03-05T10:02:00Z",
                "2024-03-05T10:02:05Z",
                None,
                "bad mbox line 7",
            ),
        ],
    )


def add_index_state(mind: Mind, frame_ids: list[int]) -> None:
    """Vectors for the first four frames (the second then made stale), one frame dropped from FTS."""
    mind.search.vectors.index_frames([(i, mind.frames.get_by_id(i).content) for i in frame_ids[:4]])
    mind.db.execute("UPDATE memory_frames SET embedded_hash = 'outdated' WHERE id = ?", (frame_ids[1],))
    mind.db.execute("DELETE FROM memory_frames_fts WHERE rowid = ?", (frame_ids[5],))


def build_mind(path: Path) -> dict[str, Any]:
    """The full small mind; returns the ids it created."""
    with Mind.open(path, embedder=HashingEmbedder()) as mind:
        frame_ids = add_frames(mind)
        entities = add_knowledge(mind, frame_ids)
        add_harvest_rows(mind)
        add_index_state(mind, frame_ids)
    return {"frames": frame_ids, "entities": entities}


def mind_rows(path: Path, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
    """Rows straight from the mind file, for expectations computed without DuckDB."""
    db = Database(path, readonly=True)
    try:
        return [dict(row) for row in db.query(sql, params)]
    finally:
        db.close()


def provenance_of(metadata: str | None) -> dict[str, Any]:
    try:
        meta = json.loads(metadata or "{}")
    except ValueError:
        return {}
    value = meta.get("provenance") if isinstance(meta, dict) else None
    return value if isinstance(value, dict) else {}
