"""The session re-rankings measured for multi-hop questions (benchmarks/_session_rerank.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from _session_rerank import by_session_strength, spread_sessions  # noqa: E402

from mind_core.search.results import SearchResult  # noqa: E402
from mind_core.store.frames import Frame  # noqa: E402


def result(frame_id: int, session: str, score: float) -> SearchResult:
    frame = Frame(
        frame_id, "I", session, frame_id, None, f"turn {frame_id}", "normal", "user_stated", 0, "", ""
    )
    return SearchResult(frame, score, 1.0, score, score=score)


def ids(results: list[SearchResult]) -> list[int]:
    return [r.frame.id for r in results]


# session a holds the four best matches (a strong turn and its neighbours), b and c one each
POOL = [
    result(1, "a", 0.9),
    result(2, "a", 0.8),
    result(3, "a", 0.7),
    result(4, "a", 0.6),
    result(5, "b", 0.5),
    result(6, "c", 0.4),
]


def test_a_session_cap_moves_a_sessions_extra_frames_below_the_other_sessions():
    assert ids(spread_sessions(POOL, 2)) == [1, 2, 5, 6, 3, 4]
    # moved down, not out; every frame kept; a cap above any session's count changes nothing
    assert sorted(ids(spread_sessions(POOL, 1))) == ids(POOL)
    assert ids(spread_sessions(POOL, 4)) == ids(POOL)


def test_the_cap_orders_independently_of_how_many_results_are_read():
    spread = ids(spread_sessions(POOL, 2))
    assert ids(spread_sessions(POOL[:5], 2)) == [i for i in spread if i != 6]


def test_session_strength_lifts_a_frame_of_a_strong_session_over_a_lone_match():
    pool = [result(1, "b", 0.62), result(2, "a", 0.6), result(3, "a", 0.55), result(4, "a", 0.5)]
    assert ids(by_session_strength(pool, 0.0, "sum")) == [1, 2, 3, 4]
    assert ids(by_session_strength(pool, 0.2, "sum")) == [2, 3, 1, 4]
    # by the best frame alone session b is the strongest: the order stays
    assert ids(by_session_strength(pool, 0.2, "max")) == [1, 2, 3, 4]
