"""The bitemporal knowledge graph: entities and typed relations that are valid over a time span.

Every entity and relation row carries ``valid_from`` / ``valid_to`` (NULL = still valid) and
``recorded_at``. Nothing is hard-deleted here: retiring sets ``valid_to``, and as-of queries
(``get_entities_valid_at``, ``get_relations_valid_at``) answer "what was true at instant T".

Two time axes. Valid time is when a fact held in the world: learned from a frame, it starts at
the frame's event time, and only explicit evidence ends it. Transaction time (``recorded_at``)
is when the mind came to believe the row's current version. A change (``update_entity``,
retiring, moving ``valid_from`` earlier) first copies the row as it was into
``knowledge_versions``, so ``entities_as_of`` / ``relations_as_of`` answer "what did the mind
believe at T" (``known_at``), "what held at T" (``valid_at``), or both. A repeated sighting
(a relation's count and confidence) is not a new version: the fact was already believed.

Time handling. Everything this class writes is canonical UTC ISO (``now_iso`` /
``normalize_iso``). Minds written by the original also hold SQLite's ``YYYY-MM-DD HH:MM:SS``
and callers' ISO strings with offsets, so every time comparison is made on instants with
``julianday(col)``, never on the strings (the original compared strings of mixed formats).

Errors. Lookups by id that may legitimately miss (``get_entity``, ``get_relation``,
``find_entity``) return None; traversals from an unknown id return empty results; writes that
need an existing row (update, retire, relate, link) raise ``NotFoundError``; malformed
arguments raise ``InvalidInputError``, as do validation-schema violations (with the
original's exact messages).

Layout. ``KnowledgeGraph`` is the one public object; its parts live beside it, one concept
each: ``entities`` (rows, lookup, upserts, names in text), ``relations`` (edges and their
sightings), ``merge`` (duplicate entities), ``versions`` (both time axes), ``evidence`` (the
frames stating each fact), ``traversal`` (neighbours, distances) and ``validation``; the values
it returns are in ``model``.
"""

from __future__ import annotations

from collections.abc import Callable

from mind_core.knowledge.evidence import Evidence
from mind_core.knowledge.merge import EntityMerging
from mind_core.knowledge.traversal import Traversal
from mind_core.store.db import Database
from mind_core.timestamps import now_iso


def _now() -> str:
    return now_iso()  # looked up at each call, so a test's clock patched over the module applies


class KnowledgeGraph(EntityMerging, Evidence, Traversal):
    """Entities and relations of one mind, with validity spans and as-of queries."""

    def __init__(self, db: Database, clock: Callable[[], str] | None = None) -> None:
        self.db = db
        self.clock = clock or _now  # transaction time: when the mind records a version
