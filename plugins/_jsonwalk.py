"""Streaming the record arrays nested inside a JSON document (Telegram's ``messages``, Discord's).

``_jsonstream.stream_records`` recovers record by record only in a root array: in any other
document one broken record ends the stream. Messaging exports keep their messages in an array
under a key of a root object (``{"name": ..., "messages": [...]}``), or deeper (Telegram's
``chats.list[i].messages``). ``walk`` reads such a document as a stream of events: the scalars
of the objects it walks through (a chat's name and id), and for each wanted array an
``ContainerReader``, a reader of exactly that array's bytes, which ``stream_records`` reads as a root
array, so a broken message costs that message alone. Other containers are skipped unparsed.

Where an array ends is found by a byte scan (quotes, escapes, brackets). A broken string can
upset that scan; since JSON strings never hold a raw line break, the scan treats a line break
as outside any string, so in the pretty-printed files the apps write the damage ends at the
line's end.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import accumulate
from typing import IO, Any

from mind_harvest.plugins._jsonhead import HEAD_BYTES, UTF8_BOM, other_encoding
from mind_harvest.plugins._jsonresync import LostRecord
from mind_harvest.plugins._jsonstream import JSONStreamError, Record, stream_records

CHUNK = 64 * 1024
MAX_SCALAR_BYTES = 2**20
ESCAPE_TAIL = 64
_STRUCTURAL = re.compile(rb'["\\\[\]{}\n]')
_SCALAR = re.compile(rb"-?[0-9][0-9.eE+-]*|true|false|null|-?Infinity|NaN")
_WHITESPACE = b" \t\r\n"
_ESCAPE_PAIR = re.compile(rb"\\.", re.DOTALL)
_NOT_KEPT = bytes(b for b in range(256) if b not in b'[]{}"\n')
_DEPTH_STEP = [0] * 256
for _opener in b"[{":
    _DEPTH_STEP[_opener] = 1
for _closer in b"]}":
    _DEPTH_STEP[_closer] = -1

Path = tuple[str | int, ...]


class Source:
    """A binary stream with a buffer that can be given back (what a slice read past its end)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.buffer = b""
        self.offset = 0  # file offset of the buffer's first byte

    def take(self, size: int = CHUNK) -> bytes:
        if self.buffer:
            data, self.buffer = self.buffer[:size], self.buffer[size:]
        else:
            data = self.raw.read(size)
        self.offset += len(data)
        return data

    def give_back(self, data: bytes) -> None:
        self.buffer = data + self.buffer
        self.offset -= len(data)

    def peek(self) -> int | None:
        """The next byte that is not whitespace (left in the buffer), or None at the end."""
        while True:
            data = self.take()
            if not data:
                return None
            stripped = data.lstrip(_WHITESPACE)
            if stripped:
                self.give_back(stripped)
                return stripped[0]

    def expect(self, byte: bytes) -> None:
        if self.peek() != byte[0]:
            found = self.take(16)
            self.give_back(found)
            raise JSONStreamError(f"expected {byte.decode()!r}, found {found[:16]!r}", 0, self.offset)
        self.take(1)


class ContainerReader:
    """A reader of one JSON container's bytes, from its opening bracket to the matching one;
    what it reads past that is given back to the source."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.start = source.offset
        self.depth = 0
        self.in_string = False
        self.escaped = False
        self.done = False

    def read(self, size: int = -1) -> bytes:
        if self.done:
            return b""
        data = self.source.take(size if size and size > 0 else CHUNK)
        if not data:
            self.done = True
            return b""
        end = self._end_in(data) if self._may_end_in(data) else -1
        if end >= 0:
            self.done = True
            self.source.give_back(data[end:])
            return data[:end]
        return data

    def drain(self) -> None:
        while self.read(CHUNK):
            pass

    def _may_end_in(self, data: bytes) -> bool:
        """Whether the container may close in ``data``; when not, the scan's state is moved past
        it at C speed (escape pairs dropped, only quotes, brackets and line breaks kept, the
        pieces between quotes outside strings giving the brackets), else left for ``_end_in``."""
        depth, in_string = self.depth, self.in_string
        body = data[1:] if self.escaped and in_string else data
        trailing = len(body) - len(body.rstrip(b"\\"))
        escaped = trailing % 2 == 1
        if escaped:
            body = body[:-1]
        kept = _ESCAPE_PAIR.sub(b"", body).translate(None, _NOT_KEPT)
        for number, line in enumerate(kept.split(b"\n")):
            if number:
                in_string = False
            pieces = line.split(b'"')
            brackets = b"".join(pieces[1::2] if in_string else pieces[0::2])
            if len(pieces) % 2 == 0:
                in_string = not in_string
            if brackets:
                levels = list(accumulate(map(_DEPTH_STEP.__getitem__, brackets), initial=depth))
                if 0 in levels[1:]:
                    return True
                depth = levels[-1]
        self.depth, self.in_string, self.escaped = depth, in_string, escaped and in_string
        return False

    def _end_in(self, data: bytes) -> int:
        """The index just after the closing bracket, or -1 when the container goes on."""
        skip_until = 1 if self.escaped else 0
        self.escaped = False
        for match in _STRUCTURAL.finditer(data):
            position = match.start()
            if position < skip_until:
                continue
            byte = data[position]
            if byte == 0x0A:  # a raw line break never lies inside a valid JSON string
                self.in_string = False
            elif self.in_string:
                if byte == 0x5C:
                    skip_until = position + 2
                    self.escaped = position + 1 >= len(data)
                elif byte == 0x22:
                    self.in_string = False
            elif byte == 0x22:
                self.in_string = True
            elif byte in b"[{":
                self.depth += 1
            elif byte in b"]}":
                self.depth -= 1
                if self.depth == 0:
                    return position + 1
        return -1


@dataclass
class Scalar:
    path: Path
    value: Any


@dataclass
class Array:
    """A wanted array: read ``reader`` (a root array to ``stream_records``) before the next event."""

    path: Path
    reader: ContainerReader


def array_records(array: Array) -> Iterator[Record | LostRecord]:
    """The array's elements as ``stream_records`` reads a root array (a broken one is a
    ``LostRecord``), their positions counted in the whole file."""
    start = array.reader.start
    for record in stream_records(array.reader):
        if isinstance(record, LostRecord):
            yield replace(record, offset=record.offset + start)
            continue
        for note in record.notes:
            note.offset += start
        yield record


def matches(path: Path, pattern: tuple[str, ...]) -> bool:
    """``"*"`` in a pattern stands for any array index."""
    return len(path) == len(pattern) and all(
        p == "*" and isinstance(k, int) or p == k for k, p in zip(path, pattern, strict=True)
    )


def walk(
    raw: IO[bytes], arrays: tuple[tuple[str, ...], ...], objects: tuple[tuple[str, ...], ...] = ()
) -> Iterator[Scalar | Array]:
    """The scalars of the root and of the containers leading to ``arrays`` (and of ``objects``),
    and each array at an ``arrays`` path; everything else is skipped. Raises JSONStreamError
    where the document around the arrays breaks."""
    head = raw.read(HEAD_BYTES)
    if encoding := other_encoding(head):
        raise JSONStreamError(
            f"the file is {encoding} text, not UTF-8, which JSON exports are read as; "
            f"convert it (iconv -f {encoding} -t UTF-8) and harvest again",
            0,
            0,
        )
    source = Source(raw)
    bom = len(UTF8_BOM) if head.startswith(UTF8_BOM) else 0
    source.give_back(head[bom:])
    source.offset = bom
    entered = {pattern[:end] for pattern in (*arrays, *objects) for end in range(len(pattern) + 1)}
    if source.peek() is None:
        raise JSONStreamError("empty file", 0, source.offset)
    yield from _value(source, (), arrays, entered)
    if source.peek() is not None:
        raise JSONStreamError("more after the document's end", 0, source.offset)


def _entered(path: Path, entered: set[tuple[str, ...]]) -> bool:
    return any(matches(path, pattern) for pattern in entered)


def _value(
    source: Source, path: Path, arrays: tuple[tuple[str, ...], ...], entered: set[tuple[str, ...]]
) -> Iterator[Scalar | Array]:
    first = source.peek()
    if first is None:
        raise JSONStreamError("the document ends inside a value", 0, source.offset)
    if first == 0x5B and any(matches(path, pattern) for pattern in arrays):
        reader = ContainerReader(source)
        yield Array(path, reader)
        reader.drain()
    elif first in b"[{" and _entered(path, entered):
        yield from (_object if first == 0x7B else _array)(source, path, arrays, entered)
    elif first in b"[{":
        ContainerReader(source).drain()
    else:
        yield Scalar(path, _scalar(source))


def _object(
    source: Source, path: Path, arrays: tuple[tuple[str, ...], ...], entered: set[tuple[str, ...]]
) -> Iterator[Scalar | Array]:
    source.expect(b"{")
    if source.peek() == 0x7D:
        source.take(1)
        return
    while True:
        key = _scalar(source)
        if not isinstance(key, str):
            raise JSONStreamError(f"an object key must be a string, not {key!r}", 0, source.offset)
        source.expect(b":")
        yield from _value(source, (*path, key), arrays, entered)
        following = source.peek()
        source.take(1)
        if following == 0x7D:
            return
        if following != 0x2C:
            raise JSONStreamError("expected ',' or '}' in an object", 0, source.offset)


def _array(
    source: Source, path: Path, arrays: tuple[tuple[str, ...], ...], entered: set[tuple[str, ...]]
) -> Iterator[Scalar | Array]:
    source.expect(b"[")
    if source.peek() == 0x5D:
        source.take(1)
        return
    index = 0
    while True:
        yield from _value(source, (*path, index), arrays, entered)
        index += 1
        following = source.peek()
        source.take(1)
        if following == 0x5D:
            return
        if following != 0x2C:
            raise JSONStreamError("expected ',' or ']' in an array", 0, source.offset)


def _scalar(source: Source) -> Any:
    """A string, number, true, false or null. A string longer than MAX_SCALAR_BYTES (outside the
    message arrays only names and ids are read) is read past and is None."""
    source.peek()
    data = source.take(CHUNK)
    if data[:1] == b'"':
        position, dropped = 1, False
        while (end := _closing_quote(data, position)) < 0:
            more = source.take(CHUNK)
            if not more:
                raise JSONStreamError("the document ends inside a string", 0, source.offset)
            if len(data) > MAX_SCALAR_BYTES:
                data, dropped = data[-ESCAPE_TAIL:], True  # the tail: a backslash may escape a quote
            position = len(data)
            data += more
        source.give_back(data[end + 1 :])
        return None if dropped else _decoded(data[: end + 1], source)
    while len(data) < 16 and (more := source.take(CHUNK)):
        data += more  # a literal ("true") cut by the end of what was read
    match = _SCALAR.match(data)
    while match is not None and match.end() == len(data) and (more := source.take(CHUNK)):
        data += more  # a number or literal cut by the end of what was read
        match = _SCALAR.match(data)
    if match is None:
        source.give_back(data)
        raise JSONStreamError(f"not a JSON value: {data[:16]!r}", 0, source.offset)
    source.give_back(data[match.end() :])
    return _decoded(match.group(), source)


def _closing_quote(data: bytes, position: int) -> int:
    """The index of the first quote at or after ``position`` that no backslash escapes, or -1."""
    end = data.find(b'"', position)
    while end >= 0:
        run = end
        while run > 0 and data[run - 1] == 0x5C:
            run -= 1
        if (end - run) % 2 == 0:
            return end
        end = data.find(b'"', end + 1)
    return -1


def _decoded(token: bytes, source: Source) -> Any:
    try:
        return json.loads(token.decode("utf-8", errors="replace"))
    except ValueError as exc:
        raise JSONStreamError(f"unreadable value: {exc}", 0, source.offset) from exc
