"""Hostile sizes, generated on disk, each harvested in a fresh process that reports its peak memory.

Each case is one source holding a single enormous record (a 100 MB line in an mbox, an .eml, a
Markdown note, a JSON string, or a 300 MB message inside a small zip) followed by a small record
carrying a marker word. The child process opens a mind, registers the source and harvests it for
real; it prints its resident memory before the harvest and its peak during it (``ru_maxrss``, so
nothing is sampled or missed), how many frames it wrote, whether the marker record was imported and
the located warnings it got. Run one case by hand with:

    python -m mind_core.testing.sizes KIND PATH
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from mind_core.testing.exports import chatgpt_conversation

MARKER = "zqsizemarker"
FILLER = b"lorem ipsum dolor sit amet "  # 27 bytes, no newline: the record is one line
LINE_CHUNK = FILLER * (2**20 // len(FILLER))


@dataclass
class SizeCase:
    name: str
    kind: str
    path: Path
    record_bytes: int


def _write_filler(handle: IO[bytes], size: int) -> None:
    """``size`` bytes of one long line, written in 1 MB pieces (never held whole)."""
    while size > 0:
        piece = LINE_CHUNK[:size]
        handle.write(piece)
        size -= len(piece)


def _mail_head(message_id: str, subject: str) -> bytes:
    return (
        f"From: Ann <ann@example.org>\nTo: bob@example.org\nSubject: {subject}\n"
        f"Message-ID: <{message_id}@example.org>\nDate: Mon, 3 Mar 2025 10:00:00 +0000\n\n"
    ).encode()


def mbox_line(root: Path, size: int) -> SizeCase:
    path = root / "mbox-line" / "big.mbox"
    path.parent.mkdir(parents=True)
    with open(path, "wb") as handle:
        handle.write(b"From ann@example.org Mon Mar  3 10:00:00 2025\n" + _mail_head("big", "big"))
        _write_filler(handle, size)
        handle.write(b"\n\nFrom ann@example.org Mon Mar  3 11:00:00 2025\n" + _mail_head("small", "after"))
        handle.write(f"{MARKER} after the big one\n".encode())
    return SizeCase(f"mbox: {size // 2**20} MB single-line body", "email", path, size)


def mbox_attachment(root: Path, size: int) -> SizeCase:
    """One message whose base64 attachment fills ``size`` bytes of ordinary 76-byte lines."""
    path = root / "mbox-attachment" / "big.mbox"
    path.parent.mkdir(parents=True)
    boundary = "zqboundary"
    with open(path, "wb") as handle:
        handle.write(b"From ann@example.org Mon Mar  3 10:00:00 2025\n" + _mail_head("big", "big")[:-1])
        handle.write(
            f"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary={boundary}\n\n--{boundary}\n"
            f"Content-Type: text/plain\n\nthe text comes first\n--{boundary}\n"
            f"Content-Type: application/octet-stream; name=big.bin\nContent-Transfer-Encoding: base64\n\n".encode()
        )
        line = b"QUJD" * 19 + b"\n"
        block = line * (2**20 // len(line))
        for _ in range(size // len(block)):
            handle.write(block)
        handle.write(f"--{boundary}--\n\nFrom ann@example.org Mon Mar  3 11:00:00 2025\n".encode())
        handle.write(_mail_head("small", "after") + f"{MARKER} after\n".encode())
    return SizeCase(f"mbox: {size // 2**20} MB attachment in 76-byte lines", "email", path, size)


def eml_line(root: Path, size: int) -> SizeCase:
    folder = root / "eml-line"
    folder.mkdir(parents=True)
    with open(folder / "big.eml", "wb") as handle:
        handle.write(_mail_head("big", "big"))
        _write_filler(handle, size)
    (folder / "small.eml").write_bytes(_mail_head("small", "after") + f"{MARKER} after\n".encode())
    return SizeCase(f".eml: {size // 2**20} MB single-line body", "email", folder, size)


def markdown_line(root: Path, size: int) -> SizeCase:
    vault = root / "markdown-line"
    vault.mkdir(parents=True)
    with open(vault / "big.md", "wb") as handle:
        handle.write(b"# Big\n\n")
        _write_filler(handle, size)
    (vault / "small.md").write_text(f"# Small\n\n{MARKER} after\n")
    return SizeCase(f"Markdown: {size // 2**20} MB single line", "markdown", vault, size)


def write_huge_chatgpt_export(handle: IO[bytes], size: int) -> None:
    """A conversations.json whose first message is ``size`` bytes, then a small conversation."""
    big = json.dumps(chatgpt_conversation("big", "big", ["BIG"])).encode()
    before, after = big.split(b"BIG")
    handle.write(b"[" + before)
    _write_filler(handle, size)
    small = chatgpt_conversation("small", "after", [f"{MARKER} after"])
    handle.write(after + b", " + json.dumps(small).encode() + b"]")


def json_string(root: Path, size: int) -> SizeCase:
    path = root / "json-string" / "conversations.json"
    path.parent.mkdir(parents=True)
    with open(path, "wb") as handle:
        write_huge_chatgpt_export(handle, size)
    return SizeCase(f"conversations.json: {size // 2**20} MB string", "chatgpt", path, size)


def zip_bomb(root: Path, size: int) -> SizeCase:
    path = root / "zip-bomb" / "export.zip"
    path.parent.mkdir(parents=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("conversations.json", "w", force_zip64=True) as member:
            write_huge_chatgpt_export(member, size)
    return SizeCase(f"zip of {path.stat().st_size // 1024} KB: {size // 2**20} MB message", "chatgpt", path, size)


CASES: dict[str, Callable[[Path, int], SizeCase]] = {
    "mbox": mbox_line,
    "attachment": mbox_attachment,
    "eml": eml_line,
    "markdown": markdown_line,
    "json": json_string,
    "zip": zip_bomb,
}


def measure(case: SizeCase, timeout: float = 1800) -> dict:
    """Harvest ``case`` in a fresh interpreter; its report as a dict (see ``_child``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-m", "mind_core.testing.sizes", case.kind, str(case.path)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        return {"case": case.name, "exit": done.returncode, "error": done.stderr.strip().splitlines()[-1:]}
    return {"case": case.name, "record_mb": case.record_bytes // 2**20, **json.loads(done.stdout)}


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _child(kind: str, path: str) -> None:
    from mind_core.embeddings.mock import MockEmbedder
    from mind_core.harvest.pipeline import harvest, register_source
    from mind_core.mind import Mind

    with tempfile.TemporaryDirectory() as home, Mind.open(Path(home, "w.mind"), embedder=MockEmbedder(1024)) as mind:
        register_source(mind, kind, path, "big")
        baseline = _rss_mb()
        summary = harvest(mind, "big").imported
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        found = mind.db.scalar("SELECT COUNT(*) FROM memory_frames WHERE content LIKE ?", (f"%{MARKER}%",))
    assert summary is not None
    print(
        json.dumps(
            {
                "baseline_mb": round(baseline),
                "peak_mb": round(peak),
                "over_baseline_mb": round(peak - baseline),
                "frames": summary.frames_new,
                "marker_imported": bool(found),
                "warnings": [str(e)[-160:] for e in summary.errors],
            }
        )
    )


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
