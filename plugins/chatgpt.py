"""ChatGPT data export: ``conversations.json`` (or the export folder or ``.zip``).

What counts as the conversation is what the user saw: the branch from ``current_node`` back to the
root through ``parent`` (regenerated and abandoned answers are left out); when ``current_node`` is
missing, the newest leaf by ``create_time`` stands in for it. System and visually hidden nodes are
skipped. Model reasoning (``thoughts``, ``reasoning_recap``) is skipped too: it is intermediate
speculation, often contradicted by the answer that follows, and would surface in recall as if it
were a fact; the item's metadata counts what was skipped. Custom instructions (per conversation
``user_editable_context`` or the 2023 ``user_context_message_data``, and a root
``user_custom_instructions``) become one ``instruction`` item per distinct text; root
``memories`` become ``memory`` items.

The file is streamed (one conversation at a time), so a 500 MB export never sits in memory whole.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from mind_harvest.plugins._archive import (
    ARCHIVE_ERRORS,
    any_member_head,
    is_archive,
    member_basename,
    safe_files,
    scan_archive,
)
from mind_harvest.plugins._jsonhead import key_before, read_head
from mind_harvest.plugins._jsonstream import (
    JSONStreamError,
    LostRecord,
    note_reasons,
    stream_records,
)

from mind_core.harvest import depth_of_first, epoch_to_iso, json_files_at_top, normalize_iso
from mind_core.harvest.items import (
    HarvestError,
    HarvestItem,
    HarvestMessage,
    ScanEvent,
    stable_key,
)
from mind_core.harvest.source_files import JSON_FILES, file_fingerprint, open_source_file, walk_files
from mind_core.plugins import hookimpl

KIND = "chatgpt"
EXPORT_FILE = "conversations.json"
MEMORY_CONTAINER = "chatgpt-memories"
SKIPPED_CONTENT_TYPES = frozenset({"thoughts", "reasoning_recap"})
IMAGE_PART_TYPES = frozenset({"image_asset_pointer", "image_url"})
AUDIO_PART_TYPES = frozenset({"audio_asset_pointer", "real_time_user_audio_video_asset_pointer"})


class ShapeError(ValueError):
    """A record is valid JSON but not the shape of a ChatGPT conversation."""


def looks_like_chatgpt(head: bytes) -> bool:
    """A ChatGPT conversation has a ``mapping`` key before any Claude-style ``chat_messages``."""
    return key_before(head, "mapping", "chat_messages")


def to_iso(value: Any) -> str | None:
    """Epoch seconds (ChatGPT) or an ISO string to our UTC form; None when absent or nonsense."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        if not math.isfinite(value):
            return None
        try:
            return epoch_to_iso(value)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            return normalize_iso(value)
        except (ValueError, OverflowError):
            return None
    return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _asset_label(part: dict[str, Any], attachments_by_id: dict[str, str], used: set[str]) -> str:
    prompt = _dict(_dict(part.get("metadata")).get("dalle")).get("prompt")
    if isinstance(prompt, str) and prompt.strip():
        return prompt.strip()
    pointer = part.get("asset_pointer") or part.get("url") or ""
    asset_id = str(pointer).rsplit("/", 1)[-1] if pointer else ""
    if asset_id in attachments_by_id:
        used.add(asset_id)
        return attachments_by_id[asset_id]
    return asset_id or "image"


def _render_parts(parts: Any, attachments_by_id: dict[str, str], used: set[str]) -> list[str]:
    rendered: list[str] = []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, str):
            rendered.append(part)
            continue
        if not isinstance(part, dict):
            continue
        part_type = part.get("content_type")
        if part_type in IMAGE_PART_TYPES:
            rendered.append(f"[Image: {_asset_label(part, attachments_by_id, used)}]")
        elif part_type in AUDIO_PART_TYPES:
            rendered.append("[Audio]")
        elif isinstance(part.get("text"), str):
            rendered.append(part["text"])
        elif part_type:
            rendered.append(f"[{part_type}]")
    return rendered


def _content_text(
    content: dict[str, Any], message: dict[str, Any], attachments_by_id: dict[str, str], used: set[str]
) -> str:
    """The readable text of one message's content, labelled by what kind of content it is."""
    content_type = content.get("content_type") or "text"
    if content_type in ("text", "multimodal_text"):
        return "\n".join(_render_parts(content.get("parts"), attachments_by_id, used))
    if content_type == "code":
        language = content.get("language")
        if not isinstance(language, str) or language in ("", "unknown"):
            recipient = message.get("recipient")
            language = "python" if recipient == "python" else ""
        return f"```{language}\n{content.get('text') or ''}\n```"
    if content_type == "execution_output":
        output = str(content.get("text") or "").replace("<<ImageDisplayed>>", "[Image]").strip()
        return f"Output:\n{output}" if output else ""
    if content_type == "tether_quote":
        source = " ".join(str(content.get(k)) for k in ("title", "url") if content.get(k))
        return f"Quote from {source}:\n{content.get('text') or ''}"
    if content_type == "tether_browsing_display":
        return str(content.get("result") or content.get("summary") or "")
    if content_type == "system_error":
        return f"Error ({content.get('name') or 'system'}): {content.get('text') or ''}"
    if isinstance(content.get("text"), str):
        return content["text"]
    return "\n".join(_render_parts(content.get("parts"), attachments_by_id, used))


def _attachment_lines(attachments: list[dict[str, Any]], used: set[str]) -> list[str]:
    """Attachments not already shown as an image placeholder."""
    names = (a.get("name") or a.get("id") for a in attachments if str(a.get("id")) not in used)
    return [f"[Attached: {name}]" for name in names if name]


def render_message(node_id: str, message: dict[str, Any]) -> HarvestMessage | None:
    """One visible message; None when it has no readable text."""
    content = _dict(message.get("content"))
    author = _dict(message.get("author"))
    metadata = _dict(message.get("metadata"))
    role = str(author.get("role") or "unknown")
    recipient = message.get("recipient")
    attachments = [a for a in metadata.get("attachments") or () if isinstance(a, dict)]
    attachments_by_id = {str(a["id"]): str(a["name"]) for a in attachments if a.get("id") and a.get("name")}
    used: set[str] = set()
    text = _content_text(content, message, attachments_by_id, used).strip()
    lines = [text] if text else []
    if attachments:
        lines.extend(_attachment_lines(attachments, used))
    if not lines:
        return None
    text = "\n".join(lines)
    tool_name = author.get("name") if isinstance(author.get("name"), str) else None
    if role == "tool":
        text = f"[{tool_name or 'tool'}] {text}"
    elif recipient not in (None, "all") and content.get("content_type") != "code":
        text = f"[Call {recipient}] {text}"
    details = {
        "content_type": content.get("content_type") or "text",
        "message_id": message.get("id"),
        "model": metadata.get("model_slug"),
        "recipient": recipient if recipient not in (None, "all") else None,
        "tool": tool_name if role == "tool" else None,
        "attachments": [a.get("name") for a in attachments] or None,
        "original_time": message.get("create_time"),
    }
    return HarvestMessage(
        key=node_id,
        text=text,
        role=role,
        timestamp=to_iso(message.get("create_time")),
        metadata={k: v for k, v in details.items() if v is not None},
    )


def _newest_leaf(mapping: dict[str, Any]) -> str | None:
    best: str | None = None
    best_time = -math.inf
    for node_id, node in mapping.items():
        children = [c for c in _dict(node).get("children") or [] if c in mapping]
        if children:
            continue
        created = _dict(_dict(node).get("message")).get("create_time")
        moment = (
            float(created)
            if isinstance(created, int | float) and not isinstance(created, bool)
            else -math.inf
        )
        if best is None or moment >= best_time:
            best, best_time = node_id, moment
    return best


def visible_branch(
    mapping: dict[str, Any], current_node: Any
) -> tuple[list[tuple[str, dict[str, Any]]], str, str | None]:
    """Root-to-leaf nodes of the branch the user last saw, how its leaf was chosen, and the
    cycle its parent links end in (None when they reach a root).

    Nodes whose children all lead back into the conversation leave no leaf to start from: that
    is refused (a ShapeError names it) rather than read as an empty conversation. A parent link
    back to a node already on the branch ends the branch there; the caller reports it.
    """
    if isinstance(current_node, str) and current_node in mapping:
        leaf: str | None = current_node
        chosen_by = "current_node"
    else:
        leaf = _newest_leaf(mapping)
        chosen_by = "newest_leaf"
        if leaf is None and mapping:
            raise ShapeError(
                f"the children links of its {len(mapping)} nodes form a cycle: no message ends the conversation"
            )
    branch: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    node_id = leaf
    cycle = None
    while isinstance(node_id, str) and node_id in mapping:
        if node_id in seen:
            cycle = f"the parent links from node {leaf!r} form a cycle at node {node_id!r}; read up to it"
            break
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            raise ShapeError(f"mapping node {node_id!r} is not an object")
        branch.append((node_id, node))
        node_id = node.get("parent")
    branch.reverse()
    return branch, chosen_by, cycle


def _instruction_text(message: dict[str, Any]) -> str | None:
    """Custom instructions carried by a hidden context node (2024+ or 2023 form), if any."""
    content = _dict(message.get("content"))
    if content.get("content_type") == "user_editable_context":
        fields = (
            ("About me", content.get("user_profile")),
            ("How to respond", content.get("user_instructions")),
        )
    else:
        data = _dict(_dict(message.get("metadata")).get("user_context_message_data"))
        fields = (
            ("About me", data.get("about_user_message")),
            ("How to respond", data.get("about_model_message")),
        )
    blocks = [
        f"{label}:\n{value.strip()}" for label, value in fields if isinstance(value, str) and value.strip()
    ]
    return "\n\n".join(blocks) or None


def instruction_item(text: str, timestamp: str | None, origin: dict[str, Any]) -> HarvestItem:
    key = stable_key(KIND, "instruction", text)
    return HarvestItem(
        key=key,
        kind="instruction",
        title="ChatGPT custom instructions",
        container_key=key,
        messages=[HarvestMessage(key="instructions", text=text, role="user", timestamp=timestamp)],
        metadata={"type": "custom_instructions", **origin},
        timestamp=timestamp,
    )


def conversation_events(conversation: Any, origin: str, seen_instructions: set[str]) -> list[ScanEvent]:
    """The conversation item, preceded by an instruction item the first time a text is seen."""
    if not isinstance(conversation, dict):
        raise ShapeError(f"a conversation must be an object, not {type(conversation).__name__}")
    mapping = conversation.get("mapping")
    if not isinstance(mapping, dict):
        raise ShapeError("conversation has no 'mapping' object")
    conversation_id = conversation.get("id") or conversation.get("conversation_id")
    if not isinstance(conversation_id, str) or not conversation_id:
        conversation_id = stable_key(
            KIND, "untitled", conversation.get("title"), conversation.get("create_time")
        )
    events: list[ScanEvent] = []
    branch, chosen_by, cycle = visible_branch(mapping, conversation.get("current_node"))
    if cycle is not None:
        events.append(HarvestError(origin, cycle, record=f"conversation {conversation_id}"))
    messages: list[HarvestMessage] = []
    skipped: Counter[str] = Counter()
    for node_id, node in branch:
        message = node.get("message")
        if not isinstance(message, dict):
            continue
        metadata = _dict(message.get("metadata"))
        content_type = _dict(message.get("content")).get("content_type")
        if content_type == "user_editable_context" or "user_context_message_data" in metadata:
            instructions = _instruction_text(message)
            if instructions:
                key = stable_key(KIND, "instruction", instructions)
                if key not in seen_instructions:
                    seen_instructions.add(key)
                    when = to_iso(message.get("create_time")) or to_iso(conversation.get("create_time"))
                    events.append(instruction_item(instructions, when, {"conversation_id": conversation_id}))
                continue
        role = _dict(message.get("author")).get("role")
        if role == "system" or metadata.get("is_visually_hidden_from_conversation"):
            skipped["hidden_or_system"] += 1
            continue
        if content_type in SKIPPED_CONTENT_TYPES:
            skipped[str(content_type)] += 1
            continue
        rendered = render_message(node_id, message)
        if rendered is None:
            skipped["empty"] += 1
            continue
        messages.append(rendered)
    if not messages:
        return events
    created = to_iso(conversation.get("create_time"))
    details = {
        "conversation_id": conversation_id,
        "path": origin,
        "created_at": created,
        "updated_at": to_iso(conversation.get("update_time")),
        "model": conversation.get("default_model_slug"),
        "gizmo_id": conversation.get("gizmo_id"),
        "is_archived": conversation.get("is_archived"),
        "branch": chosen_by,
        "message_count": len(messages),
        "skipped": dict(skipped) or None,
    }
    title = conversation.get("title")
    events.append(
        HarvestItem(
            key=stable_key(KIND, conversation_id),
            kind="conversation",
            title=title.strip() if isinstance(title, str) and title.strip() else "Untitled",
            container_key=conversation_id,
            messages=messages,
            metadata={k: v for k, v in details.items() if v is not None},
            timestamp=created or messages[0].timestamp,
        )
    )
    return events


def _instructions_from_root(value: Any) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, dict):
        lines = [
            f"{k}: {v}" if isinstance(v, str) else f"{k}: {json.dumps(v)}" for k, v in value.items() if v
        ]
        return "\n".join(lines) or None
    return None


def memory_item(memory: Any, index: int) -> HarvestItem | None:
    if isinstance(memory, str):
        text, memory_id, created = memory, None, None
    elif isinstance(memory, dict):
        raw = memory.get("content") or memory.get("text")
        text = raw if isinstance(raw, str) else json.dumps(memory, ensure_ascii=False)
        memory_id, created = memory.get("id"), to_iso(memory.get("created_at") or memory.get("create_time"))
    else:
        raise ShapeError(f"memory {index} is a {type(memory).__name__}")
    text = text.strip()
    if not text:
        return None
    key = stable_key(KIND, "memory", memory_id or text)
    return HarvestItem(
        key=key,
        kind="memory",
        title="ChatGPT memory",
        container_key=MEMORY_CONTAINER,
        messages=[HarvestMessage(key=key, text=text, timestamp=created)],
        metadata={"type": "chatgpt_memory", **({"memory_id": memory_id} if memory_id else {})},
        timestamp=created,
    )


def _record_label(index: int, conversation: Any) -> str:
    conversation_id = (
        conversation.get("id") or conversation.get("conversation_id")
        if isinstance(conversation, dict)
        else None
    )
    return f"conversation {index}" + (f" ({conversation_id})" if conversation_id else "")


def root_events(root: Any, origin: str, report_path: str, seen_instructions: set[str]) -> Iterator[ScanEvent]:
    """A root object: a single conversation, and/or custom instructions and memories."""
    if not isinstance(root, dict):
        yield HarvestError(report_path, f"not a ChatGPT export: the document is a {type(root).__name__}")
        return
    known = False
    if "mapping" in root:
        known = True
        try:
            yield from conversation_events(root, origin, seen_instructions)
        except Exception as exc:  # one bad record never stops the scan
            yield HarvestError(report_path, f"bad conversation: {exc}", record=_record_label(0, root))
    text = _instructions_from_root(root.get("user_custom_instructions"))
    if text:
        known = True
        key = stable_key(KIND, "instruction", text)
        if key not in seen_instructions:
            seen_instructions.add(key)
            yield instruction_item(text, None, {"path": origin})
    memories = root.get("memories")
    if isinstance(memories, list):
        known = True
        for index, memory in enumerate(memories):
            try:
                item = memory_item(memory, index)
            except Exception as exc:
                yield HarvestError(report_path, f"bad memory: {exc}", record=f"memory {index}")
                continue
            if item is not None:
                yield item
    if not known and "conversations" not in root:
        yield HarvestError(report_path, "not a ChatGPT export: no conversations, mapping or memories")


def scan_stream(stream: IO[bytes], report_path: str, member: str | None = None) -> Iterator[ScanEvent]:
    """Scan one conversations.json byte stream (a file or an archive member)."""
    origin = f"{report_path}!{member}" if member else report_path
    prefix = f"{member}: " if member else ""
    seen_instructions: set[str] = set()
    try:
        for record in stream_records(stream, ("conversations",)):
            if isinstance(record, LostRecord):
                yield HarvestError(
                    report_path, f"conversation lost: {record.describe()}", record=f"{prefix}conversation {record.index}"
                )
                continue
            label = "root object" if record.index is None else _record_label(record.index, record.value)
            for reason in note_reasons(record.notes):
                yield HarvestError(report_path, reason, record=prefix + label)
            if record.index is None:
                yield from root_events(record.value, origin, report_path, seen_instructions)
                continue
            try:
                events = conversation_events(record.value, origin, seen_instructions)
            except Exception as exc:  # one bad record never stops the scan
                yield HarvestError(report_path, f"bad conversation: {exc}", record=prefix + label)
                continue
            yield from events
    except JSONStreamError as exc:
        yield HarvestError(
            report_path, exc.describe("conversations"), record=f"{prefix}conversation {exc.records}"
        )


class ChatGPTSource:
    kind = KIND
    display_name = "ChatGPT export"

    def detect(self, path: Path) -> bool:
        path = Path(path)
        if path.is_dir():
            return export_depth(path) is not None
        if is_archive(path):
            return any_member_head(path, EXPORT_FILE, looks_like_chatgpt)
        return path.is_file() and looks_like_chatgpt(read_head(path))

    def scan(self, path: Path) -> Iterator[ScanEvent]:
        path = Path(path)
        if path.is_dir():
            files = export_files(path)
            if not files:
                yield from self._scan_exports_below(path)
                return
            for file in files:
                yield from self._scan_file(file, within=path)
            return
        yield from self._scan_file(path)

    def _scan_exports_below(self, root: Path) -> Iterator[ScanEvent]:
        """The exports in the folders below a folder that holds none at its top (a folder of
        unpacked exports): in each folder its conversations.json, else its JSON files that start
        like a ChatGPT export, as at the top."""
        by_folder: dict[Path, list[Path]] = {}
        for found in walk_files(root, lambda name: name.lower().endswith(".json")):
            if isinstance(found, HarvestError):
                yield found
            else:
                by_folder.setdefault(found.parent, []).append(found)
        read = 0
        for files in by_folder.values():
            exports = [file for file in files if looks_like_chatgpt(read_head(file))]  # not Claude's conversations.json
            for file in [f for f in exports if f.name == EXPORT_FILE] or exports:
                read += 1
                yield from self._scan_file(file, within=root)
        if not read:
            yield HarvestError(str(root), f"no {EXPORT_FILE} and no ChatGPT conversation file in this folder")

    @staticmethod
    def _scan_file(path: Path, within: Path | None = None) -> Iterator[ScanEvent]:
        if not path.is_file():
            yield HarvestError(str(path), "no such file")
            return
        if is_archive(path):
            yield from scan_archive(path, _scan_members)
            return
        try:
            with open_source_file(path, streamed=True, within=within) as handle:
                yield from scan_stream(handle, str(path))
        except OSError as exc:
            yield HarvestError(str(path), f"cannot read: {exc}")

    def fingerprint(self, path: Path) -> str:
        path = Path(path)
        if path.is_dir() and (path / EXPORT_FILE).is_file():
            return file_fingerprint(path / EXPORT_FILE)
        return file_fingerprint(path, JSON_FILES if path.is_dir() else ("*",))


def export_files(folder: Path) -> list[Path]:
    """What a folder holds to read: its ``conversations.json``, else every JSON file at its top
    that starts like a ChatGPT export or a saved conversation (a folder of them)."""
    main = folder / EXPORT_FILE
    if main.is_file():
        return [main]
    return json_files_at_top(folder, lambda entry: looks_like_chatgpt(read_head(entry)))


def export_depth(folder: Path) -> int | None:
    """How deep below ``folder`` the first folder holding a ChatGPT export is (0: at its top), or None."""
    return depth_of_first(folder, lambda current: any(looks_like_chatgpt(read_head(f)) for f in export_files(current)))


def _scan_members(archive: zipfile.ZipFile, report_path: str) -> Iterator[ScanEvent]:
    """Stream every conversations.json member of the export archive."""
    members = [info for info in safe_files(archive) if member_basename(info) == EXPORT_FILE]
    if not members:
        yield HarvestError(report_path, f"no {EXPORT_FILE} in this archive")
    for info in members:
        try:
            with archive.open(info) as member:
                yield from scan_stream(member, report_path, info.filename)
        except ARCHIVE_ERRORS as exc:
            yield HarvestError(report_path, f"cannot read archive member: {exc}", record=info.filename)


@hookimpl
def register_sources(register: Any) -> None:
    register(ChatGPTSource())


@hookimpl
def detect_sources(path: Path) -> dict[str, float]:
    """Sure when the export's conversations.json (in a folder, a zip, or alone) starts like ChatGPT's;
    plausible when exports lie in folders below (a folder of unpacked exports)."""
    path = Path(path)
    if path.is_dir():
        depth = export_depth(path)
        return {KIND: 0.0 if depth is None else 0.95 if depth == 0 else 0.7}
    return {KIND: 0.95 if ChatGPTSource().detect(path) else 0.0}
