"""The canonical UTC timestamp string for plugin output.

Plugins may import only the item model and the hook marker (ARCHITECTURE.md), so they cannot use
``mind_core.timestamps``; this produces the same fixed-width ``YYYY-MM-DDTHH:MM:SS.mmmZ`` form.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time


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
