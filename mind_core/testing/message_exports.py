"""Small deterministic sources in the messaging, document and seed formats (WhatsApp, PDF,
web pages, iCalendar, vCard, Telegram, Slack, Discord, Universal JSON, Claude Code,
Perplexity), for tests and benchmarks; the chat exports, mail and vault are in ``exports``."""

from __future__ import annotations

import json
import random
import zipfile
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from mind_core.testing.exports import START_EPOCH, generated_texts, utc_iso, write_json

# -- messaging and document exports (plugins/whatsapp.py, plaintext.py, pdf.py, web.py, calendar) --
WHATSAPP_STYLES = ("ios", "android", "us", "german")


def whatsapp_stamp(moment: datetime, style: str) -> str:
    """A message's opening stamp as the phone's locale writes it (docs/formats.md)."""
    if style == "ios":
        return f"[{moment:%d/%m/%Y, %H:%M:%S}] "
    if style == "android":
        return f"{moment:%d/%m/%Y, %H:%M} - "
    if style == "us":
        hour = moment.hour % 12 or 12
        return f"{moment.month}/{moment.day}/{moment:%y}, {hour}:{moment:%M}\u202f{'AM' if moment.hour < 12 else 'PM'} - "
    if style == "german":
        return f"{moment:%d.%m.%y, %H:%M} - "
    raise ValueError(f"unknown WhatsApp style {style!r}; expected one of {', '.join(WHATSAPP_STYLES)}")


def write_whatsapp_export(
    path: Path,
    turns: list[tuple[str, str, datetime]],
    style: str = "ios",
    *,
    system_lines: bool = True,
    media: dict[str, bytes] | None = None,
) -> Path:
    """A WhatsApp "Export chat" of ``turns`` (speaker, text, wall-clock time) in ``style``.

    ``path`` ending in ``.zip`` writes the archive the phone shares (``_chat.txt`` plus the
    ``media`` files); else the text file itself. ``system_lines`` opens the chat with the
    encryption notice and a join, as real exports do. A text with line breaks is a multi-line
    message, written as the app writes it (continuation lines without a stamp)."""
    lines: list[str] = []
    if system_lines and turns:
        first = turns[0][2]
        notice = "Messages and calls are end-to-end encrypted. No one outside of this chat, not even WhatsApp, can read or listen to them."
        if style == "ios":
            lines.append(f"\u200e{whatsapp_stamp(first, style)}Chat: \u200e{notice}")
            lines.append(f"\u200e{whatsapp_stamp(first, style)}Chat: \u200e{turns[0][0]} joined using this group's invite link")
        else:
            lines.append(f"{whatsapp_stamp(first, style)}{notice} Tap to learn more.")
            lines.append(f"{whatsapp_stamp(first, style)}{turns[0][0]} joined using this group's invite link")
    for speaker, text, moment in turns:
        lines.append(f"{whatsapp_stamp(moment, style)}{speaker}: {text}")
    body = "\n".join(lines) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".zip":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("_chat.txt", body)
            for name, data in (media or {}).items():
                archive.writestr(name, data)
    else:
        path.write_text(body, encoding="utf-8")
        for name, data in (media or {}).items():
            (path.parent / name).write_bytes(data)
    return path


def _pdf_string(text: str) -> str:
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def write_pdf(
    path: Path,
    pages: list[str],
    *,
    title: str | None = None,
    author: str | None = None,
    created: datetime | None = None,
) -> Path:
    """A small PDF 1.4 file, one page per text (lines in Helvetica; an empty text is a page
    without a text layer, as a scanned page is), with an Info dictionary when given
    title/author/created (``D:YYYYMMDDHHmmSSZ``). Written object by object with its xref table,
    as ISO 32000-1 §7.5 lays a file out."""
    objects: list[str] = ["<< /Type /Catalog /Pages 2 0 R >>", ""]
    page_ids = []
    font_id = 3
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    for text in pages:
        lines = text.split("\n") if text else []
        stream = "BT /F1 12 Tf 14 TL 72 740 Td " + " ".join(f"{_pdf_string(line)} Tj T*" for line in lines) + " ET"
        objects.append(f"<< /Length {len(stream.encode('latin-1'))} >>\nstream\n{stream}\nendstream")
        content_id = len(objects)
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content_id} 0 R"
            f" /Resources << /Font << /F1 {font_id} 0 R >> >> >>"
        )
        page_ids.append(len(objects))
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(f'{i} 0 R' for i in page_ids)}] /Count {len(page_ids)} >>"
    info = []
    if title is not None:
        info.append(f"/Title {_pdf_string(title)}")
    if author is not None:
        info.append(f"/Author {_pdf_string(author)}")
    if created is not None:
        info.append(f"/CreationDate (D:{created:%Y%m%d%H%M%S}Z)")
    if info:
        objects.append("<< " + " ".join(info) + " >>")
    body = b"%PDF-1.4\n"
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(body))
        body += f"{number} 0 obj\n{obj}\nendobj\n".encode("latin-1")
    xref = len(body)
    body += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    body += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    trailer = f"/Size {len(objects) + 1} /Root 1 0 R" + (f" /Info {len(objects)} 0 R" if info else "")
    body += f"trailer\n<< {trailer} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)
    return path


def article_html(title: str, paragraphs: list[str], *, author: str | None = None, published: str | None = None) -> str:
    """A web page as blogs write one: navigation, the article (heading, paragraphs), a footer."""
    meta = "".join(
        [
            f'<meta name="author" content="{author}">' if author else "",
            f'<meta property="article:published_time" content="{published}">' if published else "",
        ]
    )
    body = "".join(f"<p>{text}</p>" for text in paragraphs)
    return (
        f"<!DOCTYPE html><html><head><title>{title} | Example Blog</title>{meta}</head><body>"
        '<nav><a href="/">Home</a> | <a href="/about">About</a> | <a href="/archive">Archive</a></nav>'
        f"<main><article><h1>{title}</h1>{body}</article></main>"
        "<footer>Subscribe to the newsletter. Copyright Example Blog. All rights reserved.</footer>"
        "</body></html>"
    )


def write_ics(path: Path, events: list[dict], *, with_zone_definition: bool = False) -> Path:
    """An RFC 5545 calendar: each event a dict of uid, summary, start/end (aware datetimes, or
    dates for all-day), zone (TZID written with the local time), organizer/attendees
    (``(name, address)``), and optional location, description, rrule, recurrence_id, status.
    Lines are folded at 75 octets and end in CRLF, as §3.1 asks."""

    def stamp(value: datetime | date, zone: str | None) -> tuple[str, str]:
        if not isinstance(value, datetime):
            return ";VALUE=DATE", f"{value:%Y%m%d}"
        if zone:
            return f";TZID={zone}", f"{value.astimezone(ZoneInfo(zone)):%Y%m%dT%H%M%S}"
        return "", f"{value.astimezone(UTC):%Y%m%dT%H%M%SZ}"

    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//mind-harvest//tests//EN"]
    if with_zone_definition:
        lines += [
            "BEGIN:VTIMEZONE", "TZID:Europe/Berlin",
            "BEGIN:DAYLIGHT", "TZOFFSETFROM:+0100", "TZOFFSETTO:+0200", "DTSTART:19700329T020000",
            "RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU", "END:DAYLIGHT",
            "BEGIN:STANDARD", "TZOFFSETFROM:+0200", "TZOFFSETTO:+0100", "DTSTART:19701025T030000",
            "RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU", "END:STANDARD",
            "END:VTIMEZONE",
        ]  # fmt: skip
    for event in events:
        zone = event.get("zone")
        lines += ["BEGIN:VEVENT", f"UID:{event['uid']}", "DTSTAMP:20240101T000000Z"]
        for name in ("start", "end"):
            if event.get(name) is not None:
                params, value = stamp(event[name], zone)
                lines.append(f"DT{name.upper()}{params}:{value}")
        if event.get("recurrence_id") is not None:
            params, value = stamp(event["recurrence_id"], zone)
            lines.append(f"RECURRENCE-ID{params}:{value}")
        lines.append(f"SUMMARY:{_ics_text(event['summary'])}")
        for name in ("location", "description", "status"):
            if event.get(name):
                lines.append(f"{name.upper()}:{_ics_text(event[name])}")
        if event.get("rrule"):
            lines.append(f"RRULE:{event['rrule']}")
        if event.get("organizer"):
            person, address = event["organizer"]
            lines.append(f"ORGANIZER;CN={person}:mailto:{address}")
        for person, address in event.get("attendees", ()):
            lines.append(f"ATTENDEE;CN={person};ROLE=REQ-PARTICIPANT;PARTSTAT=ACCEPTED:mailto:{address}")
        lines.append("END:VEVENT")
    lines.append("END:VCALENDAR")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(("\r\n".join(_folded(line) for line in lines) + "\r\n").encode())
    return path


def _ics_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,").replace("\n", "\\n")


def _folded(line: str, width: int = 75) -> str:
    """A content line folded as RFC 5545 §3.1 / RFC 6350 §3.2 do: CRLF and a space every 75 octets."""
    data = line.encode()
    if len(data) <= width:
        return line
    parts, rest = [], data
    while rest:
        cut = min(len(rest), width if not parts else width - 1)
        while cut < len(rest) and (rest[cut] & 0xC0) == 0x80:  # never inside a UTF-8 character
            cut -= 1
        parts.append(rest[:cut].decode())
        rest = rest[cut:]
    return "\r\n ".join(parts)


def write_vcf(path: Path, contacts: list[dict], *, version: str = "3.0") -> Path:
    """An RFC 6350 (or 2426, ``version="3.0"``) address book: each contact a dict of name
    (``(given, family)``), emails, phones, organization, title, address (``(street, city,
    postcode, country)``), birthday (a date), note, uid."""
    lines: list[str] = []
    for contact in contacts:
        given, family = contact["name"]
        lines += ["BEGIN:VCARD", f"VERSION:{version}", f"FN:{given} {family}", f"N:{family};{given};;;"]
        if contact.get("uid"):
            lines.append(f"UID:{contact['uid']}")
        for index, email in enumerate(contact.get("emails", ())):
            lines.append(f"EMAIL;TYPE={'work' if index == 0 else 'home'}:{email}")
        for phone in contact.get("phones", ()):
            lines.append(f"TEL;TYPE=cell:{phone}")
        if contact.get("organization"):
            lines.append(f"ORG:{_ics_text(contact['organization'])}")
        if contact.get("title"):
            lines.append(f"TITLE:{_ics_text(contact['title'])}")
        if contact.get("address"):
            street, city, postcode, country = contact["address"]
            lines.append(f"ADR;TYPE=home:;;{street};{city};;{postcode};{country}")
        if contact.get("birthday"):
            lines.append(f"BDAY:{contact['birthday']:%Y-%m-%d}")
        if contact.get("note"):
            lines.append(f"NOTE:{_ics_text(contact['note'])}")
        lines.append("END:VCARD")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(("\r\n".join(_folded(line) for line in lines) + "\r\n").encode())
    return path


# -- JSON messaging exports (plugins/telegram.py, slack.py, discord.py; docs/formats.md) -----------
def write_telegram_export(
    path: Path, turns: list[tuple[str, str, datetime]], chat: str = "Trip planning", *,
    account: bool = False, extra: dict[int, dict] | None = None,
) -> Path:  # fmt: skip
    """Telegram Desktop's ``result.json`` of ``turns`` (speaker, text, aware time): one chat, or the
    account's (``chats.list``); ``date`` the wall clock, ``date_unixtime`` the instant."""
    messages = [
        {"id": index + 1, "type": "message", "date": moment.replace(tzinfo=None).isoformat(),
         "date_unixtime": str(int(moment.timestamp())), "from": speaker, "from_id": f"user{1000 + len(speaker)}",
         "text": text, **(extra or {}).get(index, {})}
        for index, (speaker, text, moment) in enumerate(turns)
    ]  # fmt: skip
    document: dict[str, Any] = {"name": chat, "type": "private_group", "id": 4242, "messages": messages}
    if account:
        about = "Here is the data you requested. Remember: Telegram is ad free."
        document = {"about": about, "personal_information": {"user_id": 1, "first_name": turns[0][0]},
                    "contacts": {"about": "", "list": []}, "chats": {"about": "", "list": [document]}}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False), encoding="utf-8")
    return path


def write_slack_export(
    folder: Path, turns: list[tuple[str, str, datetime]], channel: str = "general", *,
    replies: dict[int, int] | None = None, extra: dict[int, dict] | None = None,
) -> Path:  # fmt: skip
    """A Slack export folder: ``users.json``, ``channels.json``, ``CHANNEL/YYYY-MM-DD.json`` per UTC
    day; ``replies`` maps a turn to the turn whose thread it answers (``thread_ts``)."""
    people = list(dict.fromkeys(speaker for speaker, _, _ in turns))
    ids = {speaker: f"U{index:08d}" for index, speaker in enumerate(people, start=1)}
    users = [{"id": ids[p], "name": p.split()[0].lower(), "real_name": p, "deleted": False,
              "profile": {"real_name": p, "display_name": p.split()[0].lower()}} for p in people]  # fmt: skip
    stamps = [f"{moment.timestamp():.6f}" for _, _, moment in turns]
    days: dict[str, list[dict]] = {}
    for index, (speaker, text, moment) in enumerate(turns):
        message = {"type": "message", "user": ids[speaker], "text": text, "ts": stamps[index]}
        parent = (replies or {}).get(index)
        if parent is not None:
            message.update(thread_ts=stamps[parent], parent_user_id=ids[turns[parent][0]])
        elif index in (replies or {}).values():
            answers = [i for i, p in (replies or {}).items() if p == index]
            message.update(thread_ts=stamps[index], reply_count=len(answers),
                           replies=[{"user": ids[turns[i][0]], "ts": stamps[i]} for i in answers])  # fmt: skip
        message.update((extra or {}).get(index, {}))
        days.setdefault(moment.astimezone(UTC).date().isoformat(), []).append(message)
    channels = [{"id": "C00000001", "name": channel, "created": int(turns[0][2].timestamp()),
                 "members": list(ids.values()), "topic": {"value": ""}, "purpose": {"value": ""}}]  # fmt: skip
    write_json(folder / "users.json", users)
    write_json(folder / "channels.json", channels)
    for day, messages in days.items():
        (folder / channel).mkdir(parents=True, exist_ok=True)
        (folder / channel / f"{day}.json").write_text(json.dumps(messages, indent=4), encoding="utf-8")
    return folder


def write_discord_export(
    path: Path, turns: list[tuple[str, str, datetime]], guild: str = "Book club", channel: str = "general", *,
    extra: dict[int, dict] | None = None,
) -> Path:  # fmt: skip
    """A DiscordChatExporter JSON file: ``timestamp`` in the turn's own zone, the speaker as
    ``nickname``, a handle as ``name``. ``extra`` (all three): fields added to message N."""
    messages = [
        {"id": str(1_000_000_000_000_000 + index), "type": "Default", "timestamp": moment.isoformat(),
         "timestampEdited": None, "callEndedTimestamp": None, "isPinned": False, "content": text,
         "author": {"id": str(1000 + len(speaker)), "name": speaker.split()[0].lower(), "discriminator": "0000",
                    "nickname": speaker, "color": None, "isBot": False, "roles": [], "avatarUrl": ""},
         "attachments": [], "embeds": [], "stickers": [], "reactions": [], "mentions": [], "inlineEmojis": [],
         **(extra or {}).get(index, {})}
        for index, (speaker, text, moment) in enumerate(turns)
    ]  # fmt: skip
    document = {"guild": {"id": "1", "name": guild, "iconUrl": ""},
                "channel": {"id": "2", "type": "GuildTextChat", "categoryId": "3", "category": "Text Channels",
                            "name": channel, "topic": None},
                "dateRange": {"after": None, "before": None}, "exportedAt": turns[-1][2].isoformat(),
                "messages": messages, "messageCount": len(messages)}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    return path

# --- the seed's own formats: Universal JSON items, Claude Code transcripts, Perplexity threads ----


def universal_items(items: int, messages_each: int, seed: int = 7) -> list[dict]:
    """Universal import items (the seed's ``UniversalImportItem``): conversations with timed messages."""
    rng = random.Random(seed)
    made = []
    for i in range(items):
        texts = generated_texts(rng, messages_each)
        messages = [
            {"role": ("user", "assistant")[j % 2], "text": text, "timestamp": utc_iso(START_EPOCH + i * 3600 + j * 60)}
            for j, text in enumerate(texts)
        ]
        content = "\n\n".join(f"{m['role']}: {m['text']}" for m in messages)
        made.append({"id": f"item-{i}", "source": "chatgpt", "type": "conversation", "title": f"Universal {i}",
                     "content": content, "messages": messages, "timestamp": messages[0]["timestamp"], "metadata": {}})
    return made


def write_universal_items(path: Path, items: list[dict], *, lines: bool = False) -> Path:
    """``items`` as one JSON array, or (``lines``) as JSON Lines."""
    if not lines:
        return write_json(path, items)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def claude_code_events(session: str, texts: list[str], start: float = START_EPOCH) -> list[dict]:
    """A Claude Code session's transcript events: user and assistant turns in turn, each assistant
    turn calling Bash once (a tool_use line, then the user line carrying its tool_result)."""
    events: list[dict] = [{"type": "summary", "summary": f"Session {session}", "leafUuid": "x"}]
    common = {"sessionId": session, "cwd": "/work/project", "gitBranch": "main", "version": "1.0.0"}
    parent = None
    for i, text in enumerate(texts):
        when = utc_iso(start + i * 60)
        role = ("user", "assistant")[i % 2]
        content: Any = text if role == "user" else [{"type": "text", "text": text}]
        events.append({**common, "type": role, "uuid": f"{session}-{i}", "parentUuid": parent, "timestamp": when,
                       "message": {"role": role, "content": content, "id": f"msg-{i}"}})
        if role == "assistant":
            call = {"type": "tool_use", "id": f"tool-{i}", "name": "Bash", "input": {"command": "make test"}}
            events.append({**common, "type": "assistant", "uuid": f"{session}-{i}t", "timestamp": when,
                           "message": {"role": "assistant", "content": [call], "id": f"msg-{i}"}})
            result = {"type": "tool_result", "tool_use_id": f"tool-{i}", "content": "ok\n" * 40}
            events.append({**common, "type": "user", "uuid": f"{session}-{i}r", "timestamp": when,
                           "message": {"role": "user", "content": [result]}})
        parent = f"{session}-{i}"
    return events


def write_claude_code_home(root: Path, sessions: int, turns_each: int, seed: int = 7) -> Path:
    """A ``~/.claude`` folder: ``projects/-work-project/<session>.jsonl``, settings.json, a CLAUDE.md."""
    rng = random.Random(seed)
    project = root / "projects" / "-work-project"
    project.mkdir(parents=True, exist_ok=True)
    for s in range(sessions):
        events = claude_code_events(f"session-{s}", generated_texts(rng, turns_each), START_EPOCH + s * 86400)
        (project / f"session-{s}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    write_json(root / "settings.json", {"model": "opus", "alwaysThinkingEnabled": True,
                                         "permissions": {"allow": ["Bash(make test)", "Read"]}})
    (project / "CLAUDE.md").write_text("# Project rules\n\nRun make test before every commit; keep modules small.\n")
    return root


def perplexity_threads(threads: int, turns_each: int, seed: int = 7) -> list[dict]:
    """Perplexity threads as the seed reads them: question and answer entries, the answers cited."""
    rng = random.Random(seed)
    made = []
    for t in range(threads):
        texts = generated_texts(rng, turns_each)
        entries = [
            {"role": ("user", "assistant")[i % 2], "content": text, "created_at": int((START_EPOCH + t * 3600 + i * 60) * 1000),
             **({"citations": [f"https://example.com/{t}/{i}", {"url": f"https://docs.example.org/{i}"}]} if i % 2 else {})}
            for i, text in enumerate(texts)
        ]
        made.append({"id": f"thread-{t}", "title": f"Perplexity question {t}", "messages": entries})
    return made
