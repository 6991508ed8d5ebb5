"""Event time: parsing, normalizing to UTC ISO-8601, and comparing instants.

Everything this package writes is ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (fixed width, UTC), so string
order equals time order for our own rows; SQL that must also handle rows written by the original
(``YYYY-MM-DD HH:MM:SS``) compares ``julianday(...)`` values, which parse both.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

# The original's strict gate (reference-behaviour §2): a T, and a zone.
ISO_WITH_ZONE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})$")


def format_utc(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}.{moment.microsecond // 1000:03d}Z"
    )


def now_iso() -> str:
    return format_utc(datetime.now(UTC))


def parse_instant(value: str) -> datetime:
    """Parse ISO-8601 (with Z, ±HH:MM, ±HHMM, any fraction) or SQLite's naive UTC format."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    zone = re.search(r"([+-])(\d{2})(\d{2})$", text)
    if zone and text[-5] in "+-" and ":" not in text[-5:]:
        text = text[:-5] + f"{zone.group(1)}{zone.group(2)}:{zone.group(3)}"
    frac = re.search(r"\.(\d+)", text)
    if frac and len(frac.group(1)) != 6:  # fromisoformat wants 3 or 6 digits on 3.11
        digits = (frac.group(1) + "000000")[:6]
        text = text[: frac.start(1)] + digits + text[frac.end(1) :]
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # SQLite datetime('now') is UTC without a zone
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
    """Any parseable timestamp to our canonical UTC form; raises ValueError when unparseable."""
    return format_utc(parse_instant(value))


def epoch_to_iso(seconds: float) -> str:
    return format_utc(datetime.fromtimestamp(float(seconds), UTC))
