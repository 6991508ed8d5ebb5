"""What a search returns: ``SearchResult`` (a frame, its scores, whether it is a confident
match) and ``LaneHit``, one lane's candidate with its raw score."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mind_core.search.config import MAX_RRF_SCORE
from mind_core.store.frames import Frame

# The best frame's cosine similarity from which a search counts as a confident match. MiniLM
# gives unrelated text 0.1-0.3; on LoCoMo conv-26 the best frame of every one of the first 80
# questions scored 0.40 or more (median 0.57) and seven nonsense queries 0.12-0.26.
CONFIDENT_SIMILARITY = 0.33
# In a mind of code and diffs nonsense reaches 0.31-0.34 ("zxqv blorft quuxle" 0.331 on kernel patch
# mails), so a similarity between the two cuts counts only with keyword evidence: one of the
# query's words in the frame, which a made-up word never is.
CLEAR_SIMILARITY = 0.40


@dataclass
class LaneHit:
    """One lane's candidate with the lane's own score, before normalization."""

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
