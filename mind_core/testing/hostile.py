"""A hostile input corpus, generated on the spot, and a harness that harvests it for real.

Every case is one registered source whose good records carry unique marker words and sit next
to bad ones (truncated JSON, invalid UTF-8, random binary, zip members named ``../x`` or ``/x``,
a huge single-line file, JSON nested 100,000 deep, mbox messages with broken headers and bad
dates, Markdown with broken frontmatter). After a harvest each good marker must be in a frame,
no marker of a record that must be refused (an unsafe archive member) may be, every bad file must
be named by a located error, and nothing may change outside the mind home.

``mind_core.testing.hostile_files`` adds the inputs that once hung, exhausted or silently
truncated a harvest, each harvested in a process of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mind_core.harvest.importer import MAX_MESSAGE_CHARS
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.harvest.source_files import ReadingRules
from mind_core.mind import Mind
from mind_core.testing.exports import (
    START_EPOCH,
    WORDS,
    aistudio_prompt,
    chatgpt_conversation,
    claude_conversation,
    takeout_entry,
)

DEEP = 100_000


@dataclass
class HostileCase:
    """One source: ``good`` markers must be imported, ``refused`` ones must not, and each of
    ``bad_files`` must appear in a located error."""

    name: str
    kind: str
    path: Path
    good: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    bad_files: list[Path] = field(default_factory=list)
    rules: ReadingRules | None = None  # how the source's files may be read (None: the defaults)
    reported: list[str] = field(default_factory=list)  # words some located error must contain


@dataclass
class CaseOutcome:
    case: str
    kind: str
    finished: bool
    exception: str | None = None
    errors: list[str] = field(default_factory=list)
    good_missing: list[str] = field(default_factory=list)
    refused_found: list[str] = field(default_factory=list)
    bad_unreported: list[str] = field(default_factory=list)
    unlocated: list[str] = field(default_factory=list)
    unreported: list[str] = field(default_factory=list)
    frames: int = 0
    status: str | None = None
    good: int = 0
    lost_records: int = 0

    @property
    def ok(self) -> bool:
        return (
            self.finished
            and not self.good_missing
            and not self.refused_found
            and not self.bad_unreported
            and not self.unlocated
            and not self.unreported
        )


class Markers:
    """Unique, searchable words: ``zqmark<case><n>`` is one FTS token and found by LIKE."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, case: str) -> str:
        self.count += 1
        return f"zqmark{case.replace('-', '')}{self.count}"


def _text(rng: random.Random, marker: str) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))) + f" {marker}"


def _chatgpt_list(
    rng: random.Random, markers: Markers, case: str, count: int
) -> tuple[list[dict], list[list[str]]]:
    conversations, marks = [], []
    for c in range(count):
        texts = [_text(rng, markers(case)) for _ in range(2)]
        marks.append([t.rsplit(" ", 1)[1] for t in texts])
        conversations.append(
            chatgpt_conversation(f"{case}-{c}", f"{case} {c}", texts, 1_700_000_000.0 + c * 3600)
        )
    return conversations, marks


def _json_array(elements: list[bytes]) -> bytes:
    return b"[" + b", ".join(elements) + b"]"


def _dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def chatgpt_truncated(root: Path, rng: random.Random, markers: Markers, index: int) -> HostileCase:
    """A conversations.json cut at a random byte: the conversations before the cut survive."""
    name = f"gpt-cut-{index}"
    conversations, marks = _chatgpt_list(rng, markers, name, 6)
    parts = [_dumps(c) for c in conversations]
    data = _json_array(parts)
    keep = rng.randint(0, 5)  # conversations complete before the cut
    start = 1 + sum(len(p) + 2 for p in parts[:keep])
    cut = rng.randint(start + 1, start + len(parts[keep]))
    path = _write(root / name / "conversations.json", data[:cut])
    return HostileCase(name, "chatgpt", path, [m for ms in marks[:keep] for m in ms], bad_files=[path])


def chatgpt_invalid_utf8(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    """Invalid UTF-8 inside the 4th of 6 conversations: replaced, and all six are imported."""
    name = "gpt-utf8"
    conversations, marks = _chatgpt_list(rng, markers, name, 6)
    parts = [_dumps(c) for c in conversations]
    parts[3] = parts[3].replace(b"zqmark", b"\xff\xfe\xc3(zqmark", 1)
    path = _write(root / name / "conversations.json", _json_array(parts))
    return HostileCase(name, "chatgpt", path, [m for ms in marks for m in ms], bad_files=[path])


def chatgpt_deep(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    """Two good conversations, then an element nested 100,000 deep."""
    name = "gpt-deep"
    conversations, marks = _chatgpt_list(rng, markers, name, 3)
    data = _json_array(
        [_dumps(conversations[0]), _dumps(conversations[1]), _deep(DEEP), _dumps(conversations[2])]
    )
    path = _write(root / name / "conversations.json", data)
    return HostileCase(name, "chatgpt", path, marks[0] + marks[1], bad_files=[path])


def chatgpt_binary(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    name = "gpt-binary"
    path = _write(root / name / "conversations.json", rng.randbytes(64 * 1024))
    return HostileCase(name, "chatgpt", path, bad_files=[path])


def chatgpt_zip(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    """An export archive whose traversal-named members must be refused, the safe one read."""
    name = "gpt-zip"
    good, good_marks = _chatgpt_list(rng, markers, name, 2)
    evil, evil_marks = _chatgpt_list(rng, markers, name + "evil", 2)
    path = root / name / "export.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("../../escaped/conversations.json", json.dumps(evil[:1]))
        archive.writestr("/tmp/absolute/conversations.json", json.dumps(evil[1:]))
        archive.writestr("export/conversations.json", json.dumps(good))
    return HostileCase(
        name,
        "chatgpt",
        path,
        [m for ms in good_marks for m in ms],
        refused=[m for ms in evil_marks for m in ms],
        bad_files=[path],
    )


def _claude_conversation(uuid: str, texts: list[str]) -> dict[str, Any]:
    """The flat-text shape: a bad byte put into the text lands in what the reader imports."""
    return claude_conversation(uuid, f"claude {uuid}", texts, blocks=False)


def claude_cases(root: Path, rng: random.Random, markers: Markers) -> list[HostileCase]:
    """Truncated, deep and archive-with-traversal Claude exports."""
    cases = []
    convs, marks = [], []
    for c in range(4):
        texts = [_text(rng, markers("claudecut")) for _ in range(2)]
        marks.append([t.rsplit(" ", 1)[1] for t in texts])
        convs.append(_dumps(_claude_conversation(f"cut-{c}", texts)))
    data = _json_array(convs)
    cut = len(data) - len(convs[-1]) // 2
    path = _write(root / "claude-cut" / "conversations.json", data[:cut])
    cases.append(
        HostileCase("claude-cut", "claude", path, [m for ms in marks[:3] for m in ms], bad_files=[path])
    )

    texts = [_text(rng, markers("claudedeep")) for _ in range(2)]
    data = _json_array([_dumps(_claude_conversation("deep-0", texts)), _deep(DEEP)])
    path = _write(root / "claude-deep" / "conversations.json", data)
    cases.append(
        HostileCase("claude-deep", "claude", path, [t.rsplit(" ", 1)[1] for t in texts], bad_files=[path])
    )

    good = [_text(rng, markers("claudezip")) for _ in range(2)]
    evil = [_text(rng, markers("claudezipevil")) for _ in range(2)]
    path = root / "claude-zip" / "claude-export.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("../conversations.json", json.dumps([_claude_conversation("evil-0", evil[:1])]))
        archive.writestr("/etc/conversations.json", json.dumps([_claude_conversation("evil-1", evil[1:])]))
        archive.writestr("conversations.json", json.dumps([_claude_conversation("zip-0", good)]))
    cases.append(
        HostileCase(
            "claude-zip",
            "claude",
            path,
            [t.rsplit(" ", 1)[1] for t in good],
            refused=[t.rsplit(" ", 1)[1] for t in evil],
            bad_files=[path],
        )
    )
    return cases


BAD_BYTES = b"\xff\xfe\xc3("  # a stray byte, another, and a lead byte without its continuation


def _chatgpt_record(uuid: str, texts: list[str]) -> dict[str, Any]:
    return chatgpt_conversation(uuid, f"chat {uuid}", texts)


def _takeout_entry(uuid: str, texts: list[str]) -> dict[str, Any]:
    return takeout_entry(START_EPOCH + int(uuid.rsplit("-", 1)[1]), texts[0], f"<p>{texts[1]}</p>")


BAD_BYTE_EXPORTS = {
    "chatgpt": ("conversations.json", _chatgpt_record),
    "claude": ("conversations.json", _claude_conversation),
    "gemini": ("MyActivity.json", _takeout_entry),
}


def export_with_bad_bytes(
    folder: Path, kind: str, records: int, broken: set[int], seed: int = 14
) -> tuple[Path, list[str]]:
    """A ``kind`` export of ``records`` records, those in ``broken`` holding invalid UTF-8 just
    before their first marker; returns the file and every record's markers."""
    file_name, make = BAD_BYTE_EXPORTS[kind]
    rng, markers = random.Random(seed), Markers()
    parts, marks = [], []
    for index in range(records):
        texts = [_text(rng, markers(kind)) for _ in range(2)]
        marks += [text.rsplit(" ", 1)[1] for text in texts]
        data = _dumps(make(f"rec-{index}", texts))
        if index in broken:
            data = data.replace(b"zqmark", BAD_BYTES + b"zqmark", 1)
        parts.append(data)
    return _write(folder / file_name, _json_array(parts)), marks


def _aistudio(texts: list[str]) -> bytes:
    return _dumps(aistudio_prompt(texts))


def gemini_folder(root: Path, rng: random.Random, markers: Markers, big_bytes: int) -> HostileCase:
    """Good AI Studio prompts and a Takeout log beside truncated, binary, deep and huge files."""
    folder = root / "gemini"
    good: list[str] = []
    bad: list[Path] = []
    for i in range(2):
        texts = [_text(rng, markers("gemini")) for _ in range(2)]
        good += [t.rsplit(" ", 1)[1] for t in texts]
        _write(folder / f"prompt-{i}.json", _aistudio(texts))
    takeout_text = _text(rng, markers("geminitakeout"))
    entries = [
        takeout_entry(START_EPOCH, takeout_text, "<p>an answer</p>"),
        {"header": "Gemini Apps", "title": "Prompted a bad time", "time": "the day after tomorrow"},
    ]
    _write(folder / "MyActivity.json", _dumps(entries))
    good.append(takeout_text.rsplit(" ", 1)[1])
    whole = _aistudio([_text(rng, "lost") for _ in range(2)])
    bad.append(_write(folder / "cut.json", whole[: len(whole) // 2]))
    bad.append(_write(folder / "deep.json", b'{"chunkedPrompt": ' + _deep(DEEP) + b"}"))
    bad.append(_write(folder / "utf8.json", whole.replace(b"lost", b"\xc3\x28\xa0\xa1", 1)))
    _write(folder / "noise.json", rng.randbytes(16 * 1024))  # not Gemini data at all: ignored
    bad.append(_write(folder / "huge.json", b'{"chunkedPrompt": "' + b"x" * big_bytes))
    return HostileCase("gemini-folder", "gemini", folder, good, bad_files=bad)


def _mail(message_id: str, subject: str, body: str, date: str, extra: str = "") -> bytes:
    return (
        f"From: Alice Example <alice@example.org>\nTo: bob@example.org\nSubject: {subject}\n"
        f"Date: {date}\nMessage-ID: <{message_id}>\n{extra}\n{body}\n"
    ).encode()


def email_cases(root: Path, rng: random.Random, markers: Markers, big_bytes: int) -> list[HostileCase]:
    """An mbox with broken headers and bad dates, and a mail folder with binary and huge files."""
    mbox_good: list[str] = []
    chunks = []
    dates = [
        "Tue, 02 Jan 2024 10:00:00 +0000",
        "not a date at all",
        "Mon, 31 Feb 99999 25:61:61 +9999",
        "",
        "Thu, 01 Jan 1970 00:00:00 -2400",
    ]
    for i, date in enumerate(dates):
        text = _text(rng, markers("mbox"))
        mbox_good.append(text.rsplit(" ", 1)[1])
        chunks.append(
            b"From alice@example.org Tue Jan  2 10:00:00 2024\n"
            + _mail(f"m{i}@example.org", f"note {i}", text, date)
        )
    chunks.insert(
        2,
        b"From broken@example.org Tue Jan  2 10:00:00 2024\nX-Garbage: \xff\xfe\x00\nno colon on this line\n"
        + rng.randbytes(512).replace(b"\nFrom ", b"\nXrom ")
        + b"\n",
    )
    chunks.insert(
        4,
        b"From headers@example.org Tue Jan  2 10:00:00 2024\nSubject: =?utf-8?q?=ZZ=broken?=\n"
        b"Date: Fri, 13 Smarch 2024\nMessage-ID: <<<>>>\nContent-Type: multipart/mixed; boundary=\n\nbody\n",
    )
    mbox = _write(root / "mbox" / "archive.mbox", b"\n".join(chunks))
    mbox_case = HostileCase("mbox-broken", "email", mbox, mbox_good, bad_files=[])

    folder = root / "maildir-ish"
    good = []
    for i in range(2):
        text = _text(rng, markers("eml"))
        good.append(text.rsplit(" ", 1)[1])
        _write(
            folder / f"good-{i}.eml",
            _mail(f"eml{i}@example.org", f"hello {i}", text, "Wed, 03 Jan 2024 09:00:00 +0100"),
        )
    bad = [
        _write(folder / "binary.eml", rng.randbytes(4096)),
        _write(folder / "empty.eml", b""),
        _write(folder / "huge.eml", b"x" * big_bytes),
    ]
    latin = _text(rng, markers("emllatin"))
    _write(
        folder / "latin1.eml",
        _mail("latin@example.org", "café", latin, "Wed, 03 Jan 2024 09:00:00 +0100").replace(
            "é".encode(), b"\xe9"
        ),
    )
    good.append(latin.rsplit(" ", 1)[1])
    return [mbox_case, HostileCase("mail-folder", "email", folder, good, bad_files=bad)]


BILLION_LAUGHS = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]"
        for i in range(8)
    ]
)


def markdown_vault(root: Path, rng: random.Random, markers: Markers, big_bytes: int) -> HostileCase:
    """Broken frontmatter (unclosed, invalid YAML, a list, a YAML bomb), invalid UTF-8, binary,
    and a huge single-line note, beside good notes."""
    vault = root / "vault"
    good: list[str] = []
    bad: list[Path] = []

    def note(name: str, head: str, problem: bool) -> None:
        text = _text(rng, markers("md"))
        good.append(text.rsplit(" ", 1)[1])
        path = _write(vault / name, f"{head}# Heading\n\n{text}\n".encode())
        if problem:
            bad.append(path)

    note("good.md", "---\ntags: [ok]\ncreated: 2024-01-01\n---\n", False)
    note("plain.md", "", False)
    note("invalid-yaml.md", "---\ntitle: [unclosed\n  : : :\n---\n", True)
    note("list-frontmatter.md", "---\n- just\n- a list\n---\n", True)
    note("tabs.md", "---\ntitle:\t\tvalue\n\tbad: indent\n---\n", True)
    note("bomb.md", f"---\n{BILLION_LAUGHS}\n---\n", False)  # valid YAML; properties capped
    note("unclosed.md", "---\ntitle: never closed\n", False)  # a lone fence is just a rule
    text = _text(rng, markers("mdutf8"))
    good.append(text.rsplit(" ", 1)[1])
    bad.append(_write(vault / "latin1.md", f"# Caf\xe9\n\n{text}\n".encode("latin-1")))
    bad.append(_write(vault / "binary.md", b"\x00\x01\x02" + rng.randbytes(2048)))
    huge_marker = markers("mdhuge")
    good.append(huge_marker)
    huge = _write(vault / "huge-line.md", (huge_marker + " " + "word " * (big_bytes // 5)).encode())
    if big_bytes > MAX_MESSAGE_CHARS:
        bad.append(huge)  # its message is cut, and the cut reported
    _write(vault / ".obsidian" / "workspace.json", rng.randbytes(512))  # ignored, not an error
    return HostileCase("vault", "markdown", vault, good, bad_files=bad)


def build_corpus(root: Path, *, truncations: int, big_bytes: int, seed: int) -> list[HostileCase]:
    """Write every hostile case under ``root``; ``truncations`` random cuts of a ChatGPT export,
    ``big_bytes`` for the single-line files."""
    rng = random.Random(seed)
    markers = Markers()
    cases = [chatgpt_truncated(root / "gpt-cuts", rng, markers, i) for i in range(truncations)]
    cases += [
        chatgpt_invalid_utf8(root, rng, markers),
        chatgpt_deep(root, rng, markers),
        chatgpt_binary(root, rng, markers),
        chatgpt_zip(root, rng, markers),
        *claude_cases(root, rng, markers),
        gemini_folder(root, rng, markers, big_bytes),
        *email_cases(root, rng, markers, big_bytes),
        markdown_vault(root, rng, markers, big_bytes),
    ]
    return cases


def tree_state(root: Path, skip: Path | None = None) -> dict[str, tuple[int, str]]:
    """Every regular file below ``root`` (except under ``skip``; links, pipes and devices are
    not read) with its size and content digest."""
    state: dict[str, tuple[int, str]] = {}
    for folder, dirs, files in os.walk(root):
        if skip is not None and Path(folder).resolve() == skip.resolve():
            dirs[:] = []
            continue
        for name in files:
            path = Path(folder, name)
            if not stat.S_ISREG(path.lstat().st_mode):
                continue
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            state[str(path.relative_to(root))] = (path.stat().st_size, digest)
    return state


def _exists(path: str) -> bool:
    try:
        return os.path.lexists(path)
    except OSError:  # a path longer than the system allows
        return False


def _has_marker(mind: Mind, marker: str) -> bool:
    return mind.db.scalar("SELECT 1 FROM memory_frames WHERE content LIKE ? LIMIT 1", (f"%{marker}%",)) == 1


def harvest_case(mind: Mind, case: HostileCase) -> CaseOutcome:
    """Register and harvest one case for real; check what it kept, refused and reported."""
    outcome = CaseOutcome(case.name, case.kind, finished=False, good=len(case.good))
    try:
        register_source(mind, case.kind, case.path, case.name, rules=case.rules)
        report = harvest(mind, case.name)
    except Exception as exc:  # the point of the corpus: this must never happen
        outcome.exception = f"{type(exc).__name__}: {exc}"
        return outcome
    outcome.finished = True
    outcome.status = report.status
    summary = report.imported
    assert summary is not None
    outcome.errors = [str(e) for e in summary.errors]
    outcome.lost_records = sum(" lost: " in e for e in outcome.errors)
    outcome.unreported = [words for words in case.reported if not any(words in e for e in outcome.errors)]
    outcome.frames = summary.frames_new
    outcome.unlocated = [str(e) for e in summary.errors if not e.path or not (e.record or _exists(e.path))]
    outcome.good_missing = [m for m in case.good if not _has_marker(mind, m)]
    outcome.refused_found = [m for m in case.refused if _has_marker(mind, m)]
    outcome.bad_unreported = [
        str(p)
        for p in case.bad_files
        if not any(e.path == str(p) or str(p).endswith(f"/{e.path}") for e in summary.errors)
    ]
    return outcome


def harvest_corpus(mind: Mind, cases: list[HostileCase]) -> Iterator[CaseOutcome]:
    for case in cases:
        yield harvest_case(mind, case)
