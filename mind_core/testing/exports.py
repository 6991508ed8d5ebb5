"""Small deterministic sources in every built-in format, for tests and benchmarks (written here,
not copied): ChatGPT, Claude and Gemini (Takeout, AI Studio) chat exports, mail as mbox, maildir
and .eml files, and an Obsidian vault. A clone without ../shared still runs every plugin on them;
the mail and vault builders also say what a correct reader must find in what they wrote."""

from __future__ import annotations

import json
import random
import zipfile
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from email.generator import BytesGenerator
from email.message import EmailMessage
from email.utils import format_datetime, formataddr
from io import BytesIO
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

WORDS = (
    "project falcon database migration postgres sqlite release budget meeting alice bob carol dashboard "
    "latency cache index query vector embedding harvest mailbox vault note deadline review design api "
    "customer invoice report sprint roadmap hiring onboarding laptop travel berlin lisbon kubernetes docker"
).split()

START_EPOCH = 1_700_000_000.0  # 2023-11-14T22:13:20Z: every generated source begins here
PEOPLE = (
    ("Alice Johnson", "alice.johnson@example.com"),
    ("Bob Smith", "bob.smith@example.com"),
    ("Carol Diaz", "carol.diaz@example.com"),
    ("Dan Okafor", "dan.okafor@example.com"),
)
# each person writes from their own zone, so a reader must turn every Date header into UTC
ZONES = (
    timezone(timedelta(hours=1)),
    timezone(timedelta(hours=-5)),
    UTC,
    timezone(timedelta(hours=5, minutes=30)),
)


def utc_iso(epoch: float) -> str:
    """The instant as the harvest stores it: UTC ISO 8601 with milliseconds and 'Z'."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def generated_texts(rng: random.Random, count: int, low: int = 8, high: int = 30) -> list[str]:
    return [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))) + f" (#{i})" for i in range(count)
    ]


def _write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# --- chat exports -------------------------------------------------------------------------------


def chatgpt_conversation(
    conv_id: str, title: str, texts: list[str], start_epoch: float = START_EPOCH
) -> dict:
    """A linear ChatGPT conversation (root → alternating user/assistant) in the export's shape."""
    mapping: dict = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    for i, text in enumerate(texts):
        node_id = f"{conv_id}-m{i}"
        mapping[node_id] = {
            "id": node_id,
            "parent": parent,
            "children": [],
            "message": {
                "id": node_id,
                "author": {"role": "user" if i % 2 == 0 else "assistant"},
                "create_time": start_epoch + 60 * i,
                "content": {"content_type": "text", "parts": [text]},
                "metadata": {},
            },
        }
        mapping[parent]["children"].append(node_id)
        parent = node_id
    return {
        "id": conv_id,
        "title": title,
        "create_time": start_epoch,
        "current_node": parent,
        "mapping": mapping,
    }


def write_chatgpt_export(path: Path, conversations: int, messages_each: int, seed: int = 7) -> Path:
    """conversations.json with ``conversations`` x ``messages_each`` unique messages."""
    rng = random.Random(seed)
    data = [
        chatgpt_conversation(
            f"conv-{c}",
            f"Conversation {c} about {rng.choice(WORDS)}",
            generated_texts(rng, messages_each),
            START_EPOCH + 86_400 * c,
        )
        for c in range(conversations)
    ]
    return _write_json(path, data)


def claude_conversation(
    uuid: str, name: str, texts: list[str], start_epoch: float = START_EPOCH, blocks: bool = True
) -> dict:
    """A linear Claude.ai conversation (human/assistant turns a minute apart, parents chained) in
    the export's shape; each message's text also as a content block (which a reader prefers),
    unless ``blocks`` is false: the older shape with the flat text alone."""
    messages = []
    parent = "00000000-0000-4000-8000-000000000000"  # the export's root parent
    for i, text in enumerate(texts):
        when = utc_iso(start_epoch + 60 * i)
        message: dict[str, Any] = {
            "uuid": f"{uuid}-m{i}",
            "sender": "human" if i % 2 == 0 else "assistant",
            "text": text,
            "created_at": when,
            "updated_at": when,
            "attachments": [],
            "files": [],
            "parent_message_uuid": parent,
        }
        if blocks:
            message["content"] = [{"type": "text", "text": text}]
        messages.append(message)
        parent = f"{uuid}-m{i}"
    return {
        "uuid": uuid,
        "name": name,
        "created_at": utc_iso(start_epoch),
        "updated_at": utc_iso(start_epoch + 60 * max(len(texts) - 1, 0)),
        "chat_messages": messages,
    }


def write_claude_export(folder: Path, conversations: int, messages_each: int, seed: int = 7) -> Path:
    """A Claude export folder (conversations.json and users.json), one conversation a day."""
    rng = random.Random(seed)
    data = [
        claude_conversation(
            f"claude-{c}",
            f"Claude chat {c} about {rng.choice(WORDS)}",
            generated_texts(rng, messages_each),
            START_EPOCH + 86_400 * c,
        )
        for c in range(conversations)
    ]
    _write_json(folder / "conversations.json", data)
    name, address = PEOPLE[0]
    _write_json(folder / "users.json", [{"uuid": "user-0", "full_name": name, "email_address": address}])
    return folder


def takeout_entry(epoch: float, prompt: str, answer_html: str | None) -> dict:
    """One Gemini Apps activity of a Takeout ``MyActivity.json``."""
    entry: dict[str, Any] = {
        "header": "Gemini Apps",
        "title": f"Prompted {prompt}",
        "time": utc_iso(epoch),
        "products": ["Gemini Apps"],
    }
    if answer_html is not None:
        entry["safeHtmlItem"] = [{"html": answer_html}]
    return entry


def write_gemini_takeout(root: Path, conversations: int, prompts_each: int, seed: int = 7) -> Path:
    """Takeout/My Activity/Gemini Apps/MyActivity.json (newest first, as Takeout writes it):
    prompts five minutes apart, conversations a day apart, each answer in HTML with a list."""
    rng = random.Random(seed)
    entries = []
    for c in range(conversations):
        for p, text in enumerate(generated_texts(rng, 2 * prompts_each)[::2]):
            answer = " ".join(rng.choice(WORDS) for _ in range(8))
            first, second = rng.sample(WORDS, 2)
            html = f"<p>{answer}</p><ul><li>{first}</li><li>{second}</li></ul>"
            entries.append(takeout_entry(START_EPOCH + 86_400 * c + 300 * p, text, html))
    return _write_json(root / "Takeout" / "My Activity" / "Gemini Apps" / "MyActivity.json", entries[::-1])


def aistudio_prompt(texts: list[str]) -> dict:
    """An AI Studio chat file: alternating user/model chunks."""
    chunks = [{"role": "user" if i % 2 == 0 else "model", "text": t} for i, t in enumerate(texts)]
    return {"runSettings": {"model": "models/gemini-2.5-pro"}, "chunkedPrompt": {"chunks": chunks}}


def write_aistudio_prompts(folder: Path, prompts: int, turns_each: int, seed: int = 7) -> Path:
    """A Drive folder of AI Studio chats: files named by their title, without an extension."""
    rng = random.Random(seed)
    for p in range(prompts):
        _write_json(folder / f"AI Studio chat {p}", aistudio_prompt(generated_texts(rng, turns_each)))
    return folder


# --- mail ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SyntheticMail:
    """One generated mail and what a reader must keep of it: ``text`` is the body without the
    quoted parent, the attribution line and the signature (or the text of the HTML body)."""

    message_id: str
    thread: int
    sender: tuple[str, str]
    recipient: tuple[str, str]
    subject: str
    sent: datetime  # in the sender's zone
    text: str
    parent: SyntheticMail | None = None
    html: bool = False

    @property
    def timestamp(self) -> str:
        return utc_iso(self.sent.timestamp())

    def references(self) -> list[str]:
        chain, mail = [], self.parent
        while mail is not None:
            chain.insert(0, mail.message_id)
            mail = mail.parent
        return chain

    def to_message(self) -> EmailMessage:
        message = EmailMessage()
        message["From"] = formataddr(self.sender)
        message["To"] = formataddr(self.recipient)
        message["Subject"] = self.subject
        message["Date"] = format_datetime(self.sent)
        message["Message-ID"] = f"<{self.message_id}>"
        if self.parent is not None:
            message["In-Reply-To"] = f"<{self.parent.message_id}>"
            message["References"] = " ".join(f"<{m}>" for m in self.references())
        if self.html:
            message.set_content(f"<html><body><div><p>{self.text}</p></div></body></html>", subtype="html")
            return message
        body = self.text
        if self.parent is not None:  # a top-quoted reply, as many clients write it
            quote = "\n".join(f"> {line}" for line in self.parent.text.splitlines())
            attribution = f"On {format_datetime(self.parent.sent)}, {formataddr(self.parent.sender)} wrote:"
            body = f"{attribution}\n{quote}\n\n{body}"
        message.set_content(f"{body}\n\n-- \n{self.sender[0]}\n")
        return message

    def to_bytes(self) -> bytes:
        return self.to_message().as_bytes()


def mail_threads(threads: int, replies_each: int, seed: int = 7) -> list[SyntheticMail]:
    """``threads`` threads of a first mail and ``replies_each`` replies, between two of
    ``PEOPLE`` taking turns an hour apart; the first mail of every other thread is HTML only, and
    each first reply begins with ``From `` (which an mbox must escape and a reader unescape)."""
    rng = random.Random(seed)
    mails: list[SyntheticMail] = []
    for t in range(threads):
        pair = (t % len(PEOPLE), (t + 1) % len(PEOPLE))
        topic = f"{rng.choice(WORDS).capitalize()} {rng.choice(WORDS)} {t}"
        parent: SyntheticMail | None = None
        for i, text in enumerate(generated_texts(rng, replies_each + 1)):
            writer, reader = pair[i % 2], pair[(i + 1) % 2]
            parent = SyntheticMail(
                message_id=f"thread{t}-mail{i}@example.com",
                thread=t,
                sender=PEOPLE[writer],
                recipient=PEOPLE[reader],
                subject=topic if parent is None else f"Re: {topic}",
                sent=datetime.fromtimestamp(START_EPOCH + 86_400 * t + 3_600 * i, ZONES[writer]),
                text=f"From my side: {text} (thread {t})" if i == 1 else f"{text} (thread {t})",
                parent=parent,
                html=parent is None and t % 2 == 1,
            )
            mails.append(parent)
    return mails


def _postmark(mail: SyntheticMail) -> bytes:
    """The ``From `` line that starts a message in an mbox (sender and UTC time)."""
    return f"From {mail.sender[1]} {mail.sent.astimezone(UTC):%a %b %d %H:%M:%S %Y}\n".encode()


def write_mbox(path: Path, mails: list[SyntheticMail]) -> Path:
    """One mbox file (body lines that begin with ``From `` are escaped as ``>From ``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        for mail in mails:
            buffer = BytesIO()
            BytesGenerator(buffer, mangle_from_=True).flatten(mail.to_message())
            handle.write(_postmark(mail) + buffer.getvalue().rstrip(b"\n") + b"\n\n")
    return path


def write_maildir(folder: Path, mails: list[SyntheticMail]) -> Path:
    """A maildir: read mails in cur/ with flags, unread ones in new/, and in tmp/ a mail still
    being delivered (a reader must skip it: its message id is ``partial@example.com``)."""
    for sub in ("cur", "new", "tmp"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for index, mail in enumerate(mails):
        name = f"{1_700_000_000 + index}.M{index}P1.synthetic"
        target = folder / "cur" / f"{name}:2,S" if index % 3 else folder / "new" / name
        target.write_bytes(mail.to_bytes())
    (folder / "tmp" / "1700000000.M0P2.synthetic").write_bytes(
        b"From: someone@example.com\nMessage-ID: <partial@example.com>\nSubject: half\n\nhalf delivered"
    )
    return folder


def write_eml_folder(folder: Path, mails: list[SyntheticMail]) -> Path:
    """One .eml file a mail, in a sub-folder per thread."""
    for mail in mails:
        path = folder / f"thread-{mail.thread}" / f"{mail.message_id.split('@')[0]}.eml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(mail.to_bytes())
    return folder


# --- Obsidian vault -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SyntheticNote:
    """One generated note and what a reader must find in it: frontmatter tags first, then the
    inline ones; ``links`` are the wikilinked notes' titles (never the ones in code)."""

    path: str
    title: str
    created: str  # the frontmatter's date, as a UTC instant
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    links: tuple[str, ...]
    sections: tuple[tuple[str, str], ...]  # (heading, text)

    def markdown(self) -> str:
        tags = "\n".join(f"  - {t}" for t in self.tags[:1])
        aliases = "\n".join(f"  - {a}" for a in self.aliases)
        lines = ["---", f"aliases:\n{aliases}", f"tags:\n{tags}", f"created: {self.created[:10]}", "---"]
        inline = [f"#{t}" for t in self.tags[1:]]
        for index, (heading, text) in enumerate(self.sections):
            lines += [f"## {heading}", ""]
            if index < len(self.links):
                link = self.links[index]
                text += f" See [[{link}]]." if index % 2 == 0 else f" See [[{link}|the {link.lower()} note]]."
            if index == 0 and inline:
                text += " " + " ".join(inline)
            lines += [text, ""]
        lines += ["```", "#notatag and [[Not A Link]] inside code", "```", ""]
        return "\n".join(lines)


def vault_notes(notes: int, sections_each: int = 2, seed: int = 7) -> list[SyntheticNote]:
    """``notes`` notes named ``Topic N`` (half of them in ``Projects/``), note n linking to the
    next two (links wrap around), each with an alias, a frontmatter tag and an inline tag."""
    rng = random.Random(seed)
    titles = [f"Topic {n}" for n in range(notes)]
    made = []
    for n, title in enumerate(titles):
        links = tuple(dict.fromkeys(titles[(n + k) % notes] for k in (1, 2) if (n + k) % notes != n))
        texts = generated_texts(rng, max(sections_each, len(links)))
        made.append(SyntheticNote(
            path=f"Projects/{title}.md" if n % 2 else f"{title}.md",
            title=title,
            created=utc_iso(START_EPOCH + 86_400 * n)[:10] + "T00:00:00.000Z",
            aliases=(f"T{n}",),
            tags=("project", f"area/{rng.choice(WORDS)}{n}"),
            links=links,
            sections=tuple((f"Part {s}", text) for s, text in enumerate(texts)),
        ))
    return made


def write_obsidian_vault(folder: Path, notes: list[SyntheticNote]) -> Path:
    """The notes, an ``.obsidian/`` settings folder (which makes it a vault) and a Bases file
    and a canvas (which a reader must not take for notes)."""
    (folder / ".obsidian").mkdir(parents=True, exist_ok=True)
    (folder / ".obsidian" / "app.json").write_text('{"alwaysUpdateLinks": true}', encoding="utf-8")
    (folder / "Board.canvas").write_text('{"nodes": [], "edges": []}', encoding="utf-8")
    (folder / "Topics.base").write_text("views: []\n", encoding="utf-8")
    for note in notes:
        path = folder / note.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note.markdown(), encoding="utf-8")
    return folder


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
        return _write_json(path, items)
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
    _write_json(root / "settings.json", {"model": "opus", "alwaysThinkingEnabled": True,
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
