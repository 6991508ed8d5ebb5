"""Session-level re-rankings of a search's result pool, measured for multi-hop questions and not
adopted (benchmarks/README.md, "Multi-hop, third round" and "fifth round"); kept here so
``select_constants.py --session-caps / --session-weights / --session-diversity / --session-firsts``
can repeat the measurement. The last two apply only to a question that asks for several things
(``asks_for_several``).

Both work on the first ``POOL`` results of ``HybridSearch.search`` (the pool the product's
relevance ordering draws on for ten results) and group them by session (``Frame.gop_id``: one
conversation session of LoCoMo or REALTALK).
"""

from __future__ import annotations

import re
from collections import Counter

from mind_core.search.config import RELEVANCE_POOL_FACTOR, RELEVANCE_POOL_LIMIT
from mind_core.search.results import SearchResult

POOL = RELEVANCE_POOL_LIMIT * RELEVANCE_POOL_FACTOR
# the session strength: the sum of a session's best SESSION_TOP scores ("sum") or its best ("max")
SESSION_TOP = 3
SESSION_AGGREGATES = ("sum", "max")
# a question asking for several things: "both", "in common", "how many", "kinds/types/ways of", or
# "what/which" with a plural noun within its first three words ("What activities does ...")
_SEVERAL = re.compile(r"\b(?:both|in common|how many|kinds?|types?|ways)\b", re.IGNORECASE)
_PLURAL_ASKED = re.compile(r"^(?:what|which)\s+(?:[a-z/+-]+\s+){0,2}?([a-z]+s)\b", re.IGNORECASE)
_NOT_PLURAL = frozenset({"is", "was", "does", "has", "his", "this", "as", "us", "its"})


def asks_for_several(question: str) -> bool:
    """Whether the question asks for several things, which may sit in different sessions."""
    if _SEVERAL.search(question):
        return True
    asked = _PLURAL_ASKED.match(question.strip())
    return asked is not None and asked.group(1).lower() not in _NOT_PLURAL


def diverse_sessions(results: list[SearchResult], weight: float, k: int) -> list[SearchResult]:
    """The top ``k`` taken one at a time, each the best of ``score x (1 - weight) ** n``, n being
    how many frames of its session were taken already (diversity across sessions: after the
    first strong session, the next places prefer another session's best); the rest after them."""
    taken: list[SearchResult] = []
    per_session: Counter[str] = Counter()
    rest = list(results)
    while rest and len(taken) < k:
        pick = max(rest, key=lambda r: r.score * (1.0 - weight) ** per_session[r.frame.gop_id])
        taken.append(pick)
        rest.remove(pick)
        per_session[pick.frame.gop_id] += 1
    return taken + rest


def sessions_then_turns(results: list[SearchResult], sessions: int, k: int) -> list[SearchResult]:
    """Sessions first, then turns: the best frame of each of the ``sessions`` best sessions (by their
    best frame) is kept in the top ``k``, the other places filled by score; the top ``k`` in score
    order, then the rest."""
    firsts: dict[str, SearchResult] = {}
    for result in results:
        firsts.setdefault(result.frame.gop_id, result)
    kept = {id(r) for r in list(firsts.values())[:sessions]}
    for result in results:
        if len(kept) >= k:
            break
        kept.add(id(result))
    return [r for r in results if id(r) in kept] + [r for r in results if id(r) not in kept]


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
