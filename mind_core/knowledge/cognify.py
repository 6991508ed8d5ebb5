"""Cognify: how a piece of text becomes connected memory (spec §6, reference-behaviour §7).

One frame is stored (or reused), its entities and relations are written into the knowledge
graph and linked back to it through ``kg_entity_frames``, and it gets a vector.

Idempotency. A frame's metadata records ``cognified_hash``, the content hash its knowledge was
extracted from. A frame whose marker equals its current content hash is not extracted again, so
re-cognifying creates no entity, relation or link and raises no co-occurrence count twice; a
frame whose content changed since is re-extracted (its old entity links are replaced). Vectors
follow ``embedded_hash`` the same way: only frames without a current vector are embedded.

Batches. ``cognify_batch`` extracts all frames of a batch, writes their knowledge in one
transaction (entities resolved with one indexed query per entity type, links and markers written
with ``executemany``) and embeds every frame of the batch that lacks a current vector in ONE
embedder call, so its cost is the embedding model's, not per-frame overhead.

Errors. Bad extracted data (a name or relation a validation schema rejects) is skipped and
logged with the frame id; the rest of the frame and of the batch is written. Embedder failures
propagate: the knowledge of the batch is already committed, and a retry embeds only what lacks
a vector.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from mind_core.errors import InvalidInputError
from mind_core.knowledge.extraction import ExtractedEntity, Extraction, extract
from mind_core.knowledge.graph import KnowledgeGraph
from mind_core.knowledge.model import (
    CO_OCCURS_WITH,
    RelationSighting,
    ascii_lower,
    credit_extractors,
    load_properties,
)
from mind_core.search.hybrid import HybridSearch
from mind_core.search.linker import MemoryLink, MemoryLinker
from mind_core.store.db import IN_LIST, in_list
from mind_core.store.frames import IMPORTANCE_LEVELS, Frame, FrameStore
from mind_core.store.schema import content_hash
from mind_core.store.sessions import SessionStore
from mind_core.timestamps import normalize_iso

log = logging.getLogger(__name__)

MAX_EXTRACT_CHARS = 10_000
CO_OCCURRENCE_CONFIDENCE = 0.8
DEFAULT_BATCH_SIZE = 256
COGNIFIED_KEY = "cognified_hash"
# Shared (never mutated) so a batch's thousands of sightings have their properties checked once.
_CO_OCCURRENCE_PROPERTIES = {"source": "cognify"}
_SEMANTIC_PROPERTIES = {"source": "semantic"}


def _entity_key(entity_type: str, name: str) -> tuple[str, str]:
    """An entity's key as ``idx_entities_type_lname`` holds it (names folded as SQLite does)."""
    return entity_type, ascii_lower(name)


@dataclass
class CognifyResult:
    frame_id: int
    entities_extracted: int
    relations_created: int
    related_frames: list[MemoryLink] | None = None


@dataclass
class _FrameOutcome:
    entities: int
    relations_created: int


@dataclass
class _BatchOutcome:
    frames: dict[int, _FrameOutcome]
    skipped: int  # frames whose knowledge was already extracted from their current content
    vectors: int


class CognifyPipeline:
    """The write path of a mind: frame, knowledge graph, entity links, vector, optional links."""

    def __init__(
        self,
        frames: FrameStore,
        sessions: SessionStore,
        knowledge: KnowledgeGraph,
        search: HybridSearch,
        *,
        linker: MemoryLinker | None = None,
        enable_linking: bool = False,
    ) -> None:
        self.frames = frames
        self.sessions = sessions
        self.knowledge = knowledge
        self.search = search
        self.db = frames.db
        self.enable_linking = enable_linking
        self.linker = linker or (MemoryLinker(search) if enable_linking else None)

    # -- entry points ---------------------------------------------------------------------
    def cognify(
        self,
        content: str,
        importance: str = "normal",
        gop_id: str | None = None,
        turn_id: str | None = None,
    ) -> CognifyResult:
        """Remember one turn: store it (I-frame, or P-frame when the session has an I-frame),
        extract its knowledge, index it, and with linking on, find related frames. Without
        ``gop_id`` the turn goes to the day's ``notes:YYYY-MM-DD`` session.

        Content already stored as a frame is not written again: that frame is touched and
        reused (the original wrote a duplicate P-frame). ``turn_id`` only labels the log line.
        """
        if not isinstance(content, str):
            raise InvalidInputError(f"content to cognify must be a string, got {type(content).__name__}")
        if importance not in IMPORTANCE_LEVELS:
            raise InvalidInputError(
                f"invalid importance {importance!r}; expected one of {', '.join(IMPORTANCE_LEVELS)}"
            )
        # Without a session, the day's own notes session: never a harvested conversation's.
        session = self.sessions.ensure(gop_id) if gop_id is not None else self.sessions.notes_session()
        gop = session["gop_id"]
        frame = self._store(gop, content, importance)
        outcome = self._cognify_frames([frame]).frames
        log.debug("cognified turn %s into frame %d", turn_id, frame.id)
        related = None
        if self.enable_linking and self.linker is not None:
            related = self.linker.find_related(content, exclude_frame_id=frame.id)
        return CognifyResult(
            frame.id, outcome[frame.id].entities, outcome[frame.id].relations_created, related
        )

    def cognify_frame(self, frame_id: int) -> CognifyResult | None:
        """Process one stored frame (e.g. after an import); None when it does not exist."""
        frame = self.frames.get_by_id(_require_id(frame_id))
        if frame is None:
            return None
        outcome = self._cognify_frames([frame]).frames
        return CognifyResult(frame.id, outcome[frame.id].entities, outcome[frame.id].relations_created)

    def cognify_batch(
        self,
        frame_ids: Iterable[int],
        batch_size: int = DEFAULT_BATCH_SIZE,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, int]:
        """Process stored frames ``batch_size`` at a time (one transaction, one embedder call each);
        ``progress(done, total)`` follows each batch.

        Returns ``processed`` (frames found), ``skipped`` (already cognified with their current
        content), ``missing`` (unknown ids), ``entities`` (entity mentions: linked entities
        summed over the processed frames), ``relations`` (relations created) and ``vectors``
        (frame vectors written).
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
        ids = list(dict.fromkeys(_require_id(i) for i in frame_ids))
        totals = {"processed": 0, "skipped": 0, "missing": 0, "entities": 0, "relations": 0, "vectors": 0}
        for start in range(0, len(ids), batch_size):
            chunk = ids[start : start + batch_size]
            found = self.frames.get_many(chunk)
            missing = [i for i in chunk if i not in found]
            if missing:
                log.warning(
                    "cognify_batch: %d unknown frame id(s) skipped, e.g. %s", len(missing), missing[:5]
                )
            frames = [found[i] for i in chunk if i in found]
            outcome = self._cognify_frames(frames)
            totals["processed"] += len(frames)
            totals["skipped"] += outcome.skipped
            totals["missing"] += len(missing)
            totals["entities"] += sum(o.entities for o in outcome.frames.values())
            totals["relations"] += sum(o.relations_created for o in outcome.frames.values())
            totals["vectors"] += outcome.vectors
            if progress is not None:
                progress(start + len(chunk), len(ids))
        return totals

    # -- steps ----------------------------------------------------------------------------
    def _store(self, gop: str, content: str, importance: str) -> Frame:
        duplicate = self.frames.find_duplicate(content)
        if duplicate is not None:
            self.frames.touch(duplicate.id)
            return self.frames.get_by_id(duplicate.id) or duplicate
        latest_i = self.frames.get_latest_i_frame(gop)
        if latest_i is None:
            return self.frames.create_i_frame(gop, content, importance)
        return self.frames.create_p_frame(gop, content, latest_i.id, importance)

    def _cognify_frames(self, frames: Sequence[Frame]) -> _BatchOutcome:
        """Knowledge for the frames not yet cognified, then vectors for those without one."""
        pending = [f for f in frames if not _is_cognified(f)]
        extractions = {f.id: extract(f.content[:MAX_EXTRACT_CHARS]) for f in pending}
        outcome = self._write_knowledge(pending, extractions) if pending else {}
        written = set(outcome)
        done = [f.id for f in frames if f.id not in outcome]
        for frame_id, count in self._link_counts(done).items():
            outcome[frame_id] = _FrameOutcome(count, 0)
        return _BatchOutcome(outcome, len(frames) - len(written), self._index_vectors(frames))

    def _write_knowledge(
        self, pending: Sequence[Frame], extractions: dict[int, Extraction]
    ) -> dict[int, _FrameOutcome]:
        """One transaction for the batch's entities, relations, links and markers.

        Extraction ran before the write lock was taken, so the frames are checked again under
        it: one that another writer cognified meanwhile, or whose content changed, is left out.
        """
        outcome: dict[int, _FrameOutcome] = {}
        with self.db.transaction():
            pending = self._still_pending(pending)
            entity_ids = self._resolve_entities(
                [(f, e) for f in pending for e in extractions[f.id].entities]
            )
            links: list[tuple[int, int]] = []
            sightings: list[tuple[int, RelationSighting]] = []
            for frame in pending:
                ids = list(
                    dict.fromkeys(
                        entity_ids[key]
                        for key in (_entity_key(e.type, e.name) for e in extractions[frame.id].entities)
                        if key in entity_ids
                    )
                )
                sightings += [(frame.id, s) for s in _co_occurrences(ids, frame.created_at)]
                sightings += [
                    (frame.id, s) for s in _semantic_relations(extractions[frame.id], entity_ids, frame.created_at)
                ]
                links += [(entity_id, frame.id) for entity_id in ids]
                outcome[frame.id] = _FrameOutcome(len(ids), 0)
            recognified = [f for f in pending if COGNIFIED_KEY in f.metadata]
            self._write_links(recognified, links)
            stated = self._write_relations(sightings)
            for frame_id, _, created in stated:
                outcome[frame_id].relations_created += int(created)
            self.knowledge.link_relations_to_frames((relation_id, frame_id) for frame_id, relation_id, _ in stated)
            self.db.executemany(
                "UPDATE memory_frames SET metadata = json_set("
                "CASE WHEN json_valid(metadata) THEN metadata ELSE '{}' END, '$." + COGNIFIED_KEY + "', ?)"
                " WHERE id = ?",
                [(_digest(f), f.id) for f in pending],
            )
        return outcome

    def _still_pending(self, frames: Sequence[Frame]) -> list[Frame]:
        rows = self.db.query(
            f"SELECT id, content_hash, CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.{COGNIFIED_KEY}')"
            f" END AS marker FROM memory_frames WHERE id IN ({IN_LIST})",
            (in_list(f.id for f in frames),),
        )
        current = {row["id"]: (row["content_hash"], row["marker"]) for row in rows}
        return [
            f
            for f in frames
            if f.id in current and current[f.id][1] != current[f.id][0] and current[f.id][0] == f.content_hash
        ]

    def _resolve_entities(
        self, mentions: Sequence[tuple[Frame, ExtractedEntity]]
    ) -> dict[tuple[str, str], int]:
        """``{(type, lower name): entity id}`` for every mention, creating the missing entities.

        Existing entities are found with one indexed query per type (the oldest
        active one wins, as in ``KnowledgeGraph.find_entity``); every entity in the graph is
        seen, not only the first 500 of a type. Valid time is event time: a new entity is valid
        from its earliest mentioning frame, an existing one is moved back to it when that is
        earlier (the previous version kept).
        """
        wanted: dict[tuple[str, str], tuple[int, ExtractedEntity]] = {}
        first_seen: dict[tuple[str, str], str] = {}
        found_by: dict[tuple[str, str], list[str]] = {}
        for frame, entity in mentions:
            key = _entity_key(entity.type, entity.name)
            wanted.setdefault(key, (frame.id, entity))
            names = found_by.setdefault(key, [])
            names += [name for name in entity.extractors if name not in names]
            if key not in first_seen or _sooner(frame.created_at, first_seen[key]):
                first_seen[key] = frame.created_at
        by_type: dict[str, list[str]] = {}
        for entity_type, lname in wanted:
            by_type.setdefault(entity_type, []).append(lname)
        resolved: dict[tuple[str, str], int] = {}
        for entity_type, names in by_type.items():
            rows = self.db.query(
                "SELECT id, lower(name) AS lname, valid_from, properties FROM knowledge_entities WHERE entity_type = ?"
                f" AND lower(name) IN ({IN_LIST}) AND valid_to IS NULL ORDER BY id",
                (entity_type, in_list(names)),
            )
            for row in rows:
                key = (entity_type, row["lname"])
                if key in resolved:
                    continue
                resolved[key] = row["id"]
                if _sooner(first_seen[key], row["valid_from"]):
                    self.knowledge.extend_validity_back("entity", row["id"], first_seen[key])
                self._credit_extractors(row["id"], row["properties"], found_by[key])
        for key, (frame_id, entity) in wanted.items():
            if key in resolved:
                continue
            try:
                created = self.knowledge.create_entity(
                    entity.type,
                    entity.name,
                    {"confidence": entity.confidence, "source": "cognify", "extractors": found_by[key]},
                    valid_from=_valid_instant(first_seen[key]),
                )
            except InvalidInputError as exc:
                log.warning("frame %d: entity %s %r skipped: %s", frame_id, entity.type, entity.name, exc)
                continue
            resolved[key] = created.id
        return resolved

    def _credit_extractors(self, entity_id: int, stored: str | None, found_by: Sequence[str]) -> None:
        """A later sighting's extractors join the entity's ``extractors``; only a new name writes
        (and keeps the previous version)."""
        credited = credit_extractors(load_properties(stored), found_by)
        if credited is not None:
            self.knowledge.update_entity(entity_id, properties=credited)

    def _write_relations(self, sightings: Sequence[tuple[int, RelationSighting]]) -> list[tuple[int, int, bool]]:
        """Upsert all relation sightings of a batch; returns ``(frame id, relation id, created)``
        for each sighting written (the frame is the relation's evidence).

        A sighting the validation schema rejects is logged with its frame and skipped.
        """
        rejected: list[InvalidInputError] = []
        results = self.knowledge.upsert_relations(
            [s for _, s in sightings], on_invalid=lambda _, exc: rejected.append(exc)
        )
        errors = iter(rejected)
        written: list[tuple[int, int, bool]] = []
        for (frame_id, sighting), result in zip(sightings, results, strict=True):
            if result is None:
                log.warning(
                    "frame %d: relation %s %d->%d skipped: %s",
                    frame_id,
                    sighting.relation_type,
                    sighting.source_id,
                    sighting.target_id,
                    next(errors),
                )
            else:
                written.append((frame_id, *result))
        return written

    def _write_links(self, recognified: Sequence[Frame], links: Sequence[tuple[int, int]]) -> None:
        """Link entities to frames; a frame re-extracted after a content change loses its old links
        (to entities and relations), noted as lost evidence: what it no longer states, and no other
        frame states, ends after the knowledge step (``end_facts_without_evidence``)."""
        if recognified:
            self.knowledge.note_evidence_lost([f.id for f in recognified])
        for table in ("kg_entity_frames", "kg_relation_frames"):
            self.db.executemany(f"DELETE FROM {table} WHERE frame_id = ?", [(f.id,) for f in recognified])
        self.db.executemany(
            "INSERT OR IGNORE INTO kg_entity_frames (entity_id, frame_id) VALUES (?, ?)", links
        )

    def _link_counts(self, frame_ids: Sequence[int]) -> dict[int, int]:
        counts = dict.fromkeys(frame_ids, 0)
        rows = self.db.query(
            f"SELECT frame_id, COUNT(*) AS n FROM kg_entity_frames WHERE frame_id IN ({IN_LIST}) GROUP BY frame_id",
            (in_list(frame_ids),),
        )
        counts.update({row["frame_id"]: row["n"] for row in rows})
        return counts

    def _index_vectors(self, frames: Sequence[Frame]) -> int:
        """Embed, in one embedder call, the frames whose vector is missing or stale."""
        if self.search.embedder is None or not frames:
            return 0
        rows = self.db.query(
            f"SELECT id, embedded_hash FROM memory_frames WHERE id IN ({IN_LIST})", (in_list(f.id for f in frames),)
        )
        embedded = {row["id"]: row["embedded_hash"] for row in rows}
        stale = [(f.id, f.content) for f in frames if f.id in embedded and embedded[f.id] != _digest(f)]
        if not stale:
            return 0
        return self.search.vectors.index_frames(stale, batch_size=len(stale))


def _co_occurrences(entity_ids: Sequence[int], when: str | None = None) -> list[RelationSighting]:
    """One undirected ``co_occurs_with`` sighting per entity pair of a text, valid from its time."""
    start = _valid_instant(when)
    return [
        RelationSighting(
            first, second, CO_OCCURS_WITH, CO_OCCURRENCE_CONFIDENCE, _CO_OCCURRENCE_PROPERTIES, start
        )
        for i, first in enumerate(entity_ids)
        for second in entity_ids[i + 1 :]
    ]


def _valid_instant(when: str | None) -> str | None:
    """A frame's event time as a valid-time start; None (now) when it is not a readable instant."""
    if not when:
        return None
    try:
        return normalize_iso(when)
    except ValueError:
        return None


def _sooner(first: str | None, second: str | None) -> bool:
    start, other = _valid_instant(first), _valid_instant(second)
    return start is not None and (other is None or start < other)


def _semantic_relations(
    extraction: Extraction, entity_ids: dict[tuple[str, str], int], when: str | None = None
) -> list[RelationSighting]:
    """Typed relations whose two ends are entities of this same text, matched by lower-case
    name whatever their type (the first entity of that name in extraction order)."""
    by_name: dict[str, int] = {}
    for entity in extraction.entities:
        entity_id = entity_ids.get(_entity_key(entity.type, entity.name))
        if entity_id is not None:
            by_name.setdefault(entity.name.lower(), entity_id)
    sightings = []
    for relation in extraction.relations:
        source = by_name.get(relation.source.lower())
        target = by_name.get(relation.target.lower())
        if source is not None and target is not None and source != target:
            sightings.append(
                RelationSighting(
                    source,
                    target,
                    relation.relation_type,
                    relation.confidence,
                    {**_SEMANTIC_PROPERTIES, "extractors": list(relation.extractors)},
                    _valid_instant(when),
                )
            )
    return sightings


def _digest(frame: Frame) -> str:
    return frame.content_hash or content_hash(frame.content)


def _is_cognified(frame: Frame) -> bool:
    return frame.metadata.get(COGNIFIED_KEY) == _digest(frame)


def _require_id(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"frame id must be an integer, got {value!r}")
    return value
