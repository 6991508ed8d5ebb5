"""Plain text files (``.txt``, ``.text``), one file or a folder of them: one note item per file.

The frame rule: the text is cut into paragraphs at blank lines, and consecutive paragraphs are
gathered into one block until the next would take the block past ``BLOCK_CHARS`` (1,500
characters, a few hundred tokens: what the embedding model reads at once); a paragraph longer than
that is a block of its own (the import engine's chunk vectors reach the rest). A heading
underlined with ``===`` or ``---`` (the plain-text habit Markdown took its setext headings from)
always opens a new block, and the block keeps it as its ``heading``. One block, one frame.

A text file states no date: its frames borrow the file's modification time, marked
``dated_by: file`` as the markdown source marks an undated note, so recency does not favour them.

A WhatsApp chat export is a ``.txt`` file too; it is left to the whatsapp source (this source
says 0 for it). Hidden files and folders are skipped; a file with NUL bytes is binary and skipped
with an error; invalid UTF-8 is replaced (U+FFFD) and reported; a line longer than 4,000,000
bytes keeps its beginning and the cut is reported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mind_harvest.plugins._bounded import read_capped
from mind_harvest.plugins._file_sources import FileSource, file_confidence, source_hooks
from mind_harvest.plugins.whatsapp import detect_confidence as whatsapp_confidence

from mind_core.harvest import epoch_to_iso
from mind_core.harvest.items import (
    HarvestError,
    HarvestItem,
    HarvestMessage,
    ScanEvent,
    stable_key,
)
from mind_core.harvest.source_files import open_source_file

TEXT_SUFFIXES = (".txt", ".text")
BLOCK_CHARS = 1_500
BINARY_SNIFF_BYTES = 8192
UNDERLINE = re.compile(r"^(=+|-+)[ \t]*$")


@dataclass
class Block:
    """Paragraphs gathered into one frame, with the line the block starts on."""

    line: int
    heading: str | None = None
    paragraphs: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        body = "\n\n".join(self.paragraphs)
        return f"{self.heading}\n\n{body}".strip() if self.heading else body

    @property
    def size(self) -> int:
        return sum(len(p) for p in self.paragraphs)


def paragraphs(text: str) -> Iterator[tuple[int, str, bool]]:
    """``(first line, paragraph, is_heading)``: blank lines separate paragraphs; a line above an
    ``===`` / ``---`` underline is a heading paragraph of its own."""
    lines = text.split("\n")
    current: list[str] = []
    start = 1
    index = 0
    while index < len(lines):
        line = lines[index]
        underlined = index + 1 < len(lines) and line.strip() and UNDERLINE.match(lines[index + 1].strip())
        if underlined:
            if current:
                yield start, "\n".join(current).strip(), False
                current = []
            yield index + 1, line.strip(), True
            index += 2
            start = index + 1
            continue
        if line.strip():
            if not current:
                start = index + 1
            current.append(line.rstrip())
        elif current:
            yield start, "\n".join(current).strip(), False
            current = []
        index += 1
    if current:
        yield start, "\n".join(current).strip(), False


def blocks(text: str, limit: int = BLOCK_CHARS) -> list[Block]:
    """The file's frames by the rule of the module docstring."""
    found: list[Block] = []
    for line, paragraph, is_heading in paragraphs(text):
        if is_heading:
            found.append(Block(line, heading=paragraph))
            continue
        current = found[-1] if found else None
        if current is None or (current.paragraphs and current.size + len(paragraph) > limit):
            current = Block(line, heading=None)
            found.append(current)
        current.paragraphs.append(paragraph)
    return [block for block in found if block.text]


def decode(raw: bytes) -> tuple[str, int | None]:
    """Text with newlines normalized, and the offset of the first invalid UTF-8 byte (or None)."""
    try:
        text, bad = raw.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        text, bad = raw.decode("utf-8-sig", errors="replace"), exc.start
    return text.replace("\r\n", "\n").replace("\r", "\n"), bad


def scan_text_file(file: Path, relpath: str) -> Iterator[ScanEvent]:
    where = str(file)
    try:
        with open_source_file(file) as handle:
            mtime = os.fstat(handle.fileno()).st_mtime
            read = read_capped(handle)
    except OSError as exc:
        yield HarvestError(where, f"cannot read: {exc.strerror or exc}")
        return
    if b"\x00" in read.data[:BINARY_SNIFF_BYTES]:
        yield HarvestError(where, "binary content (NUL bytes) in a text file; skipped")
        return
    left_out = read.describe()
    if left_out:
        yield HarvestError(where, f"text cut while reading: {left_out}", record=f"line {read.cuts[0].line}")
    text, bad = decode(read.data)
    if bad is not None:
        yield HarvestError(
            where, "invalid UTF-8; undecodable bytes replaced with U+FFFD", record=f"byte {bad}"
        )
    file_time = epoch_to_iso(mtime)
    messages = []
    for index, block in enumerate(blocks(text)):
        messages.append(
            HarvestMessage(
                key=stable_key("plaintext", relpath, index),
                text=block.text,
                timestamp=file_time,
                metadata={
                    "line": block.line,
                    "heading": block.heading,
                    "block_index": index,
                    "dated_by": "file",
                },
            )
        )
    yield HarvestItem(
        key=stable_key("plaintext", relpath),
        kind="note",
        title=Path(relpath).stem,
        container_key=relpath,
        messages=messages,
        metadata={"path": relpath, "updated": file_time, "blocks": len(messages)},
        timestamp=file_time,
    )


def detect_confidence(path: Path | str) -> float:
    """Plausible, never sure: ``.txt`` holds many formats (a saved mail, a chat export), so any
    source that recognises the content outranks this one. A text file that is not a WhatsApp chat
    (0.7), a folder with text files at its top (0.5)."""
    path = Path(path)
    if path.is_dir() and whatsapp_confidence(path):
        return 0.0
    return file_confidence(path, TEXT_SUFFIXES, _text_not_chat, sure=0.7, folder=0.5)


def _text_not_chat(file: Path) -> bool:
    return file.suffix.lower() in TEXT_SUFFIXES and not whatsapp_confidence(file)


class PlainTextSource(FileSource):
    """Plain text files or a folder of them (not WhatsApp chats: a chat found in a folder is left
    to the whatsapp source)."""

    kind = "plaintext"
    display_name = "Plain text files"
    suffixes = TEXT_SUFFIXES
    scan_file = staticmethod(scan_text_file)
    confidence = staticmethod(detect_confidence)

    def keep(self, file: Path) -> bool:
        return not whatsapp_confidence(file)


register_sources, detect_sources = source_hooks(PlainTextSource, detect_confidence)
