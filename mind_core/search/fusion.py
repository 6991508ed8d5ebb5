"""How the lanes' candidates become one match score per frame (``SearchConfig.fusion``).

- ``"convex"`` (default): each lane's top ``lane_depth`` candidates with their scores, normalized
  per lane to 0..1 (BM25 / its maximum; cosine similarity from the score where the list was cut
  to the best, see ``normalize_min_max``). A frame's lane score then takes in its session
  context: ``1 - (1 - own) * (1 - context_weight * best)``, where ``best`` is the best lane score
  among the frames within ``context_window`` steps of its ``t`` in the same session (a noisy-OR:
  the frame matches, or the turn next to it does). The lanes are combined
  ``(1 - vector_weight) * keyword + vector_weight * vector``. A memory is usually a turn of a
  conversation, and the turn that holds an answer often does not repeat the question's words or
  topic: its neighbours do. Measured on LoCoMo and REALTALK (benchmarks/README.md), this beats RRF
  by 4-9 points of evidence recall@10 and keeps hybrid above each single lane at every k. The
  preferences (time, speaker) then each multiply the match by ``1 - weight * (1 - part)``.
- ``"rrf"``: the original, reciprocal rank fusion (K = 60) over each lane's top ``2 x limit``.

Either way the match is on the RRF scale's share (``rrf_score / (2/K)``). ``calibrated_match``,
what the score thresholds compare (linker, coverage, conflict), keeps one scale whatever the
ranking weights: the lanes at the weights those thresholds were calibrated on
(``MATCH_SCALE_VECTOR_WEIGHT``, ``MATCH_SCALE_CONTEXT_WEIGHT``), without the ranking preferences.
1.0 = best in both lanes, above 0.5 only with support from both lanes; so ``vector_weight`` and
the preferences can be tuned for the order without moving a threshold.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mind_core.search.config import (
    MATCH_SCALE_CONTEXT_WEIGHT,
    MATCH_SCALE_VECTOR_WEIGHT,
    MAX_RRF_SCORE,
    RRF_K,
)
from mind_core.search.lanes import Scope, normalize_by_max, normalize_min_max
from mind_core.search.results import LaneHit
from mind_core.search.speakers import SpeakerScores
from mind_core.search.time_window import TimeWindow
from mind_core.store.db import IN_LIST, Database, in_list

LANES = ("keyword", "vector")


def fuse_rrf(keyword: list[LaneHit], vector: list[LaneHit]) -> dict[int, dict[str, Any]]:
    """The original: reciprocal rank fusion (K = 60) of the two lanes; match = rrf / (2/K)."""
    fused: dict[int, dict[str, Any]] = {}
    for lane, hits in zip(LANES, (keyword, vector), strict=True):
        for rank, hit in enumerate(hits):
            entry = fused.setdefault(hit.frame_id, {"keyword_rank": None, "vector_rank": None, "match": 0.0})
            entry[f"{lane}_rank"] = rank
            entry["match"] += 1.0 / (RRF_K + rank) / MAX_RRF_SCORE
            if lane == "vector":
                entry["vector_similarity"] = entry["question_similarity"] = hit.score
    return fused


def session_neighbours(db: Database, frame_ids: set[int], window: int, scope: Scope) -> dict[int, list[int]]:
    """Each frame's neighbours: the frames of its session within ``window`` steps of its ``t``
    (itself excluded), inside the search's time and source filters. One indexed query."""
    clauses, params = replace(scope, gop_id=None).clauses("f")
    rows = db.query(
        "SELECT p.id, f.id FROM memory_frames p JOIN memory_frames f"
        " ON f.gop_id = p.gop_id AND f.t BETWEEN p.t - ? AND p.t + ? AND f.id != p.id"
        + "".join(f" AND {clause}" for clause in clauses)
        + f" WHERE p.id IN ({IN_LIST})",
        [window, window, *params, in_list(sorted(frame_ids))],
    )
    result: dict[int, list[int]] = {}
    for frame_id, neighbour in rows:
        result.setdefault(frame_id, []).append(neighbour)
    return result


def with_context(alone: float, nearby: float, context_weight: float) -> float:
    """A lane score with its session context: the frame matches, or a turn next to it does."""
    return 1.0 - (1.0 - alone) * (1.0 - context_weight * nearby)


@dataclass
class LaneScores:
    """Each lane's candidates normalized to 0..1 (``own``), their ranks in the lane, the vector
    lane's raw similarities, and per lane the best score among each frame's session neighbours
    (``nearby``, filled by ``add_context``)."""

    own: dict[str, dict[int, float]]
    ranks: dict[str, dict[int, int]]
    similarity: dict[int, float]
    nearby: dict[str, dict[int, float]] = field(default_factory=dict)

    @classmethod
    def of(cls, keyword: list[LaneHit], vector: list[LaneHit], depth: int) -> LaneScores:
        """The lanes' hits normalized: keyword by its best, vector between its cut and its best."""
        own = {"keyword": normalize_by_max(keyword), "vector": normalize_min_max(vector, cut=len(vector) >= depth)}
        ranks = {
            "keyword": {hit.frame_id: rank for rank, hit in enumerate(keyword)},
            "vector": {hit.frame_id: rank for rank, hit in enumerate(vector)},
        }
        similarity = {hit.frame_id: hit.score for hit in vector}
        return cls(own, ranks, similarity, {lane: {} for lane in LANES})

    @property
    def candidates(self) -> set[int]:
        return set().union(*self.own.values())

    def add_context(self, neighbours: dict[int, list[int]]) -> None:
        """The session window is symmetric, so each scored frame passes its score to its neighbours."""
        for lane, scores in self.own.items():
            best = self.nearby[lane]
            for frame_id, score in scores.items():
                for neighbour in neighbours.get(frame_id, ()):
                    if score > best.get(neighbour, 0.0):
                        best[neighbour] = score

    def score(self, lane: str, frame_id: int, context_weight: float) -> float:
        return with_context(self.own[lane].get(frame_id, 0.0), self.nearby[lane].get(frame_id, 0.0), context_weight)


def combine(
    lanes: LaneScores,
    frame_ids: set[int],
    vector_weight: float,
    context_weight: float,
    context_weights: Mapping[int, float] | None = None,
) -> dict[int, float]:
    """The convex match of each frame: its lane scores with context, weighted and summed; a frame
    in ``context_weights`` takes its context at that weight instead (a note's sections)."""
    # LaneScores.score summed over the lanes, written out: this runs for every candidate and neighbour
    weighted = [
        (1.0 - vector_weight, lanes.own["keyword"], lanes.nearby["keyword"]),
        (vector_weight, lanes.own["vector"], lanes.nearby["vector"]),
    ]
    own_weights = context_weights or {}
    match: dict[int, float] = {}
    for frame_id in frame_ids:
        context = own_weights.get(frame_id, context_weight)
        total = 0.0
        for weight, scores, near in weighted:
            total += weight * (1.0 - (1.0 - scores.get(frame_id, 0.0)) * (1.0 - context * near.get(frame_id, 0.0)))
        match[frame_id] = total
    return match


def calibrated_match(lanes: LaneScores, frame_id: int) -> float:
    """The threshold scale (``SearchResult.match_score``): keyword and vector lane at the
    calibrated weights, no preference; what the ranking weights do leaves it alone."""
    keyword_part = lanes.score("keyword", frame_id, MATCH_SCALE_CONTEXT_WEIGHT)
    vector_part = lanes.score("vector", frame_id, MATCH_SCALE_CONTEXT_WEIGHT)
    return (1.0 - MATCH_SCALE_VECTOR_WEIGHT) * keyword_part + MATCH_SCALE_VECTOR_WEIGHT * vector_part


def prefer(match: dict[int, float], parts: dict[int, float], weight: float) -> None:
    """A preference (time, speaker): each frame's match times ``1 - weight * (1 - part)``."""
    for frame_id, part in parts.items():
        match[frame_id] *= 1.0 - weight * (1.0 - part)


def preference_floor(match: dict[int, float], weight: float, pool_size: int) -> float:
    """The match below which a frame cannot reach the pool whatever a preference of ``weight``
    says of it (a preference lowers a match by at most that share of it): such frames need not
    be read for it."""
    return (1.0 - weight) * heapq.nlargest(pool_size, match.values())[-1]  # the pool's last, or the last


@dataclass
class FusionNotes:
    """What one convex fusion did besides scoring, recorded in each candidate's entry:
    ``keyword_from_window`` (the keyword lane held the asked window's frames), the window used
    and its ``time_scores``, or the ``ignored_window``; the ``speaker_scores`` (with who said
    each frame); the speakers' names the lanes went without; the topic words the vector lane
    was blended with; whether the vector lane searched the question's own vector (its
    similarity is the question's); and the mail replies that yielded to the message they
    answer (``yielded_to``: reply -> parent frame, ``mind_core.search.threads``)."""

    keyword_from_window: bool = False
    window: TimeWindow | None = None
    time_scores: dict[int, float] = field(default_factory=dict)
    ignored_window: TimeWindow | None = None
    speaker_scores: SpeakerScores = field(default_factory=SpeakerScores)
    lanes_without: list[str] | None = None
    blended_with: str | None = None
    question_vector_searched: bool = True
    yielded_to: dict[int, int] = field(default_factory=dict)


def fused_entry(
    lanes: LaneScores, frame_id: int, match: float, context_weight: float, notes: FusionNotes
) -> dict[str, Any]:
    """One candidate's entry: its lane scores, ranks and context, what the search did (``notes``),
    its ``match`` (what ranks it) and ``calibrated_match`` (what thresholds compare)."""
    entry: dict[str, Any] = {}
    for lane in LANES:
        alone = lanes.own[lane].get(frame_id, 0.0)
        entry[f"{lane}_rank"] = lanes.ranks[lane].get(frame_id)
        entry[f"{lane}_score"] = alone
        entry[f"{lane}_context"] = lanes.score(lane, frame_id, context_weight) - alone
    if frame_id in lanes.similarity:
        entry["vector_similarity"] = lanes.similarity[frame_id]
        if notes.question_vector_searched:
            entry["question_similarity"] = lanes.similarity[frame_id]
    if notes.keyword_from_window:
        entry["keyword_lane"] = "time window"
    if notes.window is not None:
        entry["time_window"] = notes.window.describe()
        entry["time_score"] = notes.time_scores.get(frame_id, 1.0)
    elif notes.ignored_window is not None:
        entry["time_window_ignored"] = notes.ignored_window.describe()
    if notes.speaker_scores:
        entry["speaker_score"] = notes.speaker_scores.get(frame_id, 1.0)
        if frame_id in notes.speaker_scores.said_by:
            entry["speaker"] = notes.speaker_scores.said_by[frame_id]
    if notes.lanes_without is not None:
        entry["lanes_without"] = list(notes.lanes_without)
    if notes.blended_with is not None:
        entry["vector_blended_with"] = notes.blended_with
    if frame_id in notes.yielded_to:
        entry["yielded_to"] = notes.yielded_to[frame_id]
    entry["match"] = match
    entry["calibrated_match"] = calibrated_match(lanes, frame_id)
    return entry
