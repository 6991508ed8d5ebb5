"""Timestamps for plugin output: parsing what exports write, and the canonical UTC string.

Plugins may import only the item model and the hook marker (ARCHITECTURE.md), so they cannot use
``mind_core.timestamps``; this parses the same inputs and writes the same fixed-width
``YYYY-MM-DDTHH:MM:SS.mmmZ`` form (tests/plugins/test_timefmt.py holds the two side by side).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time

_ZONE_WITHOUT_COLON = re.compile(r"([+-]\d{2})(\d{2})$")
_FRACTION = re.compile(r"\.(\d+)")


def utc_iso(moment: datetime | date) -> str:
    """A datetime (naive counts as UTC) or a bare date (midnight UTC) as canonical UTC ISO-8601."""
    if not isinstance(moment, datetime):
        moment = datetime.combine(moment, time(0, 0), tzinfo=UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}.{moment.microsecond // 1000:03d}Z"
    )


def epoch_iso(seconds: float) -> str:
    return utc_iso(datetime.fromtimestamp(seconds, UTC))


def parse_iso(value: str) -> datetime:
    """An ISO-8601 instant as an aware UTC datetime.

    Raises ValueError when the text is not one, OverflowError when its UTC date leaves years 1-9999.

    Exports write zones as ``Z``, ``±HH:MM`` or ``±HHMM`` and fractions of any length, which
    ``datetime.fromisoformat`` (3.11) does not all take, so those are rewritten first; a value
    without a zone is UTC, the way SQLite and most exports write it.
    """
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    text = _ZONE_WITHOUT_COLON.sub(r"\1:\2", text)
    text = _FRACTION.sub(lambda match: "." + (match.group(1) + "000000")[:6], text, count=1)
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError as exc:  # e.g. 9999-12-31T23:59:59-01:00 is past year 9999 in UTC
        raise ValueError(f"timestamp out of range: {value!r}") from exc


def normalize_iso(value: str) -> str:
    """Any timestamp ``parse_iso`` reads, in the canonical form; raises ValueError otherwise."""
    return utc_iso(parse_iso(value))
