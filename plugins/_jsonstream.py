"""Streaming JSON for the chat-export plugins: large exports are read record by record.

Exports are often hundreds of megabytes on one line, so nothing here loads a document whole:
top-level array elements (or the elements of a wrapper key such as ``conversations``) are built one
at a time by ijson's C backend. A nesting guard watches the raw bytes as ijson reads them, because
ijson keeps one prefix string per nesting level and a hostile ``[[[[…`` document grows its memory
with the square of the depth (20,000 levels already cost about 1 GB).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import IO, Any

import ijson

MAX_DEPTH = 256  # real exports nest about 15 levels deep
MAX_STRETCH = 256  # read at most 256 x ijson's chunk (16 MB) at once inside one long string
HEAD_BYTES = 64 * 1024
UTF8_BOM = b"\xef\xbb\xbf"

_ESCAPE_PAIR = re.compile(rb"\\.", re.DOTALL)
_NOT_STRUCTURAL = bytes(b for b in range(256) if b not in b'[]{}"')
_DEPTH_STEP = [0] * 256
for _opener in b"[{":
    _DEPTH_STEP[_opener] = 1
for _closer in b"]}":
    _DEPTH_STEP[_closer] = -1


class JSONStreamError(Exception):
    """The document broke (syntax, encoding, nesting) after ``records`` complete records."""

    def __init__(self, reason: str, records: int, offset: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.records = records
        self.offset = offset

    def describe(self, noun: str) -> str:
        """The reason, where the file broke, and how many ``noun`` (say "conversations") were kept."""
        return f"{self.reason} (near byte {self.offset}); the {self.records} {noun} before it were read"


class _TooDeep(ValueError):
    pass


class GuardedReader:
    """A binary reader that counts bytes and refuses nesting deeper than MAX_DEPTH.

    Per chunk it works at C speed: escape pairs are dropped, only quotes and brackets are kept, and
    the pieces between quotes that lie outside strings give the brackets; string state carries over
    between chunks. It costs about a sixth of the parse itself.
    """

    def __init__(self, raw: IO[bytes], head: bytes = b"", max_depth: int = MAX_DEPTH) -> None:
        self._raw = raw
        self._head = head
        self.max_depth = max_depth
        self.offset = 0
        self._depth = 0
        self._in_string = False
        self._escape_pending = False
        # yajl re-lexes a token from its start on every chunk, so a 50 MB string read in 64 KB
        # chunks costs seconds; doubling the chunk while a string stays open keeps that linear.
        self._stretch = 1
        self._inside_one_string = False  # the last chunk lay wholly inside one string
        self._refused: _TooDeep | None = None  # raised on the read after the chunk that overflowed

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes, or more while inside one long string (see ``_stretch``)."""
        if self._refused is not None:
            raise self._refused
        if self._head:
            data = self._head if size < 0 else self._head[:size]
            self._head = self._head[len(data) :]
        else:
            self._stretch = min(self._stretch * 2, MAX_STRETCH) if self._inside_one_string else 1
            data = self._raw.read(size * self._stretch if size > 0 else size)
        data = self._guard(data)
        self.offset += len(data)
        return data

    def _guard(self, data: bytes) -> bytes:
        """The chunk, or when it nests too deep, its part before the offending bracket.

        The records that end before that bracket are whole and must still reach the parser, so
        the refusal is raised on the next read rather than now.
        """
        state = (self._depth, self._in_string, self._escape_pending)
        try:
            self._watch(data)
        except _TooDeep as exc:
            allowed = _bytes_before_overflow(data, *state, self.max_depth)
            if not allowed:
                raise
            self._refused = exc
            return data[:allowed]
        return data

    def _watch(self, data: bytes) -> None:
        if self._escape_pending and data:
            data = data[1:]
            self._escape_pending = False
        if b"\\" in data:
            if (len(data) - len(data.rstrip(b"\\"))) % 2:
                self._escape_pending = True
                data = data[:-1]
            data = _ESCAPE_PAIR.sub(b"", data)
        pieces = data.translate(None, _NOT_STRUCTURAL).split(b'"')
        self._inside_one_string = self._in_string and len(pieces) == 1
        outside = pieces[1::2] if self._in_string else pieces[0::2]
        if len(pieces) % 2 == 0:
            self._in_string = not self._in_string
        brackets = b"".join(outside)
        if not brackets:
            return
        peak = max(accumulate(map(_DEPTH_STEP.__getitem__, brackets), initial=self._depth))
        if peak > self.max_depth:
            raise _TooDeep(f"JSON nested deeper than {self.max_depth} levels")
        opened = brackets.count(b"[") + brackets.count(b"{")
        self._depth += opened - (len(brackets) - opened)


def _bytes_before_overflow(data: bytes, depth: int, in_string: bool, escaped: bool, max_depth: int) -> int:
    """How many bytes of ``data`` stay within ``max_depth`` (byte by byte: only on the failing chunk)."""
    for index, byte in enumerate(data):
        if escaped:
            escaped = False
        elif byte == 0x5C:  # a backslash escapes the next byte, as in _watch
            escaped = True
        elif byte == 0x22:
            in_string = not in_string
        elif not in_string:
            depth += _DEPTH_STEP[byte]
            if depth > max_depth:
                return index
    return len(data)


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first bytes of a file (BOM removed), for cheap detection; b"" when unreadable."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(size)
    except OSError:
        return b""
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


@dataclass
class Record:
    """One top-level array element (``index`` counts from 0), or the root object's other keys."""

    index: int | None
    value: Any


def _clean_reason(exc: BaseException) -> str:
    text = str(exc)
    if text.startswith(("b'", 'b"')):
        text = text[2:-1].encode().decode("unicode_escape", "replace")
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first.strip()


def stream_records(raw: IO[bytes], list_keys: tuple[str, ...] = ()) -> Iterator[Record]:
    """Yield the elements of a top-level array, or of the first ``list_keys`` array in a root object.

    For a root object, the other keys come last as one ``Record(index=None, value={...})``; a root
    object with none of ``list_keys`` is that record alone. A scalar root is a record with that value.
    Any failure (syntax, truncation, encoding, nesting) raises JSONStreamError after the records
    that were complete.
    """
    head = raw.read(HEAD_BYTES)
    if head.startswith(UTF8_BOM):
        head = head[len(UTF8_BOM) :]
    skipped = 0
    while head and not head.strip():  # leading whitespace, however long, is dropped
        skipped += len(head)
        head = raw.read(HEAD_BYTES)
    if not head:
        raise JSONStreamError("no JSON document (only whitespace)" if skipped else "empty file", 0, skipped)
    head = head.lstrip()
    reader = GuardedReader(raw, head)
    count = 0
    try:
        if head[:1] == b"[":
            for value in ijson.items(reader, "item", use_float=True):
                yield Record(count, value)
                count += 1
            return
        if head[:1] == b"{":
            for record in _object_records(reader, list_keys):
                if record.index is not None:
                    count += 1
                yield record
            return
        for value in ijson.items(reader, "", use_float=True):
            yield Record(None, value)
    except JSONStreamError:
        raise
    except (ijson.JSONError, _TooDeep, UnicodeDecodeError, ValueError, RecursionError, MemoryError) as exc:
        raise JSONStreamError(_clean_reason(exc), count, reader.offset) from exc


def _object_records(reader: GuardedReader, list_keys: tuple[str, ...]) -> Iterator[Record]:
    """Walk a root object's events; build list elements of a wanted key one by one.

    This path builds objects in Python (ijson.ObjectBuilder), slower than the C path used for a
    root array, which is the shape of every real bulk export.
    """
    root: dict[str, Any] = {}
    key: str | None = None
    streaming: str | None = None  # the wanted key whose array we are inside
    builder: ijson.ObjectBuilder | None = None
    target = ""
    index = 0
    for prefix, event, value in ijson.parse(reader, use_float=True):
        if builder is not None:
            builder.event(event, value)
            if prefix == target and event in ("end_map", "end_array"):
                yield from _finish(builder.value, streaming, root, key, index)
                index += streaming is not None
                builder = None
            continue
        if prefix == "":
            if event == "map_key":
                key = value
            elif event == "end_map":
                break
            continue
        if streaming is not None and prefix == streaming and event == "end_array":
            streaming = None
            continue
        if (
            key in list_keys
            and key not in root
            and streaming is None
            and prefix == key
            and event == "start_array"
        ):
            streaming = key
            root[key] = []
            continue
        builder = ijson.ObjectBuilder()
        builder.event(event, value)
        target = prefix
        if event not in ("start_map", "start_array"):
            yield from _finish(builder.value, streaming, root, key, index)
            index += streaming is not None
            builder = None
    yield Record(None, root)


def _finish(
    value: Any, streaming: str | None, root: dict[str, Any], key: str | None, index: int
) -> Iterator[Record]:
    if streaming is not None:
        yield Record(index, value)
    elif key is not None:
        root[key] = value
