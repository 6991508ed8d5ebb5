"""Finding the next record of a root array after a broken one (see ``_jsonstream._array_records``).

After a syntax error, a value nested too deep or a ``NaN``, the bytes from the broken element
on are searched for the next ``,`` followed by ``{`` or ``[``, and parsing starts again there.
Such a place may lie inside the broken element (a nested list of objects) or even inside one of
its strings, so what a new parse yields counts as a record only once it resembles the records
read before it; the rest is dropped as pieces of the broken one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import IO, Any

RESYNC_CHUNK = 2**20
_CANDIDATE = re.compile(rb",\s*[\[{]")


@dataclass
class LostRecord:
    """A root array element that could not be read (a syntax error, a value nested too deep,
    ``NaN``, a cut): reading went on at the next element. ``offset`` is near the element's first byte."""

    index: int
    offset: int
    reason: str

    def describe(self) -> str:
        return f"{self.reason} (the record begins near byte {self.offset}); read on from the next record"


_FIRST_KEY = re.compile(rb"""\{\s*["']?([A-Za-z_][\w.-]{0,63})["']?\s*:""")


def first_key_only(data: bytes) -> dict[str, None] | None:
    """A template for when the first record broke: an object with its first key (a plain name,
    read even when a quote around it is what broke), if it has one."""
    match = _FIRST_KEY.match(data)
    return {match.group(1).decode(): None} if match else None


def resembles(value: Any, template: Any) -> bool:
    """Whether a value found after a resynchronisation is a record and not a piece of the broken
    one: of the first record's type and, for an object, holding two thirds of its keys."""
    if template is None:
        return isinstance(value, dict | list)
    if type(value) is not type(template):
        return False
    if isinstance(value, dict):
        return 3 * len(template.keys() & value.keys()) >= 2 * len(template)
    return True


def opens_like(data: bytes, template: Any) -> bool:
    """Whether ``data`` begins an object with the first record's first key, even a broken one
    (exports write every record's keys in one order)."""
    if not isinstance(template, dict) or not template or data[:1] != b"{":
        return False
    first = json.dumps(next(iter(template)))[1:-1].encode()
    return first in data[: len(first) + 8]


def next_candidate(data: bytes, raw: IO[bytes]) -> tuple[int, bytes] | None:
    """The bytes from the next ``,`` + opening bracket after ``data[0]`` on (reading on from
    ``raw`` as needed), and how many bytes were skipped; None at the end of the stream."""
    skipped, position = 0, 1
    while True:
        match = _CANDIDATE.search(data, position)
        if match is not None:
            return skipped + match.end() - 1, data[match.end() - 1 :]
        comma = data.rfind(b",")
        keep = comma if comma >= 0 and not data[comma + 1 :].strip() else len(data)
        skipped += keep
        more = raw.read(RESYNC_CHUNK)
        if not more:
            return None
        data, position = data[keep:] + more, 0
