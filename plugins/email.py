"""Mailboxes: mbox files, single .eml (or extension-less RFC 822) files and maildir trees.

One message per email, one item per thread. Threading needs every message of the source before
any item can be emitted, so the scan makes two passes:

1. Read only headers (for mbox: split the stream, keep the header block) and keep a small record
   per message: its ids, references, subject, date and where its bytes are (file, offset, length).
   Memory grows by a few hundred bytes per message, never by message bodies.
2. Group records into threads (References / In-Reply-To, then a reply's subject as a last resort),
   then re-read and fully parse each thread's messages, one thread at a time.

Message keys are the Message-ID (a hash of the message bytes when there is none). A second copy of
the same message (same id, same text: the mail kept in two folders) is merged into the first; a
different message reusing an id gets a key with its content hash.

Bad input never ends the scan: a binary Outlook ``.msg``, a file named ``.eml`` that is not mail,
a broken mbox message or an unreadable file each give a located ``HarvestError``. A bad Date is not
an error: the message keeps ``timestamp=None`` (or the Received time) and says why in metadata.

This module is named like the stdlib package it uses; ``import email`` below is absolute (Python 3)
and resolves to the standard library, which ``tests/plugins/test_email.py`` checks.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from typing import Any, BinaryIO

from mind_harvest.plugins._bounded import MAX_LINE_BYTES, BoundedText, read_capped
from mind_harvest.plugins.mail_lists import list_addresses
from mind_harvest.plugins.mail_text import (
    decode_header_value,
    extract_body,
    format_person,
    is_forward,
    parse_addresses,
    parse_date,
    received_date,
    strip_replies,
)
from mind_harvest.plugins.mailbox_files import (
    MAX_MAIL_BYTES,
    SNIFF_BYTES,
    FileKind,
    MboxChunk,
    classify,
    header_block,
    iter_mbox,
    looks_like_headers,
    maildir_flags,
    read_header_block,
    unescape_mbox_body,
)

from mind_core.harvest.detection import depth_of_first
from mind_core.harvest.items import (
    HarvestError,
    HarvestItem,
    HarvestMessage,
    ScanEvent,
    stable_key,
)
from mind_core.harvest.paths import stored_text
from mind_core.harvest.source_files import current_rules, file_fingerprint, open_source_file, walk_files
from mind_core.plugins import hookimpl

MAIL_SUFFIXES = frozenset({".eml", ".mbox", ".mbx", ".msg", ".mail"})  # claimed as mail by name
# Formats whose first lines can look like headers (MultiMarkdown "Title: x", YAML) but are never mail.
NOT_MAIL_SUFFIXES = frozenset({".md", ".markdown", ".yaml", ".yml", ".json", ".html", ".htm", ".csv", ".py"})
MESSAGE_ID = re.compile(r"<([^<>\s]+)>")
REPLY_PREFIX = re.compile(
    r"^\s*((re|fwd?|aw|wg|sv|vs|antw|rif|r|i|tr|enc|odp|res)\s*(\[\d+\]|\(\d+\))?\s*:\s*)+", re.I
)
LIST_TAG = re.compile(r"^\s*\[[^\]]{1,40}\]\s*")
MAX_PARTICIPANTS = 50

_headers_parser = BytesParser(policy=policy.default)


@dataclass(slots=True)
class MessageRecord:
    """What pass 1 keeps of one message: enough to thread it and to find its bytes again."""

    order: int
    path: Path
    relpath: str
    mbox_index: int | None
    offset: int
    length: int | None  # None: the whole file
    message_id: str | None
    in_reply_to: str | None
    references: tuple[str, ...]
    subject_key: str
    is_reply: bool
    timestamp: str | None
    content_digest: str | None  # only without a Message-ID: the key, and identical copies thread together

    @property
    def record(self) -> str | None:
        return _mbox_location(self.mbox_index, self.offset) if self.mbox_index is not None else None


@dataclass
class Thread:
    root_id: str
    records: list[MessageRecord] = field(default_factory=list)


class EmailSource:
    """mbox, .eml and maildir, in any mix, below one path."""

    kind = "email"
    display_name = "Email (mbox, .eml, maildir)"

    def detect(self, path: Path) -> bool:
        path = Path(path)
        if path.is_file():
            return path.suffix.lower() in MAIL_SUFFIXES or _sniff(path) in (FileKind.MBOX, FileKind.MESSAGE)
        return mail_depth(path) is not None

    def scan(self, path: Path) -> Iterator[ScanEvent]:
        root = Path(path)
        if not root.exists():
            yield HarvestError(str(root), "no such file or folder")
            return
        records: list[MessageRecord] = []
        for event in collect_records(root):
            if isinstance(event, HarvestError):
                yield event
            else:
                records.append(event)
        for thread in group_threads(records):
            yield from thread_events(thread)

    def fingerprint(self, path: Path) -> str:
        return file_fingerprint(Path(path))


def mail_depth(folder: Path) -> int | None:
    """How deep below ``folder`` the first maildir or folder of mail files is (0: the folder
    itself), or None; a maildir's ``tmp/`` (messages being delivered) is not looked into."""
    return depth_of_first(Path(folder), _holds_mail, skip=("tmp",))


def _holds_mail(folder: Path) -> bool:
    """A maildir (``cur/`` or ``new/``), or a folder with mail files at its top."""
    if (folder / "cur").is_dir() or (folder / "new").is_dir():
        return True
    try:
        files = sorted(entry for entry in folder.iterdir() if entry.is_file() and not entry.name.startswith("."))
    except OSError:
        return False
    if any(entry.suffix.lower() in MAIL_SUFFIXES for entry in files):
        return True
    return any(_sniff(entry) in (FileKind.MBOX, FileKind.MESSAGE) for entry in files[:20])


def _sniff(path: Path) -> FileKind:
    try:
        with open_source_file(path, streamed=True) as handle:
            return classify(handle.read(SNIFF_BYTES))
    except OSError:
        return FileKind.OTHER


def iter_mail_files(root: Path, errors: list[HarvestError]) -> Iterator[tuple[Path, str]]:
    """Files below a mail folder in a stable order; maildir ``tmp/`` (half-delivered) and hidden
    folders are skipped, except Maildir++ sub-folders (``.Sent/cur``); what cannot be read
    safely (a FIFO, a link leading outside) goes to ``errors``."""

    def enter(folder: Path, names: list[str]) -> list[str]:
        is_maildir = "cur" in names or "new" in names
        return [
            name
            for name in names
            if not (is_maildir and name == "tmp")
            and (not name.startswith(".") or (folder / name / "cur").is_dir() or (folder / name / "new").is_dir())
        ]

    for found in walk_files(root, lambda name: not name.startswith("."), enter):
        if isinstance(found, HarvestError):
            errors.append(found)
        else:
            yield found, stored_text(found.relative_to(root).as_posix())


def collect_records(root: Path) -> Iterator[MessageRecord | HarvestError]:
    """Pass 1: a record per message found below ``root`` (or in the file ``root``), and located errors."""
    if root.is_file():
        files: Iterator[tuple[Path, str]] = iter([(root, stored_text(root.name))])
        explicit = True
    else:
        walk_errors: list[HarvestError] = []
        files = iter_mail_files(root, walk_errors)
        explicit = False
    order = 0
    for file, relpath in files:
        if not explicit:
            yield from walk_errors
            walk_errors.clear()
            if file.suffix.lower() in NOT_MAIL_SUFFIXES:
                continue
        for event in _file_records(
            file, relpath, order, claimed=explicit or file.suffix.lower() in MAIL_SUFFIXES
        ):
            if isinstance(event, MessageRecord):
                order += 1
            yield event
    if not explicit:
        yield from walk_errors


def _file_records(
    file: Path, relpath: str, order: int, claimed: bool
) -> Iterator[MessageRecord | HarvestError]:
    where = str(file)
    try:
        with open_source_file(file, streamed=True) as handle:
            kind = classify(handle.read(SNIFF_BYTES))
            size, limit = os.fstat(handle.fileno()).st_size, current_rules().limit(streamed=False)
            if kind is FileKind.MESSAGE and size > limit:
                yield HarvestError(
                    where, f"a message of {size:,} bytes, over the {limit:,}-byte limit for one file; skipped"
                )
            elif kind is FileKind.OUTLOOK and (claimed or file.suffix == ""):
                yield HarvestError(
                    where, (
                        "binary Outlook .msg (OLE2 compound file) is not RFC 822 mail; export it as .eml,"
                        " or leave it out: mind sources set SOURCE --exclude GLOB"
                    )
                )
            elif kind in (FileKind.EMPTY, FileKind.OTHER):
                if claimed:
                    yield HarvestError(
                        where,
                        "empty file" if kind is FileKind.EMPTY else "not an RFC 822 message or mbox file",
                    )
            elif kind is FileKind.MESSAGE:
                handle.seek(0)
                record = _record(read_header_block(handle), order, file, relpath, None, 0, None)
                if isinstance(record, MessageRecord) and record.message_id is None:  # rare: read it all
                    handle.seek(0)
                    record.content_digest = content_digest(_read_capped(handle, None).data)
                yield record
            elif kind is FileKind.MBOX:
                handle.seek(0)
                yield from _mbox_records(handle, file, relpath, order)
    except OSError as exc:
        yield HarvestError(where, f"cannot read: {exc.strerror or exc}")


def _mbox_records(
    handle: BinaryIO, file: Path, relpath: str, order: int
) -> Iterator[MessageRecord | HarvestError]:
    for chunk in iter_mbox(handle):
        headers = header_block(chunk.data)
        if not looks_like_headers(headers[:SNIFF_BYTES]):
            yield HarvestError(
                str(file), _broken_chunk_reason(chunk), record=_mbox_location(chunk.index, chunk.offset)
            )
            continue
        record = _record(headers, order, file, relpath, chunk.index, chunk.offset, chunk.span)
        if isinstance(record, MessageRecord):
            if record.message_id is None:
                record.content_digest = content_digest(unescape_mbox_body(chunk.data))
            order += 1
        yield record


def _mbox_location(index: int, offset: int) -> str:
    return f"message {index} (byte {offset})"


def _broken_chunk_reason(chunk: MboxChunk) -> str:
    if not chunk.has_postmark:
        return "text before the first 'From ' separator line is not a message"
    return "no RFC 822 header block after the 'From ' separator line"


def _record(
    headers: bytes,
    order: int,
    file: Path,
    relpath: str,
    mbox_index: int | None,
    offset: int,
    length: int | None,
) -> MessageRecord | HarvestError:
    try:
        return _parse_record(headers, order, file, relpath, mbox_index, offset, length)
    except Exception as exc:  # the stdlib header parser on hostile bytes: skip the message, keep scanning
        where = _mbox_location(mbox_index, offset) if mbox_index is not None else None
        return HarvestError(str(file), f"cannot read headers: {type(exc).__name__}: {exc}", record=where)


def _parse_record(
    headers: bytes,
    order: int,
    file: Path,
    relpath: str,
    mbox_index: int | None,
    offset: int,
    length: int | None,
) -> MessageRecord:
    message = _headers_parser.parsebytes(headers, headersonly=True)
    raw = _raw_headers(message)
    subject = decode_header_value(_first(raw, "subject"))
    timestamp, _ = parse_date(_first(raw, "date"))
    if timestamp is None:
        timestamp = received_date(raw.get("received", []))
    references = tuple(MESSAGE_ID.findall(_first(raw, "references") or ""))
    message_id = normalize_message_id(_first(raw, "message-id"))
    return MessageRecord(
        order=order,
        path=file,
        relpath=relpath,
        mbox_index=mbox_index,
        offset=offset,
        length=length,
        message_id=message_id,
        in_reply_to=next(iter(MESSAGE_ID.findall(_first(raw, "in-reply-to") or "")), None),
        references=references,
        subject_key=subject_key(subject),
        is_reply=bool(REPLY_PREFIX.match(LIST_TAG.sub("", subject))),
        timestamp=timestamp,
        content_digest=None,
    )


def _raw_headers(message: EmailMessage) -> dict[str, list[str]]:
    """Header values as written (not run through the header registry, which can raise on junk)."""
    raw: dict[str, list[str]] = {}
    for name, value in message.raw_items():
        raw.setdefault(name.lower(), []).append(str(value))
    return raw


def _first(raw: dict[str, list[str]], name: str) -> str | None:
    values = raw.get(name)
    return values[0] if values else None


def content_digest(raw: bytes) -> str:
    """Identity of a message without a Message-ID: its bytes, line endings normalized."""
    return hashlib.sha256(raw.replace(b"\r\n", b"\n")).hexdigest()


def normalize_message_id(value: str | None) -> str | None:
    if not value:
        return None
    match = MESSAGE_ID.search(value)
    if match:
        return match.group(1)
    stripped = value.strip()
    return stripped if stripped and " " not in stripped else None


def subject_key(subject: str) -> str:
    """A subject without reply/forward prefixes and list tags, case-folded: "Re: [list] Fwd: X" -> "x"."""
    text = subject
    while True:
        shorter = REPLY_PREFIX.sub("", LIST_TAG.sub("", text))
        if shorter == text:
            break
        text = shorter
    return re.sub(r"\s+", " ", text).strip().casefold()


def group_threads(records: list[MessageRecord]) -> list[Thread]:
    """Connected components over Message-ID, In-Reply-To and References; a message with neither but
    a reply subject ("Re: x") joins the earliest other message with the same subject."""
    parent: dict[str, str] = {}

    def find(node: str) -> str:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    def union(a: str, b: str) -> None:
        root_a, root_b = find(a), find(b)
        if root_a != root_b:
            parent[max(root_a, root_b)] = min(root_a, root_b)

    known_ids = {record.message_id for record in records if record.message_id}
    by_subject: dict[str, list[MessageRecord]] = {}
    for record in records:
        node = f"#{record.order}"
        find(node)
        if record.message_id:
            union(node, f"<{record.message_id}>")
        for linked in (record.in_reply_to, *record.references):
            if linked and _is_real_reference(linked, known_ids):
                union(node, f"<{linked}>")
        if record.content_digest:
            union(node, f"sha256:{record.content_digest}")
        if record.subject_key:
            by_subject.setdefault(record.subject_key, []).append(record)
    for record in records:
        if record.in_reply_to or record.references or not record.is_reply or not record.subject_key:
            continue
        others = [other for other in by_subject[record.subject_key] if other is not record]
        if others:
            earliest = min(others, key=_chronological)
            union(f"#{record.order}", f"#{earliest.order}")

    components: dict[str, list[MessageRecord]] = {}
    for record in records:
        components.setdefault(find(f"#{record.order}"), []).append(record)
    threads = []
    for members in components.values():
        members.sort(key=_chronological)
        threads.append(Thread(root_id=_thread_origin(members[0]), records=members))
    threads.sort(key=lambda thread: (_chronological(thread.records[0]), thread.root_id))
    return threads


def _is_real_reference(message_id: str, known_ids: set[str]) -> bool:
    """Junk like ``<yes>`` (git send-email's In-Reply-To prompt answered "yes") would otherwise tie
    unrelated threads together: an id without ``@`` links only when a message really has it."""
    return "@" in message_id or message_id in known_ids


def _chronological(record: MessageRecord) -> tuple[bool, str, int]:
    return (record.timestamp is None, record.timestamp or "", record.order)


def _thread_origin(first: MessageRecord) -> str:
    """The id the earliest message descends from (its own when it starts the thread)."""
    for candidate in (*first.references, first.in_reply_to, first.message_id):
        if candidate and "@" in candidate:
            return candidate
    return first.message_id or first.in_reply_to or f"sha256:{first.content_digest}"


def thread_events(thread: Thread) -> Iterator[ScanEvent]:
    """Pass 2 for one thread: its messages parsed in date order, then the thread item."""
    messages: list[HarvestMessage] = []
    seen: dict[str, HarvestMessage] = {}
    for record in thread.records:
        try:
            read = _read_message(record)
            raw = read.data
            message = _email_message(raw, record)
        except OSError as exc:
            yield HarvestError(str(record.path), f"cannot read: {exc.strerror or exc}", record=record.record)
            continue
        except Exception as exc:  # a message the stdlib cannot take apart: skip it, keep the thread
            yield HarvestError(
                str(record.path), f"cannot parse message: {type(exc).__name__}: {exc}", record=record.record
            )
            continue
        left_out = read.describe()
        if left_out:
            yield HarvestError(str(record.path), f"message cut while reading: {left_out}", record=record.record)
        earlier = seen.get(message.key)
        if earlier is not None:
            if earlier.text == message.text:
                earlier.metadata.setdefault("copies", []).append(_location(record))
                continue
            message.key = stable_key("email", message.key, hashlib.sha256(raw).hexdigest())
            message.metadata["duplicate_message_id"] = True
        seen[message.key] = message
        messages.append(message)
    if not messages:
        return
    subjects = [m.metadata["subject"] for m in messages if m.metadata.get("subject")]
    participants = list(dict.fromkeys(m.author for m in messages if m.author))
    yield HarvestItem(
        key=stable_key("email", "thread", thread.root_id),
        kind="email",
        title=subjects[0] if subjects else "(no subject)",
        container_key=thread.root_id,
        messages=messages,
        metadata={
            "thread_root": thread.root_id,
            "message_ids": [m.metadata["message_id"] for m in messages if m.metadata.get("message_id")],
            "participants": participants[:MAX_PARTICIPANTS],
            "paths": list(dict.fromkeys(m.metadata["path"] for m in messages)),
        },
        timestamp=next((m.timestamp for m in messages if m.timestamp), None),
    )


def _read_message(record: MessageRecord) -> BoundedText:
    with open_source_file(record.path, streamed=True) as handle:
        handle.seek(record.offset)
        read = _read_capped(handle, record.length)
    if record.length is not None:
        read.data = unescape_mbox_body(read.data)
    return read


def _read_capped(handle: BinaryIO, length: int | None) -> BoundedText:
    """A message's bytes with long lines cut; one no longer than a line cap is read in one go."""
    span = length if length is not None else os.fstat(handle.fileno()).st_size - handle.tell()
    if span <= MAX_LINE_BYTES:
        data = handle.read(span)
        return BoundedText(data, len(data))
    return read_capped(handle, span, MAX_MAIL_BYTES)


def _location(record: MessageRecord) -> str:
    return record.relpath if record.mbox_index is None else f"{record.relpath}#{record.mbox_index}"


def _email_message(raw: bytes, record: MessageRecord) -> HarvestMessage:
    parsed = BytesParser(policy=policy.default).parsebytes(raw)
    headers = _raw_headers(parsed)
    body = extract_body(parsed)
    subject = decode_header_value(_first(headers, "subject"))
    stripped = strip_replies(body.text, forwarded=is_forward(subject))
    senders = parse_addresses(_first(headers, "from"))
    author = format_person(*senders[0]) if senders else None
    to = parse_addresses(", ".join(headers.get("to", [])))
    cc = parse_addresses(", ".join(headers.get("cc", [])))
    timestamp, date_problem = parse_date(_first(headers, "date"))
    metadata: dict[str, Any] = {
        "message_id": normalize_message_id(_first(headers, "message-id")),
        "in_reply_to": record.in_reply_to,
        "references": list(record.references),
        "subject": subject,
        "from": author,
        "to": [format_person(*p) for p in to],
        "cc": [format_person(*p) for p in cc],
        "list_id": decode_header_value(_first(headers, "list-id")) or None,
        "mailing_lists": list_addresses(headers, (address for _, address in (*senders, *to, *cc))),
        "date": _first(headers, "date"),
        "path": record.relpath,
        "content_type": body.content_type,
        "attachments": body.attachments,
        "quoted_lines_removed": stripped.quoted_lines,
        "signature_removed": stripped.signature_removed,
        "original_message_removed": stripped.original_block_removed,
    }
    if date_problem:
        metadata["date_problem"] = date_problem
        timestamp = received_date(headers.get("received", []))
        if timestamp:
            metadata["date_source"] = "received"
    if record.mbox_index is not None:
        metadata["mbox_index"] = record.mbox_index
    flags = maildir_flags(record.path.name) if record.mbox_index is None else None
    if flags is not None:
        metadata["maildir_flags"] = flags
    if body.notes:
        metadata["decode_notes"] = sorted(set(body.notes))
    text = stripped.text
    if not text:
        metadata["empty_body"] = True
        text = _placeholder_text(subject, body.attachments)
    message_id = metadata["message_id"]
    key_part = message_id or f"sha256:{record.content_digest or content_digest(raw)}"
    return HarvestMessage(
        key=stable_key("email", key_part),
        text=text,
        role=None,
        author=author,
        timestamp=timestamp,
        metadata=metadata,
    )


def _placeholder_text(subject: str, attachments: list[dict[str, str | None]]) -> str:
    """What a message without body text is about, so it still has a findable frame."""
    parts = [f"Subject: {subject}" if subject else "(no subject, no text)"]
    if attachments:
        listed = ", ".join(f"{a['name'] or 'unnamed'} ({a['content_type']})" for a in attachments)
        parts.append(f"Attachments: {listed}")
    return "\n".join(parts)


@hookimpl
def register_sources(register: Any) -> None:
    register(EmailSource())


@hookimpl
def detect_sources(path: Path) -> dict[str, float]:
    """Sure when a file's first bytes are mail (or a folder is a maildir or holds such files); a
    mail-like name alone, or mail only in sub-folders, is plausible."""
    path = Path(path)
    if path.is_file():
        if _sniff(path) in (FileKind.MBOX, FileKind.MESSAGE):
            return {"email": 0.95}
        return {"email": 0.6 if path.suffix.lower() in MAIL_SUFFIXES else 0.0}
    depth = mail_depth(path)
    if depth is None:
        return {"email": 0.0}
    # mail at the top is sure; mail found deeper is plausible (named when no kind is given, but
    # never grounds to refuse another kind a user gave for the folder)
    return {"email": 0.9 if depth == 0 else 0.7}
