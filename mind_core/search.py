"""Hybrid search: an FTS5 keyword lane and a sqlite-vec vector lane fused by reciprocal rank
fusion (K = 60), then weighted by a relevance profile (reference-behaviour §3, §4).

No user query can raise or inject FTS5 syntax: the keyword lane only ever sends quoted word
tokens joined with OR; a failure of either lane degrades to the other, never to an exception.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mind_core.db import Database, well_formed
from mind_core.embeddings.base import Embedder
from mind_core.errors import InvalidInputError
from mind_core.frames import Frame, FrameStore, time_clauses
from mind_core.scoring import SCORING_PROFILES, ScoringContext, relevance_components, weighted_relevance
from mind_core.vector_index import VectorIndex

if TYPE_CHECKING:
    from mind_core.knowledge import KnowledgeGraph

log = logging.getLogger(__name__)

RRF_K = 60
MAX_RRF_SCORE = 2.0 / RRF_K  # rank 0 in both lanes
LANE_DEPTH_FACTOR = 2  # each lane returns limit * 2 candidates, as the original
MAX_QUERY_CHARS = 10_000
GRAPH_MAX_DEPTH = 3

FTS_STOP_WORDS = frozenset(
    "the a an is are was were be been being have has had do does did will would could should may might shall "
    "can to of in for on with at by from as into about this that these those it its my your our their what "
    "which who whom how when where why all each every both some any no not and or but".split()
)

_NON_WORD = re.compile(r"[^\w]", re.UNICODE)


def keyword_tokens(query: str) -> list[str]:
    """Words of the query with punctuation stripped (Unicode letters kept), stop words and
    words under 3 characters dropped, in order, without repeats."""
    tokens: list[str] = []
    for raw in query.split():
        word = _NON_WORD.sub("", raw).replace("_", "")
        if len(word) > 2 and word.lower() not in FTS_STOP_WORDS and word not in tokens:
            tokens.append(word)
    return tokens


def fts_query(query: str) -> str:
    """The FTS5 MATCH expression: each token quoted, OR-joined (recall over precision)."""
    return " OR ".join(f'"{token}"' for token in keyword_tokens(query))


def escape_like(term: str) -> str:
    return re.sub(r"([\\%_])", r"\\\1", term)


@dataclass
class SearchResult:
    frame: Frame
    rrf_score: float
    relevance_score: float
    final_score: float
    explain: dict[str, Any] | None = field(default=None)

    @property
    def match_score(self) -> float:
        """How strongly the lanes agree on this frame, on a 0..1 scale: ``rrf / (2 / RRF_K)``.

        1.0 = first in both lanes; above 0.5 only when both lanes found it (one lane alone
        gives at most 0.5). Relevance (recency, importance) orders results but is not part of
        this: an old conversation can still be a strong match. Thresholds (linker, coverage,
        conflict) compare against this value; the original compared raw final scores (<= ~0.04).
        """
        return self.rrf_score / MAX_RRF_SCORE

    def to_dict(self) -> dict[str, Any]:
        data = {
            "frame": self.frame.to_dict(),
            "rrf_score": self.rrf_score,
            "relevance_score": self.relevance_score,
            "final_score": self.final_score,
            "match_score": self.match_score,
        }
        if self.explain is not None:
            data["explain"] = self.explain
        return data


class HybridSearch:
    def __init__(
        self,
        db: Database,
        embedder: Embedder | None,
        frames: FrameStore | None = None,
        knowledge: KnowledgeGraph | None = None,
    ) -> None:
        self.db = db
        self.frames = frames or FrameStore(db)
        self.vectors = VectorIndex(db, embedder)
        self.knowledge = knowledge

    @property
    def embedder(self) -> Embedder | None:
        return self.vectors.embedder

    # -- indexing -------------------------------------------------------------------------
    def index_frame(self, frame_id: int, content: str) -> None:
        self.vectors.index_frames([(frame_id, content)])

    def index_frames_batch(self, frames: list[tuple[int, str]] | list[Frame]) -> int:
        pairs = [(f.id, f.content) if isinstance(f, Frame) else (f[0], f[1]) for f in frames]
        return self.vectors.index_frames(pairs)

    # -- lanes ----------------------------------------------------------------------------
    def keyword_search(
        self,
        query: str,
        limit: int,
        gop_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> list[int]:
        match = fts_query(query)
        if not match:
            return []
        clauses = ["memory_frames_fts MATCH ?"]
        params: list[Any] = [match]
        if gop_id:
            clauses.append("mf.gop_id = ?")
            params.append(gop_id)
        time_sql, time_params = time_clauses("mf.created_at", since, until)
        clauses += time_sql
        params += time_params
        sql = (
            "SELECT mf.id FROM memory_frames_fts JOIN memory_frames mf ON mf.id = memory_frames_fts.rowid "
            f"WHERE {' AND '.join(clauses)} ORDER BY rank LIMIT ?"
        )
        try:
            return [row[0] for row in self.db.query(sql, [*params, limit])]
        except self.db.errors.Error as exc:
            log.warning("FTS query failed (%s); using the LIKE fallback", exc)
            return self.like_fallback_search(query, limit, gop_id, since, until)

    def like_fallback_search(
        self,
        query: str,
        limit: int,
        gop_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> list[int]:
        tokens = [t for t in (_NON_WORD.sub("", w) for w in query.split()) if t] or [query]
        clauses = ["(" + " OR ".join("content LIKE ? ESCAPE '\\'" for _ in tokens) + ")"]
        params: list[Any] = [f"%{escape_like(t)}%" for t in tokens]
        if gop_id:
            clauses.append("gop_id = ?")
            params.append(gop_id)
        time_sql, time_params = time_clauses("created_at", since, until)
        try:
            rows = self.db.query(
                f"SELECT id FROM memory_frames WHERE {' AND '.join(clauses + time_sql)} "
                "ORDER BY julianday(created_at) DESC LIMIT ?",
                [*params, *time_params, limit],
            )
        except self.db.errors.Error:
            return []
        return [row[0] for row in rows]

    def vector_search(
        self,
        query: str,
        limit: int,
        gop_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
    ) -> list[int]:
        if self.embedder is None or not query.strip():
            return []
        try:
            vector = self.vectors.embed_query(query)
            return [frame_id for frame_id, _ in self.vectors.knn(vector, limit, gop_id, since, until)]
        except self.db.errors.Error as exc:
            log.warning("vector lane unavailable (%s); keyword results only", exc)
            return []

    # -- fusion ---------------------------------------------------------------------------
    def search(
        self,
        query: str,
        limit: int = 20,
        gop_id: str | None = None,
        profile: str = "balanced",
        context: ScoringContext | None = None,
        since: str | None = None,
        until: str | None = None,
        explain: bool = False,
    ) -> list[SearchResult]:
        if profile not in SCORING_PROFILES:
            raise InvalidInputError(
                f"unknown profile {profile!r}; expected one of {', '.join(SCORING_PROFILES)}"
            )
        if not isinstance(query, str):
            raise InvalidInputError("query must be a string")
        limit = max(1, min(int(limit), 1000))
        query = well_formed(query[:MAX_QUERY_CHARS])
        depth = limit * LANE_DEPTH_FACTOR
        keyword_ids = self.keyword_search(query, depth, gop_id, since, until)
        vector_ids = self.vector_search(query, depth, gop_id, since, until)
        rrf: dict[int, float] = {}
        for ids in (keyword_ids, vector_ids):
            for rank, frame_id in enumerate(ids):
                rrf[frame_id] = rrf.get(frame_id, 0.0) + 1.0 / (RRF_K + rank)
        if not rrf:
            return []
        frames = self.frames.get_many(list(rrf))
        weights = SCORING_PROFILES[profile]
        context = self._with_graph_distances(query, context or ScoringContext(), weights.contextual)
        now = datetime.now(UTC)
        keyword_rank = {fid: r for r, fid in enumerate(keyword_ids)}
        vector_rank = {fid: r for r, fid in enumerate(vector_ids)}
        results = []
        for frame_id, rrf_score in rrf.items():
            frame = frames.get(frame_id)
            if frame is None:  # deleted, or an orphaned index row
                continue
            components = relevance_components(frame, context, now)
            relevance = weighted_relevance(components, weights)
            details = None
            if explain:
                details = {
                    "keyword_rank": keyword_rank.get(frame_id),
                    "vector_rank": vector_rank.get(frame_id),
                    "rrf_score": rrf_score,
                    "relevance": components,
                    "weights": weights.__dict__,
                }
            results.append(SearchResult(frame, rrf_score, relevance, rrf_score * relevance, details))
        results.sort(key=lambda r: r.final_score, reverse=True)
        return results[:limit]

    def _with_graph_distances(self, query: str, context: ScoringContext, weight: float) -> ScoringContext:
        """Seed graph distances from the entities the query names (and recently active ones)."""
        if context.graph_distances is not None or self.knowledge is None or weight <= 0:
            return context
        seeds = [entity.id for entity in self.knowledge.find_entities_in_text(query)]
        seeds += [e for e in context.recent_entity_ids if e not in seeds]
        if not seeds:
            return context
        distances = self.knowledge.frame_distances_from_entities(seeds, GRAPH_MAX_DEPTH)
        return ScoringContext(recent_entity_ids=context.recent_entity_ids, graph_distances=distances)
