"""iCalendar files written by the test: events at their own time, people with addresses."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from mind_harvest.plugins.ical import ICalendarSource

from mind_core import plugins
from mind_core.harvest.items import HarvestError, HarvestItem
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.testing.fakes import HashingEmbedder
from mind_core.testing.message_exports import write_ics

SOURCE = ICalendarSource()
BERLIN = ZoneInfo("Europe/Berlin")
REVIEW = {
    "uid": "review@example.org",
    "summary": "Design review, budget",
    "start": datetime(2024, 5, 1, 9, 0, tzinfo=BERLIN),
    "end": datetime(2024, 5, 1, 10, 30, tzinfo=BERLIN),
    "zone": "Europe/Berlin",
    "organizer": ("Alice Smith", "Alice@Example.org"),
    "attendees": [("Bob Jones", "bob@example.org"), ("Carol White", "carol@example.org")],
    "location": "Room 4",
    "description": "Agenda: the Q3 budget and the hiring plan for the data team, which is long enough to fold",
    "rrule": "FREQ=WEEKLY;COUNT=4",
}
HOLIDAY = {
    "uid": "holiday@example.org",
    "summary": "Holiday",
    "start": date(2024, 8, 1),
    "end": date(2024, 8, 15),
}
MOVED = {
    "uid": "review@example.org",
    "summary": "Design review (moved)",
    "start": datetime(2024, 5, 9, 14, 0, tzinfo=BERLIN),
    "recurrence_id": datetime(2024, 5, 8, 9, 0, tzinfo=BERLIN),
    "zone": "Europe/Berlin",
}
STANDUP_UTC = {
    "uid": "standup@example.org",
    "summary": "Standup",
    "start": datetime(2024, 1, 10, 8, 0, tzinfo=UTC),
}


def scan(path: Path) -> tuple[list[HarvestItem], list[HarvestError]]:
    events = list(SOURCE.scan(path))
    return [e for e in events if isinstance(e, HarvestItem)], [
        e for e in events if isinstance(e, HarvestError)
    ]


def test_each_event_is_a_frame_at_its_own_start_in_its_zone(tmp_path: Path) -> None:
    path = write_ics(tmp_path / "work.ics", [REVIEW, HOLIDAY, MOVED, STANDUP_UTC], with_zone_definition=True)
    assert plugins.detect_source(path).kind == "icalendar"
    items, errors = scan(path)
    assert errors == []
    by_title = {i.title: i.messages[0] for i in items}
    assert {t: m.timestamp for t, m in by_title.items()} == {
        "Design review, budget": "2024-05-01T07:00:00.000Z",  # 09:00 summer time in Berlin
        "Holiday": "2024-08-01T00:00:00.000Z",
        "Design review (moved)": "2024-05-09T12:00:00.000Z",
        "Standup": "2024-01-10T08:00:00.000Z",
    }
    review = by_title["Design review, budget"].metadata
    assert (review["start"], review["end"], review["timezone"]) == (
        "2024-05-01T09:00:00+02:00",
        "2024-05-01T10:30:00+02:00",
        "Europe/Berlin",
    )
    assert (
        review["recurrence_rule"] == "FREQ=WEEKLY;COUNT=4" and by_title["Holiday"].metadata["all_day"] is True
    )
    moved = next(i for i in items if i.title == "Design review (moved)")
    original = next(i for i in items if i.title == "Design review, budget")
    assert moved.container_key == original.container_key and moved.key != original.key  # one series


def test_organizer_and_attendees_are_people_with_addresses(tmp_path: Path) -> None:
    items, _ = scan(write_ics(tmp_path / "work.ics", [REVIEW]))
    message = items[0].messages[0]
    assert message.author == "Alice Smith"
    assert message.metadata["organizer"] == {
        "name": "Alice Smith", "address": "alice@example.org", "role": None, "status": None,
    }  # fmt: skip
    assert [(a["name"], a["address"], a["status"]) for a in message.metadata["attendees"]] == [
        ("Bob Jones", "bob@example.org", "ACCEPTED"),
        ("Carol White", "carol@example.org", "ACCEPTED"),
    ]
    assert message.metadata["from"] == "Alice Smith <alice@example.org>"
    assert message.metadata["to"] == ["Bob Jones <bob@example.org>", "Carol White <carol@example.org>"]
    assert "Attendee: Bob Jones <bob@example.org>" in message.text
    assert message.text.endswith("the hiring plan for the data team, which is long enough to fold")


def test_a_broken_event_is_reported_and_the_others_kept(tmp_path: Path) -> None:
    path = write_ics(tmp_path / "work.ics", [STANDUP_UTC, HOLIDAY])
    text = path.read_text().replace("DTSTART:20240110T080000Z", "DTSTART:2024-99-99T99")
    path.write_text(text)
    items, errors = scan(path)
    assert [i.title for i in items] == ["Holiday"]
    assert len(errors) == 1 and "unreadable event" in errors[0].reason and "DTSTART" in errors[0].reason
    assert errors[0].record == "line 4"


def test_harvested_events_put_their_people_in_the_graph(tmp_path: Path) -> None:
    path = write_ics(tmp_path / "cal" / "work.ics", [REVIEW])
    with Mind.open(tmp_path / "a.mind", embedder=HashingEmbedder()) as mind:
        register_source(mind, None, path, "cal")
        report = harvest(mind, "cal")
        assert report.imported.errors == [] and report.imported.frames_new == 1
        people = {e.name for e in mind.knowledge.get_entities_by_type("person")}
        assert {"Alice Smith", "Bob Jones", "Carol White"} <= people
        frame = mind.search.search("design review budget", limit=1)[0].frame
        assert frame.created_at == "2024-05-01T07:00:00.000Z"


def test_a_fifo_named_like_a_calendar_is_named_and_the_folder_read(tmp_path: Path) -> None:
    write_ics(tmp_path / "work.ics", [STANDUP_UTC])
    os.mkfifo(tmp_path / "pipe.ics")
    items, errors = scan(tmp_path)
    assert [i.title for i in items] == ["Standup"]
    assert [(e.path, e.reason) for e in errors] == [
        (str(tmp_path / "pipe.ics"), "a named pipe (FIFO), not a regular file; skipped")
    ]
    items, errors = scan(tmp_path / "pipe.ics")  # given as the source itself: refused, not opened
    assert items == [] and "named pipe" in errors[0].reason
