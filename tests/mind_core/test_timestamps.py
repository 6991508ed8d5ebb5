"""The one timestamp module: what exports, frontmatter and mail headers write, read as UTC instants."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mind_core import harvest
from mind_core.timestamps import (
    epoch_to_iso,
    format_utc,
    is_valid_iso_timestamp,
    normalize_iso,
    parse_instant,
)

CANONICAL = [
    ("2024-05-01T10:00:00Z", "2024-05-01T10:00:00.000Z"),  # Claude, Gemini
    ("2024-05-01T10:00:00z", "2024-05-01T10:00:00.000Z"),
    ("2024-05-01T10:00:00.1Z", "2024-05-01T10:00:00.100Z"),
    ("2024-05-01T10:00:00.123456Z", "2024-05-01T10:00:00.123Z"),  # Claude
    ("2024-05-01T10:00:00.999999999Z", "2024-05-01T10:00:00.999Z"),
    ("2024-05-01T10:00:00,5Z", "2024-05-01T10:00:00.500Z"),
    ("2024-05-01T23:50:00-07:00", "2024-05-02T06:50:00.000Z"),
    ("2024-05-01T23:50:00-0700", "2024-05-02T06:50:00.000Z"),
    ("2024-05-02T09:10:00.5+0530", "2024-05-02T03:40:00.500Z"),
    ("2024-05-01T10:00:00+05", "2024-05-01T05:00:00.000Z"),
    ("2023-11-14T22:13:20.123000+00:00", "2023-11-14T22:13:20.123Z"),  # Claude projects
    ("2024-05-01T10:00:00", "2024-05-01T10:00:00.000Z"),  # no zone: UTC
    ("2024-05-01 10:00:00", "2024-05-01T10:00:00.000Z"),  # SQLite datetime('now')
    ("2024-05-01 10:00", "2024-05-01T10:00:00.000Z"),
    ("2024-05-01", "2024-05-01T00:00:00.000Z"),  # frontmatter date
    ("20240501T100000Z", "2024-05-01T10:00:00.000Z"),
    ("2024-W18-3", "2024-05-01T00:00:00.000Z"),
    ("  2024-05-01T10:00:00Z\n", "2024-05-01T10:00:00.000Z"),
    ("9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"),
    ("0999-06-15T00:53:20Z", "0999-06-15T00:53:20.000Z"),  # fixed width before year 1000
]

NOT_TIMESTAMPS = [
    "", " ", "yesterday", "2024-05-01T24:00:00Z", "2024-13-01T10:00:00Z", "2024-02-30", "2024-0501",
    "2024/05/01 10:00", "2024-05-01T10:00:00+25:00", "0000-01-01T00:00:00Z", "Z",
    "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00",  # the UTC instant leaves the calendar
]


@pytest.mark.parametrize(("value", "canonical"), CANONICAL)
def test_export_timestamps_normalize_to_canonical_utc(value: str, canonical: str) -> None:
    assert normalize_iso(value) == canonical
    assert parse_instant(value).tzinfo == UTC
    assert is_valid_iso_timestamp(canonical)


@pytest.mark.parametrize("value", NOT_TIMESTAMPS)
def test_anything_else_is_a_value_error(value: str) -> None:
    with pytest.raises(ValueError):
        parse_instant(value)


@pytest.mark.parametrize(
    ("seconds", "canonical"),
    [(0, "1970-01-01T00:00:00.000Z"), (1_700_000_000.5, "2023-11-14T22:13:20.500Z"),
     (-4e10, "0702-06-15T00:53:20.000Z")],
)
def test_chatgpt_epoch_seconds(seconds: float, canonical: str) -> None:
    assert epoch_to_iso(seconds) == canonical


def test_datetimes_and_dates_format_as_utc() -> None:
    aware = datetime(2024, 5, 1, 23, 50, 0, 999_999, tzinfo=timezone(timedelta(hours=-7)))  # a mail Date header
    assert format_utc(aware) == "2024-05-02T06:50:00.999Z"
    assert format_utc(datetime(2024, 5, 1, 10, 0, 0, 1_500)) == "2024-05-01T10:00:00.001Z"  # naive = UTC
    assert format_utc(date(2024, 5, 1)) == "2024-05-01T00:00:00.000Z"  # YAML date


def test_plugins_reach_the_module_through_the_harvest_package() -> None:
    assert (harvest.parse_instant, harvest.normalize_iso, harvest.format_utc, harvest.epoch_to_iso) == (
        parse_instant, normalize_iso, format_utc, epoch_to_iso,
    )


offsets = st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59)


@given(
    st.datetimes(min_value=datetime(1000, 1, 2), max_value=datetime(9999, 12, 30)),
    offsets,
    st.sampled_from(["T", " ", "t"]),
    st.booleans(),
)
def test_any_iso_instant_reads_as_the_same_utc_instant(moment: datetime, offset: int, sep: str, colon: bool) -> None:
    sign = "-" if offset < 0 else "+"
    hours, minutes = divmod(abs(offset), 60)
    zone = f"{sign}{hours:02d}{':' if colon else ''}{minutes:02d}"
    text = moment.strftime("%Y-%m-%d") + sep + moment.strftime("%H:%M:%S.%f") + zone
    expected = moment.replace(tzinfo=timezone(timedelta(minutes=offset))).astimezone(UTC)
    assert parse_instant(text) == expected
    assert parse_instant(normalize_iso(text)) == expected.replace(microsecond=expected.microsecond // 1000 * 1000)


@given(st.text(max_size=40))
def test_any_string_is_an_instant_or_a_value_error(value: str) -> None:
    try:
        moment = parse_instant(value)
    except ValueError:
        return
    assert moment.tzinfo == UTC
    assert is_valid_iso_timestamp(format_utc(moment))
