"""Plain text files: paragraph blocks, underlined headings, the file's time as a borrowed time."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from mind_harvest.plugins.plaintext import BLOCK_CHARS, PlainTextSource, blocks

from mind_core import plugins
from mind_core.harvest.items import HarvestError, HarvestItem
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.harvest.source_files import ReadingRules, reading_with
from mind_core.mind import Mind
from mind_core.search.scoring import FILE_TIME, borrowed_time
from mind_core.testing.fakes import HashingEmbedder
from mind_core.testing.message_exports import write_whatsapp_export

SOURCE = PlainTextSource()
MTIME = 1_650_000_000  # 2022-04-15T05:20:00Z


def scan(path: Path) -> tuple[list[HarvestItem], list[HarvestError]]:
    events = list(SOURCE.scan(path))
    return [e for e in events if isinstance(e, HarvestItem)], [
        e for e in events if isinstance(e, HarvestError)
    ]


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    os.utime(path, (MTIME, MTIME))
    return path


def test_short_paragraphs_gather_and_an_underlined_heading_opens_a_block() -> None:
    text = "first para\nstill first\n\nsecond para\n\nTravel\n======\n\nlisbon in may\n\n\nberlin in june\n"
    found = blocks(text)
    assert [(b.line, b.heading, b.paragraphs) for b in found] == [
        (1, None, ["first para\nstill first", "second para"]),
        (6, "Travel", ["lisbon in may", "berlin in june"]),
    ]
    assert found[1].text == "Travel\n\nlisbon in may\n\nberlin in june"


def test_a_block_stops_before_passing_the_limit_and_a_long_paragraph_stands_alone() -> None:
    short, long = "a" * 600, "b" * (BLOCK_CHARS + 10)
    found = blocks("\n\n".join([short, short, short, long, short]))
    assert [b.size for b in found] == [1200, 600, BLOCK_CHARS + 10, 600]


def test_each_block_is_a_frame_dated_by_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "journal.txt", "Went to the lake.\n\n" + "x " * 900 + "\n")
    assert plugins.detect_source(path).kind == "plaintext"
    items, errors = scan(path)
    assert errors == [] and items[0].title == "journal" and items[0].kind == "note"
    assert [m.text[:17] for m in items[0].messages] == ["Went to the lake.", "x x x x x x x x x"]
    assert {m.timestamp for m in items[0].messages} == {"2022-04-15T05:20:00.000Z"}
    assert {m.metadata["dated_by"] for m in items[0].messages} == {"file"}


def test_a_folder_skips_hidden_files_binaries_and_chat_exports(tmp_path: Path) -> None:
    write(tmp_path / "a.txt", "alpha\n")
    write(tmp_path / "sub" / "b.text", "beta\n")
    write(tmp_path / ".hidden.txt", "secret\n")
    write(tmp_path / "blob.txt", b"\x00\x01binary")
    write(tmp_path / "bad.txt", b"caf\xe9 au lait\n")
    write_whatsapp_export(tmp_path / "_chat.txt", [("Ann", "hi", datetime(2023, 1, 20, 9, 0))], "android")
    items, errors = scan(tmp_path)
    assert [i.metadata["path"] for i in items] == ["a.txt", "bad.txt", "sub/b.text"]
    assert items[1].messages[0].text == "caf\ufffd au lait"
    assert sorted(e.reason.split(";")[0] for e in errors) == [
        "binary content (NUL bytes) in a text file",
        "invalid UTF-8",
    ]
    assert "plaintext" not in {d.kind for d in plugins.rank_sources(tmp_path / "_chat.txt")}


def test_harvested_text_has_no_recency_of_its_own(tmp_path: Path) -> None:
    write(tmp_path / "notes" / "ideas.txt", "a garden with tomatoes\n\nanother idea about bikes\n")
    with Mind.open(tmp_path / "a.mind", embedder=HashingEmbedder()) as mind:
        register_source(mind, None, tmp_path / "notes", "txt")
        report = harvest(mind, "txt")
        assert report.imported.frames_new == 1  # two short paragraphs: one block
        result = mind.search.search("tomatoes", limit=1)[0]
        assert borrowed_time(result.frame) == FILE_TIME
        assert result.frame.created_at == "2022-04-15T05:20:00.000Z"


def test_a_file_over_the_source_s_limit_is_named_and_the_others_kept(tmp_path: Path) -> None:
    write(tmp_path / "short.txt", "A short note about herons.\n")
    write(tmp_path / "long.txt", "A long note. " * 100)
    (tmp_path / "elsewhere.txt").symlink_to("/etc/hostname")
    with reading_with(ReadingRules(max_file_bytes=200)):
        items, errors = scan(tmp_path)
    assert [i.title for i in items] == ["short"]
    assert {Path(e.path).name: e.reason.split(",")[0] for e in errors} == {
        "elsewhere.txt": "a symlink to /etc/hostname",
        "long.txt": "cannot read: 1",
    }
    assert "over the 200-byte limit" in next(e.reason for e in errors if e.path.endswith("long.txt"))
