"""The two lanes a search runs: the FTS5 keyword lane (with a LIKE fallback) and the sqlite-vec
vector lane, each returning its candidates with their raw scores, and how each lane's scores are
normalized to 0..1 before the fusion combines them.

No user query can raise or inject FTS5 syntax: the keyword lane only ever sends quoted word
tokens joined with OR; a failure of either lane degrades to the other, never to an exception.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mind_core.search import keyword_index
from mind_core.search.config import KEYWORD_SPLIT_FRAMES
from mind_core.search.filters import SourceFilter
from mind_core.search.held_words import HeldWords, WordTerms
from mind_core.search.keyword_index import KeywordIndexParameters, QuestionWord
from mind_core.search.keywords import NON_WORD, keyword_tokens
from mind_core.search.results import LaneHit
from mind_core.search.until_changed import UntilChanged
from mind_core.search.vector_index import VectorIndex
from mind_core.store.db import IN_LIST, Database, escape_like, in_list
from mind_core.store.frames import Frame, scope_clauses

log = logging.getLogger(__name__)

# Words that ask about a time without naming a topic: a question of only these and a date ("what
# happened in June 2010", "anything new last week") is answered by the frames of that time.
QUESTION_FILLER = frozenset(
    "what happened happen happens going discussed discuss talked talk said anything something "
    "new news did was were any there".split()
)
COMMON_WORD_SHARE = 0.05


@dataclass(frozen=True)
class Scope:
    """Which frames a search may find: one session, an event-time range, a source filter (each
    optional). Both lanes apply it in SQL, so a narrow scope still fills a lane."""

    gop_id: str | None = None
    since: str | None = None
    until: str | None = None
    source: SourceFilter | None = None

    def clauses(self, alias: str) -> tuple[list[str], list[Any]]:
        """SQL conditions on the frames table (alias ``alias``, or "" for none)."""
        return scope_clauses(alias, self.gop_id, self.since, self.until, self.source)


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


class KeywordLane:
    """FTS5 matches ranked by BM25; ``split_frames``: from how many frames a query mixing rare and
    common words finds frames by its rarer words only (``match_expression``); ``index``: the
    parameters of the top-k index (``keyword_index``) it reads when the mind has a usable one,
    or None to always ask FTS5."""

    def __init__(
        self,
        db: Database,
        split_frames: int = KEYWORD_SPLIT_FRAMES,
        kept: UntilChanged | None = None,
        index: KeywordIndexParameters | None = keyword_index.PARAMETERS,
    ) -> None:
        self.db = db
        self.split_frames = split_frames
        self.kept = kept or UntilChanged(db)
        self.held_words = HeldWords(db)
        self.index = index
        self.word_terms = WordTerms(db)
        self.word_lists = keyword_index.WordListCache()

    def hits(self, query: str, limit: int, scope: Scope, phrases: Sequence[str] = ()) -> list[LaneHit]:
        """FTS5 matches in rank order with their BM25 score (FTS5's ``rank`` negated, >= 0);
        ``phrases`` match as whole phrases besides the query's words."""
        if not fts_query(query) and not any(phrase.strip() for phrase in phrases):
            return []
        try:
            rows = self._by_index(query, limit, scope, phrases)
            if rows is None:
                rows = self._ranked(self.match_expression(query, phrases), limit, scope)
            return [LaneHit(row[0], max(0.0, -float(row[1]))) for row in rows]
        except self.db.errors.Error as exc:
            log.warning("FTS query failed (%s); using the LIKE fallback", exc)
            return [LaneHit(frame_id, 1.0) for frame_id in self.like_fallback(query, limit, scope)]

    def _by_index(self, query: str, limit: int, scope: Scope, phrases: Sequence[str]) -> list[Any] | None:
        """``_ranked``'s rows from the top-k index (``keyword_index.best_frames``), or None when
        the lane asks FTS5: no usable index, a scope, phrases, a depth past the lists' length, or
        a keyword the index cannot look up as one term."""
        if self.index is None or limit > self.index.kept or any(p.strip() for p in phrases) or scope.clauses("mf")[0]:
            return None
        index = self.index
        top = self.kept.get(f"keyword_index:{index}", lambda: keyword_index.usable(self.db, index, self.word_lists))
        tokens = keyword_tokens(query)
        terms = self.word_terms.terms(tokens)
        if top is None or not tokens or None in terms:
            return None
        listed = {term: top.word(self.db, term) for term in set(terms) if term is not None}

        def holding(token: str, most: int) -> int:
            found = listed[terms[tokens.index(token)]]
            if found is not None:
                return found.holding
            return top.list_min_frames if top.list_min_frames <= most else self.frequency(token, most)

        rarer = self.rarer_words(tokens, holding)
        words = [
            QuestionWord(token, listed[term], 2 if rarer and token in rarer else 1, bool(rarer) and token in rarer)
            for token, term in zip(tokens, terms, strict=True)
            if term is not None
        ]
        expression = any_of(tokens) if rarer is None else f"({any_of(rarer)}) AND ({any_of(tokens)})"
        rows = keyword_index.best_frames(self.db, top, words, expression, limit)
        ids = [row[0] for row in rows]
        present = {row[0] for row in self.db.query(f"SELECT id FROM memory_frames WHERE id IN ({IN_LIST})", (in_list(ids),))}
        return [row for row in rows if row[0] in present][:limit]

    def _ranked(self, expression: str, limit: int, scope: Scope) -> list[Any]:
        """(frame id, BM25 as FTS5 ranks it: negative, best first) of the best ``limit`` matches.

        ``bm25()`` in the ORDER BY, not FTS5's ``rank`` column: ``ORDER BY rank`` makes FTS5 sort
        every match itself before the LIMIT applies, while SQLite's own sorter keeps only the best
        ``limit`` (the same scores; ties in rowid order, as FTS5 returned them). Without a scope
        the frames table is not joined row by row either: the best rows are checked to be frames
        afterwards (an index row whose frame is gone, until ``mind doctor --repair`` drops it, sends
        the search through the join)."""
        clauses, scope_params = scope.clauses("mf")
        if not clauses:
            rows = self.db.query(
                "SELECT rowid, bm25(memory_frames_fts) AS score FROM memory_frames_fts"
                " WHERE memory_frames_fts MATCH ? ORDER BY score, rowid LIMIT ?",
                (expression, limit),
            )
            ids = [row[0] for row in rows]
            present = self.db.query(f"SELECT count(*) FROM memory_frames WHERE id IN ({IN_LIST})", (in_list(ids),))
            if present[0][0] == len(ids):
                return rows
        return self.db.query(
            "SELECT mf.id, bm25(memory_frames_fts) AS score FROM memory_frames_fts"
            " JOIN memory_frames mf ON mf.id = memory_frames_fts.rowid"
            f" WHERE {' AND '.join(['memory_frames_fts MATCH ?', *clauses])} ORDER BY score, mf.id LIMIT ?",
            [expression, *scope_params, limit],
        )

    def match_expression(self, query: str, phrases: Sequence[str] = ()) -> str:
        """The FTS5 expression of the keyword lane: :func:`fts_query`, except in a mind of at least
        ``split_frames`` frames when the query mixes rarer words with common ones (in more
        than COMMON_WORD_SHARE of the frames). Then it is ``(rarer) AND (every word)``: the frames
        are those holding a rarer word, and BM25 still counts every word, the rarer ones twice
        (FTS5 scores each phrase of the expression). A frame holding only common words is left
        out; such a frame ranks low anyway (a common word's IDF is small) and ranking all of
        them is what made the lane slow. Measured: benchmarks/README.md (issue #19). ``phrases``
        count as one term each."""
        tokens = keyword_tokens(query) + [p for p in (" ".join(p.split()) for p in phrases) if p]
        every = any_of(tokens)
        rarer = self.rarer_words(tokens, self.frequency)
        return every if rarer is None else f"({any_of(rarer)}) AND ({every})"

    def rarer_words(self, tokens: list[str], holding: Callable[[str, int], int]) -> list[str] | None:
        """The rarer of ``tokens`` when the lane splits (``match_expression``), else None;
        ``holding(token, most)``: how many frames hold the token (exact up to ``most + 1``)."""
        if len(tokens) < 2:
            return None
        frames = int(self.db.scalar("SELECT max(id) FROM memory_frames") or 0)  # ids issued: cheap
        if frames < self.split_frames:
            return None
        most = int(COMMON_WORD_SHARE * frames)
        rarer = [t for t in tokens if holding(t, most) <= most]
        return None if not rarer or len(rarer) == len(tokens) else rarer

    def frequency(self, word: str, most: int) -> int:
        """How many frames hold the word (as FTS5 matches it), counted only up to ``most + 1``
        (a common word's frames are not all read); 0 when FTS5 cannot say. Kept until the mind
        changes: questions share their common words."""
        known: dict[tuple[str, int], int] = self.kept.get("word_frequencies", dict)
        if (word, most) not in known:
            known[(word, most)] = self.document_frequency(word, most + 1)
        return known[(word, most)]

    def document_frequency(self, word: str, at_most: int) -> int:
        """How many frames hold the word (as FTS5 matches it), counted up to ``at_most``; 0 when
        FTS5 cannot say."""
        try:
            return int(
                self.db.scalar(
                    "SELECT COUNT(*) FROM (SELECT rowid FROM memory_frames_fts WHERE memory_frames_fts MATCH ? LIMIT ?)",
                    (f'"{word}"', at_most),
                )
                or 0
            )
        except self.db.errors.Error:
            return 0

    def like_fallback(self, query: str, limit: int, scope: Scope) -> list[int]:
        """The frames containing any of the query's words, latest first: the lane when FTS5 fails."""
        tokens = [t for t in (NON_WORD.sub("", w) for w in query.split()) if t] or [query]
        clauses, scope_params = scope.clauses("")
        clauses = ["(" + " OR ".join("content LIKE ? ESCAPE '\\'" for _ in tokens) + ")", *clauses]
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

    def held(self, words: list[str], frames: dict[int, Frame]) -> dict[int, set[str]]:
        """Which of ``words`` (lower case) each frame holds, as this lane matches them (``HeldWords``)."""
        return self.held_words.held(words, frames)


class VectorLane:
    """The nearest frames by cosine similarity, over the mind's ``VectorIndex``."""

    def __init__(self, vectors: VectorIndex) -> None:
        self.vectors = vectors

    def hits(self, query: str, limit: int, scope: Scope, vector: Any = None) -> list[LaneHit]:
        """Nearest frames with their cosine similarity (``1 - d^2 / 2``: vectors are unit length)
        to the query's vector, or to ``vector`` when given (``query_vectors``)."""
        if self.vectors.embedder is None or not query.strip():
            return []
        try:
            searched = self.vectors.embed_query(query) if vector is None else vector
            hits = self.vectors.knn(searched, limit, scope.gop_id, scope.since, scope.until, scope.source)
        except self.vectors.db.errors.Error as exc:
            log.warning("vector lane unavailable (%s); keyword results only", exc)
            return []
        return [LaneHit(frame_id, 1.0 - distance * distance / 2.0) for frame_id, distance in hits]

    def query_vectors(self, query: str, lane_query: str, topic: str | None) -> tuple[Any, Any]:
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
