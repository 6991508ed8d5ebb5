"""Learning a source's structure: its frames read from the mind a page at a time, the facts and
relations they state (``mind_core.knowledge.structure``, which reads and writes nothing) written
into the knowledge graph as entities and relations with confidence 1.0, linked to their frames."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from mind_core.errors import InvalidInputError
from mind_core.knowledge.graph import KnowledgeGraph
from mind_core.knowledge.model import Entity, credit_extractors
from mind_core.knowledge.structure import (
    CHAT_ITEM_KINDS,
    MAX_EVIDENCE_FRAMES,
    READERS,
    STRUCTURE_CONFIDENCE,
    STRUCTURE_EXTRACTOR,
    Fact,
    FrameFacts,
    Link,
    Structure,
    chat_structure,
    structure_of,
)
from mind_core.store.db import Database

log = logging.getLogger(__name__)

STRUCTURE_PAGE = 5_000  # a chat source's frames read and written per step


def frames_of_source(db: Database, source: str) -> Iterator[list[FrameFacts]]:
    """The source's frames in id order, ``STRUCTURE_PAGE`` at a time."""
    cursor = db.execute(
        "SELECT id, created_at, metadata FROM memory_frames "
        "WHERE json_valid(metadata) AND json_extract(metadata, '$.provenance.source') = ? ORDER BY id",
        (source,),
    )
    while rows := cursor.fetchmany(STRUCTURE_PAGE):
        yield [_frame_facts(row) for row in rows]


def _frame_facts(row: Any) -> FrameFacts:
    meta = json.loads(row["metadata"])
    provenance = meta.get("provenance") if isinstance(meta.get("provenance"), dict) else {}
    kept = meta.get("source") if isinstance(meta.get("source"), dict) else {}
    item = kept.get("item") if isinstance(kept.get("item"), dict) else {}
    message = kept.get("message") if isinstance(kept.get("message"), dict) else {}
    return FrameFacts(row["id"], row["created_at"], provenance, item, message)


def chat_titles(db: Database, source: str) -> dict[str, str]:
    """The title of each conversation of a chat source (one row per conversation, not per frame)."""
    rows = db.execute(
        "SELECT json_extract(metadata, '$.provenance.container'), json_extract(metadata, '$.provenance.title') "
        "FROM memory_frames WHERE json_valid(metadata) AND json_extract(metadata, '$.provenance.source') = ? "
        "AND json_extract(metadata, '$.provenance.item_kind') IN (" + ", ".join("?" * len(CHAT_ITEM_KINDS)) + ") "
        "ORDER BY id",
        (source, *CHAT_ITEM_KINDS),
    )
    titles: dict[str, str] = {}
    for container, title in rows:
        if isinstance(container, str):
            titles.setdefault(container, str(title or "Untitled"))
    return titles


def learn_structure(db: Database, knowledge: KnowledgeGraph, source: str) -> dict[str, int]:
    """Write the structure of one harvest source into the graph; returns what was new.

    A chat source is read and written a page at a time (its facts and relations merge into those
    of the pages before, as they would into an earlier harvest's), so its memory does not grow with
    the source; notes, mail, calendars and contacts are read whole (a link or a name resolves
    against the whole source)."""
    created = {"entities": 0, "relations": 0, "links": 0}
    whole: list[FrameFacts] = []
    titles: dict[str, str] | None = None
    for page in frames_of_source(db, source):
        chats = []
        for frame in page:
            if str(frame.provenance.get("plugin")) in READERS:
                whole.append(frame)
            elif frame.provenance.get("item_kind") in CHAT_ITEM_KINDS:
                chats.append(frame)
        if chats:
            titles = chat_titles(db, source) if titles is None else titles
            structure = Structure()
            chat_structure(chats, structure, titles)
            _write_structure(knowledge, structure, created)
    if whole:
        _write_structure(knowledge, structure_of(whole), created)
    return created


def _write_structure(knowledge: KnowledgeGraph, structure: Structure, created: dict[str, int]) -> None:
    """Write one structure in one transaction, adding what was new to ``created``."""
    with knowledge.db.transaction():
        ids: dict[tuple[str, str], int] = {}
        by_address = _persons_by_address(knowledge.db) if _any_address(structure) else {}
        for key, fact in structure.facts.items():
            entity_id, new = _write_fact(knowledge, fact, by_address)
            if entity_id is None:
                continue
            ids[key] = entity_id
            created["entities"] += new
            for frame_id in fact.frames:
                created["links"] += knowledge.link_entities_to_frame([entity_id], frame_id)
        for link in structure.links.values():
            if link.source in ids and link.target in ids:
                created["relations"] += _write_link(knowledge, ids[link.source], ids[link.target], link)


def _any_address(structure: Structure) -> bool:
    return any(fact.entity_type == "person" and fact.properties.get("addresses") for fact in structure.facts.values())


def _persons_by_address(db: Database) -> dict[str, int]:
    """Every address an active person holds, to its (oldest) entity."""
    rows = db.query(
        "SELECT e.id, lower(a.value) FROM knowledge_entities e, json_each("
        "CASE WHEN json_valid(e.properties) THEN e.properties ELSE '{}' END, '$.addresses') a"
        " WHERE e.entity_type = 'person' AND e.valid_to IS NULL AND a.type = 'text' ORDER BY e.id DESC"
    )
    return {address: entity_id for entity_id, address in rows}


def _person_of_address(knowledge: KnowledgeGraph, fact: Fact, by_address: dict[str, int]) -> Entity | None:
    """The active person already holding one of the fact's addresses: one address is one person,
    whatever name its headers give it this time."""
    if fact.entity_type != "person":
        return None
    for address in fact.properties.get("addresses") or ():
        if isinstance(address, str) and address.lower() in by_address:
            return knowledge.get_entity(by_address[address.lower()])
    return None


def _write_fact(knowledge: KnowledgeGraph, fact: Fact, by_address: dict[str, int]) -> tuple[int | None, bool]:
    first = min(fact.frames.values())
    existing = (
        knowledge.find_entity(fact.entity_type, fact.name)
        or _person_of_address(knowledge, fact, by_address)
        or _ended_by_structure(knowledge, fact)
    )
    if existing is not None:
        knowledge.extend_validity_back("entity", existing.id, first)
        if fact.valid_to is not None:
            knowledge.end_validity("entity", existing.id, max(fact.valid_to, first))
        stated = fact.properties
        if fact.name.lower() != existing.name.lower():  # found by its address under another name
            stated = {**stated, "aliases": [*(stated.get("aliases") or ()), fact.name]}
        merged = _merged_properties(existing.properties, stated)
        merged = credit_extractors(merged, [STRUCTURE_EXTRACTOR]) or merged  # found by a text extractor first
        if merged != existing.properties:
            knowledge.update_entity(existing.id, properties=merged)
        return existing.id, False
    properties = {**fact.properties, "confidence": STRUCTURE_CONFIDENCE, "extractor": STRUCTURE_EXTRACTOR}
    try:
        ended = None if fact.valid_to is None else max(fact.valid_to, first)  # never before it began
        entity = knowledge.create_entity(fact.entity_type, fact.name, properties, valid_from=first, valid_to=ended)
        if fact.entity_type == "person":
            for address in fact.properties.get("addresses") or ():
                by_address.setdefault(str(address).lower(), entity.id)
        return entity.id, True
    except InvalidInputError as exc:
        log.warning("structure: entity %s %r skipped: %s", fact.entity_type, fact.name, exc)
        return None, False


def _ended_by_structure(knowledge: KnowledgeGraph, fact: Fact) -> Entity | None:
    """The entity this step ended for the same note (marked done; same path), so the next
    harvest finds it instead of making a second one."""
    if fact.valid_to is None or "path" not in fact.properties:
        return None
    row = knowledge.db.query_one(
        "SELECT id FROM knowledge_entities WHERE entity_type = ? AND lower(name) = lower(?) AND valid_to IS NOT NULL"
        " AND json_extract(properties, '$.path') = ? ORDER BY id DESC LIMIT 1",
        (fact.entity_type, fact.name, fact.properties["path"]),
    )
    return None if row is None else knowledge.get_entity(row["id"])


def _merged_properties(current: dict[str, Any], stated: dict[str, Any]) -> dict[str, Any]:
    """The entity's properties with what the structure states added: new keys, and new values of
    a list (a person's further addresses); a value already there is never overwritten."""
    merged = dict(current)
    for key, value in stated.items():
        if key not in merged:
            merged[key] = value
        elif isinstance(merged[key], list) and isinstance(value, list):
            merged[key] = merged[key] + [v for v in value if v not in merged[key]]
    return merged


def _write_link(knowledge: KnowledgeGraph, source_id: int, target_id: int, link: Link) -> int:
    """Write one relation the structure states, with every frame stating it as its evidence;
    returns 1 when the relation is new."""
    first = min(link.frames.values())
    existing = knowledge.find_relation(source_id, target_id, link.relation_type)
    if existing is not None:
        knowledge.extend_validity_back("relation", existing.id, first)
        knowledge.link_relations_to_frames((existing.id, frame_id) for frame_id in link.frames)
        return 0
    frames = sorted(link.frames)[:MAX_EVIDENCE_FRAMES]
    properties = {**link.properties, "extractor": STRUCTURE_EXTRACTOR, "frames": frames}
    try:
        relation = knowledge.create_relation(
            source_id, target_id, link.relation_type, STRUCTURE_CONFIDENCE, properties, valid_from=first
        )
    except InvalidInputError as exc:
        log.warning("structure: relation %s %d->%d skipped: %s", link.relation_type, source_id, target_id, exc)
        return 0
    knowledge.link_relations_to_frames((relation.id, frame_id) for frame_id in link.frames)
    return 1
