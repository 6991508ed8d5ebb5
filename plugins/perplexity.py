"""Perplexity threads, in the input forms the seed's ``PerplexityAdapter`` reads (Perplexity has
no official bulk export; these are the shapes of browser-extension and API dumps):

- a bare array of threads; ``{"threads": [...]}``, ``{"conversations": [...]}`` or ``{"items": [...]}``;
- a root object with ``messages`` (one thread).

A thread's entries come from ``messages`` (else ``turns``); the role from ``role``, ``author``,
``sender`` or ``type``: user / human / question are the user, assistant / ai / perplexity / answer
the assistant. The text is the first string of ``content``, ``text``, ``answer``, ``query`` (or
``content.parts``), and an entry's ``sources`` / ``citations`` / ``web_results`` (strings, or
objects with ``url`` / ``link`` / ``href``) are appended as ``Sources: u1, u2`` and kept in the
message's metadata. The time is ``timestamp`` / ``created_at`` / ``createdAt`` / ``time`` (ISO, or
epoch milliseconds as the seed reads a number).

Beyond the seed: an entry without a role that holds both a ``query`` and an ``answer`` (a
question-answer turn) becomes two messages, the question and the answer, where the seed kept
the answer alone; entries with an unknown role are dropped and counted (``dropped_entries``).
One conversation item per thread, one frame per message; a broken thread costs that thread alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from mind_harvest.plugins._file_sources import SniffedSource, source_hooks
from mind_harvest.plugins._jsonhead import has_key
from mind_harvest.plugins._jsonstream import JSONStreamError, LostRecord, note_reasons, stream_records

from mind_core.harvest import epoch_to_iso, normalize_iso
from mind_core.harvest.items import HarvestError, HarvestItem, HarvestMessage, ScanEvent, stable_key

KIND = "perplexity"
SUFFIXES = (".json",)
LIST_KEYS = ("threads", "conversations", "items")
USER_ROLES = frozenset({"user", "human", "question"})
ASSISTANT_ROLES = frozenset({"assistant", "ai", "perplexity", "answer"})
TEXT_KEYS = ("content", "text", "answer", "query")
SOURCE_KEYS = ("sources", "citations", "web_results")
TIME_KEYS = ("timestamp", "created_at", "createdAt", "time")


class ShapeError(ValueError):
    """A record is valid JSON but not a Perplexity thread."""


def looks_like_perplexity(head: bytes) -> bool:
    """Thread entries (``messages`` or ``turns``) beside Perplexity's own keys (citations, web
    results, a ``threads`` list) or its name, and not a Universal import item (``source`` and
    ``type`` beside ``content``), which may name Perplexity as its origin."""
    entries = has_key(head, "messages") or has_key(head, "turns")
    own = any(has_key(head, key) for key in ("citations", "web_results", "threads"))
    named = b"perplexity" in head.lower()
    universal = all(has_key(head, key) for key in ("source", "type", "content"))
    return entries and (own or named) and not universal


def to_iso(value: Any) -> str | None:
    """An ISO string, or a number read as epoch milliseconds (as the seed reads it)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        if not math.isfinite(value):
            return None
        try:
            return epoch_to_iso(value / 1000)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value.strip():
        try:
            return normalize_iso(value.strip())
        except (ValueError, OverflowError):
            return None
    return None


def _first(entry: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((entry[key] for key in keys if entry.get(key) is not None), None)


def entry_text(entry: dict[str, Any]) -> str:
    for key in TEXT_KEYS:
        value = entry.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    parts = entry.get("content", {}).get("parts") if isinstance(entry.get("content"), dict) else None
    return "\n".join(p for p in parts or [] if isinstance(p, str)).strip()


def source_urls(entry: dict[str, Any]) -> list[str]:
    found = _first(entry, SOURCE_KEYS)
    urls = []
    for source in found if isinstance(found, list) else []:
        url = source if isinstance(source, str) else _first(source, ("url", "link", "href")) if isinstance(source, dict) else None
        if isinstance(url, str) and url.strip():
            urls.append(url.strip())
    return list(dict.fromkeys(urls))


def role_of(entry: dict[str, Any]) -> str | None:
    """user, assistant, or None for a role the seed does not know."""
    raw = _first(entry, ("role", "author", "sender", "type"))
    role = raw.strip().lower() if isinstance(raw, str) else ""
    return "user" if role in USER_ROLES else "assistant" if role in ASSISTANT_ROLES else None


def _message(key: str, role: str, text: str, urls: list[str], original: Any) -> HarvestMessage:
    if urls:
        text = f"{text}\n\nSources: {', '.join(urls)}"
    details = {"sources": urls or None, "original_time": original}
    return HarvestMessage(
        key=key,
        text=text,
        role=role,
        timestamp=to_iso(original),
        metadata={k: v for k, v in details.items() if v is not None},
    )


def entry_messages(entry: Any, index: int) -> list[HarvestMessage] | None:
    """The messages of one entry; None when its role is unknown (dropped, counted)."""
    if not isinstance(entry, dict):
        raise ShapeError(f"entry {index} is a {type(entry).__name__}, not an object")
    original = _first(entry, TIME_KEYS)
    urls = source_urls(entry)
    role = role_of(entry)
    query, answer = entry.get("query"), entry.get("answer")
    if role is None and isinstance(query, str) and isinstance(answer, str):
        asked = [_message(f"{index}q", "user", query.strip(), [], original)] if query.strip() else []
        told = [_message(f"{index}a", "assistant", answer.strip(), urls, original)] if answer.strip() else []
        return asked + told
    if role is None:
        return None
    text = entry_text(entry)
    return [_message(str(index), role, text, urls, original)] if text else []


def thread_item(thread: Any, origin: str) -> HarvestItem | None:
    """One thread as a conversation item; None when it holds no text; ShapeError when it is not a thread."""
    if not isinstance(thread, dict):
        raise ShapeError(f"a thread must be an object, not {type(thread).__name__}")
    entries = thread.get("messages") if thread.get("messages") is not None else thread.get("turns")
    if not isinstance(entries, list):
        raise ShapeError("thread has no 'messages' or 'turns' list")
    messages: list[HarvestMessage] = []
    dropped = 0
    for index, entry in enumerate(entries):
        found = entry_messages(entry, index)
        if found is None:
            dropped += 1
        else:
            messages.extend(found)
    if not messages:
        return None
    title = _first(thread, ("title", "name"))
    title = title.strip() if isinstance(title, str) and title.strip() else "Perplexity Thread"
    thread_id = _first(thread, ("id", "uuid", "thread_id", "slug"))
    thread_id = str(thread_id) if thread_id is not None else stable_key(KIND, title, messages[0].text[:2000])
    created = to_iso(_first(thread, TIME_KEYS))
    details = {
        "thread_id": thread_id,
        "path": origin,
        "message_count": len(messages),
        "has_citations": any("sources" in m.metadata for m in messages),
        "dropped_entries": dropped or None,
    }
    return HarvestItem(
        key=stable_key(KIND, thread_id),
        kind="conversation",
        title=title,
        container_key=thread_id,
        messages=messages,
        metadata={k: v for k, v in details.items() if v is not None},
        timestamp=created or messages[0].timestamp,
    )


def _thread_events(thread: Any, origin: str, label: str) -> Iterator[ScanEvent]:
    try:
        item = thread_item(thread, origin)
    except ShapeError as exc:
        yield HarvestError(origin, f"bad thread: {exc}", record=label)
        return
    if item is not None:
        yield item


def scan_stream(handle: IO[bytes], where: str) -> Iterator[ScanEvent]:
    """Threads streamed one at a time from an array, a wrapper's list, or one root thread."""
    try:
        for record in stream_records(handle, LIST_KEYS):
            if isinstance(record, LostRecord):
                yield HarvestError(where, f"thread lost: {record.describe()}", record=f"thread {record.index}")
                continue
            label = "root object" if record.index is None else f"thread {record.index}"
            for reason in note_reasons(record.notes):
                yield HarvestError(where, reason, record=label)
            value = record.value
            if record.index is None and isinstance(value, dict) and "messages" not in value and "turns" not in value:
                if not any(key in value for key in LIST_KEYS):
                    yield HarvestError(where, "not a Perplexity export: no threads and no messages")
                continue
            yield from _thread_events(value, where, label)
    except JSONStreamError as exc:
        yield HarvestError(where, exc.describe("threads"), record=f"thread {exc.records}")


def _read_threads(handle: IO[bytes], path: Path) -> Iterator[ScanEvent]:
    return scan_stream(handle, str(path))


class PerplexitySource(SniffedSource):
    """Perplexity threads: sure of a JSON file that opens like them; a folder of them at its top: 0.85."""

    kind = KIND
    display_name = "Perplexity threads"
    suffixes = SUFFIXES
    looks = staticmethod(looks_like_perplexity)
    read = staticmethod(_read_threads)


register_sources, detect_sources = source_hooks(PerplexitySource)
