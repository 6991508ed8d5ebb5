"""Hybrid search: an FTS5 keyword lane and a sqlite-vec vector lane, fused, then weighted by a
relevance profile (reference-behaviour §3, §4).

Two fusions (``SearchConfig.fusion``):

- ``"convex"`` (default): each lane's top ``lane_depth`` candidates with their scores, normalized
  per lane to 0..1 (BM25 / its maximum; cosine similarity from the score where the list was cut
  to the best, see ``normalize_min_max``). A frame's
  lane score then takes in its session context: ``1 - (1 - own) * (1 - context_weight * best)``,
  where ``best`` is the best lane score among the frames within ``context_window`` steps of its
  ``t`` in the same session (a noisy-OR: the frame matches, or the turn next to it does). The lanes
  are combined ``(1 - vector_weight) * keyword + vector_weight * vector``. A memory is usually a
  turn of a conversation, and the turn that holds an answer often does not repeat the question's
  words or topic: its neighbours do. Measured on LoCoMo and REALTALK (benchmarks/README.md), this
  beats RRF by 4-9 points of evidence recall@10 and keeps hybrid above each single lane at every k.
- ``"rrf"``: the original, reciprocal rank fusion (K = 60) over each lane's top ``2 x limit``.

With the convex fusion, dates in the query ("in May 2023", "last week") are a soft boost
(``SearchConfig.time_weight``, ``mind_core.search.time_window``): a frame's match is multiplied by
``1 - time_weight * (1 - time)``, ``time`` being 1 inside the asked window and decaying outside
it, so frames far from the asked time drop and none is filtered; only ``since``/``until`` filter.

Either way ``rrf_score`` is the fused score on the RRF scale (0 .. 2/K) that orders the results.
``match_score``, what the score thresholds compare (linker, coverage, conflict), keeps one scale
whatever the ranking weights: with the convex fusion it reads the lanes at the weights those
thresholds were calibrated on (``MATCH_SCALE_VECTOR_WEIGHT``, ``MATCH_SCALE_CONTEXT_WEIGHT``),
without the ranking preferences (time, "when", speaker, entity lane). 1.0 = best in both lanes,
above 0.5 only with support from both lanes; so ``vector_weight`` and the preferences can be
tuned for the order without moving a threshold.

No user query can raise or inject FTS5 syntax: the keyword lane only ever sends quoted word
tokens joined with OR; a failure of either lane degrades to the other, never to an exception.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from mind_core.embeddings.base import Embedder
from mind_core.errors import InvalidInputError
from mind_core.limits import MAX_QUERY_CHARS
from mind_core.search.filters import SourceFilter
from mind_core.search.keywords import NON_WORD, keyword_tokens
from mind_core.search.scoring import (
    SCORING_PROFILES,
    ScoringContext,
    borrowed_time,
    borrowed_time_sql,
    dated_by_file,
    max_relevance,
    relevance_components_of,
    relevance_parts,
    weighted_relevance,
)
from mind_core.search.time_window import (
    TimeWindow,
    asks_when,
    carries_date,
    date_phrases,
    may_name_a_time,
    question_window,
    without_dates,
)
from mind_core.search.vector_index import PRESCAN_MIN_VECTORS, VectorIndex
from mind_core.store.db import Database, escape_like, well_formed
from mind_core.store.frames import Frame, FrameStore, scope_clauses, time_bound
from mind_core.store.schema import FRAME_ROLE_SQL
from mind_core.timestamps import format_utc, parse_instant, utc_now

if TYPE_CHECKING:
    from mind_core.knowledge.graph import KnowledgeGraph

log = logging.getLogger(__name__)

RRF_K = 60
MAX_RRF_SCORE = 2.0 / RRF_K  # rank 0 in both lanes
LANE_DEPTH_FACTOR = 2  # rrf: each lane returns limit * 2 candidates, as the original
RELEVANCE_POOL_FACTOR = 2 * LANE_DEPTH_FACTOR  # fused candidates that relevance may reorder, per result
RELEVANCE_POOL_LIMIT = 10  # the pool is never smaller than for this many results (the default limit)
GRAPH_MAX_DEPTH = 3
FUSIONS = ("convex", "rrf")
# The best frame's cosine similarity from which a search counts as a confident match. MiniLM
# gives unrelated text 0.1-0.3; on LoCoMo conv-26 the best frame of every one of the first 80
# questions scored 0.40 or more (median 0.57) and seven nonsense queries 0.12-0.26.
CONFIDENT_SIMILARITY = 0.33
# In a mind of code and diffs nonsense reaches 0.31-0.34 ("zxqv blorft quuxle" 0.331 on kernel patch
# mails), so a similarity between the two cuts counts only with keyword evidence: one of the
# query's words in the frame, which a made-up word never is.
CLEAR_SIMILARITY = 0.40
# The fusion weights the score thresholds (linker 0.6, coverage 0.7, conflict 0.6) were calibrated
# on: ``match_score`` reads the lanes at these, so equal lane weights keep "one lane alone gives at
# most 0.5" whatever ``SearchConfig.vector_weight`` and ``context_weight`` order the results by.
MATCH_SCALE_VECTOR_WEIGHT = 0.5
MATCH_SCALE_CONTEXT_WEIGHT = 0.4
# Pseudo-relevance feedback (RM3) on the keyword lane: the terms of the first pass's top frames.
FEEDBACK_FRAMES = 10
FEEDBACK_TERMS = 10
# The entity lane: entities of the question and of the first pass's top frames, and their
# neighbours in the knowledge graph, bring in the frames they are evidenced by (at most the lane
# depth); an entity counts by its rarity, so a name in every frame pulls in nothing.
ENTITY_FEEDBACK_FRAMES = 5
ENTITY_NEIGHBOUR_WEIGHT = 0.5
# The time boost: a frame outside the question's window scores exp(-distance / scale), the scale
# being the window's own length (at least ``SearchConfig.time_scale_days``; a month for a window
# open on one side).
OPEN_WINDOW_SCALE_DAYS = 31.0
# The keyword lane in a large mind: BM25 is computed for every frame that holds any query word, so
# one word in a quarter of the frames (a speaker's name, "make") costs 50-170 ms at 100,000
# frames. There, the frames are those holding one of the query's rarer words (in at most
# COMMON_WORD_SHARE of the frames), still ranked by every word (see ``keyword_match``).
KEYWORD_SPLIT_FRAMES = 20_000
# Words that ask about a time without naming a topic: a question of only these and a date ("what
# happened in June 2010", "anything new last week") is answered by the frames of that time.
QUESTION_FILLER = frozenset(
    "what happened happen happens going discussed discuss talked talk said anything something "
    "new news did was were any there".split()
)
COMMON_WORD_SHARE = 0.05
# The roles an AI chat export gives its two sides name no one a question asks about: "add a user
# to postgres" must not prefer the user's turns over the assistant's answer.
GENERIC_ROLES = frozenset({"user", "assistant", "system", "tool", "model", "human", "unknown"})


def topic_words(keywords: str) -> list[str]:
    """The words of a question that name a topic: its keywords less ``QUESTION_FILLER``. None
    left (and a date) means the question asks only what happened at that time."""
    return [word for word in keyword_tokens(keywords) if word.lower() not in QUESTION_FILLER]


def any_of(tokens: list[str]) -> str:
    """FTS5 for "any of these words": each quoted, OR-joined."""
    return " OR ".join(f'"{token}"' for token in tokens)


def fts_query(query: str) -> str:
    """The FTS5 MATCH expression: each token quoted, OR-joined (recall over precision)."""
    return any_of(keyword_tokens(query))


def normalize_by_max(hits: list[LaneHit]) -> dict[int, float]:
    """BM25 has a natural zero, so a lane's scores are divided by the best one (0..1)."""
    best = max((hit.score for hit in hits), default=0.0)
    if best <= 0:
        return {hit.frame_id: 1.0 for hit in hits}
    return {hit.frame_id: hit.score / best for hit in hits}


def normalize_min_max(hits: list[LaneHit], cut: bool = True) -> dict[int, float]:
    """Cosine similarities have no useful zero (unrelated text still scores ~0.1-0.3), so when
    the lane's list was cut at its depth the candidates are stretched to 0..1 between the score
    at the cut and the best. A list that was not cut (the whole mind fitted) has no such floor:
    then 0 is the floor, so two near-equal candidates stay near-equal."""
    if not hits:
        return {}
    low = min(hit.score for hit in hits) if cut else min(0.0, *(hit.score for hit in hits))
    high = max(hit.score for hit in hits)
    if high - low < 1e-12:
        return {hit.frame_id: 1.0 for hit in hits}
    return {hit.frame_id: (hit.score - low) / (high - low) for hit in hits}


def without_names(text: str, names: set[str]) -> str:
    """``text`` without the given names (and their possessive "'s"), unless nothing else of
    substance would be left: "What did Melanie paint?" -> "What did paint?", "Melanie" -> "Melanie"."""
    if not names:
        return text
    pattern = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    left = re.sub(rf"\b(?:{pattern})(?:['\u2019]s)?\b", " ", text, flags=re.IGNORECASE)
    left = re.sub(r"\s+", " ", left).strip()
    return left if topic_words(left) else text



@dataclass(frozen=True)
class SearchConfig:
    """How the two lanes become one ranking (see the module docstring).

    The weights are the setting best over the six LoCoMo and REALTALK conversations together, the
    one leave-one-conversation-out chose most often (context 0.4, vector 0.5, time 0.6, speaker 0.3;
    benchmarks/README.md);
    they order the results only: the score thresholds read ``match_score``, whose weights are fixed.
    """

    fusion: str = "convex"
    vector_weight: float = 0.5
    lane_depth: int = 100
    context_window: int = 2
    context_weight: float = 0.4
    feedback_weight: float = 0.0  # RM3: share of the keyword lane given to the feedback terms
    entity_weight: float = 0.0  # share of the match given to the entity lane
    time_weight: float = 0.6  # share of the match that depends on nearness to the question's dates
    when_weight: float = 0.0  # share that depends, for a "when" question, on a date in the frame's text
    speaker_weight: float = 0.3  # share that depends, for a question naming a speaker, on who said the frame
    # the lanes search the question without the names of the mind's speakers: a name says who said
    # it, which the speaker preference reads, not what was said (a lane choice: it moves match_score)
    drop_speaker_names: bool = True
    # the vector lane searches the mean direction of the question's vector and its topic words'
    # ("What activities does Melanie partake in?" + "activities partake"): a question's vector lies
    # near other questions, its topic's near the statements that answer it
    topic_blend: bool = True
    time_scale_days: float = 1.0  # the time boost's shortest decay scale: a day's window reaches the next day
    # how much of the shown score the relevance profile (recency, importance, graph nearness,
    # popularity) may take away from the match: 1 = all of it, 0 = relevance only breaks ties
    relevance_share: float = 1.0
    # from how many frames the keyword lane leaves frames holding only common words out, and the
    # vector lane pre-scans quantized vectors (benchmarks force these to 0 to measure the effect)
    keyword_split_frames: int = KEYWORD_SPLIT_FRAMES
    prescan_min_vectors: int = PRESCAN_MIN_VECTORS

    def __post_init__(self) -> None:
        if self.fusion not in FUSIONS:
            raise InvalidInputError(f"unknown fusion {self.fusion!r}; expected one of {', '.join(FUSIONS)}")
        if not 0.0 <= self.vector_weight <= 1.0:
            raise InvalidInputError(f"vector_weight must be within 0..1, got {self.vector_weight}")
        shares = (
            self.feedback_weight,
            self.entity_weight,
            self.time_weight,
            self.when_weight,
            self.speaker_weight,
            self.relevance_share,
        )
        if not all(0.0 <= share <= 1.0 for share in shares):
            raise InvalidInputError(
                "feedback_weight, entity_weight, time_weight, when_weight, speaker_weight, relevance_share: "
                "within 0..1"
            )
        if self.time_scale_days <= 0:
            raise InvalidInputError(f"time_scale_days must be > 0, got {self.time_scale_days}")
        if self.lane_depth < 1 or self.context_window < 0 or not 0.0 <= self.context_weight <= 1.0:
            raise InvalidInputError(
                "lane_depth must be >= 1, context_window >= 0, context_weight within 0..1"
            )


@dataclass
class LaneHit:
    frame_id: int
    score: float  # keyword: BM25 (higher is better); vector: cosine similarity


@dataclass
class SearchResult:
    """``score`` is what results are ordered by, on 0..1: the match times the relevance as a
    share of the most the profile can give (``final_score`` rescaled), so a shown 0.93 never
    sits above a 0.97. ``match_score`` stays the lanes' agreement that thresholds compare, on a
    scale the ranking weights do not move (``calibrated_match``)."""

    frame: Frame
    rrf_score: float
    relevance_score: float
    final_score: float
    explain: dict[str, Any] | None = field(default=None)
    score: float = 0.0
    # the frame's cosine similarity to the question as asked (the vector lane may search it without
    # speakers' names, blended with its topic words), when the vector lane found the frame
    similarity: float | None = None
    keyword_share: float = 0.0  # the share of the query's keywords the frame contains
    keyword_evidence: bool = False  # the frame holds one of the query's keywords made of letters
    in_asked_time: bool = False  # the query is only a date, and the frame's own time lies inside it
    # the lanes' agreement at the calibrated weights (convex fusion); None: the ranking match is it (RRF)
    calibrated_match: float | None = None

    @property
    def confident(self) -> bool:
        """Whether this frame matches the query well, not merely best among poor candidates:
        its meaning is clearly close (``CLEAR_SIMILARITY``), or close (``CONFIDENT_SIMILARITY``)
        and it holds one of the query's keywords, or it holds every keyword of the query, or the
        query asks only what happened at a time and the frame is from then (``in_asked_time``).
        Normalized lane scores cannot say this: the best of unrelated frames is 1.0 in its lane."""
        similarity = self.similarity if self.similarity is not None else 0.0
        if similarity >= CLEAR_SIMILARITY or self.keyword_share >= 1.0 or self.in_asked_time:
            return True
        return similarity >= CONFIDENT_SIMILARITY and self.keyword_evidence

    @property
    def match_score(self) -> float:
        """How strongly the lanes agree on this frame, on a 0..1 scale: with RRF ``rrf / (2 / RRF_K)``,
        with the convex fusion the lanes at the calibrated weights (``calibrated_match``).

        1.0 = first in both lanes (with the convex fusion: and so are its session neighbours);
        above 0.5 only when both lanes support it (one lane alone gives at most 0.5). Relevance
        (recency, importance) and the ranking preferences (time, speaker) order results but are
        not part of this: an old conversation can still be a strong match. Thresholds (linker,
        coverage, conflict) compare against this value, so they do not move when the ranking
        weights do; the original compared raw final scores (<= ~0.04).
        """
        if self.calibrated_match is not None:
            return self.calibrated_match
        return self.rrf_score / MAX_RRF_SCORE

    def to_dict(self) -> dict[str, Any]:
        data = {
            "frame": self.frame.to_dict(),
            "rrf_score": self.rrf_score,
            "relevance_score": self.relevance_score,
            "final_score": self.final_score,
            "match_score": self.match_score,
            "score": self.score,
            "confident": self.confident,
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
        config: SearchConfig | None = None,
    ) -> None:
        self.db = db
        self.frames = frames or FrameStore(db)
        self.vectors = VectorIndex(db, embedder)
        self.knowledge = knowledge
        self.config = config or SearchConfig()
        # what ``_kept_while_unchanged`` keeps: name -> (mind version, value)
        self._kept: dict[str, tuple[tuple[int, int], Any]] = {}

    @property
    def config(self) -> SearchConfig:
        return self._config

    @config.setter
    def config(self, config: SearchConfig) -> None:
        self._config = config
        self.vectors.prescan_min_vectors = config.prescan_min_vectors

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
        source: SourceFilter | None = None,
    ) -> list[int]:
        return [hit.frame_id for hit in self.keyword_hits(query, limit, gop_id, since, until, source)]

    def keyword_hits(
        self,
        query: str,
        limit: int,
        gop_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        source: SourceFilter | None = None,
        phrases: Sequence[str] = (),
    ) -> list[LaneHit]:
        """FTS5 matches in rank order with their BM25 score (FTS5's ``rank`` negated, >= 0);
        ``phrases`` match as whole phrases besides the query's words."""
        if not fts_query(query) and not any(phrase.strip() for phrase in phrases):
            return []
        scope, scope_params = scope_clauses("mf", gop_id, since, until, source)
        sql = (
            "SELECT mf.id, memory_frames_fts.rank FROM memory_frames_fts "
            "JOIN memory_frames mf ON mf.id = memory_frames_fts.rowid "
            f"WHERE {' AND '.join(['memory_frames_fts MATCH ?', *scope])} ORDER BY rank LIMIT ?"
        )
        try:
            params: list[Any] = [self.keyword_match(query, phrases), *scope_params, limit]
            return [LaneHit(row[0], max(0.0, -float(row[1]))) for row in self.db.query(sql, params)]
        except self.db.errors.Error as exc:
            log.warning("FTS query failed (%s); using the LIKE fallback", exc)
            ids = self.like_fallback_search(query, limit, gop_id, since, until, source)
            return [LaneHit(frame_id, 1.0) for frame_id in ids]

    def keyword_match(self, query: str, phrases: Sequence[str] = ()) -> str:
        """The FTS5 expression of the keyword lane: :func:`fts_query`, except in a mind of at least
        ``keyword_split_frames`` frames when the query mixes rarer words with common ones (in more
        than COMMON_WORD_SHARE of the frames). Then it is ``(rarer) AND (every word)``: the frames
        are those holding a rarer word, and BM25 still counts every word, the rarer ones twice
        (FTS5 scores each phrase of the expression). A frame holding only common words is left
        out; such a frame ranks low anyway (a common word's IDF is small) and ranking all of
        them is what made the lane slow. Measured: benchmarks/README.md (issue #19). ``phrases``
        count as one term each."""
        tokens = keyword_tokens(query) + [p for p in (" ".join(p.split()) for p in phrases) if p]
        every = any_of(tokens)
        if len(tokens) < 2:
            return every
        frames = int(self.db.scalar("SELECT max(id) FROM memory_frames") or 0)  # ids issued: cheap
        if frames < self.config.keyword_split_frames:
            return every
        rarer = [t for t in tokens if self._document_frequency(t) <= COMMON_WORD_SHARE * frames]
        if not rarer or len(rarer) == len(tokens):
            return every
        return f"({any_of(rarer)}) AND ({every})"

    def like_fallback_search(
        self,
        query: str,
        limit: int,
        gop_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        source: SourceFilter | None = None,
    ) -> list[int]:
        tokens = [t for t in (NON_WORD.sub("", w) for w in query.split()) if t] or [query]
        scope, scope_params = scope_clauses("", gop_id, since, until, source)
        clauses = ["(" + " OR ".join("content LIKE ? ESCAPE '\\'" for _ in tokens) + ")", *scope]
        params: list[Any] = [*(f"%{escape_like(t)}%" for t in tokens), *scope_params]
        try:
            rows = self.db.query(
                f"SELECT id FROM memory_frames WHERE {' AND '.join(clauses)} "
                "ORDER BY julianday(created_at) DESC LIMIT ?",
                [*params, limit],
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
        source: SourceFilter | None = None,
    ) -> list[int]:
        return [hit.frame_id for hit in self.vector_hits(query, limit, gop_id, since, until, source)]

    def vector_hits(
        self,
        query: str,
        limit: int,
        gop_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        source: SourceFilter | None = None,
        vector: Any = None,
    ) -> list[LaneHit]:
        """Nearest frames with their cosine similarity (``1 - d^2 / 2``: vectors are unit length)
        to the query's vector, or to ``vector`` when given (``lane_vectors``)."""
        if self.embedder is None or not query.strip():
            return []
        try:
            searched = self.vectors.embed_query(query) if vector is None else vector
            hits = self.vectors.knn(searched, limit, gop_id, since, until, source)
        except self.db.errors.Error as exc:
            log.warning("vector lane unavailable (%s); keyword results only", exc)
            return []
        return [LaneHit(frame_id, 1.0 - distance * distance / 2.0) for frame_id, distance in hits]

    def lane_vectors(self, query: str, lane_query: str, topic: str | None) -> tuple[Any, Any]:
        """(the vector the vector lane searches, the question's own vector) from one embedder call.
        The lane searches ``lane_query``'s vector, or the mean direction of it and ``topic``'s; the
        confidence cuts (``CONFIDENT_SIMILARITY``) were calibrated on the question's own vector."""
        texts = list(dict.fromkeys(text for text in (query, lane_query, topic) if text))
        if len(texts) == 1:
            own = self.vectors.embed_query(query)
            return own, own
        vectors = dict(zip(texts, np.asarray(self.vectors.embedder.embed_batch(texts), dtype=np.float32), strict=True))
        lane = vectors[lane_query]
        if topic and topic != lane_query:
            lane = lane + vectors[topic]
            lane /= max(float(np.linalg.norm(lane)), 1e-12)
        return lane, vectors[query]

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
        source: SourceFilter | None = None,
        as_of: str | None = None,
        time_aware: bool = True,
        keep_far_window: bool = False,
    ) -> list[SearchResult]:
        """``as_of``: search the mind as it stood at that instant: only frames whose event time is
        at or before it, recency scored from it instead of from now; relative dates in the query
        ("last week") are read from it too, else from the mind's latest event time.
        ``time_aware=False`` ignores dates in the query (for a text that is not a question, such as
        the linker's frame content); ``since``/``until`` always filter. A time the query names
        that no memory of this mind is near is ignored, unless ``keep_far_window`` (another mind
        searched with this one has memories then: see ``names_a_time_near``)."""
        if profile not in SCORING_PROFILES:
            raise InvalidInputError(
                f"unknown profile {profile!r}; expected one of {', '.join(SCORING_PROFILES)}"
            )
        if not isinstance(query, str):
            raise InvalidInputError("query must be a string")
        limit = max(1, min(int(limit), 1000))
        query = well_formed(query[:MAX_QUERY_CHARS])
        now = utc_now()
        asked_from: datetime | None = None
        if as_of is not None:
            instant = time_bound(as_of, end=True)
            until = instant if until is None or time_bound(until, end=True) > instant else until
            now = asked_from = parse_instant(instant)
        window = self._asked_window(query, asked_from) if time_aware else None
        ignored = None
        if window is not None and not keep_far_window and not self._memory_near(window):
            ignored, window = window, None
        # a window's own words are no topic: the keyword lane and the keyword share go without them;
        # a window no memory is near is no time of this mind, so its words may be ("last year I ...")
        keywords = without_dates(query) if window is not None else query
        phrases = date_phrases(query) if window is not None else []
        own_vector = None  # the question's own vector, when the vector lane searched another
        if self.config.fusion == "rrf":
            fused = self._fuse_rrf(query, limit, gop_id, since, until, source)
        else:
            fused, own_vector = self._fuse_convex(
                query, limit, gop_id, since, until, source, time_aware, window, keywords, phrases, keep_far_window
            )
        if not fused:
            return []
        weights = SCORING_PROFILES[profile]
        best_relevance = max_relevance(weights)
        words = [word.lower() for word in keyword_tokens(keywords)]
        only_a_time = window if window is not None and not topic_words(keywords) else None

        def ranked(row: Any) -> tuple[float, float, dict[str, float]]:
            """(score, relevance, its parts) of one pool frame, from the columns relevance reads."""
            frame_id, created_at, access_count, importance, borrowed = row
            components = relevance_components_of(
                frame_id, created_at, access_count, importance, bool(borrowed), context, now
            )
            relevance = weighted_relevance(components, weights)
            # at most the match: relevance is a share of the most a profile gives (capped there)
            shortfall = 1.0 - min(1.0, relevance / best_relevance)
            return fused[frame_id]["match"] * (1.0 - self.config.relevance_share * shortfall), relevance, components

        def result(frame: Frame, score: float, relevance: float, components: dict[str, float]) -> SearchResult:
            entry = fused[frame.id]
            rrf_score = entry["match"] * MAX_RRF_SCORE
            found = held.get(frame.id, set())
            share = len(found) / len(words) if words else 0.0
            evidence = any(word.isalpha() for word in found)
            in_asked_time = only_a_time is not None and self._own_time_inside(frame, only_a_time)
            details = None
            if explain:
                details = {
                    **entry,
                    "fusion": self.config.fusion,
                    "rrf_score": rrf_score,
                    "relevance": components,
                    "weights": weights.__dict__,
                    "max_relevance": best_relevance,
                    "relevance_parts": relevance_parts(components, weights),
                    "score": score,
                    "keyword_share": share,
                    "dated_by_file": dated_by_file(frame),
                    "borrowed_time": borrowed_time(frame),
                }
                if ignored is not None:
                    details["time_window_ignored"] = ignored.describe()
            return SearchResult(
                frame,
                rrf_score,
                relevance,
                rrf_score * relevance,
                details,
                score=score,
                similarity=entry.get("question_similarity"),
                keyword_share=share,
                keyword_evidence=evidence,
                in_asked_time=in_asked_time,
                calibrated_match=entry.get("calibrated_match"),
            )

        # Relevance reorders the best-matching candidates: as many as RELEVANCE_POOL_FACTOR times the
        # limit, and never fewer than for RELEVANCE_POOL_LIMIT results, so every limit up to that
        # one reorders the same pool: a longer list extends a shorter one, never reorders its head.
        # (Scoring every candidate would make it so for any limit, at five times the search's CPU.)
        # The pool is scored from a few columns; only the frames shown are read whole.
        pool_size = max(limit, RELEVANCE_POOL_LIMIT) * RELEVANCE_POOL_FACTOR
        pool = sorted(fused, key=lambda fid: (-fused[fid]["match"], fid))[:pool_size]
        context = self._with_graph_distances(query, context or ScoringContext(), weights.contextual, pool)
        # a frame missing here was deleted, or its index row is an orphan
        rows = {row[0]: row for row in self._relevance_columns(pool)}
        scores = {fid: ranked(rows[fid]) for fid in pool if fid in rows}
        # by score, then by final score (match x relevance), the pool's order among equals
        head = sorted(
            scores, key=lambda fid: (scores[fid][0], fused[fid]["match"] * MAX_RRF_SCORE * scores[fid][1]), reverse=True
        )[:limit]
        frames = self.frames.get_many(head)
        held = self.keywords_held(words, frames)
        if own_vector is not None:  # the confidence cuts read the question's own similarity
            found = [fid for fid in head if "vector_similarity" in fused[fid]]
            for frame_id, similarity in self.vectors.similarities(own_vector, found).items():
                fused[frame_id]["question_similarity"] = similarity
        return [result(frames[fid], *scores[fid]) for fid in head if fid in frames]

    def keywords_held(self, words: list[str], frames: dict[int, Frame]) -> dict[int, set[str]]:
        """Which of ``words`` (lower case) each frame holds: as written, or as the keyword lane
        matches it (FTS5's porter stems: "painting" in a frame that says "painted"), so the
        keyword share shown never says 0% of a frame the keyword lane ranked first."""
        held = {frame_id: {word for word in words if word in frame.content.lower()} for frame_id, frame in frames.items()}
        for word in words:
            missing = [frame_id for frame_id, found in held.items() if word not in found]
            if not missing:
                continue
            marks = ",".join("?" for _ in missing)
            rows = self.db.query(
                f"SELECT rowid FROM memory_frames_fts WHERE memory_frames_fts MATCH ? AND rowid IN ({marks})",
                [any_of([word]), *missing],
            )
            for (frame_id,) in rows:
                held[frame_id].add(word)
        return held

    def _fuse_rrf(
        self,
        query: str,
        limit: int,
        gop_id: str | None,
        since: str | None,
        until: str | None,
        source: SourceFilter | None = None,
    ) -> dict[int, dict[str, Any]]:
        """The original: RRF (K = 60) over each lane's top ``limit * 2``; match = rrf / (2/K)."""
        depth = limit * LANE_DEPTH_FACTOR
        lanes = {
            "keyword": self.keyword_hits(query, depth, gop_id, since, until, source),
            "vector": self.vector_hits(query, depth, gop_id, since, until, source),
        }
        fused: dict[int, dict[str, Any]] = {}
        for lane, hits in lanes.items():
            for rank, hit in enumerate(hits):
                entry = fused.setdefault(hit.frame_id, {"keyword_rank": None, "vector_rank": None, "match": 0.0})
                entry[f"{lane}_rank"] = rank
                entry["match"] += 1.0 / (RRF_K + rank) / MAX_RRF_SCORE
                if lane == "vector":
                    entry["vector_similarity"] = entry["question_similarity"] = hit.score
        return fused

    def _fuse_convex(
        self,
        query: str,
        limit: int,
        gop_id: str | None,
        since: str | None,
        until: str | None,
        source: SourceFilter | None = None,
        time_aware: bool = True,
        window: TimeWindow | None = None,
        keywords: str | None = None,
        phrases: Sequence[str] = (),
        keep_far_window: bool = False,
    ) -> tuple[dict[int, dict[str, Any]], Any]:
        """Normalized lane scores plus session-neighbour context, combined with fixed weights;
        every lane score stays within 0..1, so match is 1.0 only for the best of both lanes. The
        time parts (``time_factors``) only lower the match of frames far from the asked time
        (``window``). The keyword lane searches ``keywords`` (the query without its date phrases)
        and each of ``phrases`` (the date phrases) as a whole phrase; the vector lane the whole
        query, whose dates shade its meaning only.
        Returns the best-matching candidates, the ones relevance reorders (``search``), and the
        question's own vector when the vector lane searched another (else None: the lane's
        similarity is the question's)."""
        config = self.config
        depth = max(config.lane_depth, limit * LANE_DEPTH_FACTOR)
        keywords = query if keywords is None else keywords
        dropped = self.named_speakers(query) if config.drop_speaker_names else set()
        lane_query, keywords = without_names(query, dropped), without_names(keywords, dropped)
        keyword = self.keyword_hits(keywords, depth, gop_id, since, until, source, phrases)
        from_window = window is not None and (not topic_words(keywords) or not keyword)
        if from_window and window is not None:  # only a date and filler: the keyword lane's place
            keyword = self.window_hits(query, window, depth, gop_id, since, until, source)
        topic = " ".join(topic_words(lane_query)) if config.topic_blend else None
        lane_vector = own_vector = None
        if self.embedder is not None and lane_query.strip():
            lane_vector, own_vector = self.lane_vectors(query, lane_query, topic)
        vector = self.vector_hits(lane_query, depth, gop_id, since, until, source, vector=lane_vector)
        own = {
            "keyword": normalize_by_max(keyword),
            "vector": normalize_min_max(vector, cut=len(vector) >= depth),
        }
        expansion: list[str] = []
        if config.feedback_weight > 0 and keyword:
            expansion = self.feedback_terms(query, keyword[:FEEDBACK_FRAMES])
            expanded = normalize_by_max(self.keyword_hits(" ".join(expansion), depth, gop_id, since, until, source))
            original = own["keyword"]
            own["keyword"] = {
                frame_id: (1 - config.feedback_weight) * original.get(frame_id, 0.0)
                + config.feedback_weight * expanded.get(frame_id, 0.0)
                for frame_id in original.keys() | expanded.keys()
            }
            keyword = sorted((LaneHit(f, v) for f, v in own["keyword"].items()), key=lambda h: (-h.score, h.frame_id))
        if config.entity_weight > 0 and self.knowledge is not None:
            first = sorted(
                own["keyword"].keys() | own["vector"].keys(),
                key=lambda f: -(own["keyword"].get(f, 0.0) + own["vector"].get(f, 0.0)),
            )[:ENTITY_FEEDBACK_FRAMES]
            own["entity"] = self.entity_scores(query, first, depth, gop_id, since, until, source)
        ranks = {
            "keyword": {hit.frame_id: r for r, hit in enumerate(keyword)},
            "vector": {hit.frame_id: r for r, hit in enumerate(vector)},
            "entity": {f: r for r, f in enumerate(sorted(own.get("entity", {}), key=lambda f: -own["entity"][f]))},
        }
        similarity = {hit.frame_id: hit.score for hit in vector}
        candidates = set().union(*own.values())
        if not candidates:
            return {}, None
        neighbours: dict[int, list[int]] = {}
        if config.context_window > 0 and config.context_weight > 0:
            neighbours = self.session_neighbours(candidates, config.context_window, since, until, source)
        # the session window is symmetric, so each scored frame passes its score to its neighbours
        nearby: dict[str, dict[int, float]] = {lane: {} for lane in own}
        for lane, scores in own.items():
            best = nearby[lane]
            for frame_id, score in scores.items():
                for neighbour in neighbours.get(frame_id, ()):
                    if score > best.get(neighbour, 0.0):
                        best[neighbour] = score
        lane_share = 1.0 - config.entity_weight if "entity" in own else 1.0
        weights = {"keyword": (1.0 - config.vector_weight) * lane_share, "vector": config.vector_weight * lane_share}
        if "entity" in own:
            weights["entity"] = config.entity_weight
        context_weight = config.context_weight

        def lane_score(lane: str, frame_id: int, context_weight: float = context_weight) -> float:
            alone = own[lane].get(frame_id, 0.0)
            return 1.0 - (1.0 - alone) * (1.0 - context_weight * nearby[lane].get(frame_id, 0.0))

        def calibrated_match(frame_id: int) -> float:
            """The threshold scale (``SearchResult.match_score``): keyword and vector lane at the
            calibrated weights, no preference; what the ranking weights do leaves it alone."""
            keyword_part = lane_score("keyword", frame_id, MATCH_SCALE_CONTEXT_WEIGHT)
            vector_part = lane_score("vector", frame_id, MATCH_SCALE_CONTEXT_WEIGHT)
            return (1.0 - MATCH_SCALE_VECTOR_WEIGHT) * keyword_part + MATCH_SCALE_VECTOR_WEIGHT * vector_part

        # lane_score summed over the lanes, written out: this runs for every candidate and neighbour
        lanes = [(weight, own[lane], nearby[lane]) for lane, weight in weights.items()]
        match: dict[int, float] = {}
        for frame_id in candidates.union(*neighbours.values()):
            total = 0.0
            for weight, scores, near in lanes:
                total += weight * (1.0 - (1.0 - scores.get(frame_id, 0.0)) * (1.0 - context_weight * near.get(frame_id, 0.0)))
            match[frame_id] = total
        time_scores, when_scores = {}, {}
        asked_window = window
        if time_aware:
            window, time_scores, when_scores = self.time_factors(query, list(match), window, keep_far_window)
        for frame_id in time_scores.keys() | when_scores.keys():
            match[frame_id] *= 1.0 - config.time_weight * (1.0 - time_scores.get(frame_id, 1.0))
            match[frame_id] *= 1.0 - config.when_weight * (1.0 - when_scores.get(frame_id, 1.0))
        pool_size = max(limit, RELEVANCE_POOL_LIMIT) * RELEVANCE_POOL_FACTOR
        speakers: dict[int, float] = {}
        if config.speaker_weight > 0:
            # The preference lowers a match by at most speaker_weight, so a frame below that share
            # of the pool's last match cannot reach the pool whoever said it: its speaker is not read.
            ordered = sorted(match.values(), reverse=True)
            floor = (1.0 - config.speaker_weight) * ordered[min(pool_size, len(ordered)) - 1]
            speakers = self.speaker_scores(query, [fid for fid, value in match.items() if value >= floor])
        for frame_id, said_by_named in speakers.items():
            match[frame_id] *= 1.0 - config.speaker_weight * (1.0 - said_by_named)
        pool = sorted(match, key=lambda fid: (-match[fid], fid))[:pool_size]
        fused: dict[int, dict[str, Any]] = {}
        for frame_id in pool:
            entry: dict[str, Any] = {}
            for lane in own:
                alone = own[lane].get(frame_id, 0.0)
                entry[f"{lane}_rank"] = ranks[lane].get(frame_id)
                entry[f"{lane}_score"] = alone
                entry[f"{lane}_context"] = lane_score(lane, frame_id) - alone
            if frame_id in similarity:
                entry["vector_similarity"] = similarity[frame_id]
                if own_vector is lane_vector:
                    entry["question_similarity"] = similarity[frame_id]
            if expansion:
                entry["feedback_terms"] = expansion
            if from_window:
                entry["keyword_lane"] = "time window"
            if window is not None:
                entry["time_window"] = window.describe()
                entry["time_score"] = time_scores.get(frame_id, 1.0)
            elif asked_window is not None:
                entry["time_window_ignored"] = asked_window.describe()
            if when_scores:
                entry["when_score"] = when_scores.get(frame_id, 1.0)
            if speakers:
                entry["speaker_score"] = speakers.get(frame_id, 1.0)
            if lane_query != query:
                entry["lanes_without"] = sorted(dropped)
            if topic and topic != lane_query and vector:
                entry["vector_blended_with"] = topic
            entry["match"] = match[frame_id]
            entry["calibrated_match"] = calibrated_match(frame_id)
            fused[frame_id] = entry
        return fused, (None if own_vector is lane_vector else own_vector)

    def window_hits(
        self,
        query: str,
        window: TimeWindow,
        limit: int,
        gop_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        source: SourceFilter | None = None,
    ) -> list[LaneHit]:
        """The frames inside the window, for a question that is only a date and filler ("what
        happened in June 2010"): every lane word was the date, so the keyword lane holds the
        window's frames instead, each scoring 1; the nearest in meaning first (the vector lane
        within the window), else the latest."""
        first = format_utc(window.start) if window.start is not None else None
        last = format_utc(window.end - timedelta(milliseconds=1)) if window.end is not None else None
        if since is not None and (first is None or time_bound(since, end=False) > first):
            first = time_bound(since, end=False)
        if until is not None and (last is None or time_bound(until, end=True) < last):
            last = time_bound(until, end=True)
        if first is not None and last is not None and first > last:
            return []
        hits = self.vector_hits(query, limit, gop_id, first, last, source)
        if not hits:
            scope, params = scope_clauses("", gop_id, first, last, source)
            where = f"WHERE {' AND '.join(scope)}" if scope else ""
            rows = self.db.query(
                f"SELECT id FROM memory_frames {where} ORDER BY created_at DESC, id LIMIT ?", [*params, limit]
            )
            hits = [LaneHit(row[0], 1.0) for row in rows]
        return [LaneHit(hit.frame_id, 1.0) for hit in hits]

    def time_factors(
        self, query: str, frame_ids: list[int], window: TimeWindow | None, keep_far: bool = False
    ) -> tuple[TimeWindow | None, dict[int, float], dict[int, float]]:
        """The question's time window (``window``, parsed by ``search``) if it is used and, per
        frame, 0..1: how near its event time is to the window (1 inside, ``exp(-distance / scale)``
        outside), and for a "when" question whether its text carries a date. A window that none of
        the frames is inside or within one scale of names a time the candidates do not share
        (LoCoMo's "last year" is before the conversation began) and is not used."""
        config = self.config
        wants_when = config.when_weight > 0 and asks_when(query)
        if not frame_ids or (window is None and not wants_when):
            return None, {}, {}
        rows: list[Any] = []
        column = ", content" if wants_when else ""
        for start in range(0, len(frame_ids), 500):
            chunk = frame_ids[start : start + 500]
            marks = ",".join("?" for _ in chunk)
            rows += self.db.query(f"SELECT id, created_at{column} FROM memory_frames WHERE id IN ({marks})", chunk)
        time_scores: dict[int, float] = {}
        if window is not None:
            distances = {}
            for row in rows:
                try:
                    distances[row[0]] = window.distance_days(parse_instant(row[1]))
                except ValueError:
                    continue
            scale = max(window.length_days or OPEN_WINDOW_SCALE_DAYS, config.time_scale_days)
            if distances and (keep_far or min(distances.values()) <= scale):
                time_scores = {frame_id: math.exp(-days / scale) for frame_id, days in distances.items()}
            else:
                window = None
        when_scores = {row[0]: 1.0 if carries_date(row[2]) else 0.0 for row in rows} if wants_when else {}
        return window, time_scores, when_scores

    def _asked_window(self, query: str, asked_from: datetime | None = None) -> TimeWindow | None:
        """The time the query names, relative dates read from ``asked_from`` (else the mind's
        latest event time); None when it names none or the fusion has no time boost."""
        if self.config.fusion != "convex" or self.config.time_weight <= 0 or not may_name_a_time(query):
            return None
        return question_window(query, asked_from or self._latest_event_time())

    def names_a_time_near(self, query: str, as_of: str | None = None) -> bool:
        """Whether the query names a time this mind holds memories near (what ``search`` uses)."""
        asked_from = parse_instant(time_bound(as_of, end=True)) if as_of is not None else None
        window = self._asked_window(well_formed(query[:MAX_QUERY_CHARS]), asked_from)
        return window is not None and self._memory_near(window)

    def _memory_near(self, window: TimeWindow) -> bool:
        """Whether any frame's event time is inside the window or within one decay scale of it
        (as ``time_factors`` asks of the candidates)."""
        scale = timedelta(days=max(window.length_days or OPEN_WINDOW_SCALE_DAYS, self.config.time_scale_days))
        clauses, params = ["1"], []
        if window.start is not None:
            clauses.append("created_at >= ?")
            params.append(format_utc(window.start - scale))
        if window.end is not None:
            clauses.append("created_at < ?")
            params.append(format_utc(window.end + scale))
        sql = f"SELECT EXISTS(SELECT 1 FROM memory_frames WHERE {' AND '.join(clauses)})"
        return bool(self.db.scalar(sql, params))

    def speaker_scores(self, query: str, frame_ids: list[int]) -> dict[int, float]:
        """For a question that names some but not all of the candidates' speakers (the message
        author a chat importer records as ``provenance.role``): 1 for a frame said by a named
        speaker, 0 for one said by another. "What did Melanie paint?" is answered by Melanie's
        turns, while the turns that say her name are mostly the other speaker addressing her.
        A question naming no speaker, or every one, leaves all frames alone (empty), and so does
        a word that is a chat's generic role (``GENERIC_ROLES``: "user", "assistant", ...).
        A question that names none of the mind's speakers (most do not) reads no frame's role."""
        asked = self.named_speakers(query)
        if not asked:
            return {}
        roles: dict[int, str] = {}
        for start in range(0, len(frame_ids), 500):
            chunk = frame_ids[start : start + 500]
            rows = self.db.query(
                f"SELECT id, {FRAME_ROLE_SQL} FROM memory_frames WHERE id IN ({','.join('?' for _ in chunk)})",
                chunk,
            )
            roles.update({row[0]: row[1].lower() for row in rows if isinstance(row[1], str) and row[1].strip()})
        speakers = set(roles.values())
        named = asked & speakers
        if not named or named == speakers:
            return {}
        return {frame_id: 1.0 if role in named else 0.0 for frame_id, role in roles.items()}

    def named_speakers(self, query: str) -> set[str]:
        """The mind's speakers (lower case) the query names as a whole word, generic roles left out."""
        asked = query.lower()
        return {
            speaker
            for speaker in self._kept_while_unchanged("speakers", self._speakers) - GENERIC_ROLES
            if speaker in asked and re.search(rf"\b{re.escape(speaker)}\b", asked)
        }

    def _speakers(self) -> set[str]:
        """Every speaker of the mind, lower case: the distinct roles, read by hopping through
        ``idx_frames_role`` (a loose index scan: its cost grows with the speakers, not the frames)."""
        rows = self.db.query(
            f"WITH RECURSIVE r(v) AS (SELECT MIN({FRAME_ROLE_SQL}) FROM memory_frames UNION ALL"
            f" SELECT (SELECT MIN({FRAME_ROLE_SQL}) FROM memory_frames WHERE {FRAME_ROLE_SQL} > r.v)"
            " FROM r WHERE r.v IS NOT NULL) SELECT v FROM r WHERE v IS NOT NULL"
        )
        return {row[0].lower() for row in rows if isinstance(row[0], str) and row[0].strip()}

    @staticmethod
    def _own_time_inside(frame: Frame, window: TimeWindow) -> bool:
        """Whether the frame's event time is its own (not ``borrowed_time``) and inside the window."""
        if borrowed_time(frame):
            return False
        try:
            return window.distance_days(parse_instant(frame.created_at)) == 0.0
        except ValueError:
            return False

    def _latest_event_time(self) -> datetime:
        """The "now" of relative dates in a question: the mind's latest event time, never later
        than the clock. Frames whose time is not their own (``borrowed_time``: a file's or the
        harvest's) count only when no other frame has a time: a vault of undated notes copied
        today, or undated prompts harvested today, would make "last week" the week before today,
        not before the latest dated memory."""
        now = utc_now()
        latest = self._latest_own_event_time()
        try:
            return min(parse_instant(latest), now) if latest else now
        except ValueError:
            return now

    def _relevance_columns(self, frame_ids: list[int]) -> list[Any]:
        """(id, created_at, access_count, importance, borrowed time 0/1) of each frame that exists:
        what relevance reads, without loading and decoding whole frames."""
        rows: list[Any] = []
        for start in range(0, len(frame_ids), 500):
            chunk = frame_ids[start : start + 500]
            rows += self.db.query(
                f"SELECT id, created_at, access_count, importance, {borrowed_time_sql()} FROM memory_frames"
                f" WHERE id IN ({','.join('?' for _ in chunk)})",
                chunk,
            )
        return rows

    def _kept_while_unchanged(self, name: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, kept until the mind changes: another connection's commit moves
        ``data_version``, this connection's own writes ``total_changes``."""
        version = (self.db.scalar("PRAGMA data_version"), self.db.conn.total_changes)
        kept = self._kept.get(name)
        if kept is None or kept[0] != version:
            kept = self._kept[name] = (version, compute())
        return kept[1]

    def _latest_own_event_time(self) -> str | None:
        """The latest event time of a frame with a time of its own (else the latest of all). It
        may read every frame's metadata (about 120 ms at 50,000 frames, when the newest frame's
        time is borrowed), so it is kept until the mind changes."""

        def latest_own() -> str | None:
            rows = self.db.query("SELECT id FROM memory_frames ORDER BY created_at DESC, id LIMIT 1")
            newest = self.frames.get_many([rows[0][0]]).get(rows[0][0]) if rows else None
            latest = newest.created_at if newest is not None else None
            if newest is not None and borrowed_time(newest):  # only then read every frame's metadata
                latest = self.db.scalar(
                    f"SELECT COALESCE(MAX(CASE WHEN {borrowed_time_sql()} THEN NULL ELSE created_at END),"
                    " MAX(created_at)) FROM memory_frames"
                )
            return latest

        return self._kept_while_unchanged("latest_own_event_time", latest_own)

    def feedback_terms(self, query: str, top: list[LaneHit]) -> list[str]:
        """RM3's expansion terms: the words of the first pass's top frames weighted by their share
        of each frame and by the frame's score, rarer words first among equals (IDF over the
        mind), the query's own words and stop words left out."""
        contents = self.frames.get_many([hit.frame_id for hit in top])
        best = max((hit.score for hit in top), default=0.0) or 1.0
        asked = {word.lower() for word in keyword_tokens(query)}
        weight: Counter[str] = Counter()
        for hit in top:
            frame = contents.get(hit.frame_id)
            if frame is None:
                continue
            words = [w.lower() for w in keyword_tokens(frame.content) if w.isalpha()]
            counts = Counter(NON_WORD.sub("", w) for w in frame.content.lower().split())
            total = sum(counts.values()) or 1
            for word in set(words) - asked:
                weight[word] += counts.get(word, 1) / total * hit.score / best
        frames = self._frame_count() or 1
        ranked = sorted(
            weight,
            key=lambda w: (-weight[w] * math.log(1 + frames / (1 + self._document_frequency(w))), w),
        )
        return ranked[:FEEDBACK_TERMS]

    def _frame_count(self) -> int:
        return int(self.db.scalar("SELECT COUNT(*) FROM memory_frames") or 0)

    def _document_frequency(self, word: str) -> int:
        try:
            return int(self.db.scalar("SELECT COUNT(*) FROM memory_frames_fts WHERE memory_frames_fts MATCH ?", (f'"{word}"',)) or 0)
        except self.db.errors.Error:
            return 0

    def entity_scores(
        self,
        query: str,
        first_pass: list[int],
        depth: int,
        gop_id: str | None,
        since: str | None,
        until: str | None,
        source: SourceFilter | None,
    ) -> dict[int, float]:
        """The entity lane, 0..1: frames evidencing the question's entities (weight 1), the
        entities of the first pass's top frames and the question entities' neighbours
        (``ENTITY_NEIGHBOUR_WEIGHT``), each entity weighted by its rarity ``log(N / df) / log(N)``."""
        if self.knowledge is None:
            return {}
        seeds: dict[int, float] = {entity.id: 1.0 for entity in self.knowledge.find_entities_in_text(query)}
        for entity_id in self.knowledge.entity_distances(list(seeds), 1):
            seeds.setdefault(entity_id, ENTITY_NEIGHBOUR_WEIGHT)
        if first_pass:
            rows = self.db.query(
                f"SELECT DISTINCT entity_id FROM kg_entity_frames WHERE frame_id IN ({','.join('?' for _ in first_pass)})",
                first_pass,
            )
            for row in rows:
                seeds.setdefault(row[0], ENTITY_NEIGHBOUR_WEIGHT)
        if not seeds:
            return {}
        total = self._frame_count()
        if total < 2:
            return {}
        ids = list(seeds)
        frequency = {
            row[0]: row[1]
            for row in self.db.query(
                f"SELECT entity_id, COUNT(*) FROM kg_entity_frames WHERE entity_id IN ({','.join('?' for _ in ids)}) GROUP BY entity_id",
                ids,
            )
        }
        rarity = {e: math.log(total / frequency[e]) / math.log(total) for e in ids if frequency.get(e)}
        weighted = {e: seeds[e] * r for e, r in rarity.items() if r > 0}
        if not weighted:
            return {}
        scope, scope_params = scope_clauses("mf", gop_id, since, until, source)
        ids = list(weighted)
        rows = self.db.query(
            "SELECT b.frame_id, b.entity_id FROM kg_entity_frames b JOIN memory_frames mf ON mf.id = b.frame_id "
            f"WHERE b.entity_id IN ({','.join('?' for _ in ids)})" + "".join(f" AND {c}" for c in scope),
            [*ids, *scope_params],
        )
        scores: dict[int, float] = {}
        for frame_id, entity_id in rows:
            scores[frame_id] = scores.get(frame_id, 0.0) + weighted[entity_id]
        kept = sorted(scores, key=lambda f: (-scores[f], f))[:depth]
        best = scores[kept[0]] if kept else 1.0
        return {f: scores[f] / best for f in kept}

    def session_neighbours(
        self,
        frame_ids: set[int],
        window: int,
        since: str | None = None,
        until: str | None = None,
        source: SourceFilter | None = None,
    ) -> dict[int, list[int]]:
        """Each frame's neighbours: the frames of its session within ``window`` steps of its ``t``
        (itself excluded), inside the search's time and source filters. One indexed query per 500
        frames."""
        ids = sorted(frame_ids)
        time_sql, time_params = scope_clauses("f", None, since, until, source)
        result: dict[int, list[int]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self.db.query(
                "SELECT p.id, f.id FROM memory_frames p JOIN memory_frames f"
                " ON f.gop_id = p.gop_id AND f.t BETWEEN p.t - ? AND p.t + ? AND f.id != p.id"
                + "".join(f" AND {clause}" for clause in time_sql)
                + f" WHERE p.id IN ({','.join('?' for _ in chunk)})",
                [window, window, *time_params, *chunk],
            )
            for frame_id, neighbour in rows:
                result.setdefault(frame_id, []).append(neighbour)
        return result

    def _with_graph_distances(
        self, query: str, context: ScoringContext, weight: float, frame_ids: list[int]
    ) -> ScoringContext:
        """Seed graph distances from the entities the query names (and recently active ones), for
        the frames relevance scores (``frame_ids``)."""
        if context.graph_distances is not None or self.knowledge is None or weight <= 0:
            return context
        seeds = [entity.id for entity in self.knowledge.find_entities_in_text(query)]
        seeds += [e for e in context.recent_entity_ids if e not in seeds]
        if not seeds:
            return context
        distances = self.knowledge.frame_distances_from_entities(seeds, GRAPH_MAX_DEPTH, frame_ids)
        return ScoringContext(recent_entity_ids=context.recent_entity_ids, graph_distances=distances)
