"""The inputs that once hung, exhausted or silently truncated a harvest (issue #30), generated.

A FIFO in a vault, a maildir and folders of WhatsApp chats, text files and calendars, links to
``/dev/zero`` (named like a note, a text file or a PDF) and out of the folder (a note, a saved web
page), files over the size limit (read whole, and streamed under a source's own limit), a JSON syntax error in record 100 of 200, 300-deep nesting, ``NaN`` and ``Infinity``,
a ChatGPT children cycle, a UTF-16 export, a 2,500-deep folder: each is a ``HostileCase`` whose
good records must all be kept and whose bad ones must be reported by name.
``python -m mind_core.testing.hostile_files CASE ROOT HOME`` harvests one case in a process of
its own and prints its outcome, time and peak memory as JSON, so a test can bound both and a
runaway read cannot take the test runner with it.
"""

from __future__ import annotations

import json
import os
import random
import resource
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mind_core.harvest.source_files import ReadingRules
from mind_core.mind import Mind
from mind_core.testing.hostile import (
    HostileCase,
    Markers,
    _chatgpt_list,
    _claude_conversation,
    _dumps,
    _json_array,
    _mail,
    _text,
    _write,
    harvest_case,
)
from mind_core.testing.message_exports import (
    article_html,
    write_ics,
    write_pdf,
    write_vcf,
    write_whatsapp_export,
)


def _marked_files(
    rng: random.Random, markers: Markers, case: str, write: Callable[[int, str], object], count: int = 2
) -> list[str]:
    """``count`` good files, each written by ``write(index, text)`` around a text that ends in a
    fresh marker: the markers, which the harvest must keep."""
    good = []
    for index in range(count):
        text = _text(rng, markers(case))
        good.append(text.rsplit(" ", 1)[1])
        write(index, text)
    return good


def _notes(vault: Path, rng: random.Random, markers: Markers, case: str, count: int = 2) -> list[str]:
    def note(index: int, text: str) -> Path:
        return _write(vault / f"note-{index}.md", f"# Note {index}\n\n{text}\n".encode())

    return _marked_files(rng, markers, case, note, count)


def _beside_fifo(name: str, kind: str, folder: Path, good: list[str], pipe: Path) -> HostileCase:
    """The case of good files and a named pipe called like one of them: opening it would block."""
    os.mkfifo(pipe)
    return HostileCase(name, kind, folder, good, bad_files=[pipe], reported=["named pipe"])


def _beside_sparse_giant(name: str, kind: str, folder: Path, good: list[str], giant: Path) -> HostileCase:
    """The case of good files and a 100 MB one (sparse: no disk used), over the 64 MiB limit of a
    file read whole: refused before a byte is read."""
    with open(giant, "wb") as handle:
        handle.truncate(100 * 2**20)
    return HostileCase(name, kind, folder, good, bad_files=[giant], reported=["limit"])


def vault_fifo(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    """A named pipe called like a note: opening it would block for ever."""
    vault = root / "vault-fifo"
    good = _notes(vault, rng, markers, "fifo")
    return _beside_fifo("vault-fifo", "markdown", vault, good, vault / "pipe.md")


def maildir_fifo(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    folder = root / "maildir-fifo"

    def mail(index: int, text: str) -> Path:
        message = _mail(f"fifo{index}@example.org", f"fifo {index}", text, "Wed, 03 Jan 2024 09:00:00 +0100")
        return _write(folder / "cur" / f"{index}.host:2,S", message)

    good = _marked_files(rng, markers, "maildirfifo", mail)
    (folder / "new").mkdir()
    return _beside_fifo("maildir-fifo", "email", folder, good, folder / "new" / "pipe")


def vault_dev_zero(root: Path, rng: random.Random, markers: Markers, follow: bool) -> HostileCase:
    """A link to /dev/zero: refused as a link leading outside, or (links allowed) as a device."""
    name = "vault-zero-followed" if follow else "vault-zero"
    vault = root / name
    good = _notes(vault, rng, markers, name)
    (vault / "zero.md").symlink_to("/dev/zero")
    reason = "character device" if follow else "outside the source's folder"
    rules = ReadingRules(follow_outside_links=True) if follow else None
    return HostileCase(
        name, "markdown", vault, good, bad_files=[vault / "zero.md"], rules=rules, reported=[reason]
    )


def vault_links(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    """A link to a secret outside the vault (refused), a link to a note inside it (read once) and
    a link to the vault itself (no loop)."""
    vault = root / "vault-links"
    good = _notes(vault, rng, markers, "links")
    secret = markers("linksecret")
    _write(root / "outside" / "secret.md", f"# Secret\n\npassword {secret}\n".encode())
    (vault / "secret.md").symlink_to(root / "outside" / "secret.md")
    (vault / "again.md").symlink_to(vault / "note-0.md")
    (vault / "loop").symlink_to(vault)
    return HostileCase(
        "vault-links",
        "markdown",
        vault,
        good,
        refused=[secret],
        bad_files=[vault / "secret.md"],
        reported=["outside"],
    )


def vault_over_limit(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    """A 100 MB note (sparse: no disk used), over the 64 MiB limit: refused before a byte is read."""
    vault = root / "vault-huge"
    good = _notes(vault, rng, markers, "huge")
    return _beside_sparse_giant("vault-huge", "markdown", vault, good, vault / "huge.md")


def _chat_turns(rng: random.Random, markers: Markers, case: str) -> tuple[list, list[str]]:
    texts = [_text(rng, markers(case)) for _ in range(2)]
    moments = [datetime(2024, 3, 2, 9, minute, tzinfo=UTC) for minute in (5, 6)]
    turns = [
        (speaker, text, moment) for speaker, text, moment in zip(("Ana", "Ben"), texts, moments, strict=True)
    ]
    return turns, [text.rsplit(" ", 1)[1] for text in texts]


def whatsapp_fifo(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    """Two chat exports and a named pipe called like a third (``pipe.txt``)."""
    folder = root / "whatsapp-fifo"
    good = []
    for name in ("WhatsApp Chat with Ana.txt", "trip/_chat.txt"):
        turns, marks = _chat_turns(rng, markers, "wafifo")
        write_whatsapp_export(folder / name, turns)
        good += marks
    return _beside_fifo("whatsapp-fifo", "whatsapp", folder, good, folder / "pipe.txt")


def _text_files(folder: Path, rng: random.Random, markers: Markers, case: str) -> list[str]:
    def notes(index: int, text: str) -> Path:
        return _write(folder / f"notes-{index}.txt", f"Notes {index}\n\n{text}\n".encode())

    return _marked_files(rng, markers, case, notes)


def plaintext_fifo(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    folder = root / "plaintext-fifo"
    good = _text_files(folder, rng, markers, "txtfifo")
    return _beside_fifo("plaintext-fifo", "plaintext", folder, good, folder / "pipe.txt")


def plaintext_dev_zero_followed(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    """``x.txt`` linked to /dev/zero in a source that follows outside links: refused as a device."""
    folder = root / "plaintext-zero-followed"
    good = _text_files(folder, rng, markers, "txtzero")
    (folder / "x.txt").symlink_to("/dev/zero")
    return HostileCase(
        "plaintext-zero-followed",
        "plaintext",
        folder,
        good,
        bad_files=[folder / "x.txt"],
        rules=ReadingRules(follow_outside_links=True),
        reported=["character device"],
    )


def plaintext_over_limit(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    """A 100 MB text file (sparse), over the 64 MiB limit of a file read whole."""
    folder = root / "plaintext-huge"
    good = _text_files(folder, rng, markers, "txthuge")
    return _beside_sparse_giant("plaintext-huge", "plaintext", folder, good, folder / "huge.txt")


def _event(marker_text: str, index: int) -> dict:
    start = datetime(2024, 5, 1 + index, 9, 0, tzinfo=UTC)
    return {"uid": f"event-{index}@example.org", "summary": marker_text, "start": start}


def ical_fifo(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    folder = root / "ical-fifo"

    def calendar(index: int, text: str) -> Path:
        return write_ics(folder / f"calendar-{index}.ics", [_event(text, index)])

    good = _marked_files(rng, markers, "icsfifo", calendar)
    return _beside_fifo("ical-fifo", "icalendar", folder, good, folder / "pipe.ics")


def vcard_over_source_limit(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    """An address book streamed card by card, over the source's own 4 KB ``--max-file-size``."""
    folder = root / "vcard-limit"
    good = []
    for index in range(2):
        marker = markers("vcflimit")
        good.append(marker)
        write_vcf(folder / f"contacts-{index}.vcf", [{"name": ("Ada", f"Lovelace{index}"), "note": marker}])
    big = [{"name": ("Bulk", f"Person{index}"), "note": _text(rng, f"bulk{index}")} for index in range(80)]
    write_vcf(folder / "everyone.vcf", big)
    return HostileCase(
        "vcard-limit",
        "vcard",
        folder,
        good,
        bad_files=[folder / "everyone.vcf"],
        rules=ReadingRules(max_file_bytes=4096),
        reported=["over the 4,096-byte limit"],
    )


def pdf_dev_zero(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    """``x.pdf`` linked to /dev/zero beside two real PDFs: refused as a link leading outside."""
    folder = root / "pdf-zero"
    good = _marked_files(rng, markers, "pdfzero", lambda index, text: write_pdf(folder / f"paper-{index}.pdf", [text]))
    (folder / "x.pdf").symlink_to("/dev/zero")
    return HostileCase(
        "pdf-zero",
        "pdf",
        folder,
        good,
        bad_files=[folder / "x.pdf"],
        reported=["outside the source's folder"],
    )


def web_links(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    """Saved pages and a link to a page outside the folder, which must not be read."""
    folder = root / "web-links"

    def page(index: int, text: str) -> Path:
        return _write(folder / f"page-{index}.html", article_html(f"Page {index}", [text, *PAGE_FILLER]).encode())

    good = _marked_files(rng, markers, "weblinks", page)
    secret = markers("websecret")
    _write(
        root / "outside" / "secret.html",
        article_html("Secret", [f"password {secret}", *PAGE_FILLER]).encode(),
    )
    (folder / "secret.html").symlink_to(root / "outside" / "secret.html")
    return HostileCase(
        "web-links",
        "web",
        folder,
        good,
        refused=[secret],
        bad_files=[folder / "secret.html"],
        reported=["outside"],
    )


PAGE_FILLER = [  # enough article text that the extractor keeps the page's main text
    "The committee met on Tuesday to review the plans for the new library wing and its reading rooms.",
    "Several members asked for more seating near the windows and for longer opening hours in winter.",
]


def _conversations(
    rng: random.Random, markers: Markers, case: str, count: int
) -> tuple[list[bytes], list[list[str]]]:
    conversations, marks = _chatgpt_list(rng, markers, case, count)
    return [_dumps(c) for c in conversations], marks


def _broken_export(
    root: Path, rng: random.Random, markers: Markers, name: str, broken: dict[int, Callable[[bytes], bytes]]
) -> HostileCase:
    """A ChatGPT export of 200 conversations, those in ``broken`` damaged: every other one must be kept."""
    parts, marks = _conversations(rng, markers, name, 200)
    for index, damage in broken.items():
        parts[index] = damage(parts[index])
    path = _write(root / name / "conversations.json", _json_array(parts))
    good = [m for index, ms in enumerate(marks) if index not in broken for m in ms]
    reported = [f"conversation {index}]" for index in broken]
    return HostileCase(name, "chatgpt", path, good, bad_files=[path], reported=reported)


def _nested(data: bytes, depth: int = 300) -> bytes:
    return data[:-1] + b', "deep": ' + b"[" * depth + b"]" * depth + b"}"


JSON_DAMAGE: dict[str, dict[int, Callable[[bytes], bytes]]] = {
    "gpt-syntax": {100: lambda data: data.replace(b'"title"', b"'title\"", 1)},
    "gpt-deep300": {100: _nested},
    "gpt-nan": {100: lambda data: data.replace(b'"create_time": ', b'"create_time": NaN, "x": ', 1)},
    "gpt-several": {
        20: lambda data: data.replace(b'"title"', b"'title\"", 1),
        21: _nested,
        150: lambda data: data.replace(b'"create_time": ', b'"create_time": Infinity, "x": ', 1),
    },
}


def claude_nan(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    parts, marks = [], []
    for index in range(20):
        texts = [_text(rng, markers("claudenan")) for _ in range(2)]
        marks.append([t.rsplit(" ", 1)[1] for t in texts])
        parts.append(_dumps(_claude_conversation(f"nan-{index}", texts)))
    parts[7] = parts[7].replace(b'"updated_at": ', b'"updated_at": NaN, "x": ', 1)
    path = _write(root / "claude-nan" / "conversations.json", _json_array(parts))
    good = [m for index, ms in enumerate(marks) if index != 7 for m in ms]
    return HostileCase("claude-nan", "claude", path, good, bad_files=[path], reported=["record 7]"])


def gpt_cycle(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    """A conversation whose children links form a cycle, between good ones: refused by name."""
    conversations, marks = _chatgpt_list(rng, markers, "gptcycle", 3)
    mapping = {
        "a": {"id": "a", "parent": "b", "children": ["b"], "message": None},
        "b": {"id": "b", "parent": "a", "children": ["a"], "message": None},
    }
    conversations.insert(1, {"id": "cycle-1", "title": "cycle", "create_time": 1.0, "mapping": mapping})
    path = _write(root / "gpt-cycle" / "conversations.json", _dumps(conversations))
    good = [m for ms in marks for m in ms]
    return HostileCase("gpt-cycle", "chatgpt", path, good, bad_files=[path], reported=["cycle-1", "cycle"])


def gpt_utf16(root: Path, rng: random.Random, markers: Markers) -> HostileCase:
    conversations, _ = _chatgpt_list(rng, markers, "gptutf16", 2)
    path = _write(root / "gpt-utf16" / "conversations.json", json.dumps(conversations).encode("utf-16"))
    return HostileCase("gpt-utf16", "chatgpt", path, bad_files=[path], reported=["UTF-16LE"])


DEEP_FOLDERS = 2_500


def deep_vault(root: Path, rng: random.Random, markers: Markers, depth: int = DEEP_FOLDERS) -> HostileCase:
    """Good notes at the top of a vault and one ``depth`` folders down (deeper than a path may
    be): the good ones are kept and the folder the system cannot list is reported by depth."""
    vault = root / "vault-deep"
    good = _notes(vault, rng, markers, "deep")
    descriptor = os.open(vault, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=descriptor)
            inner = os.open("d", os.O_RDONLY, dir_fd=descriptor)
            os.close(descriptor)
            descriptor = inner
        note = os.open("bottom.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=descriptor)
        os.write(note, b"# Bottom\n\nunreachable\n")
        os.close(note)
    finally:
        os.close(descriptor)
    return HostileCase("vault-deep", "markdown", vault, good, reported=["folders deep"])


def remove_deep(folder: Path) -> None:
    """Delete a folder however deep (``shutil.rmtree`` recurses, like a harvest once did)."""
    descriptors = [os.open(folder, os.O_RDONLY)]
    names: list[str] = []
    while descriptors:
        current = descriptors[-1]
        entries = os.listdir(current)
        subfolder = next(
            (e for e in entries if stat.S_ISDIR(os.stat(e, dir_fd=current, follow_symlinks=False).st_mode)),
            None,
        )
        if subfolder is not None:
            descriptors.append(os.open(subfolder, os.O_RDONLY, dir_fd=current))
            names.append(subfolder)
            continue
        for entry in entries:
            os.unlink(entry, dir_fd=current)
        os.close(descriptors.pop())
        if names:
            os.rmdir(names.pop(), dir_fd=descriptors[-1])
    os.rmdir(folder)


HOSTILE_FILES: dict[str, Callable[[Path, random.Random, Markers], HostileCase]] = {
    "vault-fifo": vault_fifo,
    "maildir-fifo": maildir_fifo,
    "vault-zero": lambda root, rng, markers: vault_dev_zero(root, rng, markers, follow=False),
    "vault-zero-followed": lambda root, rng, markers: vault_dev_zero(root, rng, markers, follow=True),
    "vault-links": vault_links,
    "vault-huge": vault_over_limit,
    **{
        name: (
            lambda root, rng, markers, name=name: _broken_export(root, rng, markers, name, JSON_DAMAGE[name])
        )
        for name in JSON_DAMAGE
    },
    "claude-nan": claude_nan,
    "gpt-cycle": gpt_cycle,
    "gpt-utf16": gpt_utf16,
    "vault-deep": deep_vault,
    "whatsapp-fifo": whatsapp_fifo,
    "plaintext-fifo": plaintext_fifo,
    "plaintext-zero-followed": plaintext_dev_zero_followed,
    "plaintext-huge": plaintext_over_limit,
    "ical-fifo": ical_fifo,
    "vcard-limit": vcard_over_source_limit,
    "pdf-zero": pdf_dev_zero,
    "web-links": web_links,
}


def own_peak_kib() -> int:
    """This process's peak resident memory since it started its program (``VmHWM``).
    ``ru_maxrss`` would not do: Linux keeps it across ``exec``, so a child started by a large
    parent (a test runner holding a model) reports the parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def harvest_one(name: str, root: Path, home: Path, seed: int = 30) -> dict[str, Any]:
    """Build the case ``name`` under ``root`` and harvest it into a mind under ``home``: its
    outcome with the seconds it took and this process's peak memory (MB)."""
    from mind_core.embeddings.mock import MockEmbedder

    case = HOSTILE_FILES[name](root, random.Random(seed), Markers())
    began = time.perf_counter()
    with Mind.open(home / f"{name}.mind", embedder=MockEmbedder(1024)) as mind:
        outcome = harvest_case(mind, case)
        kept = outcome.good - len(outcome.good_missing)
    peak_kib = own_peak_kib()
    return {
        **asdict(outcome),
        "ok": outcome.ok,
        "kept": kept,
        "seconds": round(time.perf_counter() - began, 2),
        "peak_rss_mb": round(peak_kib / 1024, 1),
    }


if __name__ == "__main__":
    print(json.dumps(harvest_one(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))))
