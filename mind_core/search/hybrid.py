"""Hybrid search: an FTS5 keyword lane and a sqlite-vec vector lane (``lanes``), fused
(``fusion``), then weighted by a relevance profile (reference-behaviour §3, §4; ``scoring``).

``HybridSearch`` orchestrates one search: it reads the time and the speakers the question names
(``time_lane``, ``speakers``), runs the two lanes, fuses them (convex by default, or the original
RRF), and lets the relevance profile reorder the best-matching candidates. Whatever the fusion,
``rrf_score`` is the fused score on the RRF scale (0 .. 2/K) that orders the results, and
``match_score`` what the score thresholds compare (``SearchResult``).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mind_core.embeddings.base import Embedder
from mind_core.errors import InvalidInputError
from mind_core.limits import MAX_QUERY_CHARS
from mind_core.search.config import (
    LANE_DEPTH_FACTOR,
    MAX_RRF_SCORE,
    SearchConfig,
    relevance_pool_size,
)
from mind_core.search.filters import SourceFilter
from mind_core.search.fusion import (
    FusionNotes,
    LaneScores,
    combine,
    fuse_rrf,
    fused_entry,
    prefer,
    preference_floor,
    session_neighbours,
)
from mind_core.search.keywords import keyword_tokens
from mind_core.search.lanes import KeywordLane, Scope, VectorLane, topic_words
from mind_core.search.question_parts import may_join_people, merge_parts, people_parts
from mind_core.search.results import SearchResult
from mind_core.search.scoring import (
    SCORING_PROFILES,
    ScoringContext,
    ScoringWeights,
    borrowed_time,
    borrowed_time_sql,
    dated_by_file,
    max_relevance,
    relevance_components_of,
    relevance_parts,
    weighted_relevance,
)
from mind_core.search.speakers import Speakers, as_written, without_names
from mind_core.search.threads import ThreadReplies, note_frames, yield_scores, yield_to_parents
from mind_core.search.time_lane import TimeLane, own_time_inside
from mind_core.search.time_window import TimeWindow, date_phrases, may_name_a_time, without_dates
from mind_core.search.until_changed import UntilChanged
from mind_core.search.vector_index import VectorIndex
from mind_core.store.db import IN_LIST, Database, in_list, well_formed
from mind_core.store.frames import Frame, FrameStore, time_bound
from mind_core.timestamps import parse_instant, utc_now

if TYPE_CHECKING:
    from mind_core.knowledge.graph import KnowledgeGraph

GRAPH_MAX_DEPTH = 3  # how far from the question's entities relevance's graph nearness reaches


def profile_weights(profile: str) -> ScoringWeights:
    """The weights of a relevance profile by name; an unknown name is the caller's error."""
    if profile not in SCORING_PROFILES:
        raise InvalidInputError(f"unknown profile {profile!r}; expected one of {', '.join(SCORING_PROFILES)}")
    return SCORING_PROFILES[profile]


class HybridSearch:
    """Search over one mind: the lanes, the time and speaker parts and relevance, run in order by
    ``search``; ``config`` (``SearchConfig``) may be replaced between searches."""

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
        self.kept = kept = UntilChanged(db)
        self.keyword_lane = KeywordLane(db, kept=kept)
        self.vector_lane = VectorLane(self.vectors)
        self.time_lane = TimeLane(db, self.frames, kept)
        self.speakers = Speakers(db, kept)
        self.thread_replies = ThreadReplies(db, kept)
        self.config = config or SearchConfig()

    @property
    def config(self) -> SearchConfig:
        return self._config

    @config.setter
    def config(self, config: SearchConfig) -> None:
        self._config = config
        self.vectors.prescan_min_vectors = config.prescan_min_vectors
        self.keyword_lane.split_frames = config.keyword_split_frames
        self.speakers.unnamed_roles = config.addressed_unnamed
        self.keyword_lane.index = config.keyword_index

    @property
    def embedder(self) -> Embedder | None:
        return self.vectors.embedder

    # -- indexing -------------------------------------------------------------------------
    def index_frame(self, frame_id: int, content: str) -> None:
        self.vectors.index_frames([(frame_id, content)])

    def index_frames_batch(self, frames: list[tuple[int, str]] | list[Frame]) -> int:
        pairs = [(f.id, f.content) if isinstance(f, Frame) else (f[0], f[1]) for f in frames]
        return self.vectors.index_frames(pairs)

    # -- one lane alone ---------------------------------------------------------------------
    def keyword_search(
        self,
        query: str,
        limit: int,
        gop_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        source: SourceFilter | None = None,
    ) -> list[int]:
        """The keyword lane's frames in rank order."""
        return [hit.frame_id for hit in self.keyword_lane.hits(query, limit, Scope(gop_id, since, until, source))]

    def keyword_match(self, query: str) -> str:
        """The FTS5 expression the keyword lane sends for ``query`` (``KeywordLane.match_expression``)."""
        return self.keyword_lane.match_expression(query)

    def vector_search(
        self,
        query: str,
        limit: int,
        gop_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        source: SourceFilter | None = None,
    ) -> list[int]:
        """The vector lane's frames, nearest first."""
        return [hit.frame_id for hit in self.vector_lane.hits(query, limit, Scope(gop_id, since, until, source))]

    # -- the search -----------------------------------------------------------------------
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
        searched with this one has memories then: see ``names_a_time_near``). A question joining
        several people it names is also asked of each (``question_parts``)."""
        options = {
            "limit": limit,
            "gop_id": gop_id,
            "profile": profile,
            "context": context,
            "since": since,
            "until": until,
            "explain": explain,
            "source": source,
            "as_of": as_of,
            "time_aware": time_aware,
            "keep_far_window": keep_far_window,
        }
        parts = self._people_parts(query) if isinstance(query, str) else []
        if not parts:
            return self._search_once(query, **options)
        asked = [(text, self._search_once(text, **options)) for text in (query, *parts)]
        return merge_parts(asked, max(1, min(int(limit), 1000)))

    def _people_parts(self, query: str) -> list[str]:
        """The question once per person it joins with others (``question_parts``), or []."""
        config = self.config
        if not config.question_parts or config.fusion != "convex" or not may_join_people(query):
            return []
        query = query[:MAX_QUERY_CHARS]
        return people_parts(query, self.speakers.spoken(query, config.addressed_names, config.addressed_scope))

    def _search_once(
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
        """One search of ``query`` (see ``search``)."""
        weights = profile_weights(profile)
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
        scope = Scope(gop_id, since, until, source)
        window, ignored = self._window_used(query, asked_from, time_aware, keep_far_window)
        # a window's own words are no topic: the keyword lane and the keyword share go without them;
        # a window no memory is near is no time of this mind, so its words may be ("last year I ...")
        keywords = without_dates(query) if window is not None else query
        own_vector = None  # the question's own vector, when the vector lane searched another
        if self.config.fusion == "rrf":
            fused = self._fuse_rrf(query, limit, scope)
        else:
            phrases = date_phrases(query) if window is not None else []
            fused, own_vector = self._fuse_convex(query, limit, scope, window, keywords, phrases, keep_far_window)
        if not fused:
            return []
        scores = self._by_relevance(query, fused, limit, weights, context, now)
        self._hold_yields(fused, scores)
        head = sorted(
            scores, key=lambda fid: (scores[fid][0], fused[fid]["match"] * MAX_RRF_SCORE * scores[fid][1]), reverse=True
        )[:limit]  # by score, then by final score (match x relevance), the pool's order among equals
        frames = self.frames.get_many(head)
        words = [word.lower() for word in keyword_tokens(keywords)]
        held = self.keyword_lane.held(words, frames)
        if own_vector is not None:  # the confidence cuts read the question's own similarity
            searched = [fid for fid in head if "vector_similarity" in fused[fid]]
            for frame_id, similarity in self.vectors.similarities(own_vector, searched).items():
                fused[frame_id]["question_similarity"] = similarity
        only_a_time = window if window is not None and not topic_words(keywords) else None
        results = []
        for frame_id in head:
            if frame_id not in frames:
                continue
            frame, entry = frames[frame_id], fused[frame_id]
            score, relevance, components = scores[frame_id]
            found = held.get(frame_id, set())
            share = len(found) / len(words) if words else 0.0
            rrf_score = entry["match"] * MAX_RRF_SCORE
            details = None
            if explain:
                details = self._explained(entry, frame, rrf_score, score, components, weights, share, ignored)
            results.append(
                SearchResult(
                    frame,
                    rrf_score,
                    relevance,
                    rrf_score * relevance,
                    details,
                    score=score,
                    similarity=entry.get("question_similarity"),
                    keyword_share=share,
                    keyword_evidence=any(word.isalpha() for word in found),
                    in_asked_time=only_a_time is not None and own_time_inside(frame, only_a_time),
                    calibrated_match=entry.get("calibrated_match"),
                )
            )
        return results

    def _by_relevance(
        self,
        query: str,
        fused: dict[int, dict[str, Any]],
        limit: int,
        weights: ScoringWeights,
        context: ScoringContext | None,
        now: datetime,
    ) -> dict[int, tuple[float, float, dict[str, float]]]:
        """(score, relevance, its parts) of each frame of the relevance pool: the best-matching
        candidates (``relevance_pool_size``; scoring every candidate would make a longer list
        extend a shorter one for any limit, at five times the search's CPU). The pool is scored
        from a few columns; only the frames shown are read whole. A frame missing here was
        deleted, or its index row is an orphan."""
        pool = sorted(fused, key=lambda fid: (-fused[fid]["match"], fid))[: relevance_pool_size(limit)]
        context = self._with_graph_distances(query, context or ScoringContext(), weights.contextual, pool)
        best_relevance = max_relevance(weights)
        share = self.config.relevance_share
        scores = {}
        for frame_id, created_at, access_count, importance, borrowed in self._relevance_columns(pool):
            components = relevance_components_of(
                frame_id, created_at, access_count, importance, bool(borrowed), context, now
            )
            relevance = weighted_relevance(components, weights)
            # at most the match: relevance is a share of the most a profile gives (capped there)
            shortfall = 1.0 - min(1.0, relevance / best_relevance)
            scores[frame_id] = (fused[frame_id]["match"] * (1.0 - share * shortfall), relevance, components)
        return {frame_id: scores[frame_id] for frame_id in pool if frame_id in scores}

    @staticmethod
    def _hold_yields(fused: dict[int, dict[str, Any]], scores: dict[int, tuple[float, float, dict[str, float]]]) -> None:
        """The replies that yielded to the message they answer (``threads``) stay under it after
        relevance, whose recency favours the later reply."""
        yielded = {fid: entry["yielded_to"] for fid, entry in fused.items() if "yielded_to" in entry}
        if not yielded:
            return
        shown = {fid: value[0] for fid, value in scores.items()}
        yield_scores(shown, yielded)
        for fid, value in shown.items():
            scores[fid] = (value, *scores[fid][1:])

    def _explained(
        self,
        entry: dict[str, Any],
        frame: Frame,
        rrf_score: float,
        score: float,
        components: dict[str, float],
        weights: ScoringWeights,
        keyword_share: float,
        ignored: TimeWindow | None,
    ) -> dict[str, Any]:
        """What ``explain=True`` shows of one result: its fusion entry and its relevance parts."""
        parts = relevance_parts(components, weights)
        details = {
            **entry,
            "fusion": self.config.fusion,
            "rrf_score": rrf_score,
            "relevance": components,
            "weights": weights.__dict__,
            "max_relevance": max_relevance(weights),
            "relevance_parts": parts,
            # the relevance the match is multiplied by, as ``--explain`` prints it: the parts' sum
            "relevance_share": sum(term["part"] * term["share"] for term in parts.values()),
            "score": score,
            "keyword_share": keyword_share,
            "dated_by_file": dated_by_file(frame),
            "borrowed_time": borrowed_time(frame),
        }
        if ignored is not None:
            details["time_window_ignored"] = ignored.describe()
        return details

    def _fuse_rrf(self, query: str, limit: int, scope: Scope) -> dict[int, dict[str, Any]]:
        """The original: RRF over each lane's top ``limit * 2``."""
        depth = limit * LANE_DEPTH_FACTOR
        return fuse_rrf(self.keyword_lane.hits(query, depth, scope), self.vector_lane.hits(query, depth, scope))

    def _fuse_convex(
        self,
        query: str,
        limit: int,
        scope: Scope,
        window: TimeWindow | None,
        keywords: str,
        phrases: Sequence[str],
        keep_far_window: bool,
    ) -> tuple[dict[int, dict[str, Any]], Any]:
        """The convex fusion (``mind_core.search.fusion``) of the lanes' best ``lane_depth``. The
        keyword lane searches ``keywords`` (the query without its date phrases) and each of
        ``phrases`` (the date phrases) as a whole phrase; the vector lane the whole query, whose
        dates shade its meaning only; the time boost only lowers the match of frames far from the
        asked time (``window``). Returns the best-matching candidates, the ones relevance reorders,
        and the question's own vector when the vector lane searched another (else None: the lane's
        similarity is the question's)."""
        config = self.config
        depth = max(config.lane_depth, limit * LANE_DEPTH_FACTOR)
        dropped = (
            self.speakers.spoken(query, config.addressed_names, config.addressed_scope)
            if config.drop_speaker_names
            else set()
        )
        lane_query, keywords = without_names(query, dropped), without_names(keywords, dropped)
        keyword = self.keyword_lane.hits(keywords, depth, scope, phrases)
        notes = FusionNotes(keyword_from_window=window is not None and (not topic_words(keywords) or not keyword))
        if notes.keyword_from_window and window is not None:  # only a date and filler: the keyword lane's place
            keyword = self.time_lane.window_hits(query, window, depth, scope, self.vector_lane)
        topic = " ".join(topic_words(lane_query)) if config.topic_blend else None
        lane_vector = own_vector = None
        if self.embedder is not None and lane_query.strip():
            lane_vector, own_vector = self.vector_lane.query_vectors(query, lane_query, topic)
        vector = self.vector_lane.hits(lane_query, depth, scope, vector=lane_vector)
        lanes = LaneScores.of(keyword, vector, depth)
        candidates = lanes.candidates
        if not candidates:
            return {}, None
        neighbours: dict[int, list[int]] = {}
        if config.context_window > 0 and max(config.context_weight, config.note_context_weight) > 0:
            neighbours = session_neighbours(self.db, candidates, config.context_window, scope)
        lanes.add_context(neighbours)
        context_weights = {}
        if neighbours and config.note_context_weight != config.context_weight:
            context_weights = dict.fromkeys(
                note_frames(self.db, self.kept, candidates, neighbours), config.note_context_weight
            )
        match = combine(
            lanes, candidates.union(*neighbours.values()), config.vector_weight, config.context_weight, context_weights
        )
        if window is not None:
            notes.window, notes.time_scores = self.time_lane.time_scores(
                list(match), window, config.time_scale_days, keep_far_window
            )
            notes.ignored_window = window if notes.window is None else None
        prefer(match, notes.time_scores, config.time_weight)
        pool_size = relevance_pool_size(limit)
        if config.speaker_weight > 0:
            floor = preference_floor(match, config.speaker_weight, pool_size)
            notes.speaker_scores = self.speakers.scores(
                query,
                [fid for fid, value in match.items() if value >= floor],
                config.addressed_names,
                config.addressed_scope,
            )
        prefer(match, notes.speaker_scores, config.speaker_weight)
        notes.lanes_without = as_written(query, dropped) if lane_query != query else None
        notes.blended_with = topic if topic and topic != lane_query and vector else None
        notes.question_vector_searched = own_vector is lane_vector
        pool = heapq.nsmallest(pool_size, match, key=lambda fid: (-match[fid], fid))  # sorted()[:pool_size]
        if config.replies_yield:
            notes.yielded_to = yield_to_parents(self.thread_replies, match, candidates, pool, keyword_tokens(keywords))
            if notes.yielded_to:  # a reply put under the pool's last leaves its place to the next
                pool = heapq.nsmallest(pool_size, match, key=lambda fid: (-match[fid], fid))  # sorted()[:pool_size]
        fused = {
            fid: fused_entry(lanes, fid, match[fid], context_weights.get(fid, config.context_weight), notes)
            for fid in pool
        }
        return fused, (None if own_vector is lane_vector else own_vector)

    # -- the time a question names ----------------------------------------------------------
    def _asked_window(self, query: str, asked_from: datetime | None = None) -> TimeWindow | None:
        """The time the query names, relative dates read from ``asked_from`` (else the mind's
        latest event time); None when it names none or the fusion has no time boost."""
        if self.config.fusion != "convex" or self.config.time_weight <= 0 or not may_name_a_time(query):
            return None
        return self.time_lane.window(query, asked_from)

    def _window_used(
        self, query: str, asked_from: datetime | None, time_aware: bool, keep_far_window: bool
    ) -> tuple[TimeWindow | None, TimeWindow | None]:
        """(the window the search boosts, the window the query names that no memory is near and
        that is therefore ignored); see ``search``."""
        window = self._asked_window(query, asked_from) if time_aware else None
        if window is not None and not keep_far_window and not self._memory_near(window):
            return None, window
        return window, None

    def names_a_time_near(self, query: str, as_of: str | None = None) -> bool:
        """Whether the query names a time this mind holds memories near (what ``search`` uses)."""
        asked_from = parse_instant(time_bound(as_of, end=True)) if as_of is not None else None
        window = self._asked_window(well_formed(query[:MAX_QUERY_CHARS]), asked_from)
        return window is not None and self._memory_near(window)

    def _memory_near(self, window: TimeWindow) -> bool:
        return self.time_lane.memory_near(window, self.config.time_scale_days)

    # -- relevance ------------------------------------------------------------------------
    def _relevance_columns(self, frame_ids: list[int]) -> list[Any]:
        """(id, created_at, access_count, importance, borrowed time 0/1) of each frame that exists:
        what relevance reads, without loading and decoding whole frames."""
        return self.db.query(
            f"SELECT id, created_at, access_count, importance, {borrowed_time_sql()} FROM memory_frames"
            f" WHERE id IN ({IN_LIST})",
            (in_list(frame_ids),),
        )

    def _with_graph_distances(
        self, query: str, context: ScoringContext, weight: float, frame_ids: list[int]
    ) -> ScoringContext:
        """Seed graph distances from the entities the query names (and recently active ones), for
        the frames relevance scores (``frame_ids``); not from a name that stands for a role
        (``SearchConfig.role_names_out_of_graph``)."""
        if context.graph_distances is not None or self.knowledge is None or weight <= 0:
            return context
        entities = self.knowledge.find_entities_in_text(query)
        if entities and self.config.addressed_names and self.config.role_names_out_of_graph:
            roles = {name.lower() for name in self.speakers.addressed(query, self.config.addressed_scope)}
            entities = [entity for entity in entities if entity.name.lower() not in roles]
        seeds = [entity.id for entity in entities]
        seeds += [e for e in context.recent_entity_ids if e not in seeds]
        if not seeds:
            return context
        distances = self.knowledge.frame_distances_from_entities(seeds, GRAPH_MAX_DEPTH, frame_ids)
        return ScoringContext(recent_entity_ids=context.recent_entity_ids, graph_distances=distances)
