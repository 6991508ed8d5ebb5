"""Small deterministic sources in every built-in format, for tests and benchmarks (written here,
not copied): ChatGPT, Claude and Gemini (Takeout, AI Studio) chat exports, mail as mbox, maildir
and .eml files, and an Obsidian vault. A clone without ../shared still runs every plugin on them;
the mail and vault builders also say what a correct reader must find in what they wrote."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from email.generator import BytesGenerator
from email.message import EmailMessage
from email.utils import format_datetime, formataddr
from io import BytesIO
from pathlib import Path
from typing import Any

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


def write_json(path: Path, data: Any) -> Path:
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
    return write_json(path, data)


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
    write_json(folder / "conversations.json", data)
    name, address = PEOPLE[0]
    write_json(folder / "users.json", [{"uuid": "user-0", "full_name": name, "email_address": address}])
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
    return write_json(root / "Takeout" / "My Activity" / "Gemini Apps" / "MyActivity.json", entries[::-1])


def aistudio_prompt(texts: list[str]) -> dict:
    """An AI Studio chat file: alternating user/model chunks."""
    chunks = [{"role": "user" if i % 2 == 0 else "model", "text": t} for i, t in enumerate(texts)]
    return {"runSettings": {"model": "models/gemini-2.5-pro"}, "chunkedPrompt": {"chunks": chunks}}


def write_aistudio_prompts(folder: Path, prompts: int, turns_each: int, seed: int = 7) -> Path:
    """A Drive folder of AI Studio chats: files named by their title, without an extension."""
    rng = random.Random(seed)
    for p in range(prompts):
        write_json(folder / f"AI Studio chat {p}", aistudio_prompt(generated_texts(rng, turns_each)))
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
