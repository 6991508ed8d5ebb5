"""Reading text files line by line with a cap, so that one enormous line never sits in memory.

A 100 MB line (an mbox body without line breaks, a Markdown note that is one paragraph of base64)
used to be read whole and only cut to MAX_MESSAGE_CHARS once it was a string, peaking at over a
gigabyte. Here a line keeps its first MAX_LINE_BYTES (enough for MAX_MESSAGE_CHARS characters of
UTF-8) and the rest is skipped in 1 MB pieces; every cut is returned so the plugin can report it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO

from mind_core.harvest.items import MAX_MESSAGE_CHARS

MAX_LINE_BYTES = 4 * MAX_MESSAGE_CHARS  # a UTF-8 character is at most 4 bytes
SKIP_PIECE = 2**20


@dataclass(frozen=True, slots=True)
class LineCut:
    line: int  # 1-based, counted from where the read started
    size: int  # the line's bytes in the file, its line ending included


@dataclass(slots=True)
class BoundedText:
    """What a capped read kept, how many file bytes it covered, and what it left out."""

    data: bytes
    size: int  # bytes read from the file
    total: int | None = None  # the span asked for, when known (reading may stop before its end)
    cuts: list[LineCut] = field(default_factory=list)
    truncated: bool = False  # stopped keeping lines at ``max_bytes``

    def describe(self, max_line: int = MAX_LINE_BYTES) -> str | None:
        """A warning naming what was left out, or None when everything was kept."""
        parts = []
        if self.cuts:
            longest = max(self.cuts, key=lambda cut: cut.size)
            parts.append(
                f"{len(self.cuts)} line{'s' if len(self.cuts) > 1 else ''} longer than {max_line:,} bytes "
                f"cut (the longest, line {longest.line}, had {longest.size:,})"
            )
        if self.truncated:
            parts.append(f"only its first {len(self.data):,} bytes kept")
        return f"{self.total or self.size:,} bytes, " + " and ".join(parts) if parts else None


def read_line(handle: BinaryIO, max_line: int = MAX_LINE_BYTES) -> tuple[bytes, int]:
    """The next line with at most ``max_line`` bytes before its line ending, and its size in the file."""
    line = handle.readline(max_line + 1)
    if len(line) <= max_line or line.endswith(b"\n"):
        return line, len(line)
    size = len(line)
    while True:
        rest = handle.readline(SKIP_PIECE)
        size += len(rest)
        if not rest or rest.endswith(b"\n"):
            ending = b"\r\n" if rest.endswith(b"\r\n") else rest[-1:] if rest.endswith(b"\n") else b""
            return _whole_characters(line[:max_line]) + ending, size


def _whole_characters(data: bytes) -> bytes:
    """``data`` without a UTF-8 sequence cut short at its end (a cut must not invent a bad byte)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return data
        if byte >= 0xC0:
            needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data[:-back] if needed > back else data
    return data


def read_capped(
    handle: BinaryIO, length: int | None = None, max_bytes: int | None = None, max_line: int = MAX_LINE_BYTES
) -> BoundedText:
    """Lines from the current position up to ``length`` file bytes (None: to the end), each capped
    at ``max_line``; lines past ``max_bytes`` kept bytes are not read at all."""
    kept = bytearray()
    result = BoundedText(b"", 0, total=length)
    number = 0
    while length is None or result.size < length:
        if max_bytes is not None and len(kept) >= max_bytes:
            result.truncated = True
            break
        line, size = read_line(handle, max_line)
        if not line:
            break
        number += 1
        if length is not None and result.size + size > length:  # the span ends inside this line
            line = line[: length - result.size]
            size = length - result.size
        if size > len(line):
            result.cuts.append(LineCut(number, size))
        result.size += size
        kept += line
    result.data = bytes(kept)
    return result
