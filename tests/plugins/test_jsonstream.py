"""The streaming JSON helper: nesting guard across arbitrary chunk boundaries, record shapes."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plugins._jsonstream import GuardedReader, JSONStreamError, _TooDeep, stream_records

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


def test_records_before_a_too_deep_element_are_kept() -> None:
    data = b'[{"a": 1}, {"b": 2}, ' + b"[" * 100_000 + b"]" * 100_000 + b"]"
    stream = stream_records(io.BytesIO(data))
    assert [next(stream).value, next(stream).value] == [{"a": 1}, {"b": 2}]
    with pytest.raises(JSONStreamError, match="nested deeper than 256") as refused:
        next(stream)
    assert refused.value.records == 2 and refused.value.offset == 21 + 255  # the 257th level
