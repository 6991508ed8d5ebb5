"""Markdown notes and Obsidian vaults: one note item per file, one message per heading section.

A section (the text before the first heading, or a heading and everything up to the next heading)
is the unit retrieval needs: small enough to embed, large enough to carry its own context. Links,
embeds and tags stay in metadata so the knowledge graph can turn them into relations.

Decisions on bad or odd input (each pinned by a test in tests/plugins/test_markdown.py):

- Broken YAML frontmatter: the note is still imported (its body, without properties) and a located
  ``HarvestError`` names the file and line, so the user learns that its properties were dropped.
  Frontmatter whose aliases expand past 10,000 values (a "billion laughs" bomb) counts as broken.
- Unquoted template placeholders (``created: {{date}}``) are not valid YAML; they are quoted and the
  frontmatter parsed again. A property that is not a date falls back to the file's times.
- Invalid UTF-8: decoded with U+FFFD replacement and imported, plus an error giving the byte offset
  (losing a whole note for one stray Latin-1 byte would be worse than a visible replacement mark).
- Binary content in a ``.md`` file (NUL bytes): skipped with an error.
- A line longer than 4,000,000 bytes keeps its beginning; the rest is skipped while reading (never
  held in memory) and an error names the line and its size.
- An empty note, or one with only frontmatter, is still an item (its properties and links matter to
  the graph) but has no messages. A 0-byte file is marked (``EMPTY_FILE_KEY``): if it held text
  before, the import engine keeps those frames and reports it instead of pruning them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, BinaryIO

import yaml
from mind_harvest.plugins._bounded import MAX_LINE_BYTES, BoundedText, read_capped

from mind_core.harvest import epoch_to_iso, format_utc, normalize_iso
from mind_core.harvest.items import (
    EMPTY_FILE_KEY,
    HarvestError,
    HarvestItem,
    HarvestMessage,
    ScanEvent,
    stable_key,
)
from mind_core.harvest.paths import stored_text
from mind_core.harvest.source_files import file_fingerprint, open_source_file, walk_files
from mind_core.plugins import hookimpl

MARKDOWN_SUFFIXES = (".md", ".markdown")
SKIPPED_DIRS = frozenset({".obsidian", ".trash"})  # every other hidden folder is skipped too
# The Markdown files a repository or a downloaded export carries beside its data: alone, they
# say nothing about a folder being notes (a ChatGPT export copied with its LICENSE.md).
PROJECT_FILES = frozenset(
    {"authors", "changelog", "changes", "code_of_conduct", "contributing", "copying", "history",
     "licence", "license", "notice", "readme", "security"}
)
VAULT = 0.95  # a folder with Obsidian's .obsidian settings
NOTES = 0.85  # a Markdown file, or a folder with notes at or one level below its top
PROJECT_FILES_ONLY = 0.3  # a folder whose only Markdown files are project files: named, never chosen
# Frontmatter properties that date a note, in order of precedence (the first one holding a date
# wins). Keys compare without case, spaces, "-" or "_": "Date Created" is "date_created" and
# "createdAt" is "created_at". The note's own date: when it was written
# (created, a clipping's clipped), else when what it is about began (an event or a trip's start),
# else when its content was published (a clipped article, a podcast episode). These are the
# names the shared vaults use (kepano's templates: created, date, start, published, clipped) and
# the common spellings of Obsidian, Web Clipper, Dataview and static-site frontmatter.
CREATED_KEYS = (
    "created", "date", "created_at", "date_created", "creation_date", "created_on", "clipped",
    "start", "start_date", "started",
    "published", "date_published", "publish_date", "published_at", "pubdate",
)
UPDATED_KEYS = (
    "updated", "modified", "updated_at", "last_modified", "date_modified", "modified_at", "last_updated",
    "lastmod",
)
NAME_DATE = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")  # a daily note: "2024-05-01 standup.md"
AUTHOR_KEYS = ("author", "authors")
TAG_KEYS = ("tags", "tag")
ALIAS_KEYS = ("aliases", "alias")
BINARY_SNIFF_BYTES = 8192
MAX_PROPERTY_NODES = 10_000  # YAML aliases can make a tiny frontmatter expand enormously

FRONTMATTER_FENCE = re.compile(r"^---[ \t]*$")
FRONTMATTER_END = ("---", "...")
# Unquoted `{{...}}` values (templates): quoted before a second YAML attempt.
PLACEHOLDER = re.compile(r"^([ \t]*(?:-[ \t]+|[^:#\n]+:[ \t]+))(\{\{[^{}\n]*\}\})[ \t]*$", re.MULTILINE)
# Code fences, also inside callouts and block quotes (`> ```css`) and indented list items.
FENCE = re.compile(r"^[ \t]*(?:>[ \t]*)*(`{3,}|~{3,})(.*)$")
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
INLINE_CODE = re.compile(r"(`+).+?\1")
WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
ALIAS_SPLIT = re.compile(r"\\?\|")
# A tag starts after whitespace (never inside a word, URL or link) and runs until whitespace or
# ASCII punctuation other than - _ /; Unicode letters and emoji are allowed, as in Obsidian.
TAG = re.compile(r"(?<!\S)#([^\s!\"#$%&'()*+,.:;<=>?@\[\\\]^`{|}~]+)")


@dataclass(frozen=True)
class LinkRef:
    """One ``[[target#heading|alias]]`` or ``![[embed]]`` occurrence."""

    target: str
    subpath: str | None
    alias: str | None
    embed: bool

    def as_metadata(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"target": self.target, "embed": self.embed}
        if self.subpath:
            entry["subpath"] = self.subpath
        if self.alias:
            entry["alias"] = self.alias
        return entry


@dataclass
class Section:
    heading: str
    level: int
    heading_path: tuple[str, ...]
    line: int  # 1-based line of the heading (or of the first body line) in the file
    lines: list[str] = field(default_factory=list)
    links: list[LinkRef] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)

    @property
    def body(self) -> str:
        return "\n".join(self.lines).strip()


@dataclass
class ParsedNote:
    properties: dict[str, Any]
    frontmatter_problem: str | None
    frontmatter_line: int | None
    sections: list[Section]


class MarkdownSource:
    """Obsidian vaults and plain Markdown folders or files."""

    kind = "markdown"
    display_name = "Markdown notes / Obsidian vault"

    def detect(self, path: Path) -> bool:
        return notes_confidence(path) >= NOTES

    def scan(self, path: Path) -> Iterator[ScanEvent]:
        root = Path(path)
        if root.is_file():
            yield from scan_note(root, root.name)
            return
        if not root.is_dir():
            yield HarvestError(str(root), "no such file or folder")
            return
        walk_errors: list[HarvestError] = []
        for file, relpath in iter_note_files(root, walk_errors):
            yield from walk_errors
            walk_errors.clear()
            yield from scan_note(file, relpath)
        yield from walk_errors

    def fingerprint(self, path: Path) -> str:
        return file_fingerprint(Path(path), tuple(f"*{suffix}" for suffix in MARKDOWN_SUFFIXES))


def notes_confidence(path: Path | str) -> float:
    """How sure it is that the path holds notes: a vault, a Markdown file, a folder with a note at
    or one level below its top (cheap: a mail folder is never walked whole); a folder whose only
    Markdown files there are project files (README.md, LICENSE.md) is named but never chosen."""
    path = Path(path)
    if path.is_file():
        return NOTES if path.suffix.lower() in MARKDOWN_SUFFIXES else 0.0
    if not path.is_dir():
        return 0.0
    if (path / ".obsidian").is_dir():
        return VAULT
    names = _markdown_near_top(path)
    if any(not is_project_file(name) for name in names):
        return NOTES
    return PROJECT_FILES_ONLY if names else 0.0


def is_project_file(name: str) -> bool:
    """Whether a Markdown file's name is one a repository or an export carries beside its data."""
    return name.split(".", 1)[0].lower() in PROJECT_FILES


def _markdown_near_top(folder: Path) -> list[str]:
    """The names of the Markdown files in the folder and one level below it."""
    try:
        entries = sorted(folder.iterdir())
        candidates = [
            *entries,
            *(e for d in entries if d.is_dir() and not d.name.startswith(".") for e in d.iterdir()),
        ]
    except OSError:
        return []
    return [e.name for e in candidates if e.suffix.lower() in MARKDOWN_SUFFIXES and e.is_file()]


def iter_note_files(root: Path, errors: list[HarvestError]) -> Iterator[tuple[Path, str]]:
    """Markdown files below ``root`` in a stable order, skipping hidden folders, .obsidian and
    .trash; what cannot be read safely (a FIFO, a link leading outside) goes to ``errors``."""

    def enter(folder: Path, names: list[str]) -> list[str]:
        return [name for name in names if not name.startswith(".") and name not in SKIPPED_DIRS]

    def wanted(name: str) -> bool:
        return not name.startswith(".") and name.lower().endswith(MARKDOWN_SUFFIXES)

    for found in walk_files(root, wanted, enter):
        if isinstance(found, HarvestError):
            errors.append(found)
        else:
            yield found, found.relative_to(root).as_posix()


def scan_note(file: Path, relpath: str) -> Iterator[ScanEvent]:
    """The note item for one file, preceded by located errors for anything that was repaired or lost."""
    where = str(file)
    try:
        with open_source_file(file) as handle:
            stat = os.fstat(handle.fileno())
            read = read_note_bytes(handle, stat.st_size)
    except OSError as exc:
        yield HarvestError(where, f"cannot read: {exc.strerror or exc}")
        return
    raw = read.data
    left_out = read.describe()
    if left_out:
        yield HarvestError(where, f"note cut while reading: {left_out}", record=f"line {read.cuts[0].line}")
    if b"\x00" in raw[:BINARY_SNIFF_BYTES]:
        yield HarvestError(where, "binary content (NUL bytes) in a Markdown file; skipped")
        return
    text, bad_byte = decode_note(raw)
    if bad_byte is not None:
        yield HarvestError(
            where, "invalid UTF-8; undecodable bytes replaced with U+FFFD", record=f"byte {bad_byte}"
        )
    try:
        note = parse_note(text)
        item = note_item(note, relpath, stat.st_mtime, _created_epoch(stat))
    except Exception as exc:  # a parser bug on one odd note must not end the whole vault's scan
        yield HarvestError(where, f"could not parse note: {type(exc).__name__}: {exc}")
        return
    if note.frontmatter_problem:
        yield HarvestError(
            where,
            f"frontmatter ignored ({note.frontmatter_problem}); the note body is still imported",
            record=f"line {note.frontmatter_line}" if note.frontmatter_line else None,
        )
    if bad_byte is not None:
        item.metadata["decode_error"] = f"invalid UTF-8 at byte {bad_byte}"
    if stat.st_size == 0:
        item.metadata[EMPTY_FILE_KEY] = True
    yield item


def read_note_bytes(handle: BinaryIO, size: int) -> BoundedText:
    """The note's bytes; a file larger than one line's cap is read line by line, long lines cut."""
    if size <= MAX_LINE_BYTES:
        data = handle.read()
        return BoundedText(data, len(data))
    return read_capped(handle)


def _created_epoch(stat: os.stat_result) -> float:
    birth = getattr(stat, "st_birthtime", None)
    return birth if birth else min(stat.st_mtime, stat.st_ctime)


def decode_note(raw: bytes) -> tuple[str, int | None]:
    """Text with newlines normalized, and the offset of the first invalid UTF-8 byte (or None)."""
    bad_byte = None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad_byte = exc.start
        text = raw.decode("utf-8-sig", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n"), bad_byte


def split_frontmatter(text: str) -> tuple[str | None, list[str], int]:
    """(YAML text or None, body lines, number of lines before the body)."""
    lines = text.split("\n")
    if not lines or not FRONTMATTER_FENCE.match(lines[0]):
        return None, lines, 0
    for index in range(1, len(lines)):
        if lines[index].rstrip() in FRONTMATTER_END:
            return "\n".join(lines[1:index]), lines[index + 1 :], index + 1
    return None, lines, 0  # never closed: Obsidian shows it as text, and so do we


def load_properties(yaml_text: str) -> tuple[dict[str, Any], str | None, int | None]:
    """Properties, a problem description, and the 1-based file line of the problem."""
    data, error = _safe_load(yaml_text)
    if error is not None:
        quoted = PLACEHOLDER.sub(lambda m: m.group(1) + "'" + m.group(2).replace("'", "''") + "'", yaml_text)
        if quoted != yaml_text:
            data, retry_error = _safe_load(quoted)
            error = retry_error
    if error is not None:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 2 if mark is not None else None  # +1 for 1-based, +1 for the opening ---
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        return {}, f"invalid YAML: {problem}", line
    if data is None:
        return {}, None, None
    if not isinstance(data, dict):
        return {}, f"frontmatter is a {type(data).__name__}, not a mapping of properties", 2
    if _more_values_than(data, MAX_PROPERTY_NODES):
        return {}, f"frontmatter expands to more than {MAX_PROPERTY_NODES:,} values (YAML aliases?)", 2
    return data, None, None


def _more_values_than(value: Any, limit: int) -> bool:
    """Whether ``value`` holds more than ``limit`` values, counted through shared (aliased) parts as
    often as they appear, and stopping as soon as the limit is passed."""
    pending, seen = [value], 0
    while pending:
        seen += 1
        if seen > limit:
            return True
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list | tuple | set):
            pending.extend(item)
    return False


def _safe_load(yaml_text: str) -> tuple[Any, Exception | None]:
    try:
        return yaml.safe_load(yaml_text), None
    except Exception as exc:  # PyYAML raises more than YAMLError on hostile input (RecursionError...)
        return None, exc


def parse_note(text: str) -> ParsedNote:
    yaml_text, body_lines, offset = split_frontmatter(text)
    properties: dict[str, Any] = {}
    problem = problem_line = None
    if yaml_text is not None:
        properties, problem, problem_line = load_properties(yaml_text)
    return ParsedNote(properties, problem, problem_line, split_sections(body_lines, offset))


def split_sections(lines: list[str], offset: int) -> list[Section]:
    """Heading sections (ATX headings outside code); text before the first heading is its own section."""
    sections = [Section(heading="", level=0, heading_path=(), line=offset + 1)]
    stack: list[tuple[int, str]] = []
    fence: tuple[str, int] | None = None
    for number, line in enumerate(lines, start=offset + 1):
        fence_match = FENCE.match(line)
        if fence is not None:
            if fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= fence[1]:
                if not fence_match.group(2).strip():
                    fence = None
            sections[-1].lines.append(line)
            continue
        if fence_match:
            fence = (fence_match.group(1)[0], len(fence_match.group(1)))
            sections[-1].lines.append(line)
            continue
        heading = HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            title = re.sub(r"[ \t]+#+$", "", heading.group(2) or "").strip()
            title = "" if set(title) <= {"#"} else title
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            sections.append(Section(title, level, tuple(t for _, t in stack), number))
            _collect_refs(sections[-1], INLINE_CODE.sub(lambda m: " " * len(m.group(0)), title))
            continue
        sections[-1].lines.append(line)
        _collect_refs(sections[-1], INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line))
    return sections


def _collect_refs(section: Section, visible: str) -> None:
    """Links and tags of one line with code already masked out."""
    for match in WIKILINK.finditer(visible):
        link = parse_wikilink(match.group(2), embed=bool(match.group(1)))
        if link is not None:
            section.links.append(link)
    without_links = WIKILINK.sub(" ", visible)
    for match in TAG.finditer(without_links):
        tag = match.group(1).rstrip("/")
        if tag.strip("-_/") and not tag.isdigit() and any(not ch.isdigit() for ch in tag):
            section.tags.append(tag)


def parse_wikilink(inner: str, embed: bool = False) -> LinkRef | None:
    """``Note``, ``Note#Heading``, ``Note#^block``, ``Note|alias`` (``\\|`` inside tables); None for ``[[#Heading]]``."""
    parts = ALIAS_SPLIT.split(inner, maxsplit=1)
    target_part = parts[0]
    alias = parts[1].strip() if len(parts) > 1 else None
    target, _, subpath = target_part.partition("#")
    target = target.strip().rstrip("\\").strip()
    if target.lower().endswith(".md"):
        target = target[:-3]
    if not target:
        return None  # a link to a heading of the same note relates nothing
    return LinkRef(target=target, subpath=subpath.strip() or None, alias=alias or None, embed=embed)


def note_item(note: ParsedNote, relpath: str, mtime: float, created_epoch: float) -> HarvestItem:
    props = {str(k).lower(): v for k, v in note.properties.items()}
    date_props = _date_properties(note.properties)
    created_key, created = _first_instant(date_props, CREATED_KEYS)
    updated_key, updated = _first_instant(date_props, UPDATED_KEYS)
    times_from = {
        "created": "frontmatter" if created else "file",
        "updated": "frontmatter" if updated else "file",
    }
    dated_by_property = {
        time: key for time, key in (("created", created_key), ("updated", updated_key)) if key is not None
    }
    if created is None and (named := name_instant(relpath)):
        created, times_from["created"] = named, "name"
    # Sections carry the time their text was last written: a frontmatter date beats the file's mtime,
    # which a copy or a sync rewrites. A note with no date of its own says so (``dated_by``), so
    # recency does not favour it over dated evidence for a time a copy gave it.
    section_time = updated or created or epoch_to_iso(mtime)
    dated_by = "frontmatter" if updated else times_from["created"]
    created = created or epoch_to_iso(created_epoch)
    updated = updated or epoch_to_iso(mtime)
    author = _author(props)
    title = props.get("title") if isinstance(props.get("title"), str) and props["title"].strip() else None
    title = title.strip() if title else Path(relpath).stem

    messages: list[HarvestMessage] = []
    seen_paths: dict[tuple[str, ...], int] = {}
    for index, section in enumerate(note.sections):
        occurrence = seen_paths.get(section.heading_path, 0)
        seen_paths[section.heading_path] = occurrence + 1
        body = section.body
        if not body:
            continue
        text = f"{section.heading}\n\n{body}" if section.heading else body
        messages.append(
            HarvestMessage(
                key=stable_key("markdown", relpath, occurrence, *section.heading_path),
                text=text,
                role=None,
                author=author,
                timestamp=section_time,
                metadata={
                    "heading": section.heading or None,
                    "heading_path": list(section.heading_path),
                    "level": section.level,
                    "section_index": index,
                    "line": section.line,
                    "links": _unique(link.target for link in section.links if not link.embed),
                    "embeds": _unique(link.target for link in section.links if link.embed),
                    "link_refs": [link.as_metadata() for link in section.links],
                    "tags": _unique_folded(section.tags),
                    "dated_by": dated_by,
                },
            )
        )

    property_links = _property_links(note.properties)
    if not messages:
        properties_text = _properties_text(note.properties)
        if properties_text:
            # A note of properties only (a book, a person card) is still something the vault
            # knows: its properties become its one frame, so they are searchable and evidence.
            messages.append(
                HarvestMessage(
                    key=stable_key("markdown", relpath, "\x00properties"),
                    text=properties_text,
                    role=None,
                    author=author,
                    timestamp=section_time,
                    metadata={
                        "heading": None,
                        "heading_path": [],
                        "level": 0,
                        "section_index": 0,
                        "line": 1,
                        "links": [],
                        "embeds": [],
                        "link_refs": [],
                        "tags": [],
                        "properties_only": True,
                        "dated_by": dated_by,
                    },
                )
            )
    body_links = [link for section in note.sections for link in section.links]
    metadata: dict[str, Any] = {
        "path": stored_text(relpath),
        "frontmatter": _json_safe(note.properties),
        "tags": _unique_folded(
            [*_string_list(props, TAG_KEYS, strip="#"), *(t for s in note.sections for t in s.tags)]
        ),
        "aliases": _unique(_string_list(props, ALIAS_KEYS)),
        "links": _unique(
            [
                *(link.target for link in body_links if not link.embed),
                *(t for ts in property_links.values() for t in ts),
            ]
        ),
        "embeds": _unique(link.target for link in body_links if link.embed),
        "property_links": property_links,
        "created": created,
        "updated": updated,
        "times_from": times_from,
    }
    if dated_by_property:
        metadata["date_properties"] = dated_by_property
    if note.frontmatter_problem:
        metadata["frontmatter_error"] = note.frontmatter_problem
    return HarvestItem(
        key=stable_key("markdown", relpath),
        kind="note",
        title=title,
        container_key=relpath,
        messages=messages,
        metadata=metadata,
        timestamp=created,
    )


def property_instant(value: Any) -> str | None:
    """A frontmatter date or datetime as UTC ISO; a date-only value is midnight UTC; else None."""
    try:
        if isinstance(value, datetime | date):
            return format_utc(value)
        if isinstance(value, str) and value.strip():
            return normalize_iso(value)
    except (ValueError, OverflowError):
        return None
    return None


def name_instant(relpath: str) -> str | None:
    """The date a note's file name carries (Obsidian's daily notes), midnight UTC; else None."""
    match = NAME_DATE.search(Path(relpath).stem)
    if not match:
        return None
    try:
        return format_utc(date.fromisoformat(match.group(1)))
    except ValueError:
        return None


def date_key(key: object) -> str:
    """A property name as date keys compare: "Date Created", "date-created" -> "datecreated"."""
    return re.sub(r"[\s_-]+", "", str(key)).lower()


def _date_properties(properties: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """``{date key: (property name as written, value)}``; the first spelling of a key wins."""
    found: dict[str, tuple[str, Any]] = {}
    for name, value in properties.items():
        found.setdefault(date_key(name), (str(name), value))
    return found


def _first_instant(
    props: dict[str, tuple[str, Any]], keys: tuple[str, ...]
) -> tuple[str | None, str | None]:
    """``(property name, instant)`` of the first key (in precedence order) holding a date."""
    for key in keys:
        name, value = props.get(date_key(key), (None, None))
        instant = property_instant(value)
        if instant:
            return name, instant
    return None, None


def _author(props: dict[str, Any]) -> str | None:
    names = [_strip_link(name) for name in _string_list(props, AUTHOR_KEYS)]
    names = [name for name in names if name]
    return ", ".join(_unique(names)) or None


def _strip_link(value: str) -> str:
    match = WIKILINK.fullmatch(value.strip())
    if not match:
        return value.strip()
    link = parse_wikilink(match.group(2))
    return (link.alias or link.target) if link else ""


def _string_list(props: dict[str, Any], keys: tuple[str, ...], strip: str = "") -> list[str]:
    """A property that may be a list or a (comma / space separated, for tags) string."""
    values: list[str] = []
    for key in keys:
        value = props.get(key)
        if isinstance(value, str):
            parts = re.split(r"[,\s]+", value) if strip else [value]
        elif isinstance(value, list):
            parts = [item for item in value if isinstance(item, str | int | float)]
        else:
            continue
        values.extend(str(part).strip().lstrip(strip).strip() for part in parts)
    return [value for value in values if value]


def _property_links(properties: dict[str, Any]) -> dict[str, list[str]]:
    """Wikilinks inside property values, by property name (``categories: "[[People]]"``)."""
    found: dict[str, list[str]] = {}

    def visit(key: str, value: Any, budget: list[int]) -> None:
        budget[0] -= 1
        if budget[0] < 0:
            return
        if isinstance(value, str):
            for match in WIKILINK.finditer(value):
                link = parse_wikilink(match.group(2))
                if link:
                    found.setdefault(key, []).append(link.target)
        elif isinstance(value, list):
            for item in value:
                visit(key, item, budget)
        elif isinstance(value, dict):
            for item in value.values():
                visit(key, item, budget)

    budget = [MAX_PROPERTY_NODES]
    for key, value in properties.items():
        visit(str(key), value, budget)
    return {key: _unique(targets) for key, targets in found.items()}


def _properties_text(properties: dict[str, Any]) -> str:
    """``key: value`` lines of the properties that have a value (lists joined by commas)."""
    lines = []
    for key, value in properties.items():
        values = value if isinstance(value, list) else [value]
        shown = [str(_json_safe(v)) for v in values if v not in (None, "") and not isinstance(v, dict | list)]
        if shown:
            lines.append(f"{key}: {', '.join(shown)}")
    return "\n".join(lines)


def _json_safe(value: Any) -> Any:
    """Properties as JSON-serializable values (dates become ISO strings)."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_json_safe(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _unique(values: Any) -> list[str]:
    return list(dict.fromkeys(values))


def _unique_folded(values: Any) -> list[str]:
    """Unique tags compared case-insensitively (as Obsidian does), first spelling kept."""
    seen: dict[str, str] = {}
    for value in values:
        seen.setdefault(value.casefold(), value)
    return list(seen.values())


@hookimpl
def register_sources(register: Any) -> None:
    register(MarkdownSource())


@hookimpl
def detect_sources(path: Path) -> dict[str, float]:
    """Sure of an Obsidian vault, a Markdown file, or a folder with notes at its top."""
    return {"markdown": notes_confidence(path)}
