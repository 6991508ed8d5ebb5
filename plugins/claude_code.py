"""Claude Code: the session transcripts under ``~/.claude/projects/<project>/<session>.jsonl``
(point the source at ``~/.claude``, its ``projects`` folder, one project's folder or one file),
with the global ``settings.json`` and the ``CLAUDE.md`` files beside them.

A transcript is JSON Lines, one event per line: ``type`` user / assistant (also summary, system,
...), ``message`` with ``role`` and ``content`` (a string or content blocks), ``timestamp``,
``sessionId``, ``uuid`` / ``parentUuid``, ``cwd``, ``gitBranch``. What becomes what:

- One conversation item per transcript file (the session), one frame per user or assistant turn,
  with the turn's own time. Claude Code writes one line per content block of an assistant
  answer: consecutive lines of one ``message.id`` are one turn.
- Tool calls and their results are not dumped (a file read or a test run's output is not what
  the user said): a ``tool_use`` block becomes ``[Tool call NAME: hint (line N)]`` (hint: the
  command, file or pattern, cut to ``HINT_CHARS``), and a user line that only carries
  ``tool_result`` blocks adds ``[Tool result: K lines (line N)]`` to the turn that called the
  tool; N is the transcript line, so the placeholder says where the whole output is. Thinking
  blocks are skipped like the other chat sources' reasoning; ``isMeta`` lines (the client's own
  notices) and other event types are counted, not kept. A ``summary`` line titles the session.
- A line that is not JSON, or not an event, costs that line alone (a located error).
- The seed's items (reference §12.2, kept modest): ``settings.json`` becomes one memory
  "Claude Code settings" (preferred model, extended thinking, how many tools are allowed), and a
  ``CLAUDE.md`` longer than ``MIN_CLAUDE_MD_CHARS`` an artifact "Project CLAUDE.md (<project>)";
  both carry the file's modification time. The seed's memory/rules/plans files and its
  decision extraction are not read (docs/deviations.md).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from mind_harvest.plugins._bounded import read_line
from mind_harvest.plugins._jsonhead import has_key, read_head

from mind_core.harvest import epoch_to_iso, normalize_iso
from mind_core.harvest.items import HarvestError, HarvestItem, HarvestMessage, ScanEvent, stable_key
from mind_core.harvest.source_files import file_fingerprint, open_source_file, read_source_file, walk_files
from mind_core.plugins import hookimpl

KIND = "claude-code"
SETTINGS_FILE = "settings.json"
CLAUDE_MD = "CLAUDE.md"
MIN_CLAUDE_MD_CHARS = 50  # the seed's threshold: a shorter CLAUDE.md is a stub
HINT_CHARS = 120
TITLE_CHARS = 80
TOOL_HINT_KEYS = ("command", "file_path", "path", "pattern", "url", "query", "description")
# folders of ~/.claude that hold no transcripts (an installed client's node_modules among them)
SKIPPED_FOLDERS = frozenset({"local", "node_modules", "plugins", "shell-snapshots", "statsig", "todos", "ide"})


def looks_like_transcript(head: bytes) -> bool:
    return has_key(head, "sessionId") and (has_key(head, "parentUuid") or has_key(head, "uuid"))


def to_iso(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return normalize_iso(value.strip())
    except (ValueError, OverflowError):
        return None


def _hint(tool_input: Any) -> str:
    if not isinstance(tool_input, dict):
        return ""
    value = next((tool_input[k] for k in TOOL_HINT_KEYS if isinstance(tool_input.get(k), str)), "")
    value = " ".join(value.split())
    return value[:HINT_CHARS] + ("…" if len(value) > HINT_CHARS else "")


def _result_lines(content: Any) -> int:
    if isinstance(content, str):
        return len(content.splitlines())
    if isinstance(content, list):
        return sum(_result_lines(b.get("text")) for b in content if isinstance(b, dict))
    return 0


@dataclass
class Rendered:
    """One line's content: its text and placeholders, and what it only carried (tool results)."""

    parts: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


def render_content(content: Any, line: int) -> Rendered:
    rendered = Rendered()
    if isinstance(content, str):
        if content.strip():
            rendered.parts.append(content.strip())
        return rendered
    for block in content if isinstance(content, list) else []:
        if isinstance(block, str):
            rendered.parts.append(block)
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            rendered.parts.append(block["text"].strip())
        elif kind == "tool_use":
            hint = _hint(block.get("input"))
            name = block.get("name") or "tool"
            rendered.parts.append(f"[Tool call {name}{': ' + hint if hint else ''} (line {line})]")
        elif kind == "tool_result":
            failed = " (failed)" if block.get("is_error") else ""
            rendered.results.append(f"[Tool result{failed}: {_result_lines(block.get('content'))} lines (line {line})]")
        elif kind == "image":
            rendered.parts.append(f"[Image (line {line})]")
        elif kind in ("thinking", "redacted_thinking"):
            rendered.skipped["thinking"] += 1
        elif kind:
            rendered.skipped[str(kind)] += 1
    return rendered


@dataclass
class Session:
    """What one transcript has given so far."""

    messages: list[HarvestMessage] = field(default_factory=list)
    turn_ids: list[Any] = field(default_factory=list)  # the message.id of each message
    skipped: Counter[str] = field(default_factory=Counter)
    summary: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def take(self, event: dict[str, Any], line: int) -> None:
        kind = event.get("type")
        if kind == "summary":
            if isinstance(event.get("summary"), str) and self.summary is None:
                self.summary = event["summary"].strip() or None
            return
        if kind not in ("user", "assistant") or event.get("isMeta"):
            self.skipped["meta" if event.get("isMeta") else str(kind)] += 1
            return
        message = event.get("message")
        if not isinstance(message, dict):
            raise ValueError("a user or assistant event without a 'message' object")
        names = (("session_id", "sessionId"), ("agent_id", "agentId"), ("cwd", "cwd"), ("git_branch", "gitBranch"), ("version", "version"))
        for name, key in names:
            if isinstance(event.get(key), str):
                self.details.setdefault(name, event[key])
        rendered = render_content(message.get("content"), line)
        self.skipped.update(rendered.skipped)
        turn_id = message.get("id")
        last = self.messages[-1] if self.messages else None
        if rendered.results and not rendered.parts:
            if last is not None and last.role == "assistant":
                last.text += "\n" + "\n".join(rendered.results)
            else:
                self.skipped["tool_result"] += len(rendered.results)
            return
        text = "\n".join(rendered.parts + rendered.results)
        if not text:
            self.skipped["empty"] += 1
            return
        if kind == "assistant" and last is not None and turn_id is not None and self.turn_ids[-1] == turn_id:
            last.text += "\n" + text
            return
        details = {"line": line, "uuid": event.get("uuid"), "parent_uuid": event.get("parentUuid"),
                   "model": message.get("model"), "sidechain": event.get("isSidechain") or None}
        self.messages.append(
            HarvestMessage(
                key=str(event.get("uuid") or turn_id or f"line {line}"),
                text=text,
                role=kind,
                timestamp=to_iso(event.get("timestamp")),
                metadata={k: v for k, v in details.items() if v is not None},
            )
        )
        self.turn_ids.append(turn_id)


def scan_transcript(handle: IO[bytes], where: str, relpath: str, project: str) -> Iterator[ScanEvent]:
    """The session item of one transcript; every broken line a located error."""
    session = Session()
    number = 0
    while True:
        raw, size = read_line(handle)
        if not size:
            break
        number += 1
        if not raw.strip():
            continue
        if size > len(raw):
            yield HarvestError(where, f"line of {size:,} bytes is too long to be one event", record=f"line {number}")
            continue
        try:
            event = json.loads(raw.decode("utf-8", "replace"))
            if not isinstance(event, dict):
                raise ValueError(f"a {type(event).__name__}, not an event object")
            session.take(event, number)
        except (ValueError, RecursionError) as exc:
            yield HarvestError(where, f"bad line: {exc}", record=f"line {number}")
    if not session.messages:
        return
    first_user = next((m.text for m in session.messages if m.role == "user"), None)
    title = session.summary or (" ".join(first_user.split())[:TITLE_CHARS] if first_user else Path(relpath).stem)
    # a subagent's transcript carries its session's id: its own agent id keeps it a session apart
    container = "/".join(str(session.details[k]) for k in ("session_id", "agent_id") if k in session.details) or relpath
    metadata = {"path": relpath, "project": project, **session.details, "skipped": dict(session.skipped) or None}
    yield HarvestItem(
        key=stable_key(KIND, relpath),
        kind="conversation",
        title=title,
        container_key=f"{project}/{container}",
        messages=session.messages,
        metadata={k: v for k, v in metadata.items() if v is not None},
        timestamp=session.messages[0].timestamp,
    )


def settings_item(path: Path, relpath: str) -> HarvestItem | None:
    """The seed's "Claude Code Settings" preference: model, extended thinking, allowed tools."""
    settings = json.loads(read_source_file(path).decode("utf-8", "replace"))
    if not isinstance(settings, dict):
        raise ValueError(f"settings are a {type(settings).__name__}, not an object")
    lines = []
    if isinstance(settings.get("model"), str):
        lines.append(f"Preferred model: {settings['model']}")
    if settings.get("alwaysThinkingEnabled"):
        lines.append("Extended thinking: enabled")
    permissions = settings.get("permissions")
    allowed = permissions.get("allow") if isinstance(permissions, dict) else settings.get("allowedTools")
    if isinstance(allowed, list) and allowed:
        lines.append(f"Allowed tools: {len(allowed)} configured")
    if not lines:
        return None
    when = epoch_to_iso(path.stat().st_mtime)
    key = stable_key(KIND, relpath)
    return HarvestItem(
        key=key,
        kind="memory",
        title="Claude Code settings",
        container_key=key,
        messages=[HarvestMessage(key="settings", text="\n".join(lines), timestamp=when)],
        metadata={"path": relpath, "type": "preference"},
        timestamp=when,
    )


def claude_md_item(path: Path, relpath: str, project: str) -> HarvestItem | None:
    text = read_source_file(path).decode("utf-8", "replace").strip()
    if len(text) <= MIN_CLAUDE_MD_CHARS:
        return None
    when = epoch_to_iso(path.stat().st_mtime)
    key = stable_key(KIND, relpath)
    return HarvestItem(
        key=key,
        kind="artifact",
        title=f"Project CLAUDE.md ({project})",
        container_key=key,
        messages=[HarvestMessage(key="claude-md", text=text, timestamp=when)],
        metadata={"path": relpath, "project": project},
        timestamp=when,
    )


def _wanted(name: str) -> bool:
    return name.endswith(".jsonl") or name in (SETTINGS_FILE, CLAUDE_MD)


def _enter(folder: Path, names: list[str]) -> list[str]:
    return [name for name in names if not name.startswith(".") and name not in SKIPPED_FOLDERS]


class ClaudeCodeSource:
    kind = KIND
    display_name = "Claude Code transcripts"

    def detect(self, path: Path) -> bool:
        return detect_confidence(Path(path)) >= 0.5

    def scan(self, path: Path) -> Iterator[ScanEvent]:
        root = Path(path)
        if not root.is_dir():
            yield from _scan_file(root, root.name, root.parent.name, None, top=False)
            return
        for found in walk_files(root, _wanted, _enter):
            if isinstance(found, HarvestError):
                yield found
                continue
            relpath = found.relative_to(root).as_posix()
            yield from _scan_file(found, relpath, project_of(root, relpath), root, top=found.parent == root)

    def fingerprint(self, path: Path) -> str:
        return file_fingerprint(Path(path), ("*.jsonl", SETTINGS_FILE, CLAUDE_MD))


def project_of(root: Path, relpath: str) -> str:
    """The project folder a file belongs to: the one below ``projects`` (``~/.claude`` or its
    ``projects`` named), else the folder named (one project's, its subagents' files included)."""
    parts = relpath.split("/")[:-1]
    if "projects" in parts[:-1]:
        return parts[parts.index("projects") + 1]
    if root.name == "projects" and parts:
        return parts[0]
    return root.name


def _scan_file(path: Path, relpath: str, project: str, within: Path | None, top: bool) -> Iterator[ScanEvent]:
    try:
        if path.name == SETTINGS_FILE:
            item = settings_item(path, relpath) if top else None
        elif path.name == CLAUDE_MD:
            item = claude_md_item(path, relpath, project)
        else:
            if not looks_like_transcript(read_head(path)):
                return  # another JSON Lines file (~/.claude/history.jsonl): not a session
            with open_source_file(path, streamed=True, within=within) as handle:
                yield from scan_transcript(handle, str(path), relpath, project)
            return
    except OSError as exc:
        yield HarvestError(str(path), f"cannot read: {exc}")
        return
    except (ValueError, RecursionError) as exc:
        yield HarvestError(str(path), f"bad file: {exc}")
        return
    if item is not None:
        yield item


def _transcripts_below(folder: Path, depth: int) -> bool:
    """Whether a transcript lies in ``folder`` or up to ``depth`` levels below (bounded look)."""
    level, seen = [folder], 0
    for _ in range(depth + 1):
        below = []
        for current in level:
            try:
                entries = sorted(current.iterdir())[:200]
            except OSError:
                continue
            for entry in entries:
                seen += 1
                if seen > 2000:
                    return False
                if entry.suffix == ".jsonl" and entry.is_file() and looks_like_transcript(read_head(entry)):
                    return True
                if entry.is_dir() and not entry.is_symlink() and not entry.name.startswith(".") and entry.name not in SKIPPED_FOLDERS:
                    below.append(entry)
        level = below
    return False


def detect_confidence(path: Path) -> float:
    """Sure of a transcript file, of a folder holding transcripts at its top, of a project
    folder's parent (``projects``) and of ``~/.claude`` (transcripts two levels down)."""
    if path.is_file():
        return 0.95 if path.suffix == ".jsonl" and looks_like_transcript(read_head(path)) else 0.0
    if path.is_dir():
        if _transcripts_below(path, 0):
            return 0.95
        return 0.9 if _transcripts_below(path, 2) else 0.0
    return 0.0


@hookimpl
def register_sources(register: Any) -> None:
    register(ClaudeCodeSource())


@hookimpl
def detect_sources(path: Path) -> dict[str, float]:
    return {KIND: detect_confidence(Path(path))}
