"""The streaming JSON helper: nesting guard across arbitrary chunk boundaries, record shapes."""

from __future__ import annotations

import io
import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mind_harvest.plugins._jsonhead import read_head
from mind_harvest.plugins._jsonstream import (
    MAX_STRING_BYTES,
    GuardedReader,
    JSONStreamError,
    LostRecord,
    Record,
    _TooDeep,
    note_reasons,
    stream_records,
)

TRICKY_TEXT = st.text(alphabet=st.sampled_from('ab"\\[]{}: ,\n\u00e9\u20ac'), max_size=12)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TRICKY_TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TRICKY_TEXT, children, max_size=4),
    max_leaves=40,
)


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


def read_all(reader: GuardedReader, sizes: list[int]) -> bytes:
    out = bytearray()
    index = 0
    while chunk := reader.read(sizes[index % len(sizes)]):
        out += chunk
        index += 1
    return bytes(out)


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES, sizes=st.lists(st.integers(1, 7), min_size=1, max_size=5), ascii_only=st.booleans())
def test_guard_measures_exact_depth_whatever_the_chunking(
    value: Any, sizes: list[int], ascii_only: bool
) -> None:
    data = json.dumps(value, ensure_ascii=ascii_only).encode()
    levels = depth(value)
    assert read_all(GuardedReader(io.BytesIO(data), max_depth=levels), sizes) == data
    if levels:
        with pytest.raises(_TooDeep):
            read_all(GuardedReader(io.BytesIO(data), max_depth=levels - 1), sizes)


def records(data: bytes, list_keys: tuple[str, ...] = ()) -> list[tuple[int | None, Any]]:
    return [(r.index, r.value) for r in stream_records(io.BytesIO(data), list_keys)]


def test_root_array_elements_are_records() -> None:
    assert records(b'\xef\xbb\xbf [1, {"a": 2.5}, [3]]') == [(0, 1), (1, {"a": 2.5}), (2, [3])]


def test_wrapper_key_is_streamed_and_the_rest_comes_last() -> None:
    data = b'{"meta": {"v": 1}, "conversations": [{"id": "a"}, {"id": "b"}], "tail": [1]}'
    assert records(data, ("conversations",)) == [
        (0, {"id": "a"}),
        (1, {"id": "b"}),
        (None, {"meta": {"v": 1}, "conversations": [], "tail": [1]}),
    ]


def test_root_object_without_wrapper_key_is_one_record() -> None:
    assert records(b'{"id": "x", "mapping": {"n": [1, 2]}}', ("conversations",)) == [
        (None, {"id": "x", "mapping": {"n": [1, 2]}})
    ]


def test_scalar_root_is_one_record() -> None:
    assert records(b' "text" ') == [(None, "text")]


def test_break_reports_how_many_records_were_complete() -> None:
    stream = stream_records(io.BytesIO(b'{"conversations": [{"a": 1}, {"b": '), ("conversations",))
    assert next(stream).value == {"a": 1}
    with pytest.raises(JSONStreamError) as caught:
        next(stream)
    assert caught.value.records == 1 and "premature EOF" in caught.value.reason


def test_long_string_is_read_in_growing_chunks() -> None:
    data = json.dumps(["x" * 2_000_000, 1]).encode()
    reader = GuardedReader(io.BytesIO(data))
    sizes = []
    while chunk := reader.read(65536):
        sizes.append(len(chunk))
    assert max(sizes) > 65536 and sum(sizes) == len(data)


def test_ordinary_documents_are_read_in_the_requested_chunks() -> None:
    data = json.dumps([{"text": "word " * (i % 50), "n": i} for i in range(20_000)]).encode()
    reader = GuardedReader(io.BytesIO(data))
    sizes = []
    while chunk := reader.read(4096):
        sizes.append(len(chunk))
    assert max(sizes) == 4096 and sum(sizes) == len(data)


def test_long_leading_whitespace_is_not_mistaken_for_an_empty_document() -> None:
    assert records(b" " * 200_000 + b"[1]") == [(0, 1)]
    with pytest.raises(JSONStreamError, match="only whitespace"):
        records(b"\n" * 200_000)
    with pytest.raises(JSONStreamError, match="empty file"):
        records(b"")


def test_a_too_deep_element_is_lost_alone() -> None:
    data = b'[{"a": 1}, {"a": 2}, ' + b"[" * 100_000 + b"]" * 100_000 + b', {"a": 3}]'
    found = list(stream_records(io.BytesIO(data)))
    assert [(r.index, r.value) for r in found if isinstance(r, Record)] == [(0, {"a": 1}), (1, {"a": 2}), (3, {"a": 3})]
    assert [(r.index, r.offset, r.reason) for r in found if isinstance(r, LostRecord)] == [
        (2, 21, "JSON nested deeper than 256 levels")
    ]


def test_a_broken_record_in_a_root_object_still_ends_the_stream() -> None:
    data = b'{"conversations": [{"a": 1}, ' + b"[" * 300 + b"]" * 300 + b', {"c": 3}]}'
    stream = stream_records(io.BytesIO(data), ("conversations",))
    assert next(stream).value == {"a": 1}
    with pytest.raises(JSONStreamError, match="nested deeper than 256") as refused:
        next(stream)
    assert refused.value.records == 1


STRING_TEXT = st.text(alphabet=st.sampled_from('x"\\\n\u00e9\U0001f600'), max_size=60)


class ChunkedReads:
    """A parser-side reader that asks the guard for arbitrary small chunks."""

    def __init__(self, reader: GuardedReader, sizes: list[int]) -> None:
        self.reader, self.sizes, self.calls = reader, sizes, 0

    def read(self, size: int) -> bytes:
        if size == 0:
            return b""
        self.calls += 1
        return self.reader.read(self.sizes[self.calls % len(self.sizes)])


@settings(max_examples=400, deadline=None)
@given(
    text=STRING_TEXT,
    limit=st.integers(4, 40),
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=4),
    ascii_only=st.booleans(),
)
def test_an_overlong_string_keeps_a_clean_beginning_wherever_the_chunks_fall(
    text: str, limit: int, sizes: list[int], ascii_only: bool
) -> None:
    import ijson

    data = json.dumps([{"a": 1}, {"t": text, "u": "ok"}, {"b": 2}], ensure_ascii=ascii_only).encode()
    reader = GuardedReader(io.BytesIO(data), max_string_bytes=limit)
    first, middle, last = ijson.items(ChunkedReads(reader, sizes), "item")
    assert first == {"a": 1} and last == {"b": 2} and middle["u"] == "ok"
    assert text.startswith(middle["t"])
    if middle["t"] != text:
        assert [(n.kind, n.element) for n in reader.notes] == [("cut", 1)]


@settings(max_examples=300, deadline=None)
@given(
    value=JSON_VALUES,
    bad=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from([0xFF, 0xE9, 0xC3, 0x80, 0xE2])), max_size=3),
    sizes=st.lists(st.integers(1, 7), min_size=1, max_size=5),
)
def test_invalid_utf8_is_replaced_as_python_does_whatever_the_chunking(
    value: Any, bad: list[tuple[int, int]], sizes: list[int]
) -> None:
    data = bytearray(json.dumps(value, ensure_ascii=False).encode())
    for position, byte in bad:
        data.insert(position % (len(data) + 1), byte)
    repaired = read_all(GuardedReader(io.BytesIO(bytes(data))), sizes)
    assert repaired == bytes(data).decode("utf-8", "replace").encode()


def test_a_bad_byte_is_noted_on_its_own_record_with_its_file_offset() -> None:
    parts = [json.dumps({"id": i, "text": f"hello {i}"}).encode() for i in range(4)]
    parts[2] = parts[2].replace(b"hello", b"he\xffllo")
    data = b"\xef\xbb\xbf  [" + b", ".join(parts) + b"]"
    found = [(r.index, r.value["text"], note_reasons(r.notes)) for r in stream_records(io.BytesIO(data))]
    offset = data.index(b"\xff")
    assert found == [
        (0, "hello 0", []),
        (1, "hello 1", []),
        (2, "he\ufffdllo 2", [f"invalid UTF-8: 1 byte replaced with U+FFFD (first near byte {offset})"]),
        (3, "hello 3", []),
    ]


class CountingStream(io.RawIOBase):
    """A generated document that never exists whole: it remembers the largest read asked of it."""

    def __init__(self, prefix: bytes, filler: bytes, repeat: int, suffix: bytes) -> None:
        self.parts = [prefix, *([filler] * repeat), suffix]
        self.buffer = b""
        self.largest_read = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        self.largest_read = max(self.largest_read, size if size >= 0 else 1 << 62)
        while len(self.buffer) < size and self.parts:
            self.buffer += self.parts.pop(0)
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data


def test_a_huge_string_is_cut_while_streaming_never_read_whole() -> None:
    prefix = b'[{"id": "big", "text": "'
    size = 30 * 2**20
    stream = CountingStream(prefix, b"y" * 2**20, size // 2**20, b'"}, {"id": "next"}]')
    records = list(stream_records(stream))
    assert [r.value["id"] for r in records] == ["big", "next"]
    assert len(records[0].value["text"]) == MAX_STRING_BYTES
    assert note_reasons(records[0].notes) == [
        f"a string of {size:,} bytes was cut to its first {MAX_STRING_BYTES:,} while reading (near byte {len(prefix) - 1})"
    ]
    assert records[1].notes == []
    assert stream.largest_read <= MAX_STRING_BYTES // 4


def test_notes_name_their_records_across_many_chunks() -> None:
    broken = set(range(7, 3000, 97))
    parts = []
    for index in range(3000):
        text = f"record {index} " + "word " * (index % 40)
        part = json.dumps({"id": index, "nested": [{"text": text}]}).encode()
        parts.append(part.replace(b"record", b"rec\xe9ord") if index in broken else part)
    parts[2500] = json.dumps({"id": 2500, "text": "z" * 300}).encode()
    data = b"[" + b",\n".join(parts) + b"]"
    reader_chunks = GuardedReader(io.BytesIO(data), max_string_bytes=250)
    import ijson

    values = list(ijson.items(ChunkedReads(reader_chunks, [65536]), "item"))
    assert len(values) == 3000
    noted = {(n.kind, n.element) for n in reader_chunks.notes}
    assert noted == {("utf8", i) for i in broken} | {("cut", 2500)}
    noted_records = [(r.index, note_reasons(r.notes)) for r in stream_records(io.BytesIO(data)) if r.notes]
    assert [index for index, _ in noted_records] == sorted(broken)
    assert all(reasons[0].startswith("invalid UTF-8: 1 byte replaced") for _, reasons in noted_records)


DAMAGE = {
    "quote": lambda part, i: part.replace(b'"title"', b"'title\"", 1),
    "nan": lambda part, i: part.replace(b'"id": %d' % i, b'"id": NaN', 1),
    "infinity": lambda part, i: part.replace(b'"id": %d' % i, b'"id": -Infinity', 1),
    "lost quote": lambda part, i: part.replace(b'"r"', b'"r', 1),
    "extra quote": lambda part, i: part.replace(b'"q"', b'"q""', 1),
    "deep": lambda part, i: part[:-1] + b', "deep": ' + b"[" * 300 + b"]" * 300 + b"}",
}


def export_records(count: int, rng: random.Random) -> list[bytes]:
    """Records shaped like chat exports: nested lists of objects, and text that looks like JSON."""
    return [
        json.dumps(
            {
                "title": f"t{i}",
                "mapping": {"a": {"children": [{"q": i}, {"r": [1, 2]}]}},
                "id": i,
                "text": 'a, {b} "q" [c]' * rng.randint(0, 3),
            }
        ).encode()
        for i in range(count)
    ]


def read_back(data: bytes) -> tuple[list[tuple[int, int]], list[int]]:
    found = list(stream_records(io.BytesIO(data)))
    kept = [(r.index, r.value["id"]) for r in found if isinstance(r, Record)]
    return kept, [r.index for r in found if isinstance(r, LostRecord)]


@pytest.mark.parametrize("seed", range(40))
def test_broken_records_cost_only_themselves(seed: int) -> None:
    rng = random.Random(seed)
    parts = export_records(30, rng)
    broken = set(rng.sample(range(30), rng.randint(1, 4)))
    for index in broken:
        parts[index] = rng.choice(list(DAMAGE.values()))(parts[index], index)
    kept, lost = read_back(b"[" + b",\n ".join(parts) + b"]")
    assert kept == [(i, i) for i in range(30) if i not in broken]  # each index its own record's
    assert lost == sorted(broken)


def test_a_lost_record_says_where_it_began_and_why() -> None:
    parts = export_records(3, random.Random(1))
    parts[1] = DAMAGE["deep"](parts[1], 1)
    data = b"[" + b", ".join(parts) + b"]"
    [lost] = [r for r in stream_records(io.BytesIO(data)) if isinstance(r, LostRecord)]
    assert (lost.index, lost.offset) == (1, data.index(b'{"title": "t1"'))
    assert lost.describe() == (
        f"JSON nested deeper than 256 levels (the record begins near byte {lost.offset}); read on from the next record"
    )


def test_a_truncated_export_loses_its_last_record_alone() -> None:
    data = b"[" + b", ".join(export_records(5, random.Random(2))) + b"]"
    kept, lost = read_back(data[: data.index(b'{"title": "t4"') + 30])
    assert kept == [(i, i) for i in range(4)] and lost == [4]


def test_a_utf16_export_is_named_as_such(tmp_path) -> None:
    with pytest.raises(JSONStreamError, match=r"UTF-16LE text, not UTF-8.*iconv -f UTF-16LE -t UTF-8"):
        list(stream_records(io.BytesIO(json.dumps([{"a": 1}]).encode("utf-16"))))
    path = tmp_path / "export.json"
    path.write_bytes(json.dumps([{"a": 1}]).encode("utf-16-be"))
    assert read_head(path) == b'[{"a": 1}]'  # detection sees what it holds; the scan names the encoding
