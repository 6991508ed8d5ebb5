"""The seed's remaining importers: Universal JSON items, Claude Code transcripts and Perplexity
threads. Each is detected by its keys, read one frame per message with the message's own time,
loses only the record that is broken (and says where), and re-harvesting it writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mind_core import plugins
from mind_core.harvest.items import HarvestError, HarvestItem
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.testing.exports import write_chatgpt_export
from mind_core.testing.fakes import HashingEmbedder
from mind_core.testing.message_exports import (
    claude_code_events,
    perplexity_threads,
    universal_items,
    write_claude_code_home,
    write_universal_items,
)


def scanned(kind: str, path: Path) -> tuple[list[HarvestItem], list[HarvestError]]:
    events = list(plugins.get_source(kind).scan(path))
    return [e for e in events if isinstance(e, HarvestItem)], [e for e in events if isinstance(e, HarvestError)]


def best_kind(path: Path) -> str:
    ranked = plugins.rank_sources(path)
    assert ranked and ranked[0].confident, ranked
    return ranked[0].kind


def harvested_twice(tmp_path: Path, path: Path, kind: str):
    """The first and a forced second harvest of ``path`` (the second reads the same files again)."""
    with Mind.open(tmp_path / "seed.mind", embedder=HashingEmbedder()) as mind:
        register_source(mind, kind, path, "seed")
        first = harvest(mind, "seed")
        again = harvest(mind, "seed", force=True)
        frames = mind.db.query("SELECT content, created_at FROM memory_frames ORDER BY id")
    return first, again, [tuple(row) for row in frames]


# -- Universal JSON ----------------------------------------------------------------------------
@pytest.mark.parametrize("form", ["array", "lines", "lines named .json", "one", "wrapped"])
def test_universal_items_in_every_form_are_one_frame_per_message_at_its_time(tmp_path: Path, form: str) -> None:
    items = universal_items(3, 4)
    items[0]["content"] = "a first line longer than any head a detector reads " * 2000
    path = tmp_path / ("items.jsonl" if form == "lines" else "items.json")
    if form == "lines named .json":
        write_universal_items(path, items, lines=True)
    elif form == "one":
        items = items[:1]
        path.write_text(json.dumps(items[0]))
    elif form == "wrapped":
        path.write_text(json.dumps({"items": items}))
    else:
        write_universal_items(path, items, lines=form == "lines")
    assert best_kind(path) == "universal"
    found, errors = scanned("universal", path)
    assert errors == [] and len(found) == len(items)
    for item, raw in zip(found, items, strict=True):
        assert item.title == raw["title"] and item.kind == "conversation"
        assert [m.text for m in item.messages] == [m["text"] for m in raw["messages"]]
        assert [m.timestamp for m in item.messages] == [m["timestamp"] for m in raw["messages"]]
        assert [m.role for m in item.messages] == [m["role"] for m in raw["messages"]]
        assert item.metadata["source"] == "chatgpt" and item.metadata["type"] == "conversation"


def test_a_universal_item_without_messages_is_one_frame_of_its_content_and_types_map(tmp_path: Path) -> None:
    items = [
        {"source": "manus", "type": "decision", "title": "Database", "content": "We chose Postgres over MySQL.",
         "timestamp": "2024-05-01T09:30:00+02:00", "metadata": {"tags": ["db"]}},
        {"source": "qwen", "type": "document", "title": "Notes", "content": "Quarterly plan.", "timestamp": 1714550400000},
    ]
    found, errors = scanned("universal", write_universal_items(tmp_path / "i.json", items))
    assert errors == []
    decision, document = found
    assert (decision.kind, document.kind) == ("memory", "note")
    assert decision.messages[0].text == "We chose Postgres over MySQL." and decision.messages[0].role is None
    assert decision.messages[0].timestamp == "2024-05-01T07:30:00.000Z"
    assert document.messages[0].timestamp == "2024-05-01T08:00:00.000Z"  # epoch milliseconds
    assert decision.metadata["metadata"] == {"tags": ["db"]} and decision.metadata["type"] == "decision"
    # an item without an id is keyed by what it holds: the same text is the same item next time
    assert scanned("universal", write_universal_items(tmp_path / "j.json", items))[0][0].key == decision.key


def test_a_broken_universal_record_costs_that_record_alone(tmp_path: Path) -> None:
    good = universal_items(3, 2)
    lines = [json.dumps(good[0]), "{not json", json.dumps({"title": "empty"}), json.dumps(good[1]), "[1]", json.dumps(good[2])]
    path = tmp_path / "items.jsonl"
    path.write_text("\n".join(lines) + "\n")
    found, errors = scanned("universal", path)
    assert [i.title for i in found] == ["Universal 0", "Universal 1", "Universal 2"]
    assert [e.record for e in errors] == ["line 2", "line 3", "line 5"]
    assert "no 'content'" in errors[1].reason
    array = tmp_path / "items.json"
    array.write_text("[" + json.dumps(good[0]) + ', {"title": "x", "messages": 5}, ' + json.dumps(good[1]) + "]")
    found, errors = scanned("universal", array)
    assert [i.title for i in found] == ["Universal 0", "Universal 1"]
    assert [e.record for e in errors] == ["item 1"] and "'messages' is a int" in errors[0].reason


def test_universal_harvest_then_re_harvest_writes_nothing(tmp_path: Path) -> None:
    path = write_universal_items(tmp_path / "src" / "items.jsonl", universal_items(2, 3), lines=True)
    first, again, frames = harvested_twice(tmp_path, path.parent, None)
    assert first.kind == "universal" and first.status == "ok" and first.imported.frames_new == 6
    assert again.imported.frames_new == again.imported.frames_updated == 0 and again.imported.unchanged
    assert frames[0][1] == "2023-11-14T22:13:20.000Z" and frames[0][0].startswith("[Universal 0] User: ")


# -- Claude Code ---------------------------------------------------------------------------------
def test_claude_code_sessions_are_one_frame_per_turn_with_tools_as_located_placeholders(tmp_path: Path) -> None:
    home = write_claude_code_home(tmp_path / ".claude", sessions=2, turns_each=4)
    assert best_kind(home) == "claude-code" and best_kind(home / "projects" / "-work-project") == "claude-code"
    found, errors = scanned("claude-code", home)
    assert errors == []
    sessions = [i for i in found if i.kind == "conversation"]
    assert [s.title for s in sessions] == ["Session session-0", "Session session-1"]
    first = sessions[0]
    assert [m.role for m in first.messages] == ["user", "assistant", "user", "assistant"]
    assert first.messages[0].timestamp == "2023-11-14T22:13:20.000Z"
    assert first.messages[1].timestamp == "2023-11-14T22:14:20.000Z"
    answer = first.messages[1].text.splitlines()
    # the tool call (its own line of the transcript) joins its turn; the 40-line output is a placeholder
    assert answer[1:] == ["[Tool call Bash: make test (line 4)]", "[Tool result: 40 lines (line 5)]"]
    assert "ok\nok" not in first.messages[1].text
    assert first.metadata["session_id"] == "session-0" and first.metadata["cwd"] == "/work/project"
    assert first.container_key == "-work-project/session-0"
    settings = next(i for i in found if i.title == "Claude Code settings")
    assert settings.messages[0].text.splitlines() == [
        "Preferred model: opus", "Extended thinking: enabled", "Allowed tools: 2 configured",
    ]
    assert any(i.title == "Project CLAUDE.md (-work-project)" and i.kind == "artifact" for i in found)


def test_a_broken_transcript_line_costs_that_line_alone(tmp_path: Path) -> None:
    events = claude_code_events("s", ["first question", "first answer", "second question"])
    lines = [json.dumps(e) for e in events]
    lines.insert(2, '{"type": "user", "message": ')  # cut off mid-write
    lines.insert(4, '"a string"')
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    found, errors = scanned("claude-code", path)
    assert [e.record for e in errors] == ["line 3", "line 5"]
    assert [m.text.splitlines()[0] for m in found[0].messages] == ["first question", "first answer", "second question"]


def test_a_subagent_transcript_is_its_own_session_of_its_project(tmp_path: Path) -> None:
    home = write_claude_code_home(tmp_path / ".claude", sessions=1, turns_each=2)
    subagents = home / "projects" / "-work-project" / "session-0" / "subagents"
    subagents.mkdir(parents=True)
    events = [{**e, "agentId": "a7", "isSidechain": True} for e in claude_code_events("session-0", ["look up the cache", "found it"])]
    (subagents / "agent-a7.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    for root in (home, home / "projects", home / "projects" / "-work-project"):
        sessions = [i for i in scanned("claude-code", root)[0] if i.kind == "conversation"]
        assert [(s.container_key, s.metadata["project"]) for s in sessions] == [
            ("-work-project/session-0", "-work-project"), ("-work-project/session-0/a7", "-work-project"),
        ]
        assert sessions[1].messages[0].metadata["sidechain"] is True


def test_claude_code_re_harvest_writes_nothing(tmp_path: Path) -> None:
    home = write_claude_code_home(tmp_path / ".claude", sessions=1, turns_each=4)
    first, again, _ = harvested_twice(tmp_path, home, None)
    assert first.kind == "claude-code" and first.status == "ok" and first.imported.frames_new == 6
    assert again.imported.frames_new == again.imported.frames_updated == 0 and again.imported.unchanged


def test_other_json_lines_and_exports_are_not_claude_code(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    history.write_text(json.dumps({"display": "hello", "timestamp": 1, "project": "/x"}) + "\n")
    assert plugins.rank_sources(history) == [] or best_kind(history) != "claude-code"
    chatgpt = write_chatgpt_export(tmp_path / "gpt" / "conversations.json", 1, 2)
    assert best_kind(chatgpt) == "chatgpt"
    assert "claude-code" not in {d.kind for d in plugins.rank_sources(chatgpt)}


# -- Perplexity ----------------------------------------------------------------------------------
@pytest.mark.parametrize("form", ["array", "threads", "conversations", "one"])
def test_perplexity_threads_in_every_form(tmp_path: Path, form: str) -> None:
    threads = perplexity_threads(2, 4)
    data = {"array": threads, "threads": {"threads": threads}, "conversations": {"conversations": threads},
            "one": threads[0]}[form]
    path = tmp_path / "perplexity.json"
    path.write_text(json.dumps(data))
    assert best_kind(path) == "perplexity"
    found, errors = scanned("perplexity", path)
    assert errors == [] and len(found) == (1 if form == "one" else 2)
    thread = found[0]
    assert thread.title == "Perplexity question 0" and [m.role for m in thread.messages] == ["user", "assistant"] * 2
    assert thread.messages[0].timestamp == "2023-11-14T22:13:20.000Z"  # epoch milliseconds
    answer = thread.messages[1]
    assert answer.text.endswith("\n\nSources: https://example.com/0/1, https://docs.example.org/1")
    assert answer.metadata["sources"] == ["https://example.com/0/1", "https://docs.example.org/1"]
    assert thread.metadata["has_citations"] is True and thread.metadata["thread_id"] == "thread-0"


def test_perplexity_roles_question_answer_turns_and_a_broken_thread(tmp_path: Path) -> None:
    threads = [
        {"title": "QA", "turns": [{"query": "What is RRF?", "answer": "Reciprocal rank fusion.", "web_results": [{"link": "https://x.org"}]}]},
        {"title": "Broken", "messages": "not a list"},
        {"name": "Roles", "messages": [{"author": "Human", "text": "hi"}, {"sender": "perplexity", "text": "hello"},
                                       {"type": "answer", "content": {"parts": ["part one", "part two"]}},
                                       {"role": "narrator", "text": "dropped"}]},
    ]
    path = tmp_path / "perplexity.json"
    path.write_text(json.dumps(threads))
    found, errors = scanned("perplexity", path)
    assert [e.record for e in errors] == ["thread 1"]
    qa, roles = found
    assert [(m.role, m.text) for m in qa.messages] == [
        ("user", "What is RRF?"), ("assistant", "Reciprocal rank fusion.\n\nSources: https://x.org"),
    ]
    assert [(m.role, m.text) for m in roles.messages] == [
        ("user", "hi"), ("assistant", "hello"), ("assistant", "part one\npart two"),
    ]
    assert roles.metadata["dropped_entries"] == 1 and roles.title == "Roles"


def test_a_universal_item_naming_perplexity_is_universal_and_perplexity_re_harvest_writes_nothing(tmp_path: Path) -> None:
    item = {**universal_items(1, 2)[0], "source": "perplexity"}
    universal = write_universal_items(tmp_path / "u.json", [item])
    assert best_kind(universal) == "universal"
    assert "perplexity" not in {d.kind for d in plugins.rank_sources(universal)}
    folder = tmp_path / "px"
    folder.mkdir()
    (folder / "threads.json").write_text(json.dumps(perplexity_threads(2, 2)))
    first, again, frames = harvested_twice(tmp_path, folder, None)
    assert first.kind == "perplexity" and first.imported.frames_new == 4
    assert again.imported.frames_new == again.imported.frames_updated == 0 and again.imported.unchanged
