"""Event time: reading what sources write, normalizing to UTC ISO-8601, comparing instants.

Everything this package writes is ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (fixed width, UTC), so string
order equals time order for our own rows; SQL that must also handle rows written by the original
(``YYYY-MM-DD HH:MM:SS``) compares ``julianday(...)`` values, which parse both.

What the exports hold: ChatGPT writes epoch seconds (:func:`epoch_to_iso`); Claude and Gemini
write ISO-8601 with ``Z`` or ``±HH:MM`` and up to nine fraction digits; frontmatter holds dates
and datetimes (YAML gives ``date``/``datetime`` objects, or strings); mail ``Date`` headers are
RFC 2822, which ``email.utils`` turns into a ``datetime``. Python 3.11's
``datetime.fromisoformat`` reads every ISO form among them; the only help it needs is case
(``t``/``z``) and a ValueError, not an OverflowError, when the UTC instant leaves years 1-9999.
Plugins use this module through ``mind_core.harvest``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, time

# The original's strict gate (reference-behaviour §2): a T, and a zone.
ISO_WITH_ZONE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})$")


def format_utc(moment: datetime | date) -> str:
    """The canonical UTC string of a datetime (naive counts as UTC) or a date (midnight UTC)."""
    if not isinstance(moment, datetime):
        moment = datetime.combine(moment, time(0, 0), tzinfo=UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}.{moment.microsecond // 1000:03d}Z"
    )


def _system_clock() -> datetime:
    return datetime.now(UTC)


_clock: Callable[[], datetime] = _system_clock


def utc_now() -> datetime:
    """The current instant (aware, UTC) from the one clock the engine reads: every "now" of this
    package (frame times, recency, relative dates in questions, snapshot days) comes from here, so
    a test or a replay sets it once with :func:`use_clock` and no answer depends on the date it runs."""
    return _clock()


def now_iso() -> str:
    return format_utc(utc_now())


@contextmanager
def use_clock(clock: Callable[[], datetime]) -> Iterator[None]:
    """Read "now" from ``clock`` (returning an aware datetime) while the block runs."""
    global _clock
    previous, _clock = _clock, clock
    try:
        yield
    finally:
        _clock = previous


def parse_instant(value: str) -> datetime:
    """An ISO-8601 instant as an aware UTC datetime; a value without a zone is UTC (as SQLite's
    ``datetime('now')`` and most exports write it). Raises ValueError for anything else."""
    moment = datetime.fromisoformat(value.strip().upper())
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError as exc:  # e.g. 9999-12-31T23:59:59-01:00 is past year 9999 in UTC
        raise ValueError(f"timestamp out of range: {value!r}") from exc


def is_valid_iso_timestamp(value: object) -> bool:
    """The original's isValidIsoTimestamp: strict ISO with T and zone, and a real instant."""
    if not isinstance(value, str) or not ISO_WITH_ZONE.match(value):
        return False
    try:
        parse_instant(value)
    except ValueError:
        return False
    return True


def normalize_iso(value: str) -> str:
    """Any timestamp :func:`parse_instant` reads, in the canonical form; raises ValueError otherwise."""
    return format_utc(parse_instant(value))


def epoch_to_iso(seconds: float) -> str:
    """Epoch seconds in the canonical form; raises OverflowError/ValueError/OSError outside the calendar."""
    return format_utc(datetime.fromtimestamp(float(seconds), UTC))
