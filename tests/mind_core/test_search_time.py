"""Time-aware search: dates in a question boost frames near them; only since/until filter."""

from __future__ import annotations

from mind_core.cli.recall import format_recall
from mind_core.mind import Mind
from mind_core.retrieval import CombinedRetrieval
from mind_core.search.config import SearchConfig
from mind_core.search.snippets import bold_markdown
from mind_core.testing.fakes import HashingEmbedder

PLAIN = SearchConfig(time_weight=0.0)
BOOSTED = SearchConfig(time_weight=0.5)
# nearly the same words at three times: May's has the most other words, so it matches least
COOKING = [
    ("2022-11-11T18:00:00Z", "Caroline: we cooked a big pot of chili with friends"),
    ("2023-05-12T18:00:00Z", "Caroline: we cooked a big pot of chili with my sister"),
    ("2023-12-15T18:00:00Z", "Caroline: we cooked a big pot of chili with neighbours"),
]


def build(config: SearchConfig) -> Mind:
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.search.config = config
    frames = []
    for number, (when, text) in enumerate(COOKING):
        mind.sessions.ensure(f"s{number}")
        frames.append(mind.frames.create_i_frame(f"s{number}", text, created_at=when))
    mind.search.index_frames_batch(frames)
    return mind


def contents(results) -> list[str]:
    return [r.frame.content for r in results]


def test_the_time_boost_is_on_by_default():
    default = build(SearchConfig()).search
    assert contents(default.search("who cooked chili with Caroline in May 2023?"))[0] == COOKING[1][1]


def test_a_date_in_the_question_moves_the_frame_of_that_time_up():
    question = "who cooked chili with Caroline in May 2023?"
    plain = contents(build(PLAIN).search.search(question))
    assert plain[-1] == COOKING[1][1]
    boosted = build(BOOSTED).search.search(question, explain=True)
    assert contents(boosted)[0] == COOKING[1][1]
    first, last = boosted[0].explain, boosted[-1].explain
    assert first["time_score"] == 1.0 and "2023-05-01..2023-06-01" in first["time_window"]
    assert 0.0 < last["time_score"] < 1.0  # near, not inside: a soft boost, nothing dropped
    assert len(boosted) == len(COOKING)


def test_relative_dates_are_read_from_the_minds_latest_event_or_as_of():
    mind = build(BOOSTED)
    # the mind's latest event is 15 December 2023: "last year" is 2022 (recency alone puts 2023 first)
    assert contents(mind.search.search("chili cooked last year"))[0] == COOKING[0][1]
    # asked as of 13 May 2023, "yesterday" is the 12th (and December is not in the mind yet)
    asked = mind.search.search("chili cooked yesterday", as_of="2023-05-13")
    assert contents(asked) == [COOKING[1][1], COOKING[0][1]]


def test_a_window_outside_the_candidates_changes_nothing():
    question = "who cooked chili with Caroline in 2019?"
    plain = build(PLAIN).search.search(question)
    boosted = build(BOOSTED).search.search(question, explain=True)
    assert contents(boosted) == contents(plain)
    assert "time_score" not in boosted[0].explain


def test_only_since_and_until_filter_hard():
    mind = build(BOOSTED)
    softly = contents(mind.search.search("who cooked chili in May 2023?"))
    assert set(softly) == {text for _, text in COOKING}
    hard = contents(mind.search.search("who cooked chili?", since="2023-05-01", until="2023-05-31"))
    assert hard == [COOKING[1][1]]


def test_explain_on_the_terminal_shows_the_time_part():
    mind = build(BOOSTED)
    result = CombinedRetrieval(mind, record_access_on_recall=False).search(
        "who cooked chili in May 2023?", explain=True, scope="workspace"
    )
    lines = [part for part in format_recall(result, True, bold_markdown) if isinstance(part, str)]
    explained = [line for text in lines for line in text.splitlines() if line.startswith("#1 ")]
    assert "time 1.00 for 2023-05-01..2023-06-01 (May 2023)" in explained[0]
