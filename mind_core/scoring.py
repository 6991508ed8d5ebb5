"""Relevance scoring: four sub-scores weighted by a profile (reference-behaviour §4).

Temporal recency uses the frame's event time (``created_at``), not ``last_accessed``: an
imported conversation from 2019 is old even if it was recalled yesterday (the original's bug).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime

from mind_core.frames import IMPORTANCE_MULTIPLIERS, Frame
from mind_core.timestamps import parse_instant

HALF_LIFE_DAYS = 30
RECENCY_BOOST_DAYS = 7
CONTEXTUAL_BY_DISTANCE = {0: 1.0, 1: 0.7, 2: 0.4, 3: 0.2}
POPULARITY_CEILING_ACCESSES = 9_999  # popularity 1.4; beyond it the shown score is capped at 1


@dataclass(frozen=True)
class ScoringWeights:
    temporal: float
    popularity: float
    contextual: float
    importance: float


SCORING_PROFILES: dict[str, ScoringWeights] = {
    "balanced": ScoringWeights(0.4, 0.2, 0.2, 0.2),
    "recent": ScoringWeights(0.6, 0.1, 0.2, 0.1),
    "important": ScoringWeights(0.1, 0.1, 0.2, 0.6),
    "connected": ScoringWeights(0.1, 0.1, 0.6, 0.2),
}


@dataclass
class ScoringContext:
    recent_entity_ids: list[int] = field(default_factory=list)
    graph_distances: dict[int, int] | None = None  # frame id -> BFS distance from the query's entities


def compute_temporal_score(timestamp: str, now: datetime | None = None) -> float:
    """1.0 within 7 days (or in the future), else 0.5 ** (days / 30) counted from day 0."""
    try:
        moment = parse_instant(timestamp)
    except (ValueError, TypeError):
        return 0.0
    days = ((now or datetime.now(UTC)) - moment).total_seconds() / 86_400
    if days <= RECENCY_BOOST_DAYS:
        return 1.0
    return 0.5 ** (days / HALF_LIFE_DAYS)


# where a frame's metadata records what dated it, for SQL's json_extract (``dated_by_file``'s rule)
DATED_BY_JSON_PATH = "$.source.message.dated_by"


def dated_by_file(frame: Frame) -> bool:
    """A frame whose source had no date of its own (a note without a frontmatter date or a dated
    name): its event time is the file's modification time, which a copy or a sync rewrites."""
    source = frame.metadata.get("source")
    message = source.get("message") if isinstance(source, dict) else None
    return isinstance(message, dict) and message.get("dated_by") == "file"


def compute_popularity_score(access_count: int) -> float:
    return 1 + math.log10(1 + max(0, access_count)) * 0.1


def compute_contextual_score(frame_id: int, graph_distances: dict[int, int] | None) -> float:
    if not graph_distances or frame_id not in graph_distances:
        return 0.0
    return CONTEXTUAL_BY_DISTANCE.get(graph_distances[frame_id], 0.0)


def compute_importance_score(importance: str) -> float:
    return IMPORTANCE_MULTIPLIERS.get(importance, 1.0)


def relevance_components(
    frame: Frame, context: ScoringContext | None = None, now: datetime | None = None
) -> dict[str, float]:
    context = context or ScoringContext()
    # no recency for a time the file system gave: dated evidence comes first
    return {
        "temporal": 0.0 if dated_by_file(frame) else compute_temporal_score(frame.created_at, now),
        "popularity": compute_popularity_score(frame.access_count),
        "contextual": compute_contextual_score(frame.id, context.graph_distances),
        "importance": compute_importance_score(frame.importance),
    }


def max_relevance(weights: ScoringWeights) -> float:
    """The most relevance a profile can give: recent, at graph distance 0, of the highest
    importance, accessed ``POPULARITY_CEILING_ACCESSES`` times. A search's shown score is its
    final score as a share of this, so it stays within 0..1 and orders like the final score."""
    return (
        weights.temporal
        + weights.popularity * compute_popularity_score(POPULARITY_CEILING_ACCESSES)
        + weights.contextual
        + weights.importance * max(IMPORTANCE_MULTIPLIERS.values())
    )


def weighted_relevance(components: dict[str, float], weights: ScoringWeights) -> float:
    return (
        components["temporal"] * weights.temporal
        + components["popularity"] * weights.popularity
        + components["contextual"] * weights.contextual
        + components["importance"] * weights.importance
    )
