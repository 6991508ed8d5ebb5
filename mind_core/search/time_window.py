"""The time a question asks about: "in May 2023", "last summer", "two weeks before August 11,
2023", "yesterday", "between March and May", read as a window of event time (issue #18).

Search uses the window as a soft boost (``SearchConfig.time_weight``), never as a filter: a
question's dates are often approximate, and conversations mention an event days after it
happened. Only ``--since/--until`` filter hard.

Most questions carry no date, so a cheap regular expression finds the date-like phrases first and
nothing else runs without one. Each phrase that names a single date ("May 2023", "14.01.2024",
"two weeks ago", "last Friday") is read by ``dateparser`` (English only, day-first numeric dates,
dates without a year taken from the past), relative to ``now``: the caller's instant (``as_of``)
or the mind's latest event time, since a mind's questions are asked from within its own time
span (LoCoMo's "last year" is the speakers' last year). What ``dateparser`` does not read is
composed here: seasons, weekends, "N units before/after X", "before/since X" and ranges.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
# "may" and "march" are also a verb: alone they count as a month only after a preposition
_AMBIGUOUS_MONTH = r"(?:jan|mar|march|may|jun|sep|oct|dec)"
_PREPOSITIONS = ("in", "during", "of", "from", "between", "since", "until", "before", "after", "by", "and")
_AFTER_PREPOSITION = "|".join(rf"(?<=\b{word}\s)" for word in _PREPOSITIONS)
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d\d"
_YEARS = rf"{_YEAR}(?:\s*[-/]\s*{_YEAR})?"
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_SEASON = r"(?:spring|summer|autumn|fall|winter)"
_UNIT = r"(?:day|week|weekend|month|year)s?"
_COUNT = (
    r"(?:\d{1,2}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|a\s+few|a\s+couple\s+of|several)"
)
_SINGLE = (
    rf"(?:(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MONTH}(?:,?\s+{_YEAR})?"  # 13 October, the 10th of Feb 2024
    rf"|{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?(?!\d)"  # October 13, 2023
    rf"|{_MONTH},?\s+{_YEAR}"  # May 2023
    r"|\d{1,2}[./]\d{1,2}[./](?:\d{4}|\d{2})(?!\d)|\d{4}-\d{1,2}-\d{1,2}"  # 14.01.2024, 2024-01-14
    rf"|(?:(?:last|this|next|past)\s+|the\s+|(?<=\bin\s)|(?<=\bduring\s)){_SEASON}(?:\s+(?:of\s+)?{_YEARS})?"
    rf"|{_SEASON}\s+(?:of\s+)?{_YEARS}"  # winter 2021 - 2022
    r"|(?:the\s+day\s+before\s+)?yesterday|today|tonight"
    rf"|(?:last|this|next|past)\s+(?:week(?:end)?|month|year|night|{_WEEKDAY})"
    rf"|{_COUNT}\s+{_UNIT}\s+ago"
    rf"|(?<=\bon\s){_WEEKDAY}"
    rf"|(?:{_AFTER_PREPOSITION}|(?!{_AMBIGUOUS_MONTH}\b)){_MONTH}"
    rf"|{_YEAR}(?!\d))"
)
_OFFSET = (
    rf"(?P<offset>{_COUNT}\s+{_UNIT}|(?:(?:the|last)\s+)?(?:day|week|weekend|month|{_WEEKDAY}))"
    r"\s+(?P<side>before|after)"
)
_PHRASE = re.compile(
    rf"\b(?:between\s+(?P<from>{_SINGLE})\s+and\s+(?P<to>{_SINGLE})"
    rf"|from\s+(?P<from2>{_SINGLE})\s+(?:to|until|till|through)\s+(?P<to2>{_SINGLE})"
    rf"|{_OFFSET}\s+(?P<anchor>{_SINGLE})"
    rf"|(?P<bound>before|after|since|until|by)\s+(?P<bounded>{_SINGLE})"
    rf"|(?P<single>{_SINGLE}))\b",
    re.IGNORECASE,
)
_QUICK = re.compile(
    rf"\d|\b(?:{_MONTH}|{_WEEKDAY}|{_SEASON}|yesterday|today|tonight|ago|last|this|next|past)\b",
    re.IGNORECASE,
)
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a few": 3, "a couple of": 2, "several": 3,
}  # fmt: skip
_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_DATEPARSER_SETTINGS = {"PREFER_DATES_FROM": "past", "DATE_ORDER": "DMY", "RETURN_TIME_AS_PERIOD": True}


@dataclass(frozen=True)
class TimeWindow:
    """A span of event time, ``[start, end)`` in UTC; ``None`` is open on that side."""

    start: datetime | None
    end: datetime | None
    expression: str

    def distance_days(self, moment: datetime) -> float:
        """0 inside the window, else the days to its nearer edge."""
        if self.start is not None and moment < self.start:
            return (self.start - moment).total_seconds() / 86400
        if self.end is not None and moment >= self.end:
            return (moment - self.end).total_seconds() / 86400
        return 0.0

    @property
    def length_days(self) -> float | None:
        if self.start is None or self.end is None:
            return None
        return (self.end - self.start).total_seconds() / 86400

    def describe(self) -> str:
        def day(moment: datetime | None) -> str:
            return "" if moment is None else moment.strftime("%Y-%m-%d")

        return f"{day(self.start)}..{day(self.end)} ({self.expression})"


def may_name_a_time(text: str) -> bool:
    """The cheap gate: False means the text surely names no date (no digit, month, weekday,
    season or relative word), so nothing else needs to run."""
    return _QUICK.search(text) is not None


def question_window(question: str, now: datetime) -> TimeWindow | None:
    """The window of event time the question names, relative to ``now`` (aware, UTC); several
    phrases give the span that holds them all; None when it names no time."""
    if not may_name_a_time(question):
        return None
    windows = [w for match in _PHRASE.finditer(question) if (w := _phrase_window(match, now)) is not None]
    if not windows:
        return None
    starts = [w.start for w in windows]
    ends = [w.end for w in windows]
    return TimeWindow(
        None if None in starts else min(s for s in starts if s is not None),
        None if None in ends else max(e for e in ends if e is not None),
        "; ".join(w.expression for w in windows),
    )


def without_dates(question: str) -> str:
    """The question with its date phrases cut out: what the keyword lane searches word by word
    when a window was read from it. A date's words ("June", "2010", "last", "week") are not a
    topic; as loose keywords they match quoted mail headers and any note saying "last"."""
    if not may_name_a_time(question):
        return question
    return " ".join(_PHRASE.sub(" ", question).split())


def date_phrases(question: str) -> list[str]:
    """The question's date phrases as runs of words ("last year", "June 2010"): searched as whole
    phrases, they still find a turn that says "last year we went camping" but no longer a note
    with "last" in it or a header of November 2010."""
    if not may_name_a_time(question):
        return []
    return [" ".join(re.sub(r"[^\w]", " ", match.group(0)).split()) for match in _PHRASE.finditer(question)]


def _phrase_window(match: re.Match[str], now: datetime) -> TimeWindow | None:
    text = " ".join(match.group(0).split())
    groups = match.groupdict()
    if groups["single"]:
        window = single_window(groups["single"], now)
        return None if window is None else TimeWindow(window.start, window.end, text)
    if groups["anchor"]:
        anchor = single_window(groups["anchor"], now)
        if anchor is None or anchor.start is None or anchor.end is None:
            return None
        span = _offset_span(groups["offset"])
        if groups["side"].lower() == "before":  # the event, and the day it was told on
            return TimeWindow(anchor.start - span, anchor.end, text)
        return TimeWindow(anchor.start, anchor.end + span, text)
    if groups["bounded"]:
        anchor = single_window(groups["bounded"], now)
        if anchor is None:
            return None
        if groups["bound"].lower() in ("before", "until", "by"):
            return TimeWindow(None, anchor.end, text)
        return TimeWindow(anchor.start, None, text)
    first = single_window(groups["from"] or groups["from2"], now)
    last = single_window(groups["to"] or groups["to2"], now)
    if first is None or last is None:
        return None
    if first.start is None or first.end is None or last.start is None or last.end is None:
        return None
    return TimeWindow(min(first.start, last.start), max(first.end, last.end), text)


def _offset_span(offset: str) -> timedelta:
    """How far before or after its anchor an offset reaches: "two weeks" 14 days, "the day" 1,
    "the week", "the weekend" or "the Friday" 7, "the month" 31."""
    words = re.sub(r"^(?:the|last)\s+", "", " ".join(offset.lower().split()))
    count_text, _, unit = words.rpartition(" ")
    count = int(count_text) if count_text.isdigit() else _NUMBERS.get(count_text, 1)
    days = {"day": 1, "month": 31, "year": 366}.get(unit.rstrip("s"), 7)
    return timedelta(days=count * days)


def single_window(phrase: str, now: datetime) -> TimeWindow | None:
    """One date phrase (no range, no before/after) as a window: a season or a weekend composed
    here, everything else read by dateparser with the granularity it reports."""
    text = " ".join(phrase.lower().split())
    season = re.search(_SEASON, text)
    if season:
        return _season_window(text, season.group(0), now)
    if text.endswith("weekend"):
        return _weekend_window(text, now)
    parsed = _parse(text, now)
    if parsed is None:
        return None
    moment, period = parsed
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "year":
        start = day.replace(month=1, day=1)
        return TimeWindow(start, start.replace(year=start.year + 1), phrase)
    if period == "month":
        start = day.replace(day=1)
        return TimeWindow(start, _add_months(start, 1), phrase)
    if period == "week":
        start = day - timedelta(days=day.weekday())
        return TimeWindow(start, start + timedelta(days=7), phrase)
    return TimeWindow(day, day + timedelta(days=1), phrase)


def _season_window(text: str, season: str, now: datetime) -> TimeWindow:
    years = [int(y) for y in re.findall(_YEAR, text)]
    first_month = _SEASON_START[season]
    if years:
        start = datetime(years[0], first_month, 1, tzinfo=UTC)
    else:
        # the latest such season that began by now; "last" one before the current, "next" after
        start = datetime(now.year, first_month, 1, tzinfo=UTC)
        if start > now:
            start = start.replace(year=now.year - 1)
        if text.startswith("last") and _add_months(start, 3) > now:
            start = start.replace(year=start.year - 1)
        elif text.startswith("next"):
            start = start.replace(year=start.year + 1)
    end = _add_months(start, 3)
    if len(years) > 1 and season == "winter":  # winter 2021 - 2022
        end = datetime(years[1], 3, 1, tzinfo=UTC)
    return TimeWindow(start, end, text)


def _weekend_window(text: str, now: datetime) -> TimeWindow:
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    saturday = today - timedelta(days=(today.weekday() - 5) % 7)
    if text.startswith("next"):
        saturday += timedelta(days=7)
    elif text.startswith("last") and saturday + timedelta(days=2) > now:
        saturday -= timedelta(days=7)
    return TimeWindow(saturday, saturday + timedelta(days=2), text)


def _add_months(moment: datetime, months: int) -> datetime:
    index = moment.month - 1 + months
    return moment.replace(year=moment.year + index // 12, month=index % 12 + 1, day=1)


def _parse(text: str, now: datetime) -> tuple[datetime, str] | None:
    from dateparser.date import DateDataParser  # imported on the first question with a date

    base = now.astimezone(UTC).replace(tzinfo=None)
    settings: dict[str, Any] = {**_DATEPARSER_SETTINGS, "RELATIVE_BASE": base}
    phrase = re.sub(r"^(?:on|in|the)\s+", "", text)
    try:
        data = DateDataParser(languages=["en"], settings=settings).get_date_data(phrase)
    except (ValueError, OverflowError):  # a date the calendar does not have: no window, never an error
        return None
    if data.date_obj is None:
        return None
    moment = data.date_obj
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return moment, data.period or "day"
