"""The Claude and Gemini plugins on exports the test writes (no ../shared needed), checked against
the written JSON read here independently: Claude turns with their authors and times, Takeout
prompts grouped into conversations by their time gaps with the HTML answers as text, and AI
Studio chats named by their files."""

from __future__ import annotations

import json
import re
from pathlib import Path

from mind_harvest.plugins.claude import ClaudeSource
from mind_harvest.plugins.gemini import GeminiSource

from mind_core.harvest.items import HarvestError, HarvestItem
from mind_core.testing.exports import (
    PEOPLE,
    write_aistudio_prompts,
    write_claude_export,
    write_gemini_takeout,
)


def scan(source: ClaudeSource | GeminiSource, path: Path) -> list[HarvestItem]:
    events = list(source.scan(path))
    assert [e for e in events if isinstance(e, HarvestError)] == []
    return [e for e in events if isinstance(e, HarvestItem)]


def test_claude_turns_keep_their_order_roles_authors_and_times(tmp_path: Path) -> None:
    folder = write_claude_export(tmp_path / "claude", conversations=3, messages_each=5)
    written = json.loads((folder / "conversations.json").read_text(encoding="utf-8"))
    items = scan(ClaudeSource(), folder)
    assert [(i.container_key, i.title) for i in items] == [(c["uuid"], c["name"]) for c in written]
    roles = {"human": ("user", PEOPLE[0][0]), "assistant": ("assistant", "Claude")}
    for item, conversation in zip(items, written, strict=True):
        assert [(m.role, m.author, m.timestamp, m.text) for m in item.messages] == [
            (*roles[m["sender"]], m["created_at"], m["text"]) for m in conversation["chat_messages"]
        ]


def answer_text(html: str) -> str:
    """The generated answer's text, read with regular expressions: the paragraph, then the list."""
    paragraph = re.search(r"<p>(.*?)</p>", html).group(1)
    return "\n\n".join([paragraph, "\n".join(f"- {li}" for li in re.findall(r"<li>(.*?)</li>", html))])


def test_takeout_prompts_group_by_time_and_html_answers_become_text(tmp_path: Path) -> None:
    path = write_gemini_takeout(tmp_path, conversations=3, prompts_each=3)
    entries = json.loads(path.read_text(encoding="utf-8"))[::-1]  # Takeout writes newest first
    items = scan(GeminiSource(), tmp_path / "Takeout")
    assert len(items) == 3  # prompts 5 minutes apart share a conversation; a day apart do not
    expected = []
    for entry in entries:
        expected += [
            ("user", entry["title"].removeprefix("Prompted "), entry["time"]),
            ("assistant", answer_text(entry["safeHtmlItem"][0]["html"]), entry["time"]),
        ]
    assert [(m.role, m.text, m.timestamp) for i in items for m in i.messages] == expected


def test_aistudio_chats_are_named_by_their_files(tmp_path: Path) -> None:
    folder = write_aistudio_prompts(tmp_path / "Google AI Studio", prompts=3, turns_each=4)
    items = scan(GeminiSource(), folder)
    assert sorted(i.title for i in items) == sorted(p.name for p in folder.iterdir())
    for item in items:
        chunks = json.loads((folder / item.title).read_text(encoding="utf-8"))["chunkedPrompt"]["chunks"]
        assert [(m.role, m.text) for m in item.messages] == [
            ("user" if c["role"] == "user" else "assistant", c["text"]) for c in chunks
        ]
