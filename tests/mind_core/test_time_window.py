"""Reading the time a question asks about, relative to a fixed "now"."""

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mind_core.search.time_window import may_name_a_time, question_window

NOW = datetime(2023, 10, 20, 15, 0, tzinfo=UTC)  # a Friday


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def span(question: str) -> tuple[datetime | None, datetime | None]:
    window = question_window(question, NOW)
    assert window is not None, question
    return window.start, window.end


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("What did Melanie do in May 2023?", "2023-05-01", "2023-06-01"),
        ("What painting did Melanie show on October 13, 2023?", "2023-10-13", "2023-10-14"),
        ("Where is Paola going on the 10th of February 2024?", "2024-02-10", "2024-02-11"),
        ("Exercises for what muscles did Kevin do on 14.01.2024?", "2024-01-14", "2024-01-15"),
        ("What did Kevin watch in 2017?", "2017-01-01", "2018-01-01"),
        ("When did Melanie go camping in June?", "2023-06-01", "2023-07-01"),  # the last June by now
        ("Which country did Elise visit in winter 2021 - 2022?", "2021-12-01", "2022-03-01"),
    ],
)
def test_absolute_dates_become_the_period_they_name(question, start, end):
    assert span(question) == (day(start), day(end))


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("What did I do yesterday?", "2023-10-19", "2023-10-20"),
        ("What did we decide last week?", "2023-10-09", "2023-10-16"),
        ("What did we discuss last summer?", "2023-06-01", "2023-09-01"),
        ("What did you do last weekend?", "2023-10-14", "2023-10-16"),
        ("Where did Caroline move from 4 years ago?", "2019-01-01", "2020-01-01"),
    ],
)
def test_relative_expressions_are_read_from_now(question, start, end):
    assert span(question) == (day(start), day(end))


def test_a_relative_expression_follows_the_given_now():
    later = datetime(2024, 3, 5, tzinfo=UTC)
    window = question_window("What did I do yesterday?", later)
    assert window is not None and (window.start, window.end) == (day("2024-03-04"), day("2024-03-05"))


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("What did we decide between March 3 and May 5, 2023?", "2023-03-03", "2023-05-06"),
        ("What did we do from May to July?", "2023-05-01", "2023-08-01"),
        # the event itself and the day it was told on
        ("What puppy did Maria get two weeks before August 11, 2023?", "2023-07-28", "2023-08-12"),
        ("Who did Caroline meet the week before 9 June 2023?", "2023-06-02", "2023-06-10"),
    ],
)
def test_ranges_and_offsets_from_an_anchor(question, start, end):
    assert span(question) == (day(start), day(end))


def test_before_and_since_leave_one_side_open():
    assert span("What had we planned before March 2023?") == (None, day("2023-04-01"))
    assert span("What changed since 1 June 2023?") == (day("2023-06-01"), None)


def test_a_range_written_backwards_still_spans_both_ends():
    assert span("What happened between May 2023 and March 2023?") == (day("2023-03-01"), day("2023-06-01"))


@pytest.mark.parametrize(
    "question",
    [
        "What did Melanie paint recently?",
        "Who leads the falcon migration?",
        "What may happen to the march?",  # a verb and a noun, not months
        "",
    ],
)
def test_a_question_without_a_date_has_no_window(question):
    assert question_window(question, NOW) is None


def test_the_cheap_gate_lets_only_date_like_text_through():
    assert not may_name_a_time("Who leads the falcon migration?")
    assert may_name_a_time("What did we do in June?")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["in", "on", "May", "31.02.2024", "99.99.9999", "before", "between", "and", "the", "week",
                         "2 weeks", "ago", "last", "summer", "2099", "1900", "Friday", "13th", "of", "x", "2023", "March", "from", "to"]),
        max_size=8,
    ).map(" ".join)
)
def test_any_mix_of_date_words_gives_a_window_or_none_never_an_error(question):
    window = question_window(question, NOW)
    assert window is None or window.start is None or window.end is None or window.start < window.end
