"""WhatsApp chat exports ("Export chat"): ``_chat.txt`` / ``WhatsApp Chat with NAME.txt``, the
``.zip`` the phone shares, or a folder holding them. One conversation item per chat, one message
(one frame) per chat message, the sender's name as its author and speaker.

The export is a text file, one message per line group, in the phone's locale (see docs/formats.md):

- iOS:       ``[31/12/2020, 14:05:33] Alice: text``
- Android:   ``31/12/2020, 14:05 - Alice: text``
- US 12-hour ``12/31/20, 2:05 PM - Alice: text``; German ``31.12.20, 14:05 - Alice: text``

Decisions (each pinned by tests/plugins/test_whatsapp.py):

- Day or month first is decided per file from its values: a first number above 12 makes the file
  day-first, a second number above 12 month-first; else, since messages are in time order, the
  number that goes back while the other goes forward within one year is the day (05/03 then
  02/04: day first); a file where nothing decides follows its locale's habit: a 12-hour clock
  with ``/`` is the US (month first), anything else day first. A four-digit first number is
  year-month-day. (The order of checks of whatsapp-chat-parser's ``daysBeforeMonths``.)
- Time zone: the export writes the phone's wall-clock time without a zone. It is read in the zone
  named by a ``.mind-timezone`` file beside the export (one IANA name, e.g. ``Europe/Berlin``: the
  per-source option, since a source registration has no options of its own), else as UTC, which is
  the same on every machine that harvests the file. The wall-clock text is kept (``local_time``)
  with the zone used (``timezone``).
- A line that does not open a message continues the previous one (multi-line messages).
- System messages: the end-to-end encryption notice is dropped (the same boilerplate in every
  chat); the others (joins, adds, subject changes) are kept as ``system`` frames without author.
- Media: ``<Media omitted>``, ``image omitted``, ``<attached: 00000012-PHOTO.jpg>`` and
  ``NAME (file attached)`` become a ``[image: NAME]``-style text and an ``attachments`` entry with
  the file's place in the export (``located``: whether the file is in the zip or folder).
- ``<This message was edited>`` is taken off the text and marks the message ``edited``; a deleted
  message ("This message was deleted") has no content left and is dropped, counted in the item's
  ``deleted_messages``.
- The sender's name is both ``author`` and ``role`` of the message: the speaker features
  (``HybridSearch.speaker_scores``) read ``provenance.role``, as chat turns of the benchmarks do.
"""

from __future__ import annotations

import io
import os
import re
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO
from zoneinfo import ZoneInfo

from mind_harvest.plugins._archive import (
    ARCHIVE_ERRORS,
    is_archive,
    member_basename,
    safe_files,
    scan_archive,
)
from mind_harvest.plugins._bounded import read_line
from mind_harvest.plugins._messaging import TIMEZONE_FILE, conversation, media_kind, read_zone

from mind_core.harvest import format_utc
from mind_core.harvest.items import (
    HarvestError,
    HarvestMessage,
    ScanEvent,
    stable_key,
)
from mind_core.harvest.source_files import file_fingerprint, open_source_file, walk_files
from mind_core.plugins import hookimpl

HEAD_LINES = 20  # detection reads at most this many lines
MAX_AUTHOR_CHARS = 100
MAX_MESSAGE_LINES = 10_000  # a "message" longer than this is a file that is not a chat export

_DATE = r"\d{1,4}[./-]\d{1,2}[./-]\d{1,4}\.?"
_TIME = r"\d{1,2}[:.]\d{2}(?:[:.]\d{2})?(?:\s?[AaPp]\.?\s?[Mm]\.?)?"
MESSAGE_START = re.compile(
    rf"^(?:\[(?P<bracket_date>{_DATE}),?\s+(?P<bracket_time>{_TIME})\]\s?"
    rf"|(?P<dash_date>{_DATE}),?\s+(?P<dash_time>{_TIME})\s[-\u2013]\s)(?P<rest>.*)$"
)
AUTHOR = re.compile(rf"^(?P<author>[^:\"\n]{{1,{MAX_AUTHOR_CHARS}}}?):\s?(?P<text>.*)$", re.DOTALL)
TIME_PARTS = re.compile(r"(\d{1,2})[:.](\d{2})(?:[:.](\d{2}))?\s?(?:([AaPp])\.?\s?[Mm]\.?)?$")
ENCRYPTION_NOTICE = re.compile(r"end-to-end encrypted|Ende-zu-Ende-verschl|chiffrés de bout en bout", re.I)
SYSTEM_TEXT = re.compile(
    r"joined using this group's invite link|\badded\b|\bleft$|\bremoved\b|created group|changed the subject"
    r"|changed this group's|changed the group|security code (?:with .* )?changed|changed their phone number"
    r"|is a contact|Missed (?:voice|video) call",
    re.I,
)
EDITED = re.compile(r"\s*<This message was edited>\s*$")
DELETED = re.compile(r"^(?:This message was deleted|You deleted this message)\.?$")
MEDIA_OMITTED = re.compile(
    r"^<?(?:(?P<generic>Media omitted|Medien ausgeschlossen|Médias omis)"
    r"|(?P<kind>image|video|audio|sticker|GIF|document|Contact card) omitted)>?$",
    re.I,
)
ATTACHED = re.compile(r"<attached: ([^<>\n]+)>")
FILE_ATTACHED = re.compile(r"^(?P<name>[^\n]+?\.\w{2,5}) \(file attached\)")
MARKS = "\u200e\u200f"  # direction marks: iOS writes one before a system or media text
INVISIBLE = str.maketrans({"\ufeff": "", "\u202f": " ", "\u00a0": " "})
CHAT_NAME = re.compile(r"^(?:_chat|WhatsApp Chat (?:with|mit|avec|con) .+|WhatsApp Chat - .+)\.txt$", re.I)


@dataclass
class RawMessage:
    """A message as it stands in the file: its stamp, the text after it, its first line."""

    date: str
    time: str
    rest: str
    line: int
    continuation: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join([self.rest, *self.continuation])


@dataclass(frozen=True)
class DateOrder:
    """Which of a date's three numbers is day, month and year (indices), and why."""

    day: int
    month: int
    year: int
    reason: str


def normalized(line: str) -> str:
    """A line without the byte-order mark, leading direction marks and odd spaces (U+202F before
    AM/PM) WhatsApp puts around stamps; marks inside the line are kept (they flag system texts)."""
    return line.rstrip("\r\n").translate(INVISIBLE).lstrip(MARKS)


def message_start(line: str) -> re.Match[str] | None:
    return MESSAGE_START.match(normalized(line))


def looks_like_chat(lines: Iterable[str]) -> bool:
    """Whether the first non-empty line opens a WhatsApp message (detection for plain .txt files)."""
    for line in lines:
        if line.strip():
            return message_start(line) is not None
    return False


def date_order(dates: Iterable[str], twelve_hour: bool) -> DateOrder:
    """The day/month/year positions of a file's dates, decided by their values (module docstring)."""
    numbers: list[tuple[int, int, int]] = []
    separator = "/"
    for value in dates:
        parts = re.split(r"[./-]", value.rstrip("."))
        separator = value[len(parts[0])]
        if len(parts[0]) == 4:
            return DateOrder(2, 1, 0, "year first")
        numbers.append((int(parts[0]), int(parts[1]), int(parts[2])))
    if any(first > 12 for first, _, _ in numbers):
        return DateOrder(0, 1, 2, "a first number above 12")
    if any(second > 12 for _, second, _ in numbers):
        return DateOrder(1, 0, 2, "a second number above 12")
    # Messages are in time order, so within one year the month never goes back: the number that
    # does is the day.
    for before, after in zip(numbers, numbers[1:], strict=False):
        if before[2] == after[2] and after[0] < before[0] and after[1] > before[1]:
            return DateOrder(0, 1, 2, "the first number went back within a year")
        if before[2] == after[2] and after[1] < before[1] and after[0] > before[0]:
            return DateOrder(1, 0, 2, "the second number went back within a year")
    if twelve_hour and separator == "/":
        return DateOrder(1, 0, 2, "undecided: a 12-hour clock with '/' reads month first (US)")
    return DateOrder(0, 1, 2, "undecided: day first")


def local_datetime(date_text: str, time_text: str, order: DateOrder) -> datetime:
    """The wall-clock time a message stamp writes; raises ValueError for an impossible one."""
    parts = [int(p) for p in re.split(r"[./-]", date_text.rstrip("."))]
    year = parts[order.year]
    year = year + 2000 if year < 100 else year
    clock = TIME_PARTS.match(time_text.strip())
    if clock is None:
        raise ValueError(f"unreadable time {time_text!r}")
    hour, minute, second = int(clock.group(1)), int(clock.group(2)), int(clock.group(3) or 0)
    if clock.group(4):
        hour = hour % 12 + (12 if clock.group(4).lower() == "p" else 0)
    return datetime(year, parts[order.month], parts[order.day], hour, minute, second)


def media_of(text: str, members: set[str]) -> tuple[str, list[dict[str, Any]]]:
    """The message text with its media as ``[kind: name]`` placeholders, and the attachments."""
    attachments: list[dict[str, Any]] = []
    omitted = MEDIA_OMITTED.match(text.strip())
    if omitted:
        kind = (omitted.group("kind") or "media").lower()
        attachments.append({"kind": kind, "name": None, "located": False, "placeholder": text.strip()})
        return f"[{kind} omitted]", attachments

    def attached(name: str) -> str:
        kind = media_kind(name)
        attachments.append({"kind": kind, "name": name, "located": name in members, "placeholder": None})
        return f"[{kind}: {name}]"

    text = ATTACHED.sub(lambda m: attached(m.group(1).strip()), text)
    file_attached = FILE_ATTACHED.match(text)
    if file_attached:
        name = file_attached.group("name").strip()
        text = attached(name) + text[file_attached.end() :]
    return text, attachments


def _decoded_lines(handle: io.BufferedIOBase) -> Iterator[str]:
    while True:
        raw, _ = read_line(handle)  # type: ignore[arg-type]
        if not raw:
            return
        yield raw.decode("utf-8", errors="replace")


def raw_messages(lines: Iterable[str]) -> Iterator[RawMessage]:
    """Messages as the file groups them: a stamped line and the lines that continue it."""
    current: RawMessage | None = None
    for number, line in enumerate(lines, start=1):
        match = message_start(line)
        if match:
            if current is not None:
                yield current
            current = RawMessage(
                match.group("bracket_date") or match.group("dash_date"),
                match.group("bracket_time") or match.group("dash_time"),
                match.group("rest"),
                number,
            )
        elif current is not None and len(current.continuation) < MAX_MESSAGE_LINES:
            current.continuation.append(normalized(line))
    if current is not None:
        yield current


@dataclass
class ChatFile:
    """One chat text inside the source: how to open it, its name, its media files."""

    relpath: str
    title: str
    opener: Callable[[], Any]  # a binary handle: a file or an archive member
    members: set[str]
    zone: ZoneInfo


def chat_title(relpath: str, container_name: str) -> str:
    stem = PurePosixPath(relpath).stem
    return container_name if stem == "_chat" else stem


def scan_chat(chat: ChatFile, where: str) -> Iterator[ScanEvent]:
    """The conversation item of one chat text (two reads: date order first, then the messages)."""
    try:
        with chat.opener() as handle:
            stamps = [(m.date, m.time) for m in raw_messages(_decoded_lines(handle))]
    except ARCHIVE_ERRORS as exc:
        yield HarvestError(where, f"cannot read chat: {exc}", record=chat.relpath)
        return
    if not stamps:
        yield HarvestError(where, "no WhatsApp message lines found", record=chat.relpath)
        return
    twelve_hour = any(re.search(r"[AaPp]\.?\s?[Mm]\.?$", time) for _, time in stamps)
    order = date_order((date for date, _ in stamps), twelve_hour)
    messages: list[HarvestMessage] = []
    occurrences: dict[tuple[str, str, str], int] = {}
    deleted = dropped_notices = 0
    with chat.opener() as handle:
        for raw in raw_messages(_decoded_lines(handle)):
            try:
                moment = local_datetime(raw.date, raw.time, order).replace(tzinfo=chat.zone)
            except ValueError as exc:
                yield HarvestError(
                    where, f"unreadable message time: {exc}", record=f"{chat.relpath} line {raw.line}"
                )
                continue
            author_match = AUTHOR.match(raw.rest)
            author = author_match.group("author").strip().strip(MARKS) if author_match else None
            text = "\n".join([author_match.group("text") if author_match else raw.rest, *raw.continuation])
            system = author is None or (
                text[:1] != ""
                and text[:1] in MARKS
                and bool(SYSTEM_TEXT.search(text) or ENCRYPTION_NOTICE.search(text))
            )
            text = text.replace("\u200e", "").replace("\u200f", "")
            if system and ENCRYPTION_NOTICE.search(text):
                dropped_notices += 1
                continue
            if DELETED.match(text.strip()):
                deleted += 1
                continue
            edited = bool(EDITED.search(text))
            text = EDITED.sub("", text).strip()
            text, attachments = media_of(text, chat.members)
            if not text:
                continue
            speaker = None if system else author
            local = f"{raw.date} {raw.time}"
            key_parts = (local, speaker or "", text[:200] if system else "")
            occurrence = occurrences.get(key_parts, 0)
            occurrences[key_parts] = occurrence + 1
            metadata: dict[str, Any] = {
                "line": raw.line,
                "local_time": local,
                "timezone": chat.zone.key,
            }
            if attachments:
                metadata["attachments"] = [
                    {**a, "path": _member_path(chat.relpath, a["name"]) if a["located"] else None}
                    for a in attachments
                ]
            if edited:
                metadata["edited"] = True
            messages.append(
                HarvestMessage(
                    key=stable_key("whatsapp", *key_parts, occurrence),
                    text=text,
                    role="system" if system else speaker,
                    author=speaker,
                    timestamp=format_utc(moment),
                    metadata=metadata,
                )
            )
    yield conversation(
        "whatsapp",
        chat.relpath,
        chat.title,
        messages,
        {
            "path": chat.relpath,
            "date_order": order.reason,
            "timezone": chat.zone.key,
            "deleted_messages": deleted,
            "dropped_notices": dropped_notices,
        },
    )


def _member_path(chat_relpath: str, name: str) -> str:
    parent = PurePosixPath(chat_relpath).parent
    return (parent / name).as_posix() if str(parent) != "." else name


class WhatsAppSource:
    """WhatsApp "Export chat" text files, their zip, or a folder of exports."""

    kind = "whatsapp"
    display_name = "WhatsApp chat export"

    def detect(self, path: Path) -> bool:
        return detect_confidence(Path(path)) >= 0.5

    def scan(self, path: Path) -> Iterator[ScanEvent]:
        root = Path(path)
        if is_archive(root):
            zone, problem = read_zone(root.parent)
            if problem:
                yield HarvestError(str(root.parent / TIMEZONE_FILE), problem)
            yield from scan_archive(root, lambda archive, where: _scan_members(archive, where, root, zone))
            return
        if root.exists() and not root.is_dir():  # a FIFO or device here is refused when opened
            zone, problem = read_zone(root.parent)
            if problem:
                yield HarvestError(str(root.parent / TIMEZONE_FILE), problem)
            chat = ChatFile(
                root.name, chat_title(root.name, root.parent.name), _opener(root), _files_beside(root), zone
            )
            yield from scan_chat(chat, str(root))
            return
        if not root.is_dir():
            yield HarvestError(str(root), "no such file or folder")
            return
        for found in walk_files(root, _export_name, _visible_folders):
            if isinstance(found, HarvestError):
                yield found
            elif found.suffix.lower() == ".zip":
                if detect_confidence(found) > 0:
                    yield from self.scan(found)
            else:
                try:
                    is_chat = _head_is_chat(found)
                except OSError as exc:  # over the size limit, or swapped for a FIFO since the walk
                    yield HarvestError(str(found), f"cannot read: {exc.strerror or exc}")
                    continue
                if not is_chat:
                    continue
                zone, problem = read_zone(found.parent)
                if problem:
                    yield HarvestError(str(found.parent / TIMEZONE_FILE), problem)
                relpath = found.relative_to(root).as_posix()
                title = chat_title(relpath, found.parent.name)
                yield from scan_chat(
                    ChatFile(relpath, title, _opener(found), _files_beside(found), zone), str(found)
                )

    def fingerprint(self, path: Path) -> str:
        return file_fingerprint(Path(path), ("*.txt", "*.zip", TIMEZONE_FILE))


def _export_name(name: str) -> bool:
    return not name.startswith(".") and name.lower().endswith((".txt", ".zip"))


def _visible_folders(folder: Path, names: list[str]) -> list[str]:
    return [name for name in names if not name.startswith(".")]


def _opener(file: Path) -> Callable[[], BinaryIO]:
    """Opens the chat text safely each time (it is read twice: dates first, then messages)."""
    return lambda: open_source_file(file, streamed=True)


def _files_beside(file: Path) -> set[str]:
    """The names of the files beside a chat text (its media, when the export kept them)."""
    try:
        with os.scandir(file.parent) as listing:
            return {entry.name for entry in listing if entry.is_file()}
    except OSError:
        return set()


def _scan_members(archive: zipfile.ZipFile, where: str, root: Path, zone: ZoneInfo) -> Iterator[ScanEvent]:
    files = list(safe_files(archive))
    names = {member_basename(info) for info in files}
    chats = [
        info for info in files if info.filename.lower().endswith(".txt") and _member_is_chat(archive, info)
    ]
    if not chats:
        yield HarvestError(where, "no WhatsApp chat text in the archive")
    for info in chats:
        relpath = f"{root.name}/{info.filename}"
        chat = ChatFile(
            relpath, chat_title(info.filename, root.stem), lambda i=info: archive.open(i), names, zone
        )
        yield from scan_chat(chat, where)


def _head_lines(handle: Any) -> list[str]:
    lines = []
    for _ in range(HEAD_LINES):
        raw, _size = read_line(handle, 4096)
        if not raw:
            break
        lines.append(raw.decode("utf-8", errors="replace"))
    return lines


def _head_is_chat(file: Path) -> bool:
    with open_source_file(file, streamed=True) as handle:
        return looks_like_chat(_head_lines(handle))


def _file_is_chat(file: Path) -> bool:
    try:
        return _head_is_chat(file)
    except OSError:
        return False


def _member_is_chat(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bool:
    try:
        with archive.open(info) as handle:
            return looks_like_chat(_head_lines(handle))
    except ARCHIVE_ERRORS:
        return False


def detect_confidence(path: Path) -> float:
    """Sure of a chat-named text whose lines are WhatsApp messages, of a zip holding one, and of a
    folder with one at its top; plausible for any text file that opens with a message line."""
    if is_archive(path):
        try:
            with zipfile.ZipFile(path) as archive:
                texts = [i for i in safe_files(archive) if i.filename.lower().endswith(".txt")]
                return 0.95 if any(_member_is_chat(archive, info) for info in texts[:5]) else 0.0
        except ARCHIVE_ERRORS:
            return 0.0
    if path.is_file():
        if path.suffix.lower() != ".txt" or not _file_is_chat(path):
            return 0.0
        return 0.95 if CHAT_NAME.match(path.name) else 0.85
    if path.is_dir():
        try:
            entries = sorted(path.iterdir())[:200]
        except OSError:
            return 0.0
        if any(e.is_file() and CHAT_NAME.match(e.name) and _file_is_chat(e) for e in entries):
            return 0.9
    return 0.0


@hookimpl
def register_sources(register: Any) -> None:
    register(WhatsAppSource())


@hookimpl
def detect_sources(path: Path) -> dict[str, float]:
    return {"whatsapp": detect_confidence(Path(path))}
