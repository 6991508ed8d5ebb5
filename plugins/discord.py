"""Discord channels exported by DiscordChatExporter as JSON: one file per channel or thread
(``{"guild", "channel", "dateRange", "exportedAt", "messages": [...], "messageCount"}``), or a
folder of them. One conversation item (one session) per file, one frame per message, the
author's name as author and speaker.

Decisions (each pinned by tests/plugins/test_discord.py; the format: docs/formats.md):

- Messages are streamed one at a time (``_jsonwalk``): a broken message costs that message alone
  and is reported with its position.
- The author is the ``nickname`` (the name shown in the server), else ``name``; the account name
  is kept as ``author_handle`` (with ``#discriminator`` where one is set), ``author_id`` and
  ``bot`` beside it.
- Time: ``timestamp`` carries the exporting machine's offset (``+02:00``, or UTC with
  ``--utc``): the instant is stored, the text kept as ``local_time`` with its ``timezone``.
- ``timestampEdited`` marks the message ``edited`` with ``edited_at`` (the export holds the
  latest text); ``reference.messageId`` is ``in_reply_to`` (and ``reply_to_author`` when the
  message replied to is in the file), as a mail's In-Reply-To. Deleted messages are not in an
  export. A thread is its own file, so its own session; its parent channel (the exporter's
  ``category`` for a thread) is kept as ``parent_channel``.
- ``Default`` and ``Reply`` messages are turns; every other type (joins, pins, thread
  creation, calls, boosts) is a ``system`` frame without an author, its actor kept as ``actor``.
- Attachments become ``[kind: fileName]`` placeholders with an ``attachments`` entry: the
  downloaded file's path beside the export (``located`` when it is there, ``--media``), else its
  ``url``; stickers become ``[sticker: name]``. Embeds (link previews), reactions, mentions'
  details and inline emoji are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote

from mind_harvest.plugins._file_sources import named_with, scan_path, source_hooks
from mind_harvest.plugins._jsonhead import read_head
from mind_harvest.plugins._jsonstream import JSONStreamError, note_reasons
from mind_harvest.plugins._jsonwalk import Array, LostRecord, Scalar, array_records, walk
from mind_harvest.plugins._messaging import attachment, conversation, media_kind, stamp_metadata

from mind_core.harvest import format_utc
from mind_core.harvest.items import HarvestError, HarvestMessage, ScanEvent
from mind_core.harvest.source_files import JSON_FILES, file_fingerprint, open_source_file

KIND = "discord"
TURN_TYPES = frozenset({"Default", "Reply"})
_OPENING = re.compile(rb'^\s*\{\s*"guild"\s*:\s*\{')


def looks_like_discord(head: bytes) -> bool:
    """DiscordChatExporter opens every JSON export with ``guild``, then ``channel`` and ``messages``."""
    return bool(_OPENING.match(head)) and all(
        re.search(rb'"' + key + rb'"\s*:', head) for key in (b"channel", b"messages")
    )


def _moment(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"no timestamp ({value!r})")
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _attachments(message: dict[str, Any], folder: Path) -> tuple[list[str], list[dict[str, Any]]]:
    texts, entries = [], []
    for shared in message.get("attachments") or ():
        if not isinstance(shared, dict):
            continue
        url = shared.get("url") if isinstance(shared.get("url"), str) else ""
        name = shared.get("fileName") if isinstance(shared.get("fileName"), str) else None
        local = "://" not in url and bool(url)
        relative = PurePosixPath(unquote(url.replace("\\", "/"))) if local else None
        located = bool(
            relative
            and not relative.is_absolute()
            and ".." not in relative.parts
            and (folder / relative).is_file()
        )
        text, entry = attachment(
            media_kind(name or url), name, relative.as_posix() if relative else None, located
        )
        if not local and url:
            entry["url"] = url
        texts.append(text)
        entries.append(entry)
    for sticker in message.get("stickers") or ():
        if isinstance(sticker, dict) and sticker.get("name"):
            texts.append(f"[sticker: {sticker['name']}]")
    return texts, entries


def render_message(message: Any, folder: Path, authors: dict[str, str]) -> HarvestMessage | None:
    """One frame's message (None for one without content); raises ValueError for a record that
    is not a DiscordChatExporter message."""
    if not isinstance(message, dict) or "id" not in message:
        raise ValueError("not a Discord message (an object with an id)")
    moment = _moment(message.get("timestamp"))
    message_id = str(message["id"])
    person = message.get("author") if isinstance(message.get("author"), dict) else {}
    name = next(
        (str(person[k]).strip() for k in ("nickname", "name") if person.get(k) and str(person[k]).strip()),
        None,
    )
    turn = message.get("type", "Default") in TURN_TYPES
    metadata: dict[str, Any] = {
        "message_id": message_id,
        "type": message.get("type"),
        **stamp_metadata(moment, message["timestamp"]),
    }
    placeholders, entries = _attachments(message, folder)
    content = str(message.get("content") or "").strip()
    text = "\n".join(p for p in [content, *placeholders] if p)
    if not text:
        return None
    author = name if turn else None
    if not turn:
        text = f"{name}: {text}" if name else text
        metadata["actor"] = name
    if entries:
        metadata["attachments"] = entries
    if person.get("name"):
        discriminator = person.get("discriminator")
        tagged = discriminator and discriminator not in ("0", "0000")
        metadata["author_handle"] = f"{person['name']}#{discriminator}" if tagged else str(person["name"])
    if person.get("id"):
        metadata["author_id"] = str(person["id"])
    if person.get("isBot"):
        metadata["bot"] = True
    if message.get("timestampEdited"):
        metadata["edited"] = True
        try:
            metadata["edited_at"] = format_utc(_moment(message["timestampEdited"]))
        except ValueError:
            pass
    reference = message.get("reference") if isinstance(message.get("reference"), dict) else {}
    if reference.get("messageId"):
        metadata["in_reply_to"] = str(reference["messageId"])
        if metadata["in_reply_to"] in authors:
            metadata["reply_to_author"] = authors[metadata["in_reply_to"]]
    if author:
        authors[message_id] = author
    return HarvestMessage(
        key=message_id,
        text=text,
        role=author if turn else "system",
        author=author,
        timestamp=format_utc(moment),
        metadata={k: v for k, v in metadata.items() if v is not None},
    )


def scan_file(path: Path, relpath: str, within: Path | None) -> Iterator[ScanEvent]:
    """The session of one exported channel or thread."""
    info: dict[tuple[Any, ...], Any] = {}
    try:
        with open_source_file(path, streamed=True, within=within) as handle:
            for event in walk(handle, (("messages",),), (("guild",), ("channel",))):
                if isinstance(event, Scalar):
                    info[event.path] = event.value
                elif isinstance(event, Array):
                    yield from _channel(event, info, path, relpath)
    except JSONStreamError as exc:
        yield HarvestError(str(path), exc.describe("parts"))
    except OSError as exc:
        yield HarvestError(str(path), f"cannot read: {exc.strerror or exc}")


def _channel(array: Array, info: dict[tuple[Any, ...], Any], path: Path, relpath: str) -> Iterator[ScanEvent]:
    guild = info.get(("guild", "name"))
    channel = info.get(("channel", "name")) or path.stem
    channel_type = info.get(("channel", "type"))
    thread = isinstance(channel_type, str) and "Thread" in channel_type
    category = info.get(("channel", "category"))
    title = f"#{category} thread: {channel}" if thread and category else f"#{channel}"
    messages: list[HarvestMessage] = []
    authors: dict[str, str] = {}
    skipped = 0
    for record in array_records(array):
        where = f"#{channel} message {record.index}"
        if isinstance(record, LostRecord):
            yield HarvestError(str(path), f"message lost: {record.describe()}", record=where)
            continue
        for reason in note_reasons(record.notes):
            yield HarvestError(str(path), reason, record=where)
        try:
            message = render_message(record.value, path.parent, authors)
        except (TypeError, ValueError, OverflowError) as exc:
            yield HarvestError(str(path), f"bad message: {exc}", record=where)
            continue
        if message is None:
            skipped += 1
        else:
            messages.append(message)
    if not messages:
        return
    details = {
        "path": relpath,
        "guild": guild,
        "channel": channel,
        "channel_id": info.get(("channel", "id")),
        "channel_type": channel_type,
        ("parent_channel" if thread else "category"): category,
        "skipped_messages": skipped,
    }
    titled = f"{title} ({guild})" if guild and guild != "Direct Messages" else title
    yield conversation(KIND, relpath, titled, messages, {k: v for k, v in details.items() if v is not None})


class DiscordSource:
    """DiscordChatExporter JSON exports: a file per channel or thread, or a folder of them."""

    kind = KIND
    display_name = "Discord export (DiscordChatExporter)"

    def detect(self, path: Path) -> bool:
        return detect_confidence(Path(path)) >= 0.5

    def scan(self, path: Path) -> Iterator[ScanEvent]:
        return scan_path(path, scan_file, _json_name, keep=lambda found: looks_like_discord(read_head(found)))

    def fingerprint(self, path: Path) -> str:
        return file_fingerprint(Path(path), JSON_FILES)


def _json_name(name: str) -> bool:
    return named_with(name, (".json",))


def detect_confidence(path: Path) -> float:
    """Sure of a file that opens as DiscordChatExporter's JSON, and of a folder with one at its top."""
    if path.is_file():
        return 0.95 if looks_like_discord(read_head(path)) else 0.0
    if path.is_dir():
        try:
            entries = sorted(path.iterdir())[:200]
        except OSError:
            return 0.0
        if any(e.is_file() and _json_name(e.name) and looks_like_discord(read_head(e)) for e in entries):
            return 0.9
    return 0.0


register_sources, detect_sources = source_hooks(DiscordSource, lambda path: detect_confidence(Path(path)))
