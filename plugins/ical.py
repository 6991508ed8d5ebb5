"""iCalendar files (``.ics``, RFC 5545), one file or a folder of them: one note item per event.

Each ``VEVENT`` is one item and one frame, dated by the event's own start: ``DTSTART`` read in its
``TZID`` zone (or UTC ``Z``) and stored as UTC, the zone and the local start and end kept in the
metadata; an all-day event (a ``DATE`` value) starts at midnight UTC of its day; a floating time (no
zone) is read as UTC and marked ``floating``. A recurring event is one frame at its first start,
its ``RRULE`` kept as text (occurrences are not expanded: a weekly meeting would otherwise fill the
mind with identical frames); an overridden occurrence (``RECURRENCE-ID``) is an item of its own in
the series' session (one session per ``UID``).

People: the organizer and the attendees, each a name (``CN``) and an address (``mailto:``), are
written into the frame's text as ``Organizer: Name <address>`` / ``Attendee: Name <address>`` lines
(the form the knowledge graph's text extraction reads as a person) and into the message metadata
in the mail's shape (``from``: the organizer, ``to``: the attendees, item ``thread_root``: the
UID) with their role and participation status (``attendees``).

Kept: summary, description, location, status, categories, URL. Dropped: alarms (``VALARM``),
attachments' content, to-dos and journal entries (``VTODO``, ``VJOURNAL``), free/busy.
The file is read line by line; each event is parsed on its own (with the file's ``VTIMEZONE``
definitions), so one broken event is a located error and the others are kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any

from mind_harvest.plugins._bounded import read_line
from mind_harvest.plugins._file_sources import FileSource, source_hooks

from mind_core.harvest import format_utc
from mind_core.harvest.items import (
    HarvestError,
    HarvestItem,
    HarvestMessage,
    ScanEvent,
    stable_key,
)
from mind_core.harvest.source_files import open_source_file

ICS_SUFFIXES = (".ics", ".ical", ".ifb")
MAX_EVENT_LINES = 20_000  # an event longer than this is a broken file, not an event
# An event whose time cannot be read is reported and skipped, never kept at the harvest's time;
# another unreadable property is dropped from the event and reported.
TIME_PROPERTIES = frozenset({"DTSTART", "DTEND", "RECURRENCE-ID"})


def party(value: Any) -> dict[str, str | None]:
    """A ``CAL-ADDRESS`` property as ``{name, address, role, status}``."""
    params = getattr(value, "params", {}) or {}
    address = str(value).strip()
    if address.lower().startswith("mailto:"):
        address = address[7:]
    return {
        "name": (params.get("CN") or "").strip().strip('"') or None,
        "address": address.lower() or None,
        "role": params.get("ROLE"),
        "status": params.get("PARTSTAT"),
    }


def shown_party(person: dict[str, str | None]) -> str:
    if person["name"] and person["address"]:
        return f"{person['name']} <{person['address']}>"
    return person["name"] or person["address"] or ""


def _moment(value: Any) -> tuple[str | None, str | None, bool, bool]:
    """``(UTC instant, local ISO text, all-day, floating)`` of a DTSTART/DTEND value."""
    if isinstance(value, datetime):
        floating = value.tzinfo is None
        return format_utc(value), value.isoformat(), False, floating
    if isinstance(value, date):
        return format_utc(value), value.isoformat(), True, False
    return None, None, False, False


def _text(event: Any, name: str) -> str | None:
    value = event.get(name)
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def event_item(event: Any, relpath: str) -> HarvestItem:
    """The note item of one ``VEVENT`` (``icalendar.Event``)."""
    uid = _text(event, "UID") or stable_key(relpath, _text(event, "SUMMARY"), _text(event, "DTSTART"))
    recurrence = event.get("RECURRENCE-ID")
    recurrence_text = recurrence.to_ical().decode() if recurrence is not None else None
    start_value = event.decoded("DTSTART") if event.get("DTSTART") is not None else None
    end_value = event.decoded("DTEND") if event.get("DTEND") is not None else None
    start, local_start, all_day, floating = _moment(start_value)
    end, local_end, _, _ = _moment(end_value)
    zone = event.get("DTSTART").params.get("TZID") if event.get("DTSTART") is not None else None
    organizer = party(event["ORGANIZER"]) if event.get("ORGANIZER") is not None else None
    raw_attendees = event.get("ATTENDEE")
    attendees = [
        party(a)
        for a in (
            raw_attendees if isinstance(raw_attendees, list) else [raw_attendees] if raw_attendees else []
        )
    ]
    summary = _text(event, "SUMMARY") or "(no title)"
    location, description, status = (
        _text(event, "LOCATION"),
        _text(event, "DESCRIPTION"),
        _text(event, "STATUS"),
    )
    rrule = event.get("RRULE").to_ical().decode() if event.get("RRULE") is not None else None
    categories = [str(c) for cats in _as_list(event.get("CATEGORIES")) for c in getattr(cats, "cats", [cats])]
    when = local_start or "no start"
    if local_end:
        when += f" to {local_end}"
    if zone:
        when += f" ({zone})"
    lines = [summary, f"When: {when}"]
    if rrule:
        lines.append(f"Repeats: {rrule}")
    if location:
        lines.append(f"Where: {location}")
    if status:
        lines.append(f"Status: {status.lower()}")
    if organizer:
        lines.append(f"Organizer: {shown_party(organizer)}")
    lines += [f"Attendee: {shown_party(a)}" for a in attendees if shown_party(a)]
    text = "\n".join(lines) + (f"\n\n{description}" if description else "")
    metadata: dict[str, Any] = {
        "uid": uid,
        "start": local_start,
        "end": local_end,
        "end_utc": end,
        "timezone": zone,
        "all_day": all_day,
        "floating": floating,
        "location": location,
        "status": status,
        "recurrence_rule": rrule,
        "recurrence_id": recurrence_text,
        "categories": categories,
        "url": _text(event, "URL"),
        "organizer": organizer,
        "attendees": attendees,
        "from": shown_party(organizer) if organizer else None,
        "to": [shown_party(a) for a in attendees if shown_party(a)],
    }
    key = stable_key("icalendar", relpath, uid, recurrence_text)
    return HarvestItem(
        key=key,
        kind="note",
        title=summary,
        container_key=f"{relpath}#{uid}",
        messages=[
            HarvestMessage(
                key=stable_key("icalendar", uid, recurrence_text),
                text=text,
                author=(organizer["name"] or organizer["address"]) if organizer else None,
                timestamp=start,
                metadata=metadata,
            )
        ],
        metadata={"path": relpath, "thread_root": uid, "calendar_file": relpath},
        timestamp=start,
    )


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def calendar_blocks(handle: Any) -> Iterator[tuple[int, str, list[str]]]:
    """``(first line, component name, raw lines)`` of each VTIMEZONE and VEVENT, read line by line
    (RFC 5545 line folding is left to the parser: a folded line never begins with ``BEGIN:``)."""
    depth_name: str | None = None
    lines: list[str] = []
    start = 0
    number = 0
    while True:
        raw, _ = read_line(handle)
        if not raw:
            break
        number += 1
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        upper = line.strip().upper()
        if depth_name is None:
            if upper in ("BEGIN:VEVENT", "BEGIN:VTIMEZONE"):
                depth_name, lines, start = upper[6:], [line], number
            continue
        if len(lines) < MAX_EVENT_LINES:
            lines.append(line)
        if upper == f"END:{depth_name}":
            yield start, depth_name, lines
            depth_name = None
    if depth_name is not None:
        yield start, f"unterminated {depth_name}", lines


def scan_calendar(file: Path, relpath: str) -> Iterator[ScanEvent]:
    import icalendar

    where = str(file)
    zones: list[str] = []
    try:
        handle = open_source_file(file, streamed=True)
    except OSError as exc:
        yield HarvestError(where, f"cannot read: {exc.strerror or exc}")
        return
    with handle:
        for line, name, lines in calendar_blocks(handle):
            if name == "VTIMEZONE":
                zones.append("\r\n".join(lines))
                continue
            if name != "VEVENT":
                yield HarvestError(
                    where, f"{name.lower()} at the end of the file; skipped", record=f"line {line}"
                )
                continue
            text = "\r\n".join(["BEGIN:VCALENDAR", "VERSION:2.0", *zones, *lines, "END:VCALENDAR", ""])
            try:
                events = list(icalendar.Calendar.from_ical(text).walk("VEVENT"))
                broken = [(name, reason) for event in events for name, reason in getattr(event, "errors", [])]
                if any(name in TIME_PROPERTIES for name, _ in broken):
                    raise ValueError("; ".join(f"{name}: {reason}" for name, reason in broken))
                items = [event_item(event, relpath) for event in events]
            except Exception as exc:  # icalendar raises ValueError, KeyError and others on bad input
                yield HarvestError(
                    where, f"unreadable event: {type(exc).__name__}: {exc}", record=f"line {line}"
                )
                continue
            for name, reason in broken:
                yield HarvestError(where, f"event property {name} dropped: {reason}", record=f"line {line}")
            yield from items


class ICalendarSource(FileSource):
    """iCalendar files or a folder of them: sure of a file that begins ``BEGIN:VCALENDAR``,
    plausible for a folder with .ics files at its top."""

    kind = "icalendar"
    display_name = "iCalendar events (.ics)"
    suffixes = ICS_SUFFIXES
    scan_file = staticmethod(scan_calendar)
    openings = (b"BEGIN:VCALENDAR",)


register_sources, detect_sources = source_hooks(ICalendarSource)
