"""Slack workspace exports (the unzipped folder): ``users.json``, ``channels.json`` (public
channels), ``groups.json`` (private), ``mpims.json`` (group messages) and ``dms.json`` (direct
messages) when present, and a folder per conversation holding one ``YYYY-MM-DD.json`` per day.
One conversation item (one session) per channel and one per thread, one frame per message, the
sender's name as its author and speaker.

Decisions (each pinned by tests/plugins/test_slack.py; the format: docs/formats.md):

- Every JSON file is streamed record by record (``_jsonstream``): a broken message costs that
  message alone and is reported with its file and position.
- Names: a user id is the user's ``real_name`` from ``users.json`` (else the profile's display
  name, the handle, the message's own ``user_profile``, a bot's ``username``, the id itself);
  the handle is kept as ``author_handle``. Mentions in the text (``<@U123>``, ``<#C1|general>``,
  ``<!here>``, ``<https://x|label>``) are rewritten the way Slack shows them.
- Time: ``ts`` is the instant; the sender's zone (``tz`` in ``users.json``) gives the wall clock
  kept as ``local_time`` with ``timezone`` (UTC for a sender without one).
- Threads: a reply (``thread_ts`` other than its ``ts``) goes to its thread's own session, titled
  by the channel and the parent's first words, with ``in_reply_to`` (the parent's ``ts``) and
  ``reply_to_author`` (``parent_user_id``) as a mail's In-Reply-To; the parent stays in the
  channel's session. ``thread_broadcast`` replies are replies (``broadcast``).
- Edits: ``edited`` marks the message ``edited`` with ``edited_at`` (the export holds the latest
  text); a ``message_changed`` record replaces the message it names. Deletions:
  ``message_deleted`` and ``tombstone`` records ("This message was deleted.") are dropped and
  counted in ``deleted_messages``.
- Joins, leaves, topic, purpose and name changes, pins (``channel_*``, ``group_*``,
  ``pinned_item``) are ``system`` frames without an author.
- Files are never in a Slack export (only links back to the workspace): each is a
  ``[kind: name]`` placeholder with an ``attachments`` entry (``located`` false, its ``url``).
  Link previews (``attachments``), reactions and ``blocks`` (a rich copy of the text) are dropped.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mind_harvest.plugins._jsonresync import LostRecord
from mind_harvest.plugins._jsonstream import JSONStreamError, note_reasons, stream_records
from mind_harvest.plugins._messaging import attachment, conversation, media_kind, stamp_metadata

from mind_core.harvest import format_utc
from mind_core.harvest.items import HarvestError, HarvestMessage, ScanEvent
from mind_core.harvest.source_files import JSON_FILES, file_fingerprint, open_source_file, walk_files
from mind_core.plugins import hookimpl

KIND = "slack"
USER_FILES = ("users.json", "org_users.json")
# the list files, how each names its conversations' folders, and how a title is made
LIST_FILES = (
    ("channels.json", "channel"),
    ("groups.json", "private"),
    ("mpims.json", "group"),
    ("dms.json", "dm"),
)
DAY_FILE = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")
SYSTEM_SUBTYPES = re.compile(r"^(?:channel_|group_)\w+$|^pinned_item$|^unpinned_item$")
DELETED_SUBTYPES = frozenset({"message_deleted", "tombstone"})
_LINK = re.compile(r"<([^<>|]+)(?:\|([^<>]*))?>")
THREAD_TITLE_WORDS = 8


@dataclass
class Person:
    name: str
    handle: str | None
    zone: ZoneInfo


@dataclass
class Channel:
    """One conversation folder and what the list file says of it."""

    folder: str
    title: str
    kind: str
    channel_id: str | None = None
    members: list[str] = field(default_factory=list)


class Directory:
    """The workspace's people and channels by id, to show names where messages hold ids."""

    def __init__(self) -> None:
        self.people: dict[str, Person] = {}
        self.channels: dict[str, str] = {}

    def name(self, user_id: Any, message: dict[str, Any] | None = None) -> str | None:
        if isinstance(user_id, str) and user_id in self.people:
            return self.people[user_id].name
        profile = (message or {}).get("user_profile")
        if isinstance(profile, dict):
            for key in ("real_name", "display_name", "name"):
                if isinstance(profile.get(key), str) and profile[key].strip():
                    return profile[key].strip()
        username = (message or {}).get("username")
        if isinstance(username, str) and username.strip():
            return username.strip()
        return user_id if isinstance(user_id, str) and user_id else None

    def text(self, raw: str) -> str:
        """Slack's markup as Slack shows it: mentions by name, links with their labels."""

        def shown(match: re.Match[str]) -> str:
            target, label = match.group(1), match.group(2)
            if target.startswith("@"):
                return "@" + (label or self.name(target[1:]) or target[1:])
            if target.startswith("#"):
                return "#" + (label or self.channels.get(target[1:], target[1:]))
            if target.startswith("!"):
                special = target[1:].split("^")[0]
                return label or f"@{special}"
            return f"{label} ({target})" if label and label != target else target

        return html.unescape(_LINK.sub(shown, raw))


def _zone(name: Any) -> ZoneInfo:
    try:
        return ZoneInfo(name) if isinstance(name, str) and name else ZoneInfo("UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def _records(path: Path, root: Path, noun: str) -> Iterator[Any | HarvestError]:
    """The elements of one JSON array file, a located error for each one lost."""
    relpath = path.relative_to(root).as_posix()
    try:
        with open_source_file(path, streamed=True, within=root) as handle:
            for record in stream_records(handle):
                where = f"{relpath} {noun} {record.index}"
                if isinstance(record, LostRecord):
                    yield HarvestError(str(path), f"{noun} lost: {record.describe()}", record=where)
                    continue
                for reason in note_reasons(record.notes):
                    yield HarvestError(str(path), reason, record=where)
                yield record.value
    except JSONStreamError as exc:
        yield HarvestError(str(path), exc.describe(f"{noun}s"), record=relpath)
    except OSError as exc:
        yield HarvestError(str(path), f"cannot read: {exc.strerror or exc}")


def read_directory(root: Path) -> tuple[Directory, list[Channel], list[HarvestError]]:
    """The people of ``users.json`` and the conversations the list files name."""
    directory, channels, errors = Directory(), [], []
    for name in USER_FILES:
        if not os.path.lexists(root / name):  # a FIFO or a link is refused by name when opened
            continue
        for user in _records(root / name, root, "user"):
            if isinstance(user, HarvestError):
                errors.append(user)
            elif isinstance(user, dict) and isinstance(user.get("id"), str):
                profile = user.get("profile") if isinstance(user.get("profile"), dict) else {}
                shown = [
                    user.get("real_name"),
                    profile.get("real_name"),
                    profile.get("display_name"),
                    user.get("name"),
                ]
                full_name = next((n.strip() for n in shown if isinstance(n, str) and n.strip()), user["id"])
                handle = user.get("name") if isinstance(user.get("name"), str) else None
                directory.people[user["id"]] = Person(full_name, handle, _zone(user.get("tz")))
    for file_name, kind in LIST_FILES:
        if not os.path.lexists(root / file_name):
            continue
        for entry in _records(root / file_name, root, "conversation"):
            if isinstance(entry, HarvestError):
                errors.append(entry)
            elif isinstance(entry, dict) and (entry.get("name") or entry.get("id")):
                channels.append(_channel(entry, kind, directory))
    return directory, channels, errors


def _channel(entry: dict[str, Any], kind: str, directory: Directory) -> Channel:
    members = [m for m in entry.get("members") or () if isinstance(m, str)]
    names = ", ".join(filter(None, (directory.name(m) for m in members)))
    channel_id = entry.get("id") if isinstance(entry.get("id"), str) else None
    if kind == "dm":
        folder, title = str(entry.get("id")), f"Direct messages: {names}"
    elif kind == "group":
        folder, title = str(entry.get("name") or entry.get("id")), f"Group messages: {names}"
    else:
        folder = str(entry.get("name") or entry.get("id"))
        title = f"#{folder}"
        if channel_id:
            directory.channels[channel_id] = folder
    return Channel(folder, title, kind, channel_id, members)


def _files(message: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    texts, entries = [], []
    for shared in message.get("files") or ():
        if not isinstance(shared, dict):
            continue
        name = shared.get("name") or shared.get("title")
        name = name if isinstance(name, str) and name and shared.get("mode") != "tombstone" else None
        kind = media_kind(str(shared.get("mimetype") or name or ""))
        text, entry = attachment(kind, name, None, False)
        if isinstance(shared.get("url_private"), str):
            entry["url"] = shared["url_private"]
        texts.append(text)
        entries.append(entry)
    return texts, entries


def render_message(record: Any, directory: Directory) -> HarvestMessage | None:
    """One frame's message (None for one without content); raises ValueError for a record that
    is not a Slack message."""
    if not isinstance(record, dict) or not isinstance(record.get("ts"), str | int | float):
        raise ValueError("not a Slack message (an object with a ts)")
    subtype = record.get("subtype")
    instant = datetime.fromtimestamp(float(record["ts"]), UTC)
    user_id = record.get("user") or record.get("bot_id")
    person = directory.people.get(user_id) if isinstance(user_id, str) else None
    local = instant.astimezone(person.zone if person else ZoneInfo("UTC"))
    metadata: dict[str, Any] = {
        "ts": str(record["ts"]),
        **stamp_metadata(local, local.replace(tzinfo=None).isoformat()),
    }
    system = isinstance(subtype, str) and bool(SYSTEM_SUBTYPES.match(subtype))
    author = None if system else directory.name(user_id, record)
    placeholders, entries = _files(record)
    text = "\n".join(p for p in [directory.text(str(record.get("text") or "")).strip(), *placeholders] if p)
    if not text:
        return None
    if entries:
        metadata["attachments"] = entries
    if subtype:
        metadata["subtype"] = subtype
    if isinstance(user_id, str):
        metadata["author_id"] = user_id
    if person and person.handle:
        metadata["author_handle"] = person.handle
    edited = record.get("edited")
    if isinstance(edited, dict):
        metadata["edited"] = True
        try:
            metadata["edited_at"] = format_utc(datetime.fromtimestamp(float(edited.get("ts")), UTC))
        except (TypeError, ValueError, OverflowError):
            pass
    thread = record.get("thread_ts")
    if isinstance(thread, str) and thread != metadata["ts"]:
        metadata["in_reply_to"] = thread
        parent = directory.name(record.get("parent_user_id"))
        if parent:
            metadata["reply_to_author"] = parent
        if subtype == "thread_broadcast":
            metadata["broadcast"] = True
    elif isinstance(thread, str):
        metadata["thread_ts"] = thread
    return HarvestMessage(
        key=metadata["ts"],
        text=text,
        role="system" if system else author,
        author=author,
        timestamp=format_utc(instant),
        metadata=metadata,
    )


def scan_channel(root: Path, channel: Channel, directory: Directory) -> Iterator[ScanEvent]:
    """The channel's session and one per thread, once every day file of the channel is read."""
    messages: dict[str, HarvestMessage] = {}
    deleted = 0
    folder = root / channel.folder
    for day in walk_files(folder, lambda name: DAY_FILE.match(name) is not None, lambda _folder, _names: []):
        if isinstance(day, HarvestError):
            yield day
            continue
        for record in _records(day, root, "message"):
            if isinstance(record, HarvestError):
                yield record
                continue
            if isinstance(record, dict) and record.get("subtype") in DELETED_SUBTYPES:
                deleted += 1
                messages.pop(str(record.get("deleted_ts") or record.get("ts")), None)
                continue
            changed = isinstance(record, dict) and record.get("subtype") == "message_changed"
            try:
                message = render_message(record["message"] if changed else record, directory)
            except (KeyError, TypeError, ValueError, OverflowError) as exc:
                yield HarvestError(
                    str(day), f"bad message: {exc}", record=f"{day.relative_to(root).as_posix()}"
                )
                continue
            if message is not None:
                if changed:
                    message.metadata["edited"] = True
                messages[message.key] = message
    ordered = sorted(messages.values(), key=lambda m: float(m.key))
    top = [m for m in ordered if "in_reply_to" not in m.metadata]
    details = {"path": channel.folder, "channel_kind": channel.kind, "channel_id": channel.channel_id}
    details = {k: v for k, v in details.items() if v is not None}
    if channel.members:
        details["members"] = [directory.name(member) for member in channel.members]
    if top or deleted:
        yield conversation(KIND, channel.folder, channel.title, top, {**details, "deleted_messages": deleted})
    threads: dict[str, list[HarvestMessage]] = {}
    for message in ordered:
        if "in_reply_to" in message.metadata:
            threads.setdefault(message.metadata["in_reply_to"], []).append(message)
    for thread_ts, replies in threads.items():
        parent = messages.get(thread_ts)
        opening = " ".join(parent.text.split()[:THREAD_TITLE_WORDS]) if parent else thread_ts
        title = f"{channel.title} thread: {opening}"
        thread_details = {
            **details,
            "thread_ts": thread_ts,
            "parent_author": parent.author if parent else None,
        }
        yield conversation(KIND, f"{channel.folder}/{thread_ts}", title, replies, thread_details)


class SlackSource:
    """A Slack workspace export, unzipped."""

    kind = KIND
    display_name = "Slack workspace export"

    def detect(self, path: Path) -> bool:
        return detect_confidence(Path(path)) >= 0.5

    def scan(self, path: Path) -> Iterator[ScanEvent]:
        root = Path(path)
        if not root.is_dir():
            yield HarvestError(str(root), "not a folder: a Slack export is read unzipped (its folder)")
            return
        directory, channels, errors = read_directory(root)
        yield from errors
        listed = {channel.folder for channel in channels}
        try:
            unlisted = sorted(
                entry.name
                for entry in root.iterdir()
                if entry.is_dir() and entry.name not in listed and not entry.name.startswith(".")
            )
        except OSError as exc:
            yield HarvestError(str(root), f"cannot list folder: {exc.strerror or exc}")
            unlisted = []
        channels += [Channel(name, f"#{name}", "channel") for name in unlisted]
        for channel in channels:
            folder = root / channel.folder
            if "/" in channel.folder or "\\" in channel.folder or channel.folder.startswith("."):
                yield HarvestError(
                    str(root), f"conversation folder {channel.folder!r} is not a name in the export; skipped"
                )
            elif folder.is_symlink():
                yield HarvestError(str(folder), "a link to a folder; not followed")
            elif folder.is_dir():
                yield from scan_channel(root, channel, directory)

    def fingerprint(self, path: Path) -> str:
        return file_fingerprint(Path(path), JSON_FILES)


def detect_confidence(path: Path) -> float:
    """Sure of a folder holding ``users.json`` beside a conversation list file."""
    if not path.is_dir():
        return 0.0
    has_users = any((path / name).is_file() for name in USER_FILES)
    has_list = any((path / name).is_file() for name, _ in LIST_FILES)
    return 0.95 if has_users and has_list else 0.0


@hookimpl
def register_sources(register: Any) -> None:
    register(SlackSource())


@hookimpl
def detect_sources(path: Path) -> dict[str, float]:
    return {KIND: detect_confidence(Path(path))}
