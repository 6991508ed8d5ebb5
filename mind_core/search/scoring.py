"""Relevance scoring: four sub-scores weighted by a profile (reference-behaviour §4).

Temporal recency uses the frame's event time (``created_at``), not ``last_accessed``: an
imported conversation from 2019 is old even if it was recalled yesterday (the original's bug).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from mind_core.store.frames import IMPORTANCE_MULTIPLIERS, Frame
from mind_core.timestamps import parse_instant, utc_now

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
    days = ((now or utc_now()) - moment).total_seconds() / 86_400
    if days <= RECENCY_BOOST_DAYS:
        return 1.0
    return 0.5 ** (days / HALF_LIFE_DAYS)


# What gave a frame its event time when that time is not the item's own (``borrowed_time``).
FILE_TIME = "file"  # a note without a date of its own: the file's modification time, which a copy rewrites
HARVEST_TIME = "harvest"  # an item its source gave no time (an AI Studio prompt, a Claude memory)


def borrowed_time(frame: Frame) -> str | None:
    """``FILE_TIME`` or ``HARVEST_TIME`` when the frame's event time is not its own, else None.

    Such a frame keeps that time to be ordered by (the file's time, or when the mind first read
    it: never before the item existed), but it is no evidence of when the thing happened: it gets
    no recency favour and is never the "now" of relative dates, else a harvest today makes every
    undated item the newest memory. Read from the metadata as stored, so minds harvested before
    this rule follow it too; ``borrowed_time_sql`` is the same rule for SQL."""
    source = frame.metadata.get("source")
    message = source.get("message") if isinstance(source, dict) else None
    if isinstance(message, dict) and message.get("dated_by") == "file":
        return FILE_TIME
    provenance = frame.metadata.get("provenance")
    if isinstance(provenance, dict) and not provenance.get("timestamp"):  # harvested, with no time
        return HARVEST_TIME
    return None


def borrowed_time_sql(metadata: str = "metadata") -> str:
    """``borrowed_time`` as an SQL condition on a frame's ``metadata`` column: 1 when borrowed,
    else 0 (never NULL, so ``NOT`` of it selects the frames with a time of their own)."""
    return (
        f"(COALESCE(json_valid({metadata}), 0) AND (json_extract({metadata}, '$.source.message.dated_by') IS 'file'"
        f" OR (json_type({metadata}, '$.provenance') IS 'object'"
        f" AND COALESCE(json_extract({metadata}, '$.provenance.timestamp'), '') = '')))"
    )


def dated_by_file(frame: Frame) -> bool:
    return borrowed_time(frame) == FILE_TIME


def compute_popularity_score(access_count: int) -> float:
    return 1 + math.log10(1 + max(0, access_count)) * 0.1


def compute_contextual_score(frame_id: int, graph_distances: dict[int, int] | None) -> float:
    if not graph_distances or frame_id not in graph_distances:
        return 0.0
    return CONTEXTUAL_BY_DISTANCE.get(graph_distances[frame_id], 0.0)


def compute_importance_score(importance: str) -> float:
    return IMPORTANCE_MULTIPLIERS.get(importance, 1.0)


def relevance_components_of(
    frame_id: int,
    created_at: str,
    access_count: int,
    importance: str,
    borrowed: bool,
    context: ScoringContext | None = None,
    now: datetime | None = None,
) -> dict[str, float]:
    """The relevance parts of one frame from the columns they read (``borrowed``: its time is
    not its own, ``borrowed_time``)."""
    context = context or ScoringContext()
    # no recency for a time the file system or the harvest gave: dated evidence comes first
    return {
        "temporal": 0.0 if borrowed else compute_temporal_score(created_at, now),
        "popularity": compute_popularity_score(access_count),
        "contextual": compute_contextual_score(frame_id, context.graph_distances),
        "importance": compute_importance_score(importance),
    }


def component_maxima() -> dict[str, float]:
    """The most each relevance part can be: popularity is ``1 + 0.1 x log10(1 + accesses)`` (1.4 at
    ``POPULARITY_CEILING_ACCESSES``), importance a multiplier up to critical's 2.0."""
    return {
        "temporal": 1.0,
        "popularity": compute_popularity_score(POPULARITY_CEILING_ACCESSES),
        "contextual": max(CONTEXTUAL_BY_DISTANCE.values()),
        "importance": max(IMPORTANCE_MULTIPLIERS.values()),
    }


def max_relevance(weights: ScoringWeights) -> float:
    """The most relevance a profile can give: recent, at graph distance 0, of the highest
    importance, accessed ``POPULARITY_CEILING_ACCESSES`` times. A search's shown score is its
    final score as a share of this, so it stays within 0..1 and orders like the final score."""
    return sum(getattr(weights, name) * most for name, most in component_maxima().items())


def relevance_parts(components: dict[str, float], weights: ScoringWeights) -> dict[str, dict[str, float]]:
    """The relevance a shown score multiplies the match by (relevance / ``max_relevance``, 0..1)
    as a sum a person can check: each part on 0..1 (its value over its most) times its share of
    the profile (weight x most / ``max_relevance``; the shares add up to 1). The profile's own
    weights add up to 1 too, but the parts they weigh do not stop at 1 (popularity 1.0-1.4,
    importance 0.3-2.0), so the raw sum reads as arithmetic that does not add up."""
    maxima = component_maxima()
    best = max_relevance(weights)
    return {
        name: {"part": components[name] / most, "share": getattr(weights, name) * most / best}
        for name, most in maxima.items()
    }


def weighted_relevance(components: dict[str, float], weights: ScoringWeights) -> float:
    return (
        components["temporal"] * weights.temporal
        + components["popularity"] * weights.popularity
        + components["contextual"] * weights.contextual
        + components["importance"] * weights.importance
    )
