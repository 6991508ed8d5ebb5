"""Every built-in plugin harvested end to end on a source the test writes (no ../shared needed):
only its own plugin claims it, each message becomes one frame at its own time, each conversation,
thread or note one session, every frame gets a vector, and an unchanged source writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mind_core import plugins
from mind_core.harvest.importer import frame_content
from mind_core.harvest.items import HarvestError, HarvestItem, HarvestMessage
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.testing.exports import (
    mail_threads,
    vault_notes,
    write_aistudio_prompts,
    write_chatgpt_export,
    write_claude_export,
    write_eml_folder,
    write_gemini_takeout,
    write_maildir,
    write_mbox,
    write_obsidian_vault,
)
from mind_core.testing.fakes import HashingEmbedder

SOURCES: dict[str, tuple[str, Callable[[Path], Path]]] = {
    "chatgpt": ("chatgpt", lambda root: write_chatgpt_export(root / "conversations.json", 3, 4)),
    "claude": ("claude", lambda root: write_claude_export(root / "claude", 3, 4)),
    "gemini-takeout": ("gemini", lambda root: write_gemini_takeout(root, 3, 2)),
    "gemini-aistudio": ("gemini", lambda root: write_aistudio_prompts(root / "Google AI Studio", 2, 4)),
    "mbox": ("email", lambda root: write_mbox(root / "falcon.mbox", mail_threads(3, 2))),
    "maildir": ("email", lambda root: write_maildir(root / "Maildir", mail_threads(3, 2))),
    "eml": ("email", lambda root: write_eml_folder(root / "mail", mail_threads(3, 2))),
    "obsidian": ("markdown", lambda root: write_obsidian_vault(root / "vault", vault_notes(4))),
}


def scanned(kind: str, path: Path) -> list[HarvestItem]:
    events = list(plugins.get_source(kind).scan(path))
    assert [e for e in events if isinstance(e, HarvestError)] == []
    return [e for e in events if isinstance(e, HarvestItem)]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_a_written_source_is_harvested_end_to_end(tmp_path: Path, name: str) -> None:
    kind, write = SOURCES[name]
    path = write(tmp_path / "source")
    assert [d.kind for d in plugins.rank_sources(path)] == [kind]  # no other plugin claims it
    items = scanned(kind, path)
    messages: dict[str, HarvestMessage] = {frame_content(i, m): m for i in items for m in i.messages}
    assert len(items) >= 2 and len(messages) > len(items)

    with Mind.open(tmp_path / "w.mind", embedder=HashingEmbedder()) as mind:
        register_source(mind, kind, path, name)
        report = harvest(mind, name)
        assert report.status == "ok" and report.imported.error_count == 0
        assert report.imported.items_seen == len(items)
        assert report.imported.frames_new == len(messages)
        frames = mind.frames.get_recent(1000)
        assert sorted(f.content for f in frames) == sorted(messages)
        assert len({f.gop_id for f in frames}) == len(items)  # one session per conversation / thread / note
        assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames_vec") == len(frames)
        timed = {text: m.timestamp for text, m in messages.items() if m.timestamp}
        assert {f.content: f.created_at for f in frames if f.content in timed} == timed  # the event's time

        again = harvest(mind, name)
        assert again.skipped and again.frames_held == len(messages)
        forced = harvest(mind, name, force=True)
        assert forced.imported.frames_new == forced.imported.frames_updated == 0
        assert forced.imported.frames_unchanged == len(messages)
