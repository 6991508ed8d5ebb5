"""Telegram Desktop exports ("Export chat history" / "Export Telegram data", JSON): ``result.json``,
the export folder holding it, or a folder of such exports. One conversation item (one session)
per chat, one frame per message, the sender's name as its author and speaker.

The file is either one chat (``{"name", "type", "id", "messages": [...]}``) or the whole account
(``{"about", "personal_information", ..., "chats": {"list": [chat, ...]}, "left_chats": ...}``);
see docs/formats.md. Decisions (each pinned by tests/plugins/test_telegram.py):

- Messages are streamed one at a time (``_jsonwalk``): a broken message costs that message alone
  and is reported with its position; the account's other sections are skipped unread.
- Time: ``date_unixtime`` is the instant. ``date`` is the exporting computer's wall clock without
  a zone; it is kept (``local_time``) with the offset the two give (``timezone``, ``+02:00``). An
  export older than ``date_unixtime`` (2021) is read in the zone of a ``.mind-timezone`` file
  beside it, else UTC, as WhatsApp's.
- ``text`` is a string or a list of plain strings and entities (``{"type": "link", "text": ...}``);
  their texts are joined, a ``text_link`` keeps its address in parentheses.
- Media become placeholders with an ``attachments`` entry (``photo``, ``file`` with
  ``media_type``; its path relative to ``result.json``, ``located`` when the file is there; a
  file the export left out, "(File not included...)", is ``[kind omitted]``); polls, contacts
  and locations become text.
- Service messages (joins, invites, title changes, pins, calls) are ``system`` frames without an
  author, their actor in the metadata; ``unsupported`` messages and messages without text or
  media are counted in ``skipped_messages``. Telegram exports hold no deleted messages.
- ``edited`` marks the message ``edited`` (the export holds its latest text) with ``edited_at``;
  ``reply_to_message_id`` is ``in_reply_to`` (and ``reply_to_author`` when the message replied
  to is in the export), as a mail's In-Reply-To; ``forwarded_from`` is kept.
- The sender's name (``from``; "Deleted Account" when null) is both ``author`` and ``role``;
  ``from_id`` is kept as ``author_id``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path, PurePosixPath
from typing import Any
from zoneinfo import ZoneInfo

from mind_harvest.plugins._file_sources import scan_path, source_hooks
from mind_harvest.plugins._jsonhead import read_head
from mind_harvest.plugins._jsonstream import JSONStreamError, note_reasons
from mind_harvest.plugins._jsonwalk import Array, LostRecord, Scalar, array_records, walk
from mind_harvest.plugins._messaging import (
    TIMEZONE_FILE,
    attachment,
    conversation,
    media_kind,
    read_zone,
    stamp_metadata,
)

from mind_core.harvest import format_utc
from mind_core.harvest.items import HarvestError, HarvestMessage, ScanEvent
from mind_core.harvest.source_files import file_fingerprint, open_source_file

KIND = "telegram"
EXPORT_FILE = "result.json"
CHAT_TYPES = (
    "personal_chat", "bot_chat", "private_group", "private_supergroup", "public_supergroup",
    "private_channel", "public_channel", "saved_messages", "replies",
)  # fmt: skip
MESSAGE_ARRAYS = (("messages",), ("chats", "list", "*", "messages"), ("left_chats", "list", "*", "messages"))
NOT_INCLUDED = "("  # "(File not included. ...)", "(File unavailable, ...)": the file is not in the export
DELETED_ACCOUNT = "Deleted Account"
_CHAT_TYPE = rb'"type"\s*:\s*"(?:' + b"|".join(t.encode() for t in CHAT_TYPES) + rb')"'


def looks_like_telegram(head: bytes) -> bool:
    """A single chat (a chat ``type`` and ``messages``) or an account export (it opens with
    ``about`` and holds ``personal_information`` or ``chats``)."""
    opening = head.lstrip()[:1]
    if opening != b"{":
        return False
    if re.search(_CHAT_TYPE, head) and re.search(rb'"messages"\s*:', head):
        return True
    first = re.match(rb'\{\s*"about"\s*:', head.lstrip())
    return (
        first is not None
        and re.search(rb'"(?:personal_information|chats|frequent_contacts)"\s*:', head) is not None
    )


def message_text(value: Any) -> str:
    """A message's ``text``: a string, or a list of strings and entities."""
    if isinstance(value, str):
        return value
    parts: list[str] = []
    for part in value if isinstance(value, list) else []:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            href = part.get("href")
            link = (
                f" ({href})"
                if part.get("type") == "text_link" and isinstance(href, str) and href != part["text"]
                else ""
            )
            parts.append(part["text"] + link)
    return "".join(parts)


def _media(message: dict[str, Any], folder: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """Placeholders and attachment entries for the message's photo, file, poll, contact, place."""
    texts: list[str] = []
    entries: list[dict[str, Any]] = []
    for field, default_kind in (("photo", "image"), ("file", "document")):
        value = message.get(field)
        if not isinstance(value, str) or not value:
            continue
        media_type = message.get("media_type") if field == "file" else None
        kind = media_kind(media_type) if isinstance(media_type, str) else default_kind
        if value.startswith(NOT_INCLUDED):
            name = message.get("file_name") if isinstance(message.get("file_name"), str) else None
            text, entry = attachment(kind, None, None, False)
            entry["name"], entry["placeholder"] = name, value
        else:
            relative = PurePosixPath(value)
            inside = not relative.is_absolute() and ".." not in relative.parts
            located = inside and (folder / relative).is_file()
            text, entry = attachment(
                kind if kind != "document" else media_kind(relative.name), relative.name, value, located
            )
        texts.append(text)
        entries.append(entry)
    poll = message.get("poll")
    if isinstance(poll, dict):
        answers = [a.get("text") for a in poll.get("answers") or () if isinstance(a, dict)]
        texts.append("\n".join([f"[poll: {poll.get('question')}]", *(f"- {a}" for a in answers if a)]))
    contact = message.get("contact_information")
    if isinstance(contact, dict):
        fields = (contact.get("first_name"), contact.get("last_name"), contact.get("phone_number"))
        texts.append("[contact: " + " ".join(str(f) for f in fields if f) + "]")
    place = message.get("location_information")
    if isinstance(place, dict):
        named = " ".join(str(message[k]) for k in ("place_name", "address") if message.get(k))
        texts.append(
            f"[location: {named + ' ' if named else ''}{place.get('latitude')}, {place.get('longitude')}]"
        )
    return texts, entries


def _moment(message: dict[str, Any], field: str, zone: ZoneInfo) -> tuple[datetime, dict[str, Any]]:
    """The instant of ``field`` (``date`` or ``edited``) and the stamp as written with its zone."""
    written = message.get(field)
    unix = message.get(f"{field}_unixtime")
    if not isinstance(written, str):
        raise ValueError(f"no {field!r}")
    local = datetime.fromisoformat(written)
    if unix is None:
        moment = local.replace(tzinfo=zone) if local.tzinfo is None else local
        return moment, stamp_metadata(moment, written)
    instant = datetime.fromtimestamp(int(unix), UTC)
    offset = local.replace(tzinfo=UTC) - instant
    if abs(offset) > timedelta(hours=14):  # not an offset: the wall clock is not of this instant
        offset = timedelta(0)
    moment = instant.astimezone(timezone(offset))
    return moment, stamp_metadata(moment, written)


def _service_text(message: dict[str, Any]) -> str:
    action = str(message.get("action") or "service message").replace("_", " ")
    details = [
        str(message[k]) for k in ("title", "new_title", "information_text", "inviter") if message.get(k)
    ]
    members = [str(m) for m in message.get("members") or () if m]
    actor = message.get("actor")
    said = " ".join([f"{actor}:" if actor else "", action, *details, ", ".join(members)])
    return " ".join(said.split())


def render_message(
    message: Any, folder: Path, zone: ZoneInfo, authors: dict[str, str]
) -> HarvestMessage | None:
    """One frame's message, or None for one without content; raises ValueError for a record
    that is not a Telegram message."""
    if not isinstance(message, dict) or "id" not in message:
        raise ValueError("not a Telegram message (an object with an id)")
    kind = message.get("type")
    if kind == "unsupported":
        return None
    moment, stamp = _moment(message, "date", zone)
    message_id = str(message["id"])
    metadata: dict[str, Any] = {"message_id": message_id, **stamp}
    if kind == "service":
        text, author, role = _service_text(message), None, "system"
        if message.get("actor"):
            metadata["actor"] = message["actor"]
    else:
        author = str(message.get("from") or DELETED_ACCOUNT)
        role = author
        placeholders, entries = _media(message, folder)
        sticker = message.get("sticker_emoji")
        if entries and isinstance(sticker, str) and entries[0]["kind"] == "sticker":
            placeholders[0] = placeholders[0][:-1] + f" {sticker}]"
        text = "\n".join(p for p in [message_text(message.get("text")).strip(), *placeholders] if p)
        if entries:
            metadata["attachments"] = entries
        if message.get("from_id"):
            metadata["author_id"] = str(message["from_id"])
        if message.get("forwarded_from"):
            metadata["forwarded_from"] = str(message["forwarded_from"])
    if not text.strip():
        return None
    if "edited" in message:
        metadata["edited"] = True
        try:
            metadata["edited_at"] = format_utc(_moment(message, "edited", zone)[0])
        except (TypeError, ValueError, OverflowError):
            pass
    reply = message.get("reply_to_message_id")
    if reply is not None:
        metadata["in_reply_to"] = str(reply)
        if str(reply) in authors:
            metadata["reply_to_author"] = authors[str(reply)]
    if author:
        authors[message_id] = author
    return HarvestMessage(
        key=message_id, text=text, role=role, author=author, timestamp=format_utc(moment), metadata=metadata
    )


def scan_file(path: Path, relpath: str, within: Path | None) -> Iterator[ScanEvent]:
    """The chats of one ``result.json``, each yielded when its messages are read."""
    zone, problem = read_zone(path.parent)
    if problem:
        yield HarvestError(str(path.parent / TIMEZONE_FILE), problem)
    chats: dict[tuple[Any, ...], dict[str, Any]] = {}
    try:
        with open_source_file(path, streamed=True, within=within) as handle:
            for event in walk(handle, MESSAGE_ARRAYS):
                if isinstance(event, Scalar):
                    chats.setdefault(event.path[:-1], {})[str(event.path[-1])] = event.value
                elif isinstance(event, Array):
                    yield from _chat(event, chats.get(event.path[:-1], {}), path, relpath, zone)
    except JSONStreamError as exc:
        yield HarvestError(str(path), exc.describe("chats"))
    except OSError as exc:
        yield HarvestError(str(path), f"cannot read: {exc.strerror or exc}")


def _chat(
    array: Array, info: dict[str, Any], path: Path, relpath: str, zone: ZoneInfo
) -> Iterator[ScanEvent]:
    chat_type = info.get("type")
    name = info.get("name") or (
        "Saved Messages" if chat_type == "saved_messages" else f"Telegram chat {info.get('id')}"
    )
    label = f"chat {name!s}"
    messages: list[HarvestMessage] = []
    authors: dict[str, str] = {}
    skipped = 0
    for record in array_records(array):
        if isinstance(record, LostRecord):
            yield HarvestError(
                str(path), f"message lost: {record.describe()}", record=f"{label} message {record.index}"
            )
            continue
        for reason in note_reasons(record.notes):
            yield HarvestError(str(path), reason, record=f"{label} message {record.index}")
        try:
            message = render_message(record.value, path.parent, zone, authors)
        except (TypeError, ValueError, OverflowError) as exc:
            yield HarvestError(str(path), f"bad message: {exc}", record=f"{label} message {record.index}")
            continue
        if message is None:
            skipped += 1
        else:
            messages.append(message)
    if not messages:
        return
    chat_id = info.get("id")
    container = f"{relpath}#{chat_id if chat_id is not None else name}"
    section = "left_chats" if array.path[:1] == ("left_chats",) else "chats"
    details = {
        "path": relpath,
        "chat_id": chat_id,
        "chat_type": chat_type,
        "section": section,
        "skipped_messages": skipped,
    }
    yield conversation(
        KIND, container, str(name), messages, {k: v for k, v in details.items() if v is not None}
    )


class TelegramSource:
    """Telegram Desktop JSON exports: one chat or the whole account."""

    kind = KIND
    display_name = "Telegram Desktop export"

    def detect(self, path: Path) -> bool:
        return detect_confidence(Path(path)) >= 0.5

    def scan(self, path: Path) -> Iterator[ScanEvent]:
        scanned = yield from scan_path(path, scan_file, lambda name: name == EXPORT_FILE)
        if scanned == 0:
            yield HarvestError(str(Path(path)), f"no {EXPORT_FILE} in this folder")

    def fingerprint(self, path: Path) -> str:
        return file_fingerprint(Path(path), (EXPORT_FILE, TIMEZONE_FILE))


def detect_confidence(path: Path) -> float:
    """Sure of a JSON file (or a folder's ``result.json``, at its top or one folder below) that
    opens as a Telegram chat or account export."""
    if path.is_file():
        return 0.95 if looks_like_telegram(read_head(path)) else 0.0
    if path.is_dir():
        candidates = [path / EXPORT_FILE]
        try:
            candidates += [entry / EXPORT_FILE for entry in sorted(path.iterdir())[:200] if entry.is_dir()]
        except OSError:
            return 0.0
        if any(c.is_file() and looks_like_telegram(read_head(c)) for c in candidates):
            return 0.95
    return 0.0


register_sources, detect_sources = source_hooks(TelegramSource, lambda path: detect_confidence(Path(path)))
