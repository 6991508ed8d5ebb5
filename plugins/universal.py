"""Universal JSON: the seed's own import item, the shape its ``UniversalAdapter`` produces and its
``harvest_import`` accepts (``UniversalImportItem``)::

    {"id": "...", "source": "chatgpt", "type": "conversation", "title": "...", "content": "...",
     "messages": [{"role": "user", "text": "...", "timestamp": "2024-03-01T12:00:00Z"}],
     "timestamp": "2024-03-01T12:00:00Z", "metadata": {...}}

A file holds one item, an array of items (also ``{"items": [...]}``), or JSON Lines (one item per
line; ``.jsonl`` / ``.ndjson``, or a ``.json`` whose first two lines are objects). One frame per
message, with the message's own time (else the item's) and its role as speaker; an item without
messages is one frame of its ``content``. A broken item (or line) costs that item alone.

Keys: an item's ``id`` names it when given (so a changed item updates its frames); the seed's
ids were random UUIDs, new on every export, so an item without one is keyed by its source, title,
time and text (a re-import of the same text is then unchanged, and the dedup shares frames anyway).
The seed's item types map onto ours: preference, decision and rule become memories (``rule``:
instructions), document a note; the seed's type stays in the metadata. ``items_from_records`` is
also what ``mind_core.harvest.ingest`` reads through the plugin host (POST /ingest, MCP
``ingest_items``): an ingested item is read exactly as a harvested one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from mind_harvest.plugins._bounded import read_line
from mind_harvest.plugins._file_sources import SniffedSource, source_hooks
from mind_harvest.plugins._jsonhead import has_key
from mind_harvest.plugins._jsonstream import JSONStreamError, LostRecord, note_reasons, stream_records

from mind_core.harvest import epoch_to_iso, normalize_iso
from mind_core.harvest.items import HarvestError, HarvestItem, HarvestMessage, ScanEvent, stable_key

KIND = "universal"
JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")
SUFFIXES = (".json", *JSON_LINES_SUFFIXES)
ROLES = frozenset({"user", "assistant", "system"})
TYPE_TO_KIND = {
    "conversation": "conversation",
    "memory": "memory",
    "instruction": "instruction",
    "rule": "instruction",
    "preference": "memory",
    "decision": "memory",
    "artifact": "artifact",
    "document": "note",
}
MAX_KEY_TEXT = 2_000  # of an id-less item's text, what its key is derived from
EPOCH_MS_ABOVE = 1e11  # a number this large is milliseconds (the year 5138 in seconds)


class ShapeError(ValueError):
    """A record is valid JSON but not a Universal import item."""


def looks_like_universal(head: bytes) -> bool:
    """An item has ``source``, ``type`` and ``content`` keys, and a ``title`` or ``messages``,
    and none of the keys that make it another chat export."""
    rivals = ("mapping", "chat_messages", "chunkedPrompt")
    return (
        all(has_key(head, key) for key in ("source", "type", "content"))
        and (has_key(head, "title") or has_key(head, "messages"))
        and not any(has_key(head, key) for key in rivals)
    )


def to_iso(value: Any) -> str | None:
    """An ISO string or epoch (seconds, or milliseconds when that large) in our UTC form; None
    when absent or unreadable (the original is kept in the metadata)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        if not math.isfinite(value):
            return None
        try:
            return epoch_to_iso(value / 1000 if abs(value) > EPOCH_MS_ABOVE else value)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value.strip():
        try:
            return normalize_iso(value.strip())
        except (ValueError, OverflowError):
            return None
    return None


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _message(raw: Any, index: int) -> HarvestMessage | None:
    if not isinstance(raw, dict):
        raise ShapeError(f"message {index} is a {type(raw).__name__}, not an object")
    text = _text(raw.get("text")) or _text(raw.get("content"))
    if not text:
        return None
    role = _text(raw.get("role")).lower() or None
    author = _text(raw.get("author")) or _text(raw.get("name")) or None
    original = raw.get("timestamp")
    details = {"role": role if role and role not in ROLES else None, "original_time": original}
    return HarvestMessage(
        key=str(index),
        text=text,
        role=role,
        author=author,
        timestamp=to_iso(original),
        metadata={k: v for k, v in details.items() if v is not None},
    )


def universal_item(value: Any) -> HarvestItem:
    """One Universal import item as a harvest item; ShapeError when it is not one."""
    if not isinstance(value, dict):
        raise ShapeError(f"an item must be an object, not {type(value).__name__}")
    raw_messages = value.get("messages")
    if raw_messages is not None and not isinstance(raw_messages, list):
        raise ShapeError(f"'messages' is a {type(raw_messages).__name__}, not a list")
    messages = [m for i, raw in enumerate(raw_messages or []) if (m := _message(raw, i)) is not None]
    content = _text(value.get("content"))
    timestamp = to_iso(value.get("timestamp"))
    if not messages and content:
        messages = [HarvestMessage(key="content", text=content, timestamp=timestamp)]
    if not messages:
        raise ShapeError("no 'content' and no message with text")
    source = _text(value.get("source")) or "unknown"
    item_type = _text(value.get("type")) or "memory"
    title = _text(value.get("title")) or "Untitled"
    item_id = value.get("id")
    if isinstance(item_id, str | int) and not isinstance(item_id, bool) and str(item_id).strip():
        key = stable_key(KIND, source, str(item_id).strip())
    else:
        key = stable_key(KIND, source, title, value.get("timestamp"), (content or messages[0].text)[:MAX_KEY_TEXT])
    metadata = value.get("metadata")
    details = {
        "source": source,
        "type": item_type,
        "id": item_id if isinstance(item_id, str | int) and not isinstance(item_id, bool) else None,
        "original_time": value.get("timestamp"),
        "metadata": metadata if isinstance(metadata, dict) and metadata else None,
    }
    return HarvestItem(
        key=key,
        kind=TYPE_TO_KIND.get(item_type, "note"),
        title=title,
        container_key=key,
        messages=messages,
        metadata={k: v for k, v in details.items() if v is not None},
        timestamp=timestamp or messages[0].timestamp,
    )


def items_from_records(records: Iterable[Any], where: str) -> Iterator[ScanEvent]:
    """Each record as an item, or as an error naming ``where`` and the record's index."""
    for index, value in enumerate(records):
        try:
            yield universal_item(value)
        except ShapeError as exc:
            yield HarvestError(where, f"bad item: {exc}", record=f"item {index}")


def _is_json_lines(path: Path, handle: IO[bytes]) -> bool:
    """JSON Lines by suffix, or a file whose first line is a whole object and whose next line
    opens one (a pretty-printed object's first line is ``{`` alone, which is no whole object)."""
    if path.suffix.lower() in JSON_LINES_SUFFIXES:
        return True
    first, _ = read_line(handle)
    second, _ = read_line(handle)
    handle.seek(0)
    if not first.lstrip().startswith(b"{") or not second.lstrip().startswith(b"{"):
        return False
    try:
        return isinstance(json.loads(first.decode("utf-8", "replace")), dict)
    except (ValueError, RecursionError):
        return False


def scan_json_lines(handle: IO[bytes], where: str) -> Iterator[ScanEvent]:
    """One item per line; a line that is not JSON, or not an item, costs that line alone."""
    number = 0
    while True:
        line, size = read_line(handle)
        if not size:
            return
        number += 1
        if not line.strip():
            continue
        if size > len(line):
            yield HarvestError(where, f"line of {size:,} bytes is too long to be one item", record=f"line {number}")
            continue
        try:
            value = json.loads(line.decode("utf-8", "replace"))
            yield universal_item(value)
        except (ValueError, RecursionError) as exc:
            reason = f"bad item: {exc}" if isinstance(exc, ShapeError) else f"not JSON: {exc}"
            yield HarvestError(where, reason, record=f"line {number}")


def scan_document(handle: IO[bytes], where: str) -> Iterator[ScanEvent]:
    """One item, an array of items, or ``{"items": [...]}``, streamed record by record."""
    try:
        for record in stream_records(handle, ("items",)):
            if isinstance(record, LostRecord):
                yield HarvestError(where, f"item lost: {record.describe()}", record=f"item {record.index}")
                continue
            label = f"item {record.index}" if record.index is not None else "root object"
            for reason in note_reasons(record.notes):
                yield HarvestError(where, reason, record=label)
            value = record.value
            if record.index is None and isinstance(value, dict) and isinstance(value.get("items"), list):
                continue  # the wrapper's own keys: its items came before it
            try:
                yield universal_item(value)
            except ShapeError as exc:
                yield HarvestError(where, f"bad item: {exc}", record=label)
    except JSONStreamError as exc:
        yield HarvestError(where, exc.describe("items"), record=f"item {exc.records}")


def _read_items(handle: IO[bytes], path: Path) -> Iterator[ScanEvent]:
    reader = scan_json_lines if _is_json_lines(path, handle) else scan_document
    return reader(handle, str(path))


class UniversalSource(SniffedSource):
    """Import items: sure of a JSON / JSON Lines file that opens with an import item's keys; a
    folder holding such files at its top is plausible-and-more (other exports hold JSON too)."""

    kind = KIND
    display_name = "Universal JSON (import items)"
    suffixes = SUFFIXES
    looks = staticmethod(looks_like_universal)
    read = staticmethod(_read_items)

    @staticmethod
    def items_from_records(records: Iterable[Any], where: str) -> Iterator[ScanEvent]:
        """Items already parsed (an ingest request's body), read as a file's items are."""
        return items_from_records(records, where)


register_sources, detect_sources = source_hooks(UniversalSource)
