"""plugins.timefmt against mind_core.timestamps: the plugins' own copy must read and write the same.

The one intended difference: for years before 1000 ``format_utc`` (strftime) writes an unpadded
year that is not the canonical fixed width, and ``utc_iso`` pads it to four digits.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mind_core import timestamps
from plugins import timefmt

TIMESTAMPS = [
    "2024-05-01T10:00:00Z",
    "2024-05-01T10:00:00z",
    "2024-05-01T10:00:00.000Z",
    "2024-05-01T10:00:00.1Z",
    "2024-05-01T10:00:00.12Z",
    "2024-05-01T10:00:00.123456Z",
    "2024-05-01T10:00:00.1234567Z",
    "2024-05-01T10:00:00.999999999Z",
    "2024-05-01T10:00:00,5Z",
    "2024-05-01T23:50:00-07:00",
    "2024-05-01T23:50:00-0700",
    "2024-05-02T09:10:00+02:00",
    "2024-05-02T09:10:00.5+0530",
    "2024-05-01T10:00:00+05",
    "2024-05-01T10:00:00",
    "2024-05-01 10:00:00",
    "2024-05-01 10:00",
    "2024-05-01",
    "20240501T100000Z",
    "2024-W18-3",
    "  2024-05-01T10:00:00Z\n",
    "2023-11-14T22:13:20.123000+00:00",
    "9999-12-31T23:59:59.999Z",
    "1000-01-01T00:00:00Z",
    "1970-01-01T00:00:00Z",
]

NOT_TIMESTAMPS = [
    "",
    " ",
    "yesterday",
    "2024-05-01T24:00:00Z",
    "2024-13-01T10:00:00Z",
    "2024-02-30",
    "2024-0501",
    "2024/05/01 10:00",
    "2024-05-01T10:00:00+25:00",
    "0000-01-01T00:00:00Z",
    "Z",
]

OUT_OF_RANGE = ["9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00"]

EPOCHS = [0, 0.0, 1, 1_700_000_000, 1_700_000_000.5, 1_700_000_000.0004, 1_700_000_000.9999996, -1.5, 2.5e11]


@pytest.mark.parametrize("value", TIMESTAMPS)
def test_parses_and_normalizes_like_mind_core(value: str) -> None:
    assert timefmt.parse_iso(value) == timestamps.parse_instant(value)
    assert timefmt.parse_iso(value).tzinfo == UTC
    assert timefmt.normalize_iso(value) == timestamps.normalize_iso(value)


@pytest.mark.parametrize("value", NOT_TIMESTAMPS)
def test_rejects_what_mind_core_rejects(value: str) -> None:
    with pytest.raises(ValueError):
        timestamps.parse_instant(value)
    with pytest.raises(ValueError):
        timefmt.parse_iso(value)


@pytest.mark.parametrize("value", OUT_OF_RANGE)
def test_instants_outside_the_calendar_are_invalid_like_mind_core(value: str) -> None:
    with pytest.raises(ValueError, match="out of range"):
        timestamps.parse_instant(value)
    with pytest.raises(ValueError, match="out of range"):
        timefmt.parse_iso(value)


@pytest.mark.parametrize("seconds", EPOCHS)
def test_epoch_like_mind_core(seconds: float) -> None:
    assert timefmt.epoch_iso(seconds) == timestamps.epoch_to_iso(seconds)


def test_formats_like_mind_core() -> None:
    aware = datetime(2024, 5, 1, 23, 50, 0, 999_999, tzinfo=timezone(timedelta(hours=-7)))
    naive = datetime(2024, 5, 1, 10, 0, 0, 1_500)
    for moment in (aware, naive):
        assert timefmt.utc_iso(moment) == timestamps.format_utc(moment)
    assert timefmt.utc_iso(aware) == "2024-05-02T06:50:00.999Z"


def test_years_before_1000_keep_the_fixed_width() -> None:
    moment = timefmt.parse_iso("0999-06-15T00:53:20Z")
    assert moment == timestamps.parse_instant("0999-06-15T00:53:20Z")
    assert timefmt.utc_iso(moment) == "0999-06-15T00:53:20.000Z"
    assert timestamps.is_valid_iso_timestamp(timefmt.utc_iso(moment))
    assert timefmt.epoch_iso(-4e10) == "0702-06-15T00:53:20.000Z"


def _outcome(parse, value: str) -> object:
    try:
        return parse(value)
    except (ValueError, OverflowError) as exc:
        return type(exc)


iso_like = st.builds(
    lambda date, sep, clock, fraction, zone, pad: f"{pad}{date}{sep}{clock}{fraction}{zone}{pad}",
    st.dates(min_value=datetime(1, 1, 1).date()).map(lambda d: f"{d.year:04d}-{d.month:02d}-{d.day:02d}"),
    st.sampled_from(["T", " ", "t"]),
    st.times().map(lambda t: t.strftime("%H:%M:%S")),
    st.one_of(st.just(""), st.from_regex(r"\A[.,][0-9]{1,12}\Z")),
    st.one_of(
        st.sampled_from(["", "Z", "z"]),
        st.from_regex(r"\A[+-][0-2][0-9]:?[0-5][0-9]\Z"),
    ),
    st.sampled_from(["", " ", "\t"]),
)


@given(st.one_of(iso_like, st.text(max_size=40), st.from_regex(r"\A[0-9:TZ+.\- ]{0,32}\Z")))
def test_any_string_reads_the_same(value: str) -> None:
    expected = _outcome(timestamps.parse_instant, value)
    assert _outcome(timefmt.parse_iso, value) == expected
    if isinstance(expected, datetime) and expected.year >= 1000:
        assert timefmt.normalize_iso(value) == timestamps.normalize_iso(value)
