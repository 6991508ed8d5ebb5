"""The harvest item model: what a source plugin yields and the import engine consumes.

Plain dataclasses, no Dagster and no database: a plugin only needs this module.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from mind_core.harvest.paths import display_text, stored_text

# A frame this long already costs ~1,600 chunk vectors; a 50 MB one-line "note" would cost 80,000
# and minutes of embedding, so longer messages keep their beginning and the cut is reported. Plugins
# cut while reading (never holding a whole 100 MB line), the import engine cuts what is left.
MAX_MESSAGE_CHARS = 1_000_000

# Set to True in an item's metadata by a plugin that read the item from a 0-byte file: an emptied
# file is far more often a failed save or sync than a deliberate edit, so the import engine keeps
# what the item held before (a prune does not delete it) and reports it.
EMPTY_FILE_KEY = "empty_file"

ItemKind = Literal["conversation", "note", "email", "memory", "instruction", "artifact"]
ITEM_KINDS: tuple[str, ...] = ("conversation", "note", "email", "memory", "instruction", "artifact")


def stable_key(*parts: object) -> str:
    """A key that is the same on every run for the same parts (first 40 hex of sha256).

    Parts are joined with NUL so that ("a b", "c") and ("a", "b c") differ; None counts as "".
    """
    joined = "\x00".join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()[:40]


@dataclass
class HarvestMessage:
    """One message (or note section, or email) inside an item; becomes one I-frame."""

    key: str
    text: str
    role: str | None = None  # user / assistant / tool / system, or None for notes
    author: str | None = None  # a person's name or address where the source has one
    timestamp: str | None = None  # ISO-8601 with a zone (UTC 'Z' preferred), or None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class HarvestItem:
    """A conversation, note, email thread member, memory, instruction or artifact."""

    key: str
    kind: str
    title: str
    container_key: str  # conversation / note / thread id: one session per container
    messages: list[HarvestMessage] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    timestamp: str | None = None

    def __post_init__(self) -> None:
        # A key or title built from a file name may carry undecodable bytes (surrogate escapes),
        # which no store accepts: they become text here, once, for every plugin.
        self.key = stored_text(self.key)
        self.container_key = stored_text(self.container_key)
        self.title = display_text(self.title)
        if self.kind not in ITEM_KINDS:
            raise ValueError(f"unknown item kind {self.kind!r}; expected one of {', '.join(ITEM_KINDS)}")


@dataclass
class HarvestError:
    """A located problem with one record or file; the scan goes on after it."""

    path: str
    reason: str
    record: str | None = None  # record index / id, or "line N", or an archive member name

    def __post_init__(self) -> None:
        self.path = stored_text(self.path)  # names a file even when its name is not valid UTF-8
        self.reason = stored_text(self.reason)
        self.record = None if self.record is None else stored_text(self.record)

    def __str__(self) -> str:
        where = f"{self.path}" + (f" [{self.record}]" if self.record else "")
        return f"{where}: {self.reason}"


ScanEvent = HarvestItem | HarvestError


@runtime_checkable
class Source(Protocol):
    """A source plugin: knows one kind of export and turns it into a stream of items."""

    kind: str
    display_name: str

    def detect(self, path: Path) -> bool:
        """True when the path looks like this source's input (cheap: names and first bytes)."""
        ...

    def scan(self, path: Path) -> Iterator[ScanEvent]:
        """Yield items and located errors; never raise for bad data."""
        ...

    def fingerprint(self, path: Path) -> str:
        """A cheap change detector (sizes and mtimes of the input files)."""
        ...
