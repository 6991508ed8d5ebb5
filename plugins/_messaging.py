"""What the messaging importers (WhatsApp, Telegram, Slack, Discord) share: the zone a
wall-clock export is read in, media as located placeholders, the message stamp's own zone, and
the conversation item with its participants.

- ``.mind-timezone`` beside an export names the IANA zone its wall-clock times are read in (a
  source registration has no options of its own); without it they are UTC, the same on every
  machine that harvests the file.
- A medium becomes a ``[kind: name]`` text and an ``attachments`` entry: its kind, name, its
  place in the export (``path``) and whether the file is there (``located``).
- A message's metadata keeps the time as the export wrote it (``local_time``) and the zone or
  offset it was in (``timezone``), beside the UTC instant of the frame.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mind_core.harvest.items import HarvestItem, HarvestMessage, stable_key
from mind_core.harvest.source_files import read_source_file

TIMEZONE_FILE = ".mind-timezone"
DEFAULT_ZONE = "UTC"
MEDIA_KINDS = (
    ("image", ("photo", "image", ".jpg", ".jpeg", ".png", ".webp", ".heic")),
    ("video", ("video", ".mp4", ".mov", ".3gp", ".webm")),
    ("audio", ("audio", "voice", ".opus", ".m4a", ".mp3", ".ogg", ".aac")),
    ("sticker", ("sticker",)),
    ("GIF", ("gif", "animation")),
)


def read_zone(folder: Path) -> tuple[ZoneInfo, str | None]:
    """The zone of ``.mind-timezone`` beside the export (else UTC), and a problem with that file."""
    setting = folder / TIMEZONE_FILE
    if not os.path.lexists(setting):
        return ZoneInfo(DEFAULT_ZONE), None
    try:
        name = read_source_file(setting, within=folder).decode("utf-8").strip()
        return ZoneInfo(name), None
    except (OSError, UnicodeDecodeError, ValueError, ZoneInfoNotFoundError) as exc:
        return ZoneInfo(DEFAULT_ZONE), f"{TIMEZONE_FILE}: not a time zone ({exc}); UTC used"


def media_kind(name: str) -> str:
    """image, video, audio, sticker, GIF or document, from a file name or a media type."""
    lowered = name.lower()
    for kind, marks in MEDIA_KINDS:
        if any(mark in lowered for mark in marks):
            return kind
    return "document"


def attachment(kind: str, name: str | None, path: str | None, located: bool) -> tuple[str, dict[str, Any]]:
    """The placeholder text of one medium and its ``attachments`` entry."""
    text = f"[{kind}: {name}]" if name else f"[{kind} omitted]"
    return text, {
        "kind": kind,
        "name": name,
        "path": path if located else None,
        "located": located,
        "placeholder": None,
    }


def stamp_metadata(moment: datetime, written: str) -> dict[str, Any]:
    """The stamp as written and its zone: an IANA name, else the UTC offset the stamp carries."""
    zone = moment.tzinfo
    name = getattr(zone, "key", None) or moment.strftime("%z")
    if len(name) == 5 and name[0] in "+-":
        name = f"{name[:3]}:{name[3:]}"
    return {"local_time": written, "timezone": name}


def conversation(
    kind: str,
    container: str,
    title: str,
    messages: list[HarvestMessage],
    metadata: dict[str, Any],
) -> HarvestItem:
    """One chat, channel or thread: one session, its speakers listed as ``participants``."""
    participants = list(dict.fromkeys(m.author for m in messages if m.author))
    return HarvestItem(
        key=stable_key(kind, container),
        kind="conversation",
        title=title,
        container_key=container,
        messages=messages,
        metadata={**metadata, "participants": participants},
        timestamp=messages[0].timestamp if messages else None,
    )
