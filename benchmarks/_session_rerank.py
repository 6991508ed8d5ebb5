"""Session-level re-rankings of a search's result pool, measured for multi-hop questions (issue #18)
and not adopted (benchmarks/README.md, "Multi-hop, third round"); kept here so
``select_constants.py --session-caps / --session-weights`` can repeat the measurement.

Both work on the first ``POOL`` results of ``HybridSearch.search`` (the pool the product's
relevance ordering draws on for ten results) and group them by session (``Frame.gop_id``: one
conversation session of LoCoMo or REALTALK).
"""

from __future__ import annotations

from collections import Counter

from mind_core.search.config import RELEVANCE_POOL_FACTOR, RELEVANCE_POOL_LIMIT
from mind_core.search.results import SearchResult

POOL = RELEVANCE_POOL_LIMIT * RELEVANCE_POOL_FACTOR
# the session strength: the sum of a session's best SESSION_TOP scores ("sum") or its best ("max")
SESSION_TOP = 3
SESSION_AGGREGATES = ("sum", "max")


def spread_sessions(results: list[SearchResult], cap: int) -> list[SearchResult]:
    """The results (in score order) with at most ``cap`` frames of one session before every
    session's next ``cap``: a frame beyond its session's first ``cap`` moves down, not out, so
    that one session's many matches (a strong turn and its neighbours) cannot crowd out a second
    piece of evidence from another session. The order does not depend on the limit."""
    seen: Counter[str] = Counter()
    tiers: list[int] = []
    for result in results:
        tiers.append(seen[result.frame.gop_id] // cap)
        seen[result.frame.gop_id] += 1
    return [results[i] for i in sorted(range(len(results)), key=lambda i: (tiers[i], i))]


def by_session_strength(results: list[SearchResult], weight: float, aggregate: str) -> list[SearchResult]:
    """The results ordered by their score blended with their session's strength in the pool
    (hierarchical retrieval): ``(1 - weight) x score + weight x best score x strength``, the
    strength being the session's best ``SESSION_TOP`` scores summed (or its best, ``"max"``) as a
    share of the strongest session's. A frame of a session that matches in several turns rises
    over a lone match."""
    by_session: dict[str, list[float]] = {}
    for result in results:
        by_session.setdefault(result.frame.gop_id, []).append(result.score)
    top = SESSION_TOP if aggregate == "sum" else 1
    totals = {gop: sum(sorted(scores, reverse=True)[:top]) for gop, scores in by_session.items()}
    strongest = max(totals.values(), default=0.0)
    if strongest <= 0:
        return list(results)
    best = max(result.score for result in results)
    blended = {
        id(result): (1.0 - weight) * result.score + weight * best * totals[result.frame.gop_id] / strongest
        for result in results
    }
    return sorted(results, key=lambda result: -blended[id(result)])
