"""Claude.ai data export: the export folder or ``.zip`` (``conversations.json`` plus ``projects.json``,
``memories.json`` and ``users.json`` when present), a single ``conversations.json`` file, or a
folder of saved conversations (JSON files of any name at its top that start like Claude's).

Message text comes from the ``content`` blocks of type ``text`` (plus tool calls, tool results and
artifacts with a readable label); the flat ``text`` field is used only when a message has no content
blocks, because for assistant messages it glues the model's thinking and its answer together.
Thinking blocks are skipped for the same reason as ChatGPT's reasoning: they are speculation, not
what was said (the item's metadata counts them). When every message carries
``parent_message_uuid``, the conversation is the branch ending at the latest leaf (edited and
retried messages leave abandoned branches); otherwise the messages keep their listed order.
Project documents become ``artifact`` items (one message each), project prompt templates become
``instruction`` items, and account / project memories become ``memory`` items.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path, PurePosixPath
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

from mind_core.harvest import json_files_at_top, normalize_iso
from mind_core.harvest.items import (
    HarvestError,
    HarvestItem,
    HarvestMessage,
    ScanEvent,
    stable_key,
)
from mind_core.harvest.source_files import JSON_FILES, file_fingerprint, open_source_file
from mind_core.plugins import hookimpl

KIND = "claude"
CONVERSATIONS = "conversations.json"
PROJECTS = "projects.json"
MEMORIES = "memories.json"
USERS = "users.json"
EXPORT_FILES = (CONVERSATIONS, PROJECTS, MEMORIES, USERS)
MEMORY_CONTAINER = "claude-memories"
ROLES = {"human": "user", "user": "user", "assistant": "assistant"}

Opener = Callable[[str], AbstractContextManager[IO[bytes]] | None]


class ShapeError(ValueError):
    """A record is valid JSON but not the shape of a Claude export record."""


def looks_like_claude(head: bytes) -> bool:
    """A Claude conversation has ``chat_messages`` before any ChatGPT-style ``mapping``."""
    return key_before(head, "chat_messages", "mapping")


def _iso(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return normalize_iso(value)
    except (ValueError, OverflowError):
        return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _block_text(block: dict[str, Any], skipped: Counter[str]) -> str | None:
    kind = block.get("type")
    if kind == "text":
        return block.get("text") if isinstance(block.get("text"), str) else None
    if kind == "tool_use":
        tool_input = _dict(block.get("input"))
        if block.get("name") == "artifacts" and isinstance(tool_input.get("content"), str):
            return f"[Artifact: {tool_input.get('title') or tool_input.get('id') or 'untitled'}]\n{tool_input['content']}"
        arguments = json.dumps(tool_input, ensure_ascii=False) if tool_input else ""
        return f"[Tool call: {block.get('name') or 'tool'}] {arguments}".rstrip()
    if kind == "tool_result":
        parts = block.get("content")
        if isinstance(parts, str):
            texts = [parts]
        elif isinstance(parts, list):
            texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
        else:
            texts = []
        body = "\n".join(t for t in texts if t.strip())
        return f"[Tool result: {block.get('name') or 'tool'}] {body}".rstrip()
    skipped[str(kind or "untyped")] += 1
    return None


def _attachment_lines(message: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    names: set[str] = set()
    for attachment in message.get("attachments") or []:
        if not isinstance(attachment, dict):
            continue
        name = attachment.get("file_name") or "attachment"
        names.add(name)
        extracted = attachment.get("extracted_content")
        lines.append(
            f"[Attached: {name}]"
            + (f"\n{extracted.strip()}" if isinstance(extracted, str) and extracted.strip() else "")
        )
    for file in message.get("files") or []:
        name = _dict(file).get("file_name")
        if name and name not in names:
            names.add(name)
            lines.append(f"[Attached: {name}]")
    return lines


def render_message(
    message: dict[str, Any], skipped: Counter[str], authors: dict[str, str]
) -> HarvestMessage | None:
    """One chat message; None when nothing readable is left (a thinking-only block, say)."""
    blocks = message.get("content")
    if isinstance(blocks, list) and blocks:
        texts = [t for b in blocks if isinstance(b, dict) and (t := _block_text(b, skipped)) is not None]
        text = "\n\n".join(t.strip() for t in texts if t.strip())
    else:
        raw = message.get("text")
        if not isinstance(raw, str) and isinstance(blocks, str):
            raw = blocks
        text = raw.strip() if isinstance(raw, str) else ""
    lines = [text] if text else []
    lines.extend(_attachment_lines(message))
    if not lines:
        return None
    sender = message.get("sender") or message.get("role")
    role = ROLES.get(str(sender), str(sender or "unknown"))
    key = message.get("uuid") or message.get("id")
    created = message.get("created_at") or message.get("timestamp")
    if not isinstance(key, str) or not key:
        key = stable_key(KIND, "message", role, created, "\n".join(lines))
    details = {
        "sender": sender,
        "attachments": [a.get("file_name") for a in message.get("attachments") or [] if isinstance(a, dict)]
        or None,
        "original_time": created if isinstance(created, str) else None,
    }
    return HarvestMessage(
        key=key,
        text="\n".join(lines),
        role=role,
        author=authors.get(role),
        timestamp=_iso(created),
        metadata={k: v for k, v in details.items() if v is not None},
    )


def current_branch(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """The messages on the branch ending at the latest leaf, when the export has a message tree."""
    tree = [m for m in messages if isinstance(m, dict)]
    if not tree or not all(
        isinstance(m.get("parent_message_uuid"), str) and isinstance(m.get("uuid"), str) for m in tree
    ):
        return tree, "listed_order"
    by_id = {m["uuid"]: m for m in tree}
    parents = {m["parent_message_uuid"] for m in tree}
    leaves = [m for m in tree if m["uuid"] not in parents]
    if not leaves:  # a cycle; keep what the file says rather than guess
        return tree, "listed_order"
    leaf = max(enumerate(leaves), key=lambda pair: (_iso(pair[1].get("created_at")) or "", pair[0]))[1]
    branch: list[dict[str, Any]] = []
    seen: set[str] = set()
    node: dict[str, Any] | None = leaf
    while node is not None and node["uuid"] not in seen:
        seen.add(node["uuid"])
        branch.append(node)
        node = by_id.get(node["parent_message_uuid"])
    branch.reverse()
    return branch, "latest_leaf"


def conversation_item(conversation: Any, origin: str, authors: dict[str, str]) -> HarvestItem | None:
    if not isinstance(conversation, dict):
        raise ShapeError(f"a conversation must be an object, not {type(conversation).__name__}")
    raw_messages = conversation.get("chat_messages", conversation.get("messages"))
    if not isinstance(raw_messages, list):
        raise ShapeError("conversation has no 'chat_messages' list")
    conversation_id = conversation.get("uuid") or conversation.get("id")
    title = conversation.get("name") or conversation.get("title")
    if not isinstance(conversation_id, str) or not conversation_id:
        conversation_id = stable_key(KIND, "untitled", title, conversation.get("created_at"))
    branch, chosen_by = current_branch(raw_messages)
    skipped: Counter[str] = Counter()
    messages = [m for raw in branch if (m := render_message(raw, skipped, authors)) is not None]
    if len(branch) < len(raw_messages):
        skipped["other_branches"] += len(raw_messages) - len(branch)
    if not messages:
        return None
    created = _iso(conversation.get("created_at"))
    details = {
        "conversation_id": conversation_id,
        "path": origin,
        "summary": conversation.get("summary") or None,
        "account_uuid": _dict(conversation.get("account")).get("uuid"),
        "project_uuid": conversation.get("project_uuid"),
        "created_at": created,
        "updated_at": _iso(conversation.get("updated_at")),
        "branch": chosen_by,
        "message_count": len(messages),
        "skipped": dict(skipped) or None,
    }
    return HarvestItem(
        key=stable_key(KIND, conversation_id),
        kind="conversation",
        title=title.strip() if isinstance(title, str) and title.strip() else "Untitled",
        container_key=conversation_id,
        messages=messages,
        metadata={k: v for k, v in details.items() if v is not None},
        timestamp=created or messages[0].timestamp,
    )


def project_items(project: Any, origin: str) -> list[HarvestItem]:
    """Each non-empty project document as an artifact; the project prompt as an instruction."""
    if not isinstance(project, dict):
        raise ShapeError(f"a project must be an object, not {type(project).__name__}")
    project_id = project.get("uuid") or stable_key(KIND, "project", project.get("name"))
    name = project.get("name") or "Untitled project"
    fallback_time = _iso(project.get("updated_at")) or _iso(project.get("created_at"))
    container = f"claude-project:{project_id}"
    items: list[HarvestItem] = []
    template = project.get("prompt_template")
    if isinstance(template, str) and template.strip():
        key = stable_key(KIND, "project-instructions", project_id)
        items.append(
            HarvestItem(
                key=key,
                kind="instruction",
                title=f"Claude project instructions: {name}",
                container_key=container,
                messages=[
                    HarvestMessage(key=key, text=template.strip(), role="user", timestamp=fallback_time)
                ],
                metadata={
                    "type": "project_instructions",
                    "project_uuid": project_id,
                    "project_name": name,
                    "path": origin,
                },
                timestamp=fallback_time,
            )
        )
    for index, doc in enumerate(project.get("docs") or []):
        if not isinstance(doc, dict):
            raise ShapeError(f"document {index} of project {name!r} is not an object")
        content = doc.get("content")
        if not isinstance(content, str) or not content.strip():
            continue
        doc_id = doc.get("uuid") or f"{project_id}:{doc.get('filename') or index}"
        key = stable_key(KIND, "doc", doc_id)
        when = _iso(doc.get("created_at")) or fallback_time
        title = doc.get("filename") or doc.get("title") or "Project document"
        items.append(
            HarvestItem(
                key=key,
                kind="artifact",
                title=title,
                container_key=container,
                messages=[
                    HarvestMessage(
                        key=key, text=content.strip(), timestamp=when, metadata={"filename": title}
                    )
                ],
                metadata={
                    "type": "project_knowledge",
                    "project_uuid": project_id,
                    "project_name": name,
                    "document_uuid": doc.get("uuid"),
                    "path": origin,
                },
                timestamp=when,
            )
        )
    return items


def memory_items(record: Any, origin: str, project_names: dict[str, str]) -> list[HarvestItem]:
    """``conversations_memory`` and each ``project_memories`` entry as a memory item."""
    if isinstance(record, str):
        record = {"conversations_memory": record}
    if not isinstance(record, dict):
        raise ShapeError(f"a memory record must be an object, not {type(record).__name__}")
    account = record.get("account_uuid")
    entries: list[tuple[str, str, str]] = []
    if isinstance(record.get("conversations_memory"), str):
        entries.append(("conversations", "Claude memory — conversations", record["conversations_memory"]))
    for project_id, text in _dict(record.get("project_memories")).items():
        if isinstance(text, str):
            label = project_names.get(project_id, project_id)
            entries.append((f"project:{project_id}", f"Claude memory — project {label}", text))
    items = []
    for scope, title, text in entries:
        if not text.strip():
            continue
        key = stable_key(KIND, "memory", account, scope)
        items.append(
            HarvestItem(
                key=key,
                kind="memory",
                title=title,
                container_key=MEMORY_CONTAINER,
                messages=[HarvestMessage(key=key, text=text.strip())],
                metadata={"type": "claude_memory", "scope": scope, "account_uuid": account, "path": origin},
            )
        )
    return items


def _records(
    opener: Opener, name: str, report_path: str, label: str, list_keys: tuple[str, ...] = ()
) -> Iterator[tuple[int | None, Any] | HarvestError]:
    """The records of one export file, or a located error where the file breaks."""
    try:
        handle = opener(name)
        if handle is None:
            return
        with handle as stream:
            for record in stream_records(stream, list_keys):
                if isinstance(record, LostRecord):
                    where = f"{label}{name} record {record.index}"
                    yield HarvestError(report_path, f"record lost: {record.describe()}", record=where)
                    continue
                where = f"{label}{name} record {'(root)' if record.index is None else record.index}"
                for reason in note_reasons(record.notes):
                    yield HarvestError(report_path, reason, record=where)
                yield record.index, record.value
    except JSONStreamError as exc:
        yield HarvestError(report_path, exc.describe("records"), record=f"{label}{name} record {exc.records}")
    except ARCHIVE_ERRORS as exc:
        yield HarvestError(report_path, f"cannot read: {exc}", record=f"{label}{name}")


def _authors(opener: Opener, report_path: str, label: str) -> tuple[dict[str, str], list[HarvestError]]:
    """users.json names the human side when the export holds exactly one user."""
    names: list[str] = []
    errors: list[HarvestError] = []
    for entry in _records(opener, USERS, report_path, label):
        if isinstance(entry, HarvestError):
            errors.append(entry)
            continue
        _, value = entry
        users = value if isinstance(value, list) else [value]
        names.extend(
            u["full_name"] for u in users if isinstance(u, dict) and isinstance(u.get("full_name"), str)
        )
    authors = {"assistant": "Claude"}
    if len(names) == 1:
        authors["user"] = names[0]
    return authors, errors


def scan_export(
    opener: Opener, report_path: str, label: str = "", origin: str | None = None
) -> Iterator[ScanEvent]:
    """Scan one export set; ``opener(name)`` opens a member of the set or returns None if absent.

    ``label`` prefixes record locations (an archive folder); ``origin`` is the path kept in metadata.
    """
    origin = origin or report_path
    authors, errors = _authors(opener, report_path, label)
    yield from errors
    for entry in _records(opener, CONVERSATIONS, report_path, label, ("conversations",)):
        if isinstance(entry, HarvestError):
            yield entry
            continue
        index, value = entry
        if (
            index is None
            and isinstance(value, dict)
            and "conversations" in value
            and "chat_messages" not in value
        ):
            continue  # the rest of a {"conversations": [...]} wrapper
        try:
            item = conversation_item(value, origin, authors)
        except Exception as exc:  # one bad record never stops the scan
            conversation_id = _dict(value).get("uuid")
            record = f"{label}conversation {index if index is not None else 0}" + (
                f" ({conversation_id})" if conversation_id else ""
            )
            yield HarvestError(report_path, f"bad conversation: {exc}", record=record)
            continue
        if item is not None:
            yield item
    project_names: dict[str, str] = {}
    for entry in _records(opener, PROJECTS, report_path, label):
        if isinstance(entry, HarvestError):
            yield entry
            continue
        index, value = entry
        if (
            isinstance(value, dict)
            and isinstance(value.get("uuid"), str)
            and isinstance(value.get("name"), str)
        ):
            project_names[value["uuid"]] = value["name"]
        try:
            yield from project_items(value, origin)
        except Exception as exc:
            yield HarvestError(report_path, f"bad project: {exc}", record=f"{label}project {index or 0}")
    for entry in _records(opener, MEMORIES, report_path, label):
        if isinstance(entry, HarvestError):
            yield entry
            continue
        index, value = entry
        try:
            yield from memory_items(value, origin, project_names)
        except Exception as exc:
            yield HarvestError(
                report_path, f"bad memory record: {exc}", record=f"{label}memories record {index or 0}"
            )


def _folder_opener(folder: Path) -> Opener:
    def opener(name: str) -> AbstractContextManager[IO[bytes]] | None:
        path = folder / name
        return open_source_file(path, streamed=True, within=folder) if os.path.lexists(path) else None

    return opener


def _single_file_opener(path: Path, within: Path | None = None) -> Opener:
    def opener(name: str) -> AbstractContextManager[IO[bytes]] | None:
        return open_source_file(path, streamed=True, within=within) if name == CONVERSATIONS else None

    return opener


class ClaudeSource:
    kind = KIND
    display_name = "Claude.ai export"

    def detect(self, path: Path) -> bool:
        path = Path(path)
        if path.is_dir():
            if (path / CONVERSATIONS).is_file():
                return looks_like_claude(read_head(path / CONVERSATIONS))
            return bool(saved_conversations(path))
        if is_archive(path):
            return any_member_head(path, CONVERSATIONS, looks_like_claude)
        return path.is_file() and looks_like_claude(read_head(path))

    def scan(self, path: Path) -> Iterator[ScanEvent]:
        path = Path(path)
        if path.is_dir():
            if _holds_export_files(path):
                yield from _guarded(scan_export(_folder_opener(path), str(path)), str(path))
                return
            saved = saved_conversations(path)
            if not saved:
                yield HarvestError(
                    str(path),
                    f"no Claude export files ({', '.join(EXPORT_FILES)}) and no saved Claude "
                    "conversation (a JSON file starting like one) in this folder",
                )
            for file in saved:
                yield from _guarded(scan_export(_single_file_opener(file, within=path), str(file)), str(file))
        elif is_archive(path):
            yield from scan_archive(path, _scan_export_sets)
        elif path.is_file():
            yield from _guarded(scan_export(_single_file_opener(path), str(path)), str(path))
        else:
            yield HarvestError(str(path), "no such file")

    def fingerprint(self, path: Path) -> str:
        path = Path(path)
        if not path.is_dir():
            return file_fingerprint(path)
        if _holds_export_files(path):
            return file_fingerprint(path, EXPORT_FILES)
        return file_fingerprint(path, JSON_FILES)


def _holds_export_files(folder: Path) -> bool:
    return any((folder / name).is_file() for name in EXPORT_FILES)


def saved_conversations(folder: Path) -> list[Path]:
    """The JSON files at a folder's top that start like a Claude conversation or export (a folder
    of conversations saved one by one, under names of their own), by name."""
    return json_files_at_top(folder, lambda entry: looks_like_claude(read_head(entry)))


def _guarded(events: Iterator[ScanEvent], report_path: str) -> Iterator[ScanEvent]:
    try:
        yield from events
    except OSError as exc:
        yield HarvestError(report_path, f"cannot read: {exc}")


def _scan_export_sets(archive: zipfile.ZipFile, report_path: str) -> Iterator[ScanEvent]:
    """Each folder of the archive holding export files is one export set, read in place."""
    sets: dict[str, dict[str, zipfile.ZipInfo]] = {}
    for info in safe_files(archive):
        if member_basename(info) in EXPORT_FILES:
            folder = str(PurePosixPath(info.filename.replace("\\", "/")).parent)
            sets.setdefault(folder, {})[member_basename(info)] = info
    if not sets:
        yield HarvestError(report_path, f"no Claude export files ({', '.join(EXPORT_FILES)}) in this archive")
    for folder, members in sorted(sets.items()):

        def opener(
            name: str, members: dict[str, zipfile.ZipInfo] = members
        ) -> AbstractContextManager[IO[bytes]] | None:
            return archive.open(members[name]) if name in members else None

        label = "" if folder == "." else f"{folder}/"
        origin = report_path if folder == "." else f"{report_path}!{folder}"
        yield from scan_export(opener, report_path, label, origin)


@hookimpl
def register_sources(register: Any) -> None:
    register(ClaudeSource())


@hookimpl
def detect_sources(path: Path) -> dict[str, float]:
    """Sure when the export's conversations.json (in a folder, a zip, or alone) starts like Claude's."""
    return {KIND: 0.95 if ClaudeSource().detect(path) else 0.0}
