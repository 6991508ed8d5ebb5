"""One invalid UTF-8 byte inside a chat export loses nothing (issue #14, Deliver 2).

Before, the stream parser stopped at the first bad byte: every record after it was silently not
imported and the run looked fine. Now the bytes are replaced with U+FFFD, the record that held
them is named by exactly one warning, and every record after it is imported.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from mind_core.embeddings.mock import MockEmbedder
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from tests.exports import chatgpt_conversation
from tests.reliability.hostile import Markers, _claude_conversation, _has_marker, _text

BAD_BYTES = b"\xff\xfe\xc3("  # a stray byte, another, and a lead byte without its continuation
RECORDS = 6
BROKEN = 3


def _chatgpt(uuid: str, texts: list[str]) -> dict:
    return chatgpt_conversation(uuid, f"chat {uuid}", texts)


def _takeout_entry(uuid: str, texts: list[str]) -> dict:
    return {
        "header": "Gemini Apps",
        "title": f"Prompted {texts[0]}",
        "time": f"2025-01-0{int(uuid[-1]) + 1}T03:04:05.678Z",
        "safeHtmlItem": [{"html": f"<p>{texts[1]}</p>"}],
    }


EXPORTS = {
    "chatgpt": ("conversations.json", _chatgpt, "conversation 3 (rec-3)"),
    "claude": ("conversations.json", _claude_conversation, "conversations.json record 3"),
    "gemini": ("MyActivity.json", _takeout_entry, "entry 3"),
}


def write_export_with_bad_byte(folder: Path, kind: str) -> tuple[Path, list[str]]:
    """An export of RECORDS records whose record BROKEN holds invalid UTF-8; all their markers."""
    file_name, make, _ = EXPORTS[kind]
    rng, markers = random.Random(14), Markers()
    records, marks = [], []
    for index in range(RECORDS):
        texts = [_text(rng, markers(kind)) for _ in range(2)]
        marks += [text.rsplit(" ", 1)[1] for text in texts]
        data = json.dumps(make(f"rec-{index}", texts)).encode()
        if index == BROKEN:
            data = data.replace(b"zqmark", BAD_BYTES + b"zqmark", 1)
        records.append(data)
    folder.mkdir(parents=True)
    path = folder / file_name
    path.write_bytes(b"[" + b", ".join(records) + b"]")
    return path, marks


@pytest.mark.parametrize("kind", sorted(EXPORTS))
def test_every_record_after_a_bad_byte_is_imported_and_the_record_named(tmp_path: Path, kind: str) -> None:
    path, marks = write_export_with_bad_byte(tmp_path / "export", kind)
    with Mind.open(tmp_path / "w.mind", embedder=MockEmbedder(1024)) as mind:
        register_source(mind, kind, path, "src")
        summary = harvest(mind, "src").imported
        missing = [mark for mark in marks if not _has_marker(mind, mark)]
        replaced = mind.db.scalar("SELECT COUNT(*) FROM memory_frames WHERE content LIKE ?", ("%\ufffd%",))
    assert summary is not None and missing == []
    assert replaced >= 1
    assert [(e.path, e.record) for e in summary.errors] == [(str(path), EXPORTS[kind][2])]
    assert summary.errors[0].reason.startswith("invalid UTF-8: 3 bytes replaced with U+FFFD")
