"""One invalid UTF-8 byte inside a chat export loses nothing (issue #14, Deliver 2).

Before, the stream parser stopped at the first bad byte: every record after it was silently not
imported and the run looked fine. Now the bytes are replaced with U+FFFD, the record that held
them is named by exactly one warning, and every record after it is imported.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mind_core.embeddings.mock import MockEmbedder
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.testing.hostile import _has_marker, export_with_bad_bytes

RECORDS = 6
BROKEN = 3
LOCATION = {
    "chatgpt": "conversation 3 (rec-3)",
    "claude": "conversations.json record 3",
    "gemini": "entry 3",
}


@pytest.mark.parametrize("kind", sorted(LOCATION))
def test_every_record_after_a_bad_byte_is_imported_and_the_record_named(tmp_path: Path, kind: str) -> None:
    path, marks = export_with_bad_bytes(tmp_path / "export", kind, RECORDS, {BROKEN})
    with Mind.open(tmp_path / "w.mind", embedder=MockEmbedder(1024)) as mind:
        register_source(mind, kind, path, "src")
        summary = harvest(mind, "src").imported
        missing = [mark for mark in marks if not _has_marker(mind, mark)]
        replaced = mind.db.scalar("SELECT COUNT(*) FROM memory_frames WHERE content LIKE ?", ("%\ufffd%",))
    assert summary is not None and missing == []
    assert replaced >= 1
    assert [(e.path, e.record) for e in summary.errors] == [(str(path), LOCATION[kind])]
    assert summary.errors[0].reason.startswith("invalid UTF-8: 3 bytes replaced with U+FFFD")
