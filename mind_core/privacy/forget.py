"""Forgetting: a selector's frames go with everything derived from them, a person goes from
everywhere, and no byte of it stays in the mind's files.

``plan_forget`` says what would go (the dry run); ``forget`` does it in one transaction:

- the selected frames are deleted with ``FrameStore.delete`` (FTS row, vectors and their int8/bit
  companions, chunk rows and chunk vectors, knowledge links); the ledger rows that held them are
  replaced by tombstones (``tombstones``) so a later harvest does not bring them back;
- knowledge that only they evidenced goes too, with every earlier version of it (an entity the
  forgotten frames alone stated is not "ended", it is removed);
- for a person: the frames they wrote go; their names and addresses in every other frame (content,
  FTS, metadata), fact, version, session summary and run report become ``PLACEHOLDER``; their
  entities, relations and versions go; awareness notes mentioning them go; a person tombstone
  makes later harvests skip what they wrote and redact them elsewhere;
- sessions left without frames go, the summaries of the others are made again from what is left;
- an audit entry records who, which kinds of selector (its text only as a keyed hash), how much.

A mind with an ANN index (``mind_core.search.ann``) gets its graphs made again: usearch keeps a
removed vector's bytes in its files until then; so does the keyword lane's top-k index
(``mind_core.search.keyword_index``), whose lists name the frames holding each frequent word. Then ``scrub`` makes the deletion physical: the
connection runs with ``secure_delete`` (freed content is overwritten with zeros), the FTS index is
merged into new segments (its old segments held the words), the file is vacuumed and the WAL
checkpointed and truncated.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mind_core.knowledge.addresses import address_kind
from mind_core.knowledge.session_summary import MAX_TURNS_READ, extractive_summary
from mind_core.mind import Mind
from mind_core.privacy import audit, tombstones
from mind_core.privacy.keys import mind_key, person_term
from mind_core.privacy.person import (
    MAX_EXPANSION_ROUNDS,
    Mentions,
    Person,
    expand,
    find_person,
    redact,
    stated_identities,
)
from mind_core.privacy.selection import Selector, selected_frames
from mind_core.search import ann, keyword_index
from mind_core.search.vector_index import VectorIndex
from mind_core.store.db import IN_LIST, Database, in_list
from mind_core.store.reconcile import reconcile_vec_index
from mind_core.store.schema import content_hash

PREVIEW_FRAMES = 10
SNIPPET_CHARS = 100
# text columns outside the frames that may quote a person: (table, key column, column, JSON?)
QUOTING_COLUMNS = (
    ("knowledge_entities", "id", "name", False),
    ("knowledge_entities", "id", "properties", True),
    ("knowledge_relations", "id", "properties", True),
    ("knowledge_versions", "id", "data", True),
    ("sessions", "id", "summary", False),
    ("harvest_runs", "id", "error_message", False),
    ("harvest_sources", "id", "last_status_reason", False),
    ("harvest_sources", "id", "last_first_errors", True),
)


@dataclass
class ForgetPlan:
    """What a forget takes: frames deleted, frames redacted (a person's mentions), knowledge rows."""

    selector: Selector
    frame_ids: list[int]
    redacted_ids: list[int] = field(default_factory=list)
    entity_ids: list[int] = field(default_factory=list)
    relation_ids: list[int] = field(default_factory=list)
    person: Person | None = None

    def counts(self) -> dict[str, int]:
        return {
            "frames_deleted": len(self.frame_ids),
            "frames_redacted": len(self.redacted_ids),
            "entities_deleted": len(self.entity_ids),
            "relations_deleted": len(self.relation_ids),
        }


@dataclass
class ForgetResult:
    counts: dict[str, int]
    audit_id: int
    scrub: dict[str, Any]
    seconds: float


def plan_forget(db: Database, selector: Selector) -> ForgetPlan:
    """What ``forget`` would take for this selector; reads only."""
    if selector.person is None:
        plan = ForgetPlan(selector, selected_frames(db, selector))
    else:
        plan = _person_plan(db, selector)
    entity_ids = set(plan.entity_ids) | set(
        _only_evidenced_by(db, "kg_entity_frames", "entity_id", plan.frame_ids)
    )
    relation_ids = set(_only_evidenced_by(db, "kg_relation_frames", "relation_id", plan.frame_ids))
    relation_ids |= {
        row[0]
        for row in db.query(
            f"SELECT id FROM knowledge_relations WHERE source_id IN ({IN_LIST}) OR target_id IN ({IN_LIST})",
            (in_list(entity_ids), in_list(entity_ids)),
        )
    }
    plan.entity_ids, plan.relation_ids = sorted(entity_ids), sorted(relation_ids)
    return plan


def _person_plan(db: Database, selector: Selector) -> ForgetPlan:
    """Their frames; the ``from`` header of a mail they wrote states a name and an address of
    theirs (one address is one person: not a list's or a role mailbox's, which a list rewriting
    its senders' headers gives everyone), so what it adds finds more of them, until nothing new."""
    person = find_person(db, selector.person or "")
    for _ in range(MAX_EXPANSION_ROUNDS):
        written, mentioned, stated = _person_frames(db, person)
        before = (len(person.names), len(person.addresses))
        for name, address in stated:
            if address and address_kind(address) == "person":  # a list or a role mailbox is many people
                person.names |= {name} - {""}
                person.addresses.add(address)
        if (len(person.names), len(person.addresses)) == before:
            break
        person = expand(db, person)
    entity_ids = person.entity_ids | _read_only_in_mentions(db, person, written, mentioned)
    return ForgetPlan(selector, written, mentioned, sorted(entity_ids), person=person)


def _read_only_in_mentions(db: Database, person: Person, written: list[int], mentioned: list[int]) -> set[int]:
    """Entities text extraction read out of their mentions ("Alex Botero" from "Alex
    Botero-Lowry"): every frame evidencing one is forgotten or redacted, and none of the
    redacted texts still names it."""
    pattern = person.pattern()
    if pattern is None or not mentioned:
        return set()
    touched = set(written) | set(mentioned)
    redacted = [
        pattern.sub(row["content"]).casefold()
        for row in db.query(f"SELECT content FROM memory_frames WHERE id IN ({IN_LIST})", (in_list(mentioned),))
    ]
    found: set[int] = set()
    rows = db.query(
        "SELECT e.id, e.name, group_concat(l.frame_id) AS frames FROM knowledge_entities e"
        " JOIN kg_entity_frames l ON l.entity_id = e.id WHERE e.id IN"
        f" (SELECT entity_id FROM kg_entity_frames WHERE frame_id IN ({IN_LIST})) GROUP BY e.id",
        (in_list(mentioned),),
    )
    for row in rows:
        frames = {int(f) for f in str(row["frames"]).split(",")}
        words = person_term(row["name"]).split()
        if not frames <= touched or not words:
            continue
        named = re.compile(r"(?<![^\W_])" + r"[\W_]+".join(re.escape(w) for w in words) + r"(?![^\W_])")
        if not any(named.search(text) for text in redacted):
            found.add(row["id"])
    return found


def _person_frames(db: Database, person: Person) -> tuple[list[int], list[int], list[tuple[str, str]]]:
    """The frames they wrote, the frames that mention them, and the ``(name, address)`` the
    authors of the written ones state."""
    written: list[int] = []
    mentioned: list[int] = []
    stated: list[tuple[str, str]] = []
    pattern = person.pattern()
    likes = person.like_patterns()
    if not likes or pattern is None:
        return written, mentioned, stated
    where = " OR ".join(["content LIKE ? ESCAPE '\\' OR metadata LIKE ? ESCAPE '\\'"] * len(likes))
    params = [p for like in likes for p in (like, like)]
    for row in db.query(f"SELECT id, content, metadata FROM memory_frames WHERE {where} ORDER BY id", params):
        metadata = _json(row["metadata"])
        provenance = metadata.get("provenance") if isinstance(metadata.get("provenance"), dict) else {}
        message = (
            (metadata.get("source") or {}).get("message") if isinstance(metadata.get("source"), dict) else {}
        )
        authors = [provenance.get("author"), message.get("from") if isinstance(message, dict) else None]
        if any(person.is_them(author) for author in authors):
            written.append(row["id"])
            stated += [stated_identities(author) for author in authors if person.is_them(author)]
        elif pattern.found_in(row["content"]) or redact(metadata, pattern) != metadata:
            mentioned.append(row["id"])
    return written, mentioned, stated


def _json(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _only_evidenced_by(db: Database, table: str, column: str, frame_ids: list[int]) -> list[int]:
    """The facts whose every evidence frame is among ``frame_ids``."""
    if not frame_ids:
        return []
    rows = db.query(
        f"SELECT {column} FROM {table} WHERE frame_id IN ({IN_LIST}) EXCEPT "
        f"SELECT {column} FROM {table} WHERE frame_id NOT IN ({IN_LIST})",
        (in_list(frame_ids), in_list(frame_ids)),
    )
    return [row[0] for row in rows]


def preview(db: Database, plan: ForgetPlan, limit: int = PREVIEW_FRAMES) -> list[dict[str, Any]]:
    """The first frames that would go: id, event time and the start of their text."""
    rows = db.query(
        f"SELECT id, created_at, content FROM memory_frames WHERE id IN ({IN_LIST}) ORDER BY created_at, id LIMIT ?",
        (in_list(plan.frame_ids), int(limit)),
    )
    return [
        {
            "id": row["id"],
            "time": row["created_at"],
            "snippet": " ".join(row["content"].split())[:SNIPPET_CHARS],
        }
        for row in rows
    ]


def forget(mind: Mind, plan: ForgetPlan, actor: str, *, vacuum: bool = True) -> ForgetResult:
    """Do what ``plan`` says, record it, then scrub the files; returns the counts and the time."""
    with _secure_delete(mind.db):
        return _forget(mind, plan, actor, vacuum)


@contextlib.contextmanager
def _secure_delete(db: Database) -> Iterator[None]:
    """``secure_delete`` on for the forget, then as it was (it slows every later delete)."""
    before = db.scalar("PRAGMA secure_delete")
    db.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        db.execute(f"PRAGMA secure_delete = {int(before)}")


def _forget(mind: Mind, plan: ForgetPlan, actor: str, vacuum: bool) -> ForgetResult:
    started = time.perf_counter()
    db = mind.db
    with db.transaction():
        key = mind_key(db, create=True)
        assert key is not None
        selector = plan.selector.digest(key)
        counts = plan.counts()
        counts["tombstones"] = _lay_tombstones(db, key, selector, plan)
        gops = _gops_of(db, plan.frame_ids + plan.redacted_ids)
        db.execute(f"DELETE FROM harvest_ledger WHERE frame_id IN ({IN_LIST})", (in_list(plan.frame_ids),))
        counts["awareness_deleted"] = _delete_awareness(db, plan)
        for frame_id in plan.frame_ids:
            mind.frames.delete(frame_id)
        counts["versions_deleted"] = delete_knowledge(db, plan.entity_ids, plan.relation_ids)
        if plan.person is not None:
            pattern = plan.person.pattern()
            if pattern is not None:
                _redact_frames(mind, plan.redacted_ids, pattern)
                counts["rows_redacted"] = _redact_columns(db, plan.person, pattern)
        counts["sessions_deleted"], counts["summaries_remade"] = _refresh_sessions(db, gops)
        audit_id = audit.record(db, actor, "forget", plan.selector.kinds, selector, counts)
    if mind.embedder is not None and plan.redacted_ids:
        counts["vectors_remade"] = reconcile_vec_index(db, mind.embedder)
    if ann.enabled(db) and (plan.frame_ids or plan.redacted_ids):
        # the graph keeps a removed vector's bytes until it is made again: made again now
        counts["ann_vectors"] = sum(ann.build(db, VectorIndex(db, None).stored_fingerprint()).counts().values())
    built = keyword_index.read_manifest(db)
    if built is not None and (plan.frame_ids or plan.redacted_ids):
        # its lists still name the forgotten frames and count their words: made again now
        params = keyword_index.KeywordIndexParameters(**built["parameters"])
        counts["keyword_lists"] = keyword_index.build(db, params)
    report = scrub(db, vacuum=vacuum)
    return ForgetResult(counts, audit_id, report, time.perf_counter() - started)


def _lay_tombstones(db: Database, key: bytes, selector: str, plan: ForgetPlan) -> int:
    item_keys = [
        row[0]
        for row in db.query(
            f"SELECT item_key FROM harvest_ledger WHERE frame_id IN ({IN_LIST})", (in_list(plan.frame_ids),)
        )
    ]
    hashes = [
        row[0] or content_hash(row[1])
        for row in db.query(
            f"SELECT content_hash, content FROM memory_frames WHERE id IN ({IN_LIST})",
            (in_list(plan.frame_ids),),
        )
    ]
    laid = tombstones.lay(db, key, selector, "item", item_keys)
    laid += tombstones.lay(db, key, selector, "content", hashes)
    if plan.person is not None:
        laid += tombstones.lay(db, key, selector, "person", plan.person.terms)
    return laid


def _gops_of(db: Database, frame_ids: list[int]) -> set[str]:
    rows = db.query(
        f"SELECT DISTINCT gop_id FROM memory_frames WHERE id IN ({IN_LIST})", (in_list(frame_ids),)
    )
    return {row[0] for row in rows}


def _delete_awareness(db: Database, plan: ForgetPlan) -> int:
    """Awareness notes pointing at a forgotten frame (``frame_id`` / ``frame_ids`` in their
    metadata) or, for a person, mentioning them."""
    doomed = set(plan.frame_ids)
    ids: set[int] = set()
    pattern = plan.person.pattern() if plan.person is not None else None
    for row in db.query("SELECT id, content, metadata FROM awareness"):
        metadata = _json(row["metadata"])
        many = metadata.get("frame_ids")
        refs = {metadata.get("frame_id"), *(many if isinstance(many, list) else [])}
        mentions = pattern is not None and pattern.found_in(f"{row['content']}\n{row['metadata']}")
        if refs & doomed or mentions:
            ids.add(row["id"])
    db.execute(f"DELETE FROM awareness WHERE id IN ({IN_LIST})", (in_list(ids),))
    return len(ids)


def delete_knowledge(db: Database, entity_ids: list[int], relation_ids: list[int]) -> int:
    """Entities and relations with their links, lost-evidence notes and every earlier version."""
    versions = 0
    for kind, table, links, column, ids in (
        ("relation", "knowledge_relations", "kg_relation_frames", "relation_id", relation_ids),
        ("entity", "knowledge_entities", "kg_entity_frames", "entity_id", entity_ids),
    ):
        bound = (in_list(ids),)
        versions += db.execute(
            f"DELETE FROM knowledge_versions WHERE kind = ? AND row_id IN ({IN_LIST})", (kind, *bound)
        ).rowcount
        db.execute(f"DELETE FROM kg_evidence_lost WHERE kind = ? AND row_id IN ({IN_LIST})", (kind, *bound))
        db.execute(f"DELETE FROM {links} WHERE {column} IN ({IN_LIST})", bound)
        db.execute(f"DELETE FROM {table} WHERE id IN ({IN_LIST})", bound)
    return versions


def _redact_frames(mind: Mind, frame_ids: list[int], pattern: Mentions) -> None:
    """Their mentions replaced in the frames' text (FTS follows, vectors are dropped to be made
    again) and metadata; the ledger's hash follows so an unchanged re-harvest writes nothing."""
    for frame in mind.frames.get_many(frame_ids).values():
        content = redact(frame.content, pattern)
        updated = mind.frames.update(frame.id, content, metadata=redact(frame.metadata, pattern))
        if updated is not None and content != frame.content:
            mind.db.execute(
                "UPDATE harvest_ledger SET content_hash = ? WHERE frame_id = ?",
                (content_hash(content), frame.id),
            )


def _redact_columns(db: Database, person: Person, pattern: Mentions) -> int:
    """Their mentions replaced in the knowledge graph, its history, session summaries and run reports."""
    likes = person.like_patterns()
    changed = 0
    for table, key, column, is_json in QUOTING_COLUMNS:
        where = " OR ".join([f"{column} LIKE ? ESCAPE '\\'"] * len(likes))
        for row in db.query(f"SELECT {key}, {column} FROM {table} WHERE {where}", likes):
            text = row[1]
            value = json.loads(text) if is_json and _is_json(text) else None
            new = (
                json.dumps(redact(value, pattern))
                if value is not None
                else pattern.sub(text)
            )
            if new != text:
                db.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = ?", (new, row[0]))
                changed += 1
    return changed


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _refresh_sessions(db: Database, gops: set[str]) -> tuple[int, int]:
    """Sessions left without frames go; the others' summaries are made again from what is left."""
    deleted = remade = 0
    for gop_id in sorted(gops):
        contents = [
            row[0]
            for row in db.query(
                "SELECT content FROM memory_frames WHERE gop_id = ? ORDER BY t, id LIMIT ?",
                (gop_id, MAX_TURNS_READ),
            )
        ]
        if not contents:
            deleted += db.execute("DELETE FROM sessions WHERE gop_id = ?", (gop_id,)).rowcount
        elif db.scalar("SELECT summary IS NOT NULL FROM sessions WHERE gop_id = ?", (gop_id,)):
            db.execute(
                "UPDATE sessions SET summary = ? WHERE gop_id = ?", (extractive_summary(contents), gop_id)
            )
            remade += 1
    return deleted, remade


def allow_return(mind: Mind, selector: Selector, actor: str, *, apply: bool) -> dict[str, int]:
    """Lift the tombstones a forget with this selector laid (a person's: by their names too), so
    a later harvest may bring the content back; the sources' fingerprints are cleared so the next
    harvest scans instead of skipping an unchanged source."""
    db = mind.db
    key = mind_key(db)
    if key is None:
        return {"tombstones_removed": 0}
    digest = selector.digest(key)
    person_values: set[str] = set()
    if selector.person is not None:
        person = find_person(db, selector.person)
        person_values = {selector.person, *person.names, *person.addresses}
    if not apply:
        person_digests = {tombstones.keyed(key, "person", person_term(v)) for v in person_values}
        extra = db.scalar(
            f"SELECT COUNT(*) FROM privacy_tombstones WHERE kind = 'person' AND selector != ? AND digest IN ({IN_LIST})",
            (digest, in_list(person_digests)),
        )
        return {"tombstones_removed": tombstones.count_laid_by(db, digest) + int(extra or 0)}
    with db.transaction():
        removed = tombstones.lift(db, digest, person_values)
        db.execute("UPDATE harvest_sources SET last_fingerprint = NULL")
        counts = {"tombstones_removed": removed}
        audit.record(db, actor, "allow_return", selector.kinds, digest, counts)
    return counts


def scrub(db: Database, *, vacuum: bool = True) -> dict[str, Any]:
    """Make deleted content unrecoverable from the mind's files: the FTS index rewritten into new
    segments, the file vacuumed (with ``secure_delete`` on, freed pages are zeroed anyway), the WAL
    copied back and truncated to nothing. ``wal_busy``: another connection still reads an older
    state, so the WAL could not be truncated (run again when it has closed)."""
    with _secure_delete(db):
        return _scrub(db, vacuum)


def _scrub(db: Database, vacuum: bool) -> dict[str, Any]:
    db.execute("INSERT INTO memory_frames_fts (memory_frames_fts) VALUES ('optimize')")
    if vacuum:
        db.execute("VACUUM")
    busy, _, _ = db.query_one("PRAGMA wal_checkpoint(TRUNCATE)")
    return {"vacuumed": vacuum, "wal_busy": bool(busy)}
