"""Claude source: the real export set, the variant shape, branches, archives and broken inputs."""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from mind_harvest.plugins.claude import ClaudeSource

from mind_core.harvest.items import HarvestError, HarvestItem

SOURCE = ClaudeSource()
ROOT_PARENT = "00000000-0000-4000-8000-000000000000"


def scan(path: Path) -> tuple[list[HarvestItem], list[HarvestError]]:
    events = list(SOURCE.scan(path))
    return [e for e in events if isinstance(e, HarvestItem)], [
        e for e in events if isinstance(e, HarvestError)
    ]


def message(
    uuid: str, sender: str, text: str, created: str, parent: str | None = None, **extra: object
) -> dict:
    data = {
        "uuid": uuid,
        "sender": sender,
        "text": text,
        "content": [{"type": "text", "text": text}],
        "created_at": created,
        "attachments": [],
        "files": [],
        **extra,
    }
    if parent is not None:
        data["parent_message_uuid"] = parent
    return data


def chat(uuid: str, messages: list[dict], name: str = "Falcon planning") -> dict:
    return {"uuid": uuid, "name": name, "created_at": "2025-03-01T09:00:00Z", "chat_messages": messages}


# --- real exports ---------------------------------------------------------------------------------


def test_anthropic_export_folder(shared_data: Path) -> None:
    folder = shared_data / "chat-exports/claude/anthropic-data-2025"
    raw = json.loads((folder / "conversations.json").read_text(encoding="utf-8"))[0]
    answer_block = next(b["text"] for b in raw["chat_messages"][1]["content"] if b["type"] == "text")
    thinking_block = next(
        b["thinking"] for b in raw["chat_messages"][1]["content"] if b["type"] == "thinking"
    )
    assert raw["chat_messages"][1]["text"].startswith(thinking_block)  # the flat text glues both

    items, errors = scan(folder)
    assert errors == []
    assert Counter(i.kind for i in items) == {"conversation": 1, "artifact": 1, "memory": 1}
    talk = next(i for i in items if i.kind == "conversation")
    assert talk.title == "Bleep bloop" and talk.container_key == "b49c0fc0-85d8-475c-bd2d-ee89f31f592c"
    human, assistant = talk.messages
    assert (human.role, human.author) == ("user", "test_user_1")
    assert human.text == "Tell me about the facts behind the belief that dog saliva is anti bacterial etc"
    assert (assistant.role, assistant.author) == ("assistant", "Claude")
    assert assistant.text == answer_block.strip()
    assert thinking_block[:40] not in assistant.text
    assert talk.metadata["skipped"] == {"thinking": 1}
    assert human.timestamp == "2025-07-06T03:10:13.609Z" and assistant.timestamp == "2025-07-06T03:10:24.798Z"
    assert talk.timestamp == "2025-07-06T03:10:13.076Z"

    doc = next(i for i in items if i.kind == "artifact")
    raw_doc = json.loads((folder / "projects.json").read_text(encoding="utf-8"))[0]["docs"][0]
    assert doc.title == "Claude prompting guide.md"
    assert doc.messages[0].text == raw_doc["content"].strip()
    assert doc.metadata["project_name"] == "How to use Claude"
    assert doc.timestamp == "2025-06-27T10:46:02.691Z"  # +00:00 normalized
    memory = next(i for i in items if i.kind == "memory")
    assert memory.messages[0].text == "This is some nonsense"


def test_variant_shape_with_title_and_no_content_blocks(shared_data: Path) -> None:
    path = shared_data / "chat-exports/claude/polylogue-fixtures/origin-claude-ai-export.json"
    assert SOURCE.detect(path)
    [item], errors = scan(path)
    assert errors == []
    assert item.title == "Origin capability matrix"
    assert [(m.key, m.role, m.text, m.timestamp) for m in item.messages] == [
        ("message-1", "user", "Prove the parser claim.", "2026-08-01T10:00:01.000Z")
    ]


def test_a_folder_of_conversations_saved_one_by_one(tmp_path: Path) -> None:
    folder = tmp_path / "saved"
    folder.mkdir()

    def save(name: str, uuid: str, text: str, title: str) -> None:
        talk = chat(uuid, [message(f"{uuid}-m", "human", text, "2025-03-01T09:00:00Z")], title)
        (folder / name).write_text(json.dumps(talk), encoding="utf-8")

    save("falcon.json", "c1", "Which database for Falcon?", "Falcon planning")
    save("budget.JSON", "c2", "The budget is 40k.", "Budget")
    (folder / "notes.json").write_text('{"mapping": {}}', encoding="utf-8")  # ChatGPT's shape: not read
    (folder / "broken.json").write_text('{"uuid": "c3", "chat_messages": [', encoding="utf-8")
    assert SOURCE.detect(folder)
    fingerprint = SOURCE.fingerprint(folder)

    items, errors = scan(folder)
    assert sorted(i.title for i in items) == ["Budget", "Falcon planning"]
    assert [Path(e.path).name for e in errors] == ["broken.json"]  # located; the others kept

    save("budget.JSON", "c2", "The budget is now 45k.", "Budget")
    assert SOURCE.fingerprint(folder) != fingerprint


def test_a_folder_without_claude_files_says_what_it_looked_for(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text('{"mapping": {}}', encoding="utf-8")
    assert not SOURCE.detect(tmp_path)
    items, [error] = scan(tmp_path)
    assert items == [] and "no saved Claude conversation" in error.reason


def test_detects_claude_but_not_chatgpt(shared_data: Path) -> None:
    exports = shared_data / "chat-exports"
    assert SOURCE.detect(exports / "claude/anthropic-data-2025")
    assert not SOURCE.detect(exports / "chatgpt/chatgpt2graph-2023")
    assert not SOURCE.detect(exports / "chatgpt/polylogue-fixtures/native-conversation-v1.json")


# --- branches, blocks, attachments ------------------------------------------------------------------


def test_branch_follows_parent_uuids_to_the_latest_leaf(tmp_path: Path) -> None:
    messages = [
        message("q1", "human", "Which database for Falcon?", "2025-03-01T09:00:00Z", ROOT_PARENT),
        message("a1", "assistant", "MySQL.", "2025-03-01T09:00:05Z", "q1"),
        message("a1-retry", "assistant", "PostgreSQL.", "2025-03-01T09:01:00Z", "q1"),
        message("q2", "human", "Why?", "2025-03-01T09:02:00Z", "a1-retry"),
        message("a2", "assistant", "JSONB and extensions.", "2025-03-01T09:02:10Z", "q2"),
    ]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([chat("c1", messages)]), encoding="utf-8")
    [item], errors = scan(path)
    assert errors == []
    assert [m.key for m in item.messages] == ["q1", "a1-retry", "q2", "a2"]
    assert item.metadata["branch"] == "latest_leaf"
    assert item.metadata["skipped"] == {"other_branches": 1}


def test_blocks_attachments_and_wrapper_shape(tmp_path: Path) -> None:
    blocks = [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "text", "text": "Here is the plan."},
        {
            "type": "tool_use",
            "name": "artifacts",
            "input": {"id": "plan", "title": "Rollout plan", "content": "1. Migrate Kafka"},
        },
        {"type": "tool_use", "name": "web_search", "input": {"query": "pgvector"}},
        {"type": "tool_result", "name": "web_search", "content": [{"type": "text", "text": "pgvector 0.7"}]},
    ]
    human = message(
        "h",
        "human",
        "See the notes",
        "2025-03-01T09:00:00+02:00",
        attachments=[{"file_name": "notes.txt", "extracted_content": "Alice owns the migration."}],
        files=[{"file_name": "diagram.png"}],
    )
    assistant = message("a", "assistant", "flat text with hmm", "2025-03-01T09:00:09+02:00", content=blocks)
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps({"conversations": [chat("c2", [human, assistant])]}), encoding="utf-8")
    [item], errors = scan(path)
    assert errors == []
    first, second = item.messages
    assert (
        first.text
        == "See the notes\n[Attached: notes.txt]\nAlice owns the migration.\n[Attached: diagram.png]"
    )
    assert first.timestamp == "2025-03-01T07:00:00.000Z"
    assert second.text.split("\n\n") == [
        "Here is the plan.",
        "[Artifact: Rollout plan]\n1. Migrate Kafka",
        '[Tool call: web_search] {"query": "pgvector"}',
        "[Tool result: web_search] pgvector 0.7",
    ]
    assert item.metadata["branch"] == "listed_order"


def test_projects_instructions_and_project_memories(tmp_path: Path) -> None:
    (tmp_path / "conversations.json").write_text("[]", encoding="utf-8")
    project = {
        "uuid": "p1",
        "name": "Project Falcon",
        "prompt_template": "Answer as the Falcon team's architect.",
        "created_at": "2025-01-01T00:00:00Z",
        "updated_at": "2025-02-01T00:00:00Z",
        "docs": [
            {"uuid": "d1", "filename": "architecture.md", "content": "Falcon uses PostgreSQL 16."},
            {"uuid": "d2", "filename": "empty.md", "content": "   "},
        ],
    }
    (tmp_path / "projects.json").write_text(json.dumps([project]), encoding="utf-8")
    memories = [{"conversations_memory": "Works on Falcon.", "project_memories": {"p1": "Prefers Kafka."}}]
    (tmp_path / "memories.json").write_text(json.dumps(memories), encoding="utf-8")
    items, errors = scan(tmp_path)
    assert errors == []
    assert [(i.kind, i.title) for i in items] == [
        ("instruction", "Claude project instructions: Project Falcon"),
        ("artifact", "architecture.md"),
        ("memory", "Claude memory — conversations"),
        ("memory", "Claude memory — project Project Falcon"),
    ]
    artifact = items[1]
    assert artifact.timestamp == "2025-02-01T00:00:00.000Z"  # no doc time: the project's updated_at
    assert artifact.container_key == items[0].container_key == "claude-project:p1"


# --- broken inputs and archives ----------------------------------------------------------------------


def test_bad_records_and_a_truncated_file_do_not_stop_the_other_files(tmp_path: Path) -> None:
    good = chat("ok", [message("m", "human", "kept", "2025-03-01T09:00:00Z")])
    body = json.dumps([good, 7, {"uuid": "nomsg"}, good | {"uuid": "ok2"}, good | {"uuid": "cut"}])
    (tmp_path / "conversations.json").write_text(body[: body.rindex('"cut"') + 2], encoding="utf-8")
    (tmp_path / "projects.json").write_text(
        json.dumps([{"uuid": "p", "name": "P", "docs": [3]}]), encoding="utf-8"
    )
    (tmp_path / "memories.json").write_bytes(b"\x00\x01binary")
    items, errors = scan(tmp_path)
    assert [i.container_key for i in items] == ["ok", "ok2"]
    assert [e.record for e in errors] == [
        "conversation 1",
        "conversation 2 (nomsg)",
        "conversations.json record 4",
        "project 0",
        "memories.json record 0",
    ]


@pytest.mark.parametrize("content", [b"", b"\xff\xfe\x00garbage", b'[{"uuid": "x", "chat_messages": "no"}]'])
def test_single_bad_file_gives_errors_not_exceptions(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "conversations.json"
    path.write_bytes(content)
    items, errors = scan(path)
    assert items == [] and len(errors) == 1


def test_zip_with_export_in_a_folder(tmp_path: Path) -> None:
    archive = tmp_path / "claude-export.zip"
    conversation = chat("z", [message("m", "human", "from the zip", "2025-03-01T09:00:00Z")])
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("data-2025/conversations.json", json.dumps([conversation]))
        zf.writestr("data-2025/users.json", json.dumps([{"uuid": "u", "full_name": "Alice Johnson"}]))
        zf.writestr("../escape/memories.json", json.dumps([{"conversations_memory": "never read"}]))
    assert SOURCE.detect(archive)
    items, errors = scan(archive)
    assert [(i.container_key, i.messages[0].author) for i in items] == [("z", "Alice Johnson")]
    assert items[0].metadata["path"] == f"{archive}!data-2025"
    assert [(e.record, "unsafe" in e.reason) for e in errors] == [("../escape/memories.json", True)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claude-export.zip"]
