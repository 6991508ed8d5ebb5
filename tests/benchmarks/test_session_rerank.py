"""The session re-rankings measured for multi-hop questions (benchmarks/_session_rerank.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from _session_rerank import (  # noqa: E402
    asks_for_several,
    by_session_strength,
    diverse_sessions,
    sessions_then_turns,
    spread_sessions,
)

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


def test_a_question_asking_for_several_things_is_told_apart():
    for question in (
        "What activities does Melanie partake in?",
        "What do Jon and Gina both have in common?",
        "How many children does Melanie have?",
        "What kind of art does Caroline make?",
    ):
        assert asks_for_several(question), question
    for question in ("What did Caroline paint?", "When did Melanie go camping?", "What is Caroline's identity?"):
        assert not asks_for_several(question), question


def test_sessions_first_keeps_the_best_frame_of_each_best_session_in_the_top_k():
    assert ids(sessions_then_turns(POOL, 3, 4)) == [1, 2, 5, 6, 3, 4]
    assert ids(sessions_then_turns(POOL, 1, 4)) == ids(POOL)  # the first session's best is first anyway


def test_session_diversity_lowers_a_frame_per_frame_of_its_session_already_taken():
    assert ids(diverse_sessions(POOL, 0.0, 4)) == ids(POOL)
    assert ids(diverse_sessions(POOL, 0.5, 4)) == [1, 5, 2, 6, 3, 4]  # 0.8 x 0.5 < 0.5; 0.7 x 0.25 < 0.4
