"""Every chat export in ../shared/data is recognised by the right plugin and scans without errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from mind_core import plugins
from mind_core.harvest.items import HarvestError, HarvestItem

EXPORTS = [
    ("chatgpt/chatgpt2graph-2023", "chatgpt", 1),
    ("chatgpt/polylogue-fixtures/native-conversation-v1.json", "chatgpt", 2),
    ("chatgpt/polylogue-fixtures/origin-chatgpt-export.json", "chatgpt", 1),
    ("claude/anthropic-data-2025", "claude", 3),
    ("claude/polylogue-fixtures/origin-claude-ai-export.json", "claude", 1),
    ("gemini/polylogue-aistudio", "gemini", 2),
]


@pytest.mark.parametrize(("relative", "kind", "items"), EXPORTS)
def test_export_is_detected_and_scans_cleanly(
    shared_data: Path, relative: str, kind: str, items: int
) -> None:
    path = shared_data / "chat-exports" / relative
    source = plugins.detect_source(path)
    assert source is not None and source.kind == kind
    events = list(source.scan(path))
    assert [e for e in events if isinstance(e, HarvestError)] == []
    assert sum(isinstance(e, HarvestItem) for e in events) == items
    assert source.fingerprint(path) == source.fingerprint(path)


def test_every_chat_export_folder_is_covered(shared_data: Path) -> None:
    folders = {
        p.relative_to(shared_data / "chat-exports").as_posix()
        for p in (shared_data / "chat-exports").glob("*/*")
    }
    covered = {relative.split("/")[0] + "/" + relative.split("/")[1] for relative, _, _ in EXPORTS}
    assert folders == covered
