"""Gemini: Google Takeout "Gemini Apps" activity and Google AI Studio prompt files.

Takeout (``My Activity/Gemini Apps/MyActivity.json``) is a flat log, newest first: each entry is one
prompt (``title``, usually "Prompted …") with the answer as HTML in ``safeHtmlItem``. The log has no
conversation ids, so entries are sorted oldest first by their instant (``time`` carries a zone and
is compared in UTC) and a gap of more than ``CONVERSATION_GAP`` (30 minutes) between two prompts
starts a new conversation. A conversation's key is derived from its first prompt, so a later export
that adds prompts to the newest conversation updates that conversation instead of duplicating it.
Entries that are not prompts ("Used …", "Gave feedback …") carry nothing to remember and are
counted, not kept. Only the JSON flavour of Takeout is read; the HTML flavour gives an error that
says so.

AI Studio prompt files (``chunkedPrompt.chunks[]`` with role ``user`` / ``model``) become one
conversation each; chunks marked ``isThought`` are skipped like the other sources' reasoning, and a
``systemInstruction`` becomes an ``instruction`` item. They carry no timestamps.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mind_harvest.plugins._jsonhead import has_key, read_head
from mind_harvest.plugins._jsonstream import (
    JSONStreamError,
    LostRecord,
    Record,
    note_reasons,
    stream_records,
)
from mind_harvest.plugins.html_text import html_to_text

from mind_core.harvest import depth_of_first, folder_entries, format_utc, parse_instant
from mind_core.harvest.items import (
    HarvestError,
    HarvestItem,
    HarvestMessage,
    ScanEvent,
    stable_key,
)
from mind_core.harvest.source_files import file_fingerprint, open_source_file, walk_files
from mind_core.plugins import hookimpl

KIND = "gemini"
CONVERSATION_GAP = timedelta(minutes=30)
ACTIVITY_HEADERS = frozenset({"Gemini Apps", "Bard"})
PROMPT_PREFIX = "Prompted "
TITLE_LENGTH = 80
TAKEOUT_FILE = "MyActivity.json"
TAKEOUT_LOCATIONS = (
    TAKEOUT_FILE,
    f"Gemini Apps/{TAKEOUT_FILE}",
    f"My Activity/Gemini Apps/{TAKEOUT_FILE}",
    f"Takeout/My Activity/Gemini Apps/{TAKEOUT_FILE}",
)
_ACTIVITY_HEADER = re.compile(rb'"header"\s*:\s*"(?:Gemini Apps|Bard)"')


class ShapeError(ValueError):
    """A record is valid JSON but not the shape of a Takeout entry or AI Studio prompt."""


def looks_like_takeout(head: bytes) -> bool:
    return _ACTIVITY_HEADER.search(head) is not None


def looks_like_aistudio(head: bytes) -> bool:
    return has_key(head, "chunkedPrompt")


@dataclass
class Prompt:
    """One Takeout entry that holds a prompt (and usually its answer)."""

    index: int
    moment: datetime
    original_time: str
    prompt: str
    answer: str
    attachments: list[str] = field(default_factory=list)
    products: list[str] = field(default_factory=list)


def parse_entry(entry: Any, index: int) -> Prompt | None:
    """A prompt entry, None for a non-prompt activity entry; ShapeError when malformed."""
    if not isinstance(entry, dict):
        raise ShapeError(f"an activity entry must be an object, not {type(entry).__name__}")
    header = entry.get("header")
    if header is not None and header not in ACTIVITY_HEADERS:
        return None
    title = entry.get("title")
    html = "\n".join(
        item["html"]
        for item in entry.get("safeHtmlItem") or []
        if isinstance(item, dict) and isinstance(item.get("html"), str)
    )
    if not isinstance(title, str) or (not title.startswith(PROMPT_PREFIX) and not html):
        return None
    raw_time = entry.get("time")
    if not isinstance(raw_time, str):
        raise ShapeError("entry has no 'time'")
    try:
        moment = parse_instant(raw_time)
    except (ValueError, OverflowError) as exc:
        raise ShapeError(f"unreadable time {raw_time!r}") from exc
    prompt = title[len(PROMPT_PREFIX) :] if title.startswith(PROMPT_PREFIX) else title
    attachments = [
        (a if isinstance(a, str) else str(a.get("name") or a.get("url") or "file"))
        for a in entry.get("attachedFiles") or []
        if isinstance(a, str | dict)
    ]
    if isinstance(entry.get("imageFile"), str):
        attachments.append(entry["imageFile"])
    return Prompt(
        index=index,
        moment=moment,
        original_time=raw_time,
        prompt=prompt.strip(),
        answer=html_to_text(html, image_placeholders=True) if html else "",
        attachments=attachments,
        products=[p for p in entry.get("products") or [] if isinstance(p, str)],
    )


def group_conversations(prompts: list[Prompt], gap: timedelta = CONVERSATION_GAP) -> list[list[Prompt]]:
    """Oldest first; a new conversation whenever the pause since the previous prompt exceeds ``gap``.

    Takeout lists newest first, so among prompts with the same instant the later-listed one is older.
    """
    ordered = sorted(prompts, key=lambda p: (p.moment, -p.index))
    groups: list[list[Prompt]] = []
    for prompt in ordered:
        if groups and prompt.moment - groups[-1][-1].moment <= gap:
            groups[-1].append(prompt)
        else:
            groups.append([prompt])
    return groups


def _title(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "Gemini conversation"
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1].rstrip() + "…"


def takeout_item(group: list[Prompt], origin: str) -> HarvestItem:
    first = group[0]
    key = stable_key(KIND, "takeout", format_utc(first.moment), first.prompt)
    messages: list[HarvestMessage] = []
    for prompt in group:
        when = format_utc(prompt.moment)
        entry_key = stable_key(KIND, "entry", when, prompt.prompt)[:24]
        lines = [prompt.prompt] + [f"[Attached: {name}]" for name in prompt.attachments]
        meta = {"original_time": prompt.original_time, "entry_index": prompt.index}
        messages.append(
            HarvestMessage(
                key=f"{entry_key}:prompt", text="\n".join(lines), role="user", timestamp=when, metadata=meta
            )
        )
        if prompt.answer:
            messages.append(
                HarvestMessage(
                    key=f"{entry_key}:answer",
                    text=prompt.answer,
                    role="assistant",
                    timestamp=when,
                    metadata=meta,
                )
            )
    return HarvestItem(
        key=key,
        kind="conversation",
        title=_title(first.prompt),
        container_key=key,
        messages=messages,
        metadata={
            "source_format": "takeout_activity",
            "path": origin,
            "prompt_count": len(group),
            "message_count": len(messages),
            "started_at": format_utc(first.moment),
            "ended_at": format_utc(group[-1].moment),
            "grouping": f"gap > {int(CONVERSATION_GAP.total_seconds() // 60)} min",
        },
        timestamp=format_utc(first.moment),
    )


def scan_takeout(path: Path) -> Iterator[ScanEvent]:
    """Collect prompt entries (compactly: answers already as text), then group them by time."""
    report_path = str(path)
    prompts: list[Prompt] = []
    skipped: Counter[str] = Counter()
    try:
        with open_source_file(path, streamed=True) as stream:
            for record in stream_records(stream):
                if isinstance(record, LostRecord):
                    yield HarvestError(
                        report_path, f"entry lost: {record.describe()}", record=f"entry {record.index}"
                    )
                    continue
                for reason in note_reasons(record.notes):
                    yield HarvestError(report_path, reason, record=f"entry {record.index}")
                if record.index is None:
                    yield HarvestError(
                        report_path, "not a Takeout activity log: expected a JSON list of entries"
                    )
                    return
                try:
                    prompt = parse_entry(record.value, record.index)
                except Exception as exc:  # one bad record never stops the scan
                    yield HarvestError(
                        report_path, f"bad activity entry: {exc}", record=f"entry {record.index}"
                    )
                    continue
                if prompt is None:
                    skipped["not_a_prompt"] += 1
                else:
                    prompts.append(prompt)
    except JSONStreamError as exc:
        yield HarvestError(report_path, exc.describe("entries"), record=f"entry {exc.records}")
    except OSError as exc:
        yield HarvestError(report_path, f"cannot read: {exc}")
        return
    for group in group_conversations(prompts):
        item = takeout_item(group, report_path)
        if skipped:
            item.metadata["skipped_in_file"] = dict(skipped)
        yield item


def _chunk_text(chunk: dict[str, Any]) -> str:
    texts: list[str] = []
    if isinstance(chunk.get("text"), str):
        texts.append(chunk["text"])
    for part in chunk.get("parts") or []:
        if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
    for key, label in (("driveDocument", "Attached"), ("driveImage", "Image"), ("driveVideo", "Video")):
        reference = chunk.get(key)
        if isinstance(reference, dict):
            texts.append(f"[{label}: {reference.get('name') or reference.get('id') or 'file'}]")
    if isinstance(chunk.get("inlineImage"), dict):
        texts.append("[Image]")
    return "\n".join(t.strip() for t in texts if t.strip())


def _instruction_text(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        texts = [value.get("text")] + [p.get("text") for p in value.get("parts") or [] if isinstance(p, dict)]
        return "\n".join(t.strip() for t in texts if isinstance(t, str) and t.strip())
    return ""


def aistudio_items(prompt: Any, path: Path) -> list[HarvestItem]:
    if not isinstance(prompt, dict) or not isinstance(prompt.get("chunkedPrompt"), dict):
        raise ShapeError("not an AI Studio prompt: no 'chunkedPrompt' object")
    chunks = prompt["chunkedPrompt"].get("chunks")
    if not isinstance(chunks, list):
        raise ShapeError("'chunkedPrompt' has no 'chunks' list")
    prompt_id = prompt.get("id") if isinstance(prompt.get("id"), str) else path.name
    key = stable_key(KIND, "aistudio", prompt_id)
    model = (
        prompt.get("runSettings", {}).get("model") if isinstance(prompt.get("runSettings"), dict) else None
    )
    messages: list[HarvestMessage] = []
    skipped: Counter[str] = Counter()
    for index, chunk in enumerate(chunks):
        if not isinstance(chunk, dict):
            skipped["not_an_object"] += 1
            continue
        if chunk.get("isThought"):
            skipped["thoughts"] += 1
            continue
        text = _chunk_text(chunk)
        if not text:
            skipped["empty"] += 1
            continue
        role = {"user": "user", "model": "assistant"}.get(
            str(chunk.get("role")), str(chunk.get("role") or "unknown")
        )
        chunk_key = chunk.get("id") if isinstance(chunk.get("id"), str) else f"chunk-{index}"
        messages.append(
            HarvestMessage(key=chunk_key, text=text, role=role, metadata={"chunk_role": chunk.get("role")})
        )
    items: list[HarvestItem] = []
    instruction = _instruction_text(prompt.get("systemInstruction"))
    if instruction:
        instruction_key = stable_key(KIND, "aistudio-instruction", prompt_id)
        items.append(
            HarvestItem(
                key=instruction_key,
                kind="instruction",
                title=f"AI Studio system instruction: {path.stem}",
                container_key=key,
                messages=[HarvestMessage(key=instruction_key, text=instruction, role="system")],
                metadata={"type": "system_instruction", "prompt_id": prompt_id, "path": str(path)},
            )
        )
    if messages:
        details = {
            "source_format": "aistudio_prompt",
            "prompt_id": prompt_id,
            "path": str(path),
            "model": model,
            "message_count": len(messages),
            "skipped": dict(skipped) or None,
        }
        items.append(
            HarvestItem(
                key=key,
                kind="conversation",
                title=path.stem or _title(messages[0].text),
                container_key=key,
                messages=messages,
                metadata={k: v for k, v in details.items() if v is not None},
            )
        )
    return items


def scan_aistudio(path: Path) -> Iterator[ScanEvent]:
    report_path = str(path)
    try:
        with open_source_file(path) as stream:
            records = list(stream_records(stream))
    except JSONStreamError as exc:
        yield HarvestError(report_path, f"{exc.reason} (near byte {exc.offset})", record="prompt")
        return
    except OSError as exc:
        yield HarvestError(report_path, f"cannot read: {exc}")
        return
    for record in records:
        if isinstance(record, LostRecord):
            yield HarvestError(report_path, f"element lost: {record.describe()}", record=f"element {record.index}")
            continue
        for reason in note_reasons(record.notes):
            yield HarvestError(report_path, reason, record="prompt")
    if len(records) != 1 or not isinstance(records[0], Record) or records[0].index is not None:
        yield HarvestError(report_path, "not an AI Studio prompt: expected one JSON object", record="prompt")
        return
    try:
        yield from aistudio_items(records[0].value, path)
    except Exception as exc:  # a malformed prompt file is reported, never raised
        yield HarvestError(report_path, f"bad prompt file: {exc}", record="prompt")


def _scan_file(path: Path, explicit: bool) -> Iterator[ScanEvent]:
    head = read_head(path)
    if looks_like_takeout(head):
        yield from scan_takeout(path)
    elif looks_like_aistudio(head):
        yield from scan_aistudio(path)
    elif path.suffix.lower() == ".html" and b"Gemini Apps" in head:
        yield HarvestError(
            str(path), "Takeout activity exported as HTML; export 'My Activity' as JSON instead"
        )
    elif explicit:
        reason = (
            "empty file"
            if not head
            else "neither a Takeout 'Gemini Apps' activity log nor an AI Studio prompt"
        )
        yield HarvestError(str(path), reason)


def _candidate_files(folder: Path) -> Iterator[Path | HarvestError]:
    """Files that may be Gemini data: JSON, extensionless AI Studio prompts, Takeout HTML (to
    warn); and a located error for each such name that cannot be read safely."""

    def wanted(name: str) -> bool:
        return not name.startswith(".") and Path(name).suffix.lower() in ("", ".json", ".html")

    yield from walk_files(folder, wanted)


class GeminiSource:
    kind = KIND
    display_name = "Gemini (Takeout activity, AI Studio)"

    def detect(self, path: Path) -> bool:
        path = Path(path)
        if path.is_dir():
            return gemini_depth(path) is not None
        if not path.is_file():
            return False
        head = read_head(path)
        return looks_like_takeout(head) or looks_like_aistudio(head)

    def scan(self, path: Path) -> Iterator[ScanEvent]:
        path = Path(path)
        if path.is_dir():
            for child in _candidate_files(path):
                if isinstance(child, HarvestError):
                    yield child
                else:
                    yield from _scan_file(child, explicit=False)
        elif path.is_file():
            yield from _scan_file(path, explicit=True)
        else:
            yield HarvestError(str(path), "no such file")

    def fingerprint(self, path: Path) -> str:
        path = Path(path)
        return file_fingerprint(path)


@hookimpl
def register_sources(register: Any) -> None:
    register(GeminiSource())


def gemini_depth(folder: Path) -> int | None:
    """How deep below ``folder`` the first Takeout activity file or AI Studio prompt file is (0:
    at its top), or None (the scan reads the whole tree anyway)."""
    return depth_of_first(folder, _holds_gemini)


def _holds_gemini(folder: Path) -> bool:
    if any(
        (folder / location).is_file() and looks_like_takeout(read_head(folder / location))
        for location in TAKEOUT_LOCATIONS
    ):
        return True
    return any(
        child.is_file() and child.suffix.lower() in ("", ".json") and looks_like_aistudio(read_head(child))
        for child in folder_entries(folder)
    )


@hookimpl
def detect_sources(path: Path) -> dict[str, float]:
    """Sure when a Takeout activity file or an AI Studio chat starts like one at the path's top;
    plausible when one lies in a folder below (named when no kind is given, never grounds to
    refuse another kind a user gave for the folder)."""
    path = Path(path)
    if not path.is_dir():
        return {KIND: 0.9 if GeminiSource().detect(path) else 0.0}
    depth = gemini_depth(path)
    return {KIND: 0.0 if depth is None else 0.9 if depth == 0 else 0.7}
