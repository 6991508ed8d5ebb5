"""Streaming JSON for the chat-export plugins: large exports are read record by record.

Exports are often hundreds of megabytes on one line, so nothing here loads a document whole:
top-level array elements (or the elements of a wrapper key such as ``conversations``) are built one
at a time by ijson's C backend. A guard sits between the file and ijson: it replaces invalid UTF-8
with U+FFFD (one stray byte would otherwise end the stream and lose every later record), cuts a
string past MAX_STRING_BYTES before ijson sees it (a 100 MB string would otherwise be built whole),
and refuses nesting deeper than MAX_DEPTH, because ijson keeps one prefix string per nesting level
and a hostile ``[[[[…`` document grows its memory with the square of the depth (20,000 levels
already cost about 1 GB).
"""

from __future__ import annotations

import codecs
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from typing import IO, Any

import ijson
from mind_harvest.plugins._jsonhead import HEAD_BYTES, UTF8_BOM, other_encoding
from mind_harvest.plugins._jsonresync import LostRecord, first_key_only, next_candidate, opens_like, resembles

from mind_core.harvest.items import MAX_MESSAGE_CHARS

MAX_DEPTH = 256  # real exports nest about 15 levels deep
MAX_STRETCH = 256  # read ever larger chunks inside one long string, up to a quarter of the cut
# A message keeps MAX_MESSAGE_CHARS characters, and one character is at most 6 bytes of JSON
# (``\u00e9``), so a string is cut only where its text would be cut anyway.
MAX_STRING_BYTES = 6 * MAX_MESSAGE_CHARS
REPLACEMENT = "\ufffd".encode()
ESCAPE_TAIL = 12  # a surrogate pair escape, the longest thing a cut must not split
RING_BYTES = 8 * 2**20  # parsed bytes kept to find where a failing record began

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


@dataclass
class StreamNote:
    """Something repaired while reading: bad UTF-8 replaced, or an overlong string cut.

    ``element`` counts the root array's elements completed before the note's position, so the note
    belongs to the record with that index (for a root array; see ``stream_records``).
    """

    kind: str  # "utf8" or "cut"
    element: int
    offset: int  # in the file (after a BOM and leading whitespace, like JSONStreamError.offset)
    count: int = 1  # bytes replaced, or the string's size in bytes for a cut


class GuardedReader:
    """A binary reader that repairs UTF-8, cuts overlong strings and refuses deep nesting.

    Invalid UTF-8 is replaced with U+FFFD (ijson would otherwise stop the whole stream at the first
    bad byte), a string longer than ``max_string_bytes`` keeps its beginning and the rest is
    skipped before the parser sees it (so a 100 MB string never sits in memory), and each repair is
    noted with its position. Per chunk the nesting watch works at C speed: escape pairs are dropped,
    only quotes and brackets are kept, and the pieces between quotes that lie outside strings give
    the brackets; string state carries over between chunks. It costs about a sixth of the parse.
    """

    def __init__(
        self,
        raw: IO[bytes],
        head: bytes = b"",
        max_depth: int = MAX_DEPTH,
        max_string_bytes: int = MAX_STRING_BYTES,
        start_offset: int = 0,
    ) -> None:
        self._raw = raw
        self._head = head
        self.max_depth = max_depth
        self.max_string_bytes = max_string_bytes
        self.offset = 0  # bytes handed to the parser
        self.notes: list[StreamNote] = []
        self._raw_offset = start_offset  # file position of the next raw byte
        self._carry = b""  # an incomplete UTF-8 sequence at the end of the last raw chunk
        self._depth = 0
        self._in_string = False
        self._escape_pending = False
        self._string_start: int | None = None  # parser offset of the open string's quote
        self._dropping: StreamNote | None = None  # the cut string whose tail is being skipped
        self._drop_escape = False
        self._tail = b""  # the last bytes handed to the parser, for a cut at a chunk's start
        self._root_hits = 0  # how often the depth reached 1: the root opening, then each element's end
        # yajl re-lexes a token from its start on every chunk, so a 50 MB string read in 64 KB
        # chunks costs seconds; doubling the chunk while a string stays open keeps that linear.
        self._stretch = 1
        self._inside_one_string = False  # the last chunk lay wholly inside one string
        self._refused: _TooDeep | None = None  # raised on the read after the chunk that overflowed
        self._withheld = b""  # the part of the overflowing chunk never handed to the parser
        # The chunks last handed to the parser, each with the watch's state before it: after a
        # failure, ``rest_after`` finds where the failing record began and what followed it.
        self._ring: deque[_Handed] = deque()
        self._ring_bytes = 0

    @property
    def element(self) -> int:
        return max(self._root_hits - 1, 0)

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes, or more while inside one long string (see ``_stretch``)."""
        if self._refused is not None:
            raise self._refused
        if size == 0:
            return b""
        while True:
            if self._head:
                raw = self._head if size < 0 else self._head[:size]
                self._head = self._head[len(raw) :]
            else:
                self._stretch = min(self._stretch * 2, MAX_STRETCH) if self._inside_one_string else 1
                wanted = min(size * self._stretch, self.max_string_bytes // 4) if size > 0 else size
                raw = self._raw.read(wanted)
            data, bad = self._repair(raw, final=not raw)
            data, bad = self._cut(data, bad)
            if data or not raw:
                break
        before = (self._depth, self._in_string, self._escape_pending, self._root_hits)
        data = self._guard(data, bad)
        self._remember(_Handed(self.offset, data, *before))
        self.offset += len(data)
        self._tail = (self._tail + data)[-ESCAPE_TAIL:]
        return data

    def _repair(self, raw: bytes, final: bool) -> tuple[bytes, list[tuple[int, int, int]]]:
        """Valid UTF-8, and for each replacement (position in the result, file offset, bytes replaced).

        An incomplete sequence at the end waits for the next chunk; at the end of the file it is bad.
        """
        buffer = self._carry + raw if self._carry else raw
        file_base = self._raw_offset - len(self._carry)
        self._raw_offset += len(raw)
        view = memoryview(buffer)
        pieces: list[bytes | memoryview] = []
        bad: list[tuple[int, int, int]] = []
        position = produced = 0
        while position < len(buffer):
            try:
                _, consumed = codecs.utf_8_decode(view[position:], "strict", final)
            except UnicodeDecodeError as exc:
                start, end = position + exc.start, position + exc.end
                pieces.append(view[position:start])
                produced += start - position
                bad.append((produced, file_base + start, end - start))
                pieces.append(REPLACEMENT)
                produced += len(REPLACEMENT)
                position = end
                continue
            pieces.append(view[position : position + consumed])
            position += consumed
            break
        self._carry = bytes(view[position:])
        if not bad and position == len(buffer):
            return buffer, bad
        return b"".join(pieces), bad

    def _cut(self, data: bytes, bad: list[tuple[int, int, int]]) -> tuple[bytes, list[tuple[int, int, int]]]:
        """The chunk without the part of a string beyond ``max_string_bytes`` (chunks are never longer).

        Replacements inside the skipped part are dropped: the cut's own note covers them.
        """
        if self._dropping is not None:
            end = _string_end(data, 0, self._drop_escape)
            if end < 0:
                tail = data[1:] if self._drop_escape and data else data
                self._drop_escape = (len(tail) - len(tail.rstrip(b"\\"))) % 2 == 1
                self._dropping.count += len(data)
                return b"", []
            self._dropping.count += end
            self._dropping = None
            self._string_start = None
            return data[end:], [(p - end, f, n) for p, f, n in bad if p >= end]
        if not (self._in_string and self._string_start is not None):
            return data, bad
        limit = self._string_start + 1 + self.max_string_bytes - self.offset
        if limit >= len(data):
            return data, bad
        end = _string_end(data, 0, self._escape_pending)
        if 0 <= end <= limit:
            return data, bad
        cut = self._cut_point(data, max(limit, 0))
        if cut is None or 0 <= end <= cut:  # a character or escape began in a chunk already read
            return data, bad
        note = StreamNote("cut", self.element, self._string_start, self.offset + cut - self._string_start - 1)
        self.notes.append(note)
        if end >= 0:
            kept = [(p, f, n) for p, f, n in bad if p < cut]
            kept += [(p - (end - cut), f, n) for p, f, n in bad if p >= end]
            note.count += end - cut
            return data[:cut] + data[end:], kept
        self._dropping = note
        rest = data[cut:]
        self._drop_escape = (len(rest) - len(rest.rstrip(b"\\"))) % 2 == 1
        note.count += len(rest)
        return data[:cut], [(p, f, n) for p, f, n in bad if p < cut]

    def _cut_point(self, data: bytes, limit: int) -> int | None:
        """Where to cut ``data`` near ``limit`` without splitting a character or escape, or None
        when no such place is in this chunk (the next chunk then gets the cut)."""
        combined = self._tail + data
        cut = _safe_cut(combined, limit + len(self._tail))
        if cut >= len(self._tail):
            return cut - len(self._tail)
        for later in range(len(self._tail) + 1, len(combined) + 1):
            if _safe_cut(combined, later) == later:
                return later - len(self._tail)
        return None

    def _guard(self, data: bytes, bad: list[tuple[int, int, int]]) -> bytes:
        """The chunk, or when it nests too deep, its part before the offending bracket.

        The records that end before that bracket are whole and must still reach the parser, so
        the refusal is raised on the next read rather than now.
        """
        state = (self._depth, self._in_string, self._escape_pending)
        try:
            self._watch_noting(data, bad)
        except _TooDeep as exc:
            allowed = _bytes_before_overflow(data, *state, self.max_depth)
            self._withheld = data[allowed:]
            if not allowed:
                raise
            self._refused = exc
            return data[:allowed]
        return data

    def _remember(self, handed: _Handed) -> None:
        self._ring.append(handed)
        self._ring_bytes += len(handed.data)
        while len(self._ring) > 1 and self._ring_bytes - len(self._ring[0].data) >= RING_BYTES:
            self._ring_bytes -= len(self._ring.popleft().data)

    def rest_after(self, containers: int) -> tuple[int, bytes]:
        """After a failure with ``containers`` root array elements that are objects or arrays
        read: the offset of the element after the last of them and every byte read from there on
        (the raw stream goes on after them).

        That element begins after the (containers + 1)th time the depth came back to 1 (the root
        array's opening counts once; a scalar element never changes the depth). When that lies
        before the chunks kept, the search starts at the oldest kept byte, which is later.
        """
        target = containers + 1
        chunks = list(self._ring)
        start = chunks[0].start if chunks else self.offset
        data = b"".join(handed.data for handed in chunks)
        for index, handed in enumerate(chunks):
            hit = _hit_position(handed, target)
            if hit is not None:
                begins = _element_begins(handed.data, hit + 1)
                start = handed.start + begins
                data = b"".join(later.data for later in chunks[index:])[begins:]
                break
        return start, data + self._withheld + self._head + self._carry

    def _watch_noting(self, data: bytes, bad: list[tuple[int, int, int]]) -> None:
        """Watch the chunk, stopping at each replacement to learn which element it lies in."""
        was_in_string, escaped = self._in_string, self._escape_pending
        done = 0
        for position, file_offset, count in bad:
            self._watch(data[done:position])
            done = position
            self._note_utf8(file_offset, count)
        self._watch(data[done:])
        last_quote = _last_unescaped_quote(data, escaped)
        self._inside_one_string = was_in_string and self._in_string and last_quote < 0
        if not self._in_string:
            self._string_start = None
        elif last_quote >= 0:
            self._string_start = self.offset + last_quote

    def _note_utf8(self, file_offset: int, count: int) -> None:
        last = self.notes[-1] if self.notes else None
        if last is not None and last.kind == "utf8" and last.element == self.element:
            last.count += count
        else:
            self.notes.append(StreamNote("utf8", self.element, file_offset, count))

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
        outside = pieces[1::2] if self._in_string else pieces[0::2]
        if len(pieces) % 2 == 0:
            self._in_string = not self._in_string
        brackets = b"".join(outside)
        if not brackets:
            return
        levels = list(accumulate(map(_DEPTH_STEP.__getitem__, brackets), initial=self._depth))
        if max(levels) > self.max_depth:
            raise _TooDeep(f"JSON nested deeper than {self.max_depth} levels")
        self._root_hits += levels.count(1) - (self._depth == 1)
        self._depth = levels[-1]


@dataclass(frozen=True, slots=True)
class _Handed:
    """A chunk handed to the parser, at parser offset ``start``, and the watch's state before it."""

    start: int
    data: bytes
    depth: int
    in_string: bool
    escaped: bool
    hits: int


_STRUCTURAL = re.compile(rb'["\[\]{}]')


def _hit_position(handed: _Handed, target: int) -> int | None:
    """The index in the chunk of the bracket that brought the depth back to 1 for the
    ``target``th time, or None when that is not in this chunk."""
    data, depth, in_string, hits = handed.data, handed.depth, handed.in_string, handed.hits
    if hits >= target:
        return None
    position, escaped = 0, handed.escaped
    while position < len(data):
        if in_string:
            end = _string_end(data, position, escaped)
            if end < 0:
                return None
            in_string, escaped, position = False, False, end + 1
            continue
        match = _STRUCTURAL.search(data, position)
        if match is None:
            return None
        position = match.end()
        char = data[match.start()]
        if char == 0x22:
            in_string = True
            continue
        depth += _DEPTH_STEP[char]
        if depth == 1:
            hits += 1
            if hits == target:
                return match.start()
    return None


def _element_begins(data: bytes, position: int) -> int:
    """Where the element after a root array separator at ``position`` begins (its first byte)."""
    while position < len(data) and data[position] in b" \t\r\n":
        position += 1
    if position < len(data) and data[position] == 0x2C:
        position += 1
    while position < len(data) and data[position] in b" \t\r\n":
        position += 1
    return position


def _string_end(data: bytes, start: int, escaped: bool) -> int:
    """The index of the quote that closes the string ``data[start:]`` lies in, or -1."""
    position = start + 1 if escaped else start
    while (quote := data.find(b'"', position)) >= 0:
        run = quote
        while run > position and data[run - 1] == 0x5C:
            run -= 1
        if (quote - run) % 2 == 0:
            return quote
        position = quote + 1
    return -1


def _last_unescaped_quote(data: bytes, escaped: bool) -> int:
    """The index of the last quote in ``data`` that is not escaped, or -1."""
    floor = 1 if escaped else 0
    quote = len(data)
    while (quote := data.rfind(b'"', floor, quote)) >= 0:
        run = quote
        while run > floor and data[run - 1] == 0x5C:
            run -= 1
        if (quote - run) % 2 == 0:
            return quote
    return -1


_OPEN_ESCAPE = re.compile(rb"\\(?:u[0-9a-fA-F]{0,3}|u[dD][89abAB][0-9a-fA-F]{2})?\Z")


def _safe_cut(data: bytes, cut: int) -> int:
    """``cut`` moved back so that the kept part of a string ends on a whole character and escape.

    A UTF-8 sequence, a ``\\uXXXX`` escape or a surrogate pair cut in half would make the
    parser fail on a string it would otherwise have read.
    """
    while 0 < cut < len(data) and 0x80 <= data[cut] < 0xC0:
        cut -= 1
    match = _OPEN_ESCAPE.search(data, max(cut - 6, 0), cut)
    while match is not None:
        run = match.start()
        while run > 0 and data[run - 1] == 0x5C:
            run -= 1
        if (match.start() - run) % 2:  # the backslash is itself escaped
            break
        cut = match.start()
        match = _OPEN_ESCAPE.search(data, max(cut - 6, 0), cut)
    return cut


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


@dataclass
class Record:
    """One top-level array element (``index`` counts from 0), or the root object's other keys.

    ``notes`` are the repairs made while reading it (see ``note_reasons``).
    """

    index: int | None
    value: Any
    notes: list[StreamNote] = field(default_factory=list)


def note_reasons(notes: list[StreamNote]) -> list[str]:
    """One warning text per kind of repair: all bad bytes of a record make one warning."""
    reasons = []
    replaced = [note for note in notes if note.kind == "utf8"]
    if replaced:
        total = sum(note.count for note in replaced)
        reasons.append(
            f"invalid UTF-8: {total:,} byte{'s' if total != 1 else ''} replaced with U+FFFD "
            f"(first near byte {replaced[0].offset})"
        )
    reasons.extend(
        f"a string of {note.count:,} bytes was cut to its first {MAX_STRING_BYTES:,} while reading "
        f"(near byte {note.offset})"
        for note in notes
        if note.kind == "cut"
    )
    return reasons


def _take_notes(reader: GuardedReader, element: int | None) -> list[StreamNote]:
    """The notes up to ``element`` (all of them for None: a root object's records are not counted)."""
    if element is None:
        taken, reader.notes = reader.notes, []
        return taken
    taken = [note for note in reader.notes if note.element <= element]
    if taken:
        reader.notes = [note for note in reader.notes if note.element > element]
    return taken


def _clean_reason(exc: BaseException) -> str:
    text = str(exc)
    if text.startswith(("b'", 'b"')):
        text = text[2:-1].encode().decode("unicode_escape", "replace")
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first.strip()


PARSE_ERRORS = (ijson.JSONError, _TooDeep, UnicodeDecodeError, ValueError, RecursionError, MemoryError)


def stream_records(raw: IO[bytes], list_keys: tuple[str, ...] = ()) -> Iterator[Record | LostRecord]:
    """Yield the elements of a top-level array, or of the first ``list_keys`` array in a root object.

    For a root object, the other keys come last as one ``Record(index=None, value={...})``; a root
    object with none of ``list_keys`` is that record alone. A scalar root is a record with that value.
    Invalid UTF-8 and overlong strings are repaired, not failures: each record carries the notes
    of its repairs (a root array's exactly; in a root object the notes read since the last record).
    In a root array, an element that breaks (syntax, nesting, truncation) is a ``LostRecord`` and
    reading resynchronises at the next element (``_array_records``); in any other document a
    failure raises JSONStreamError after the records that were complete.
    """
    head = raw.read(HEAD_BYTES)
    if encoding := other_encoding(head):
        raise JSONStreamError(
            f"the file is {encoding} text, not UTF-8, which JSON exports are read as; "
            f"convert it (iconv -f {encoding} -t UTF-8) and harvest again",
            0,
            0,
        )
    bom = len(UTF8_BOM) if head.startswith(UTF8_BOM) else 0
    head = head[bom:]
    skipped = 0
    while head and not head.strip():  # leading whitespace, however long, is dropped
        skipped += len(head)
        head = raw.read(HEAD_BYTES)
    if not head:
        raise JSONStreamError("no JSON document (only whitespace)" if skipped else "empty file", 0, skipped)
    stripped = head.lstrip()
    skipped += len(head) - len(stripped)
    head = stripped
    if head[:1] == b"[":
        yield from _array_records(raw, head, bom + skipped)
        return
    reader = GuardedReader(raw, head, start_offset=bom + skipped)
    count = 0
    try:
        if head[:1] == b"{":
            for record in _object_records(reader, list_keys):
                if record.index is not None:
                    count += 1
                record.notes = _take_notes(reader, None)
                yield record
            return
        for value in ijson.items(reader, "", use_float=True):
            yield Record(None, value, _take_notes(reader, None))
    except JSONStreamError:
        raise
    except PARSE_ERRORS as exc:
        raise JSONStreamError(_clean_reason(exc), count, reader.offset) from exc


def _array_records(raw: IO[bytes], head: bytes, base: int) -> Iterator[Record | LostRecord]:
    """A root array's elements; a broken element costs that element alone.

    After a failure the bytes from the failing element on are searched for the next ``,`` that
    is followed by ``{`` or ``[`` and parsing starts again there, as a new array. Such a place
    may lie inside the broken element (a nested list of objects), so until an element resembles
    the records read before it (``_resembles``), what that parse yields is dropped; a parse that
    fails again before one is accepted belongs to the same loss, unless its first element opens
    as the first record did (the next record is broken too). Every retry starts further on,
    so the search ends; the quote parity a broken string upsets is reset at each retry.
    """
    index = 0
    template: Any = None
    learned = False  # the template is a record read, not just the first key of a broken one
    resynced = False
    while True:
        reader = GuardedReader(raw, head, start_offset=base)
        completed = containers = 0
        try:
            for value in ijson.items(reader, "item", use_float=True):
                notes = _take_notes(reader, completed)
                completed += 1
                containers += isinstance(value, dict | list)
                if resynced and not resembles(value, template):
                    continue
                resynced = False
                if not learned:
                    template, learned = value, True
                yield Record(index, value, notes)
                index += 1
            return
        except PARSE_ERRORS as exc:
            begins, rest = reader.rest_after(containers)
            if not resynced or (completed == 0 and opens_like(head[1:], template)):
                yield LostRecord(index, base + begins, _clean_reason(exc))
                index += 1
                resynced = True
            if template is None:
                template = first_key_only(rest)
        found = next_candidate(rest, raw)
        if found is None:
            return
        skipped, rest = found
        head, base = b"[" + rest, base + begins + skipped - 1


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
