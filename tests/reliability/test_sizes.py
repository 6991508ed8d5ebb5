"""Bounded memory on hostile sizes (issue #14, Deliver 6), cheap enough for CI.

A record far beyond MAX_MESSAGE_CHARS must be cut while it is read: the plugins may never ask a
file for more than one line's cap at once. Each test reads a 5 MB single line through a recorder
of every read and readline size, so it fails if the line is read whole (the old behaviour),
without timing or measuring memory. The 100 MB figures come from benchmarks/reliability.py.
"""

from __future__ import annotations

import builtins
import io
import zipfile
from pathlib import Path
from typing import Any

import pytest
from mind_harvest.plugins._bounded import MAX_LINE_BYTES, read_capped
from mind_harvest.plugins._jsonstream import MAX_STRING_BYTES
from mind_harvest.plugins.chatgpt import ChatGPTSource
from mind_harvest.plugins.email import EmailSource
from mind_harvest.plugins.mailbox_files import MAX_HEADER_BYTES
from mind_harvest.plugins.markdown import MarkdownSource

from mind_core.harvest.items import HarvestError, HarvestItem
from mind_core.testing.sizes import write_huge_chatgpt_export

BIG = 5 * 2**20
LARGEST_READ = max(MAX_LINE_BYTES, MAX_HEADER_BYTES) + 1  # one line's cap (a header line's is 4 MiB)
FILLER = b"lorem ipsum dolor sit amet "


class ReadRecorder:
    """A file whose largest requested read (``-1``, read all, counts as infinite) is remembered."""

    largest = 0

    def __init__(self, real: Any) -> None:
        self._real = real

    def _note(self, size: int | None) -> None:
        wanted = float("inf") if size is None or size < 0 else size
        ReadRecorder.largest = max(ReadRecorder.largest, wanted)

    def read(self, size: int | None = -1) -> bytes:
        self._note(size)
        return self._real.read(size)

    def readline(self, size: int | None = -1) -> bytes:
        self._note(size)
        return self._real.readline(size)

    def __iter__(self) -> Any:
        self._note(-1)
        return iter(self._real)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __enter__(self) -> ReadRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self._real.close()


@pytest.fixture
def recorded_open(monkeypatch: pytest.MonkeyPatch) -> type[ReadRecorder]:
    """The plugins' ``open`` replaced by one that records read sizes."""
    ReadRecorder.largest = 0

    def recording_open(*args: Any, **kwargs: Any) -> ReadRecorder:
        return ReadRecorder(builtins.open(*args, **kwargs))

    for module in ("mind_harvest.plugins.email", "mind_harvest.plugins.markdown"):
        monkeypatch.setattr(f"{module}.open", recording_open, raising=False)
    return ReadRecorder


def big_line() -> bytes:
    return (FILLER * (BIG // len(FILLER) + 1))[:BIG]


def mail(message_id: str, body: bytes) -> bytes:
    return (
        f"From: Ann <ann@example.org>\nTo: bob@example.org\nSubject: {message_id}\n"
        f"Message-ID: <{message_id}@example.org>\nDate: Mon, 3 Mar 2025 10:00:00 +0000\n\n"
    ).encode() + body + b"\n"


def scan(source: Any, path: Path) -> tuple[list[HarvestItem], list[HarvestError]]:
    events = list(source.scan(path))
    return [e for e in events if isinstance(e, HarvestItem)], [e for e in events if isinstance(e, HarvestError)]


def test_an_mbox_line_is_cut_while_streaming(tmp_path: Path, recorded_open: type[ReadRecorder]) -> None:
    path = tmp_path / "box.mbox"
    postmark = b"From ann@example.org Mon Mar  3 10:00:00 2025\n"
    path.write_bytes(postmark + mail("big", big_line()) + b"\n" + postmark + mail("after", b"zqafter"))
    items, errors = scan(EmailSource(), path)
    texts = sorted((m.metadata["subject"], m.text) for item in items for m in item.messages)
    assert [subject for subject, _ in texts] == ["after", "big"]
    assert texts[0][1] == "zqafter" and texts[1][1] == big_line()[:MAX_LINE_BYTES].decode()
    assert [(e.record, e.reason.split(" (")[1]) for e in errors] == [
        ("message 0 (byte 46)", f"the longest, line 7, had {BIG + 1:,})")
    ]
    assert recorded_open.largest <= LARGEST_READ


def test_an_eml_line_is_cut_while_streaming(tmp_path: Path, recorded_open: type[ReadRecorder]) -> None:
    (tmp_path / "big.eml").write_bytes(mail("big", big_line()))
    [item], [error] = scan(EmailSource(), tmp_path / "big.eml")
    assert item.messages[0].text == big_line()[:MAX_LINE_BYTES].decode()
    assert error.reason.startswith("message cut while reading") and f"had {BIG + 1:,}" in error.reason
    assert recorded_open.largest <= LARGEST_READ


def test_a_markdown_line_is_cut_while_streaming(tmp_path: Path, recorded_open: type[ReadRecorder]) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "big.md").write_bytes(b"# Big\n\n" + big_line() + b"\n\n# After\n\nzqafter\n")
    (vault / "small.md").write_text("zqsmall\n")
    items, [error] = scan(MarkdownSource(), vault)
    big, small = items
    assert [m.text for m in big.messages] == [
        "Big\n\n" + big_line()[:MAX_LINE_BYTES].decode(),
        "After\n\nzqafter",
    ]
    assert small.messages[0].text == "zqsmall"
    assert (error.record, error.reason) == (
        "line 3",
        f"note cut while reading: {(vault / 'big.md').stat().st_size:,} bytes, 1 line longer than {MAX_LINE_BYTES:,} "
        f"bytes cut (the longest, line 3, had {BIG + 1:,})",
    )
    assert recorded_open.largest <= LARGEST_READ


def test_a_cut_keeps_whole_utf8_characters() -> None:
    line = "é".encode() * 10 + b"\n"
    read = read_capped(io.BytesIO(line * 2), max_line=7)
    assert read.data == "ééé\n".encode() * 2 and [c.line for c in read.cuts] == [1, 2]


def test_a_huge_string_in_a_zipped_export_is_cut_while_streaming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("conversations.json", "w") as member:
        write_huge_chatgpt_export(member, 2 * MAX_STRING_BYTES)
    largest = [0]
    real_read = zipfile.ZipExtFile.read

    def recording_read(self: zipfile.ZipExtFile, n: int = -1) -> bytes:
        largest[0] = max(largest[0], n if n >= 0 else BIG * 1000)
        return real_read(self, n)

    monkeypatch.setattr(zipfile.ZipExtFile, "read", recording_read)
    items, [error] = scan(ChatGPTSource(), path)
    assert [item.title for item in items] == ["big", "after"]
    assert len(items[0].messages[0].text) <= MAX_STRING_BYTES
    assert error.record == "conversations.json: conversation 0 (big)"
    assert error.reason.startswith(f"a string of {2 * MAX_STRING_BYTES:,} bytes was cut")
    assert largest[0] <= MAX_STRING_BYTES // 4
