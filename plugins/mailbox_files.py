"""Finding messages on disk: mbox files (streamed), single RFC 822 files and maildir trees.

Files are recognised by their first bytes, not their names, so extension-less messages (maildir
``1234.host:2,S``, test corpora ``msg_01.txt``) are found and licence or index files are not.

mbox splitting is done here rather than with ``mailbox.mbox`` because real mailboxes break its one
rule (every line starting ``From `` is a separator): mboxo files do not escape ``From `` lines in
bodies ("From Russia with love"), Netscape wrote ``From - `` separators, Google Takeout writes
``From 1234@xxx``. A separator here is a ``From `` line whose sender is ``-``, an address, or is
followed by a time, and whose next line is a header. A ``Content-Length`` header is trusted only
when it lands exactly on the next separator or the end of the file; wrong lengths are common.
The file is read line by line with every line capped (``mind_harvest.plugins._bounded``) and a message's kept
bytes capped at MAX_MAIL_BYTES, so a 100 MB single-line body never sits in memory whole.
"""

from __future__ import annotations

import codecs
import io
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import BinaryIO

from mind_harvest.plugins._bounded import read_capped, read_line

CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Outlook .msg (OLE2 compound file)
SNIFF_BYTES = 64 * 1024
MAX_HEADER_BYTES = 4 * 1024 * 1024
# The stdlib parser needs about seven times a message's size, so a message keeps its first 24 MiB
# (attachments of up to about 17 MB, base64 included): the text part, which comes first, is long
# read by then, and the rest would only cost memory.
MAX_MAIL_BYTES = 24 * 1024 * 1024
HEADER_LINE = re.compile(rb"^[!-9;-~]+[ \t]*:")
POSTMARK_TIME = re.compile(rb"\d{1,2}:\d{2}")
KNOWN_HEADERS = frozenset(
    {
        b"from", b"to", b"cc", b"bcc", b"subject", b"date", b"message-id", b"received", b"return-path",
        b"mime-version", b"content-type", b"content-transfer-encoding", b"delivered-to", b"sender",
        b"reply-to", b"in-reply-to", b"references", b"x-original-to", b"envelope-to", b"user-agent",
        b"x-mailer", b"list-id", b"resent-from", b"resent-date",
    }
)  # fmt: skip
MAILDIR_FLAGS = re.compile(r"[:!]2,([A-Za-z]*)$")
MBOX_ESCAPED_FROM = re.compile(rb"^>(>*From )", re.MULTILINE)


class FileKind(Enum):
    MBOX = "mbox"
    MESSAGE = "message"
    OUTLOOK = "outlook"
    EMPTY = "empty"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class MboxChunk:
    """One message of an mbox file: its bytes after the ``From `` line (long lines cut, at most
    MAX_MAIL_BYTES of them), where they start and how many file bytes they span."""

    index: int
    offset: int
    data: bytes
    has_postmark: bool
    span: int


def classify(head: bytes) -> FileKind:
    """What a file is, from its first bytes."""
    if not head.strip():
        return FileKind.EMPTY
    if head.startswith(CFB_MAGIC):
        return FileKind.OUTLOOK
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8) :]
    first, _, rest = head.partition(b"\n")
    if is_postmark(first) and looks_like_headers(rest):
        return FileKind.MBOX
    if looks_like_headers(head):
        return FileKind.MESSAGE
    return FileKind.OTHER


def is_postmark(line: bytes) -> bool:
    """An mbox ``From `` separator line (see the module docstring for why not every one is)."""
    if not line.startswith(b"From "):
        return False
    sender, _, tail = line[5:].strip().partition(b" ")
    return sender == b"-" or b"@" in sender or POSTMARK_TIME.search(tail) is not None


def looks_like_headers(block: bytes) -> bool:
    """True when the block opens with RFC 822 header lines including at least one standard field.

    The header block normally ends at a blank line; a message that forgot it (the body starts right
    after the last header, as the stdlib also tolerates) needs two header lines to count.
    """
    lines = block.split(b"\n")
    if len(block) >= SNIFF_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the sniff may cut the last line short
    known = False
    fields = 0
    for index, line in enumerate(lines):
        line = line.rstrip(b"\r")
        if not line:
            return known
        if b"\x00" in line:
            return False
        if line[:1] in (b" ", b"\t"):
            if index == 0:
                return False
            continue
        if not HEADER_LINE.match(line):
            return known and fields >= 2
        fields += 1
        known = known or line.split(b":", 1)[0].strip().lower() in KNOWN_HEADERS
    return known


def header_block(data: bytes) -> bytes:
    """The bytes up to and including the blank line that ends the headers."""
    match = re.search(rb"\r?\n\r?\n", data)
    return data[: match.end()] if match else data


def read_header_block(handle: BinaryIO) -> bytes:
    """The header block of a single message file, read line by line (bodies can be huge)."""
    block = bytearray()
    while line := read_line(handle, MAX_HEADER_BYTES)[0]:
        block += line
        if line in (b"\n", b"\r\n") or len(block) > MAX_HEADER_BYTES:
            break
    return bytes(block)


def unescape_mbox_body(data: bytes) -> bytes:
    """mboxrd quoting: ``>From `` lines in a body were ``From `` lines before they were stored."""
    return MBOX_ESCAPED_FROM.sub(rb"\1", data) if b">From " in data else data


def maildir_flags(name: str) -> str | None:
    match = MAILDIR_FLAGS.search(name)
    return match.group(1) if match else None


class _Lines:
    """Lines with their file offsets, and one line of push-back for looking ahead."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.pushed: tuple[int, bytes] | None = None

    def next(self) -> tuple[int, bytes]:
        if self.pushed is not None:
            pushed, self.pushed = self.pushed, None
            return pushed
        return self.handle.tell(), read_line(self.handle)[0]

    def peek(self) -> bytes:
        position, line = self.next()
        self.pushed = (position, line)
        return line


def iter_mbox(handle: BinaryIO) -> Iterator[MboxChunk]:
    """The messages of an mbox file, in order, streamed."""
    lines = _Lines(handle)
    size = os.fstat(handle.fileno()).st_size
    position, line = lines.next()
    if line.startswith(codecs.BOM_UTF8):
        line = line[len(codecs.BOM_UTF8) :]
        position += len(codecs.BOM_UTF8)
    index = 0
    chunk = bytearray()
    chunk_start = position
    has_postmark = False
    in_headers = True
    while line:
        if is_postmark(line) and HEADER_LINE.match(lines.peek()):
            if has_postmark or chunk.strip():
                yield MboxChunk(index, chunk_start, bytes(chunk), has_postmark, position - chunk_start)
                index += 1
            chunk = bytearray()
            chunk_start = lines.pushed[0]  # type: ignore[index]  # where the line after it starts
            has_postmark = True
            in_headers = True
        else:
            if len(chunk) < MAX_MAIL_BYTES:
                chunk += line
            if in_headers and line in (b"\n", b"\r\n"):
                in_headers = False
                body = _body_by_content_length(handle, lines, bytes(chunk), size)
                if body is not None:
                    chunk += body
        position, line = lines.next()
    if has_postmark or chunk.strip():
        yield MboxChunk(index, chunk_start, bytes(chunk), has_postmark, position - chunk_start)


def _body_by_content_length(handle: BinaryIO, lines: _Lines, headers: bytes, size: int) -> bytes | None:
    """The body when Content-Length is present and ends exactly at a separator or end of file."""
    match = re.search(rb"(?im)^content-length[ \t]*:[ \t]*(\d{1,12})[ \t]*\r?$", headers)
    if not match or lines.pushed is not None:
        return None
    length = int(match.group(1))
    start = handle.tell()
    if start + length > size or length > MAX_MAIL_BYTES:
        return None
    body = handle.read(length)
    after = handle.readline()
    if after in (b"\n", b"\r\n"):
        after = handle.readline()
    valid = not after or (is_postmark(after) and HEADER_LINE.match(handle.readline()) is not None)
    handle.seek(start + length if valid else start)
    return read_capped(io.BytesIO(body)).data if valid else None
