"""The first bytes of a JSON export: what detection reads to tell exports apart, cheaply.

A head is read through ``open_source_file`` (a FIFO or a device is never opened), without its
UTF-8 byte order mark; a UTF-16 or UTF-32 head is transcoded, so detection sees what the file
holds and the scan can name its encoding instead of calling it garbage.
"""

from __future__ import annotations

import re
from pathlib import Path

from mind_core.harvest.source_files import open_source_file

HEAD_BYTES = 64 * 1024
UTF8_BOM = b"\xef\xbb\xbf"


OTHER_BOMS = (
    (b"\x00\x00\xfe\xff", "UTF-32BE"),
    (b"\xff\xfe\x00\x00", "UTF-32LE"),
    (b"\xfe\xff", "UTF-16BE"),
    (b"\xff\xfe", "UTF-16LE"),
)


def other_encoding(head: bytes) -> str | None:
    """The encoding of a document that is UTF-16 or UTF-32 (by its byte order mark, or by the
    NUL byte beside each ASCII character of its opening), or None."""
    for bom, name in OTHER_BOMS:
        if head.startswith(bom):
            return name
    opening = head[:4]
    if len(opening) == 4 and opening[1] == opening[3] == 0 and opening[0] and opening[2]:
        return "UTF-16LE"
    if len(opening) == 4 and opening[0] == opening[2] == 0 and opening[1] and opening[3]:
        return "UTF-16BE"
    return None


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first bytes of a file (BOM removed), for cheap detection; b"" when unreadable."""
    try:
        with open_source_file(path, streamed=True) as handle:
            head = handle.read(size)
    except OSError:
        return b""
    if encoding := other_encoding(head):  # detected as what it holds; the scan names the encoding
        return head.decode(encoding, "ignore").lstrip("\ufeff").encode()
    return head[len(UTF8_BOM) :] if head.startswith(UTF8_BOM) else head


def has_key(head: bytes, key: str) -> bool:
    """True when ``"key":`` occurs in raw JSON bytes; a string value can never match, only a key."""
    return re.search(rb'"' + re.escape(key.encode()) + rb'"\s*:', head) is not None


def first_key_position(head: bytes, keys: tuple[str, ...]) -> int:
    positions = [m.start() for k in keys if (m := re.search(rb'"' + re.escape(k.encode()) + rb'"\s*:', head))]
    return min(positions) if positions else -1


def key_before(head: bytes, key: str, rival: str) -> bool:
    """``key`` occurs, and before ``rival`` if that occurs too: tells look-alike exports apart."""
    position = first_key_position(head, (key,))
    rival_position = first_key_position(head, (rival,))
    return position >= 0 and (rival_position < 0 or position < rival_position)
