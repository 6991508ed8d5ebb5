"""ChatGPT source: real exports (branches, content types, timestamps) and broken inputs."""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from mind_harvest.plugins._jsonstream import MAX_STRING_BYTES
from mind_harvest.plugins.chatgpt import ChatGPTSource

from mind_core.harvest.items import HarvestError, HarvestItem

SOURCE = ChatGPTSource()


def scan(path: Path) -> tuple[list[HarvestItem], list[HarvestError]]:
    events = list(SOURCE.scan(path))
    return [e for e in events if isinstance(e, HarvestItem)], [
        e for e in events if isinstance(e, HarvestError)
    ]


def utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def conversation(
    conversation_id: str, texts: list[tuple[str, str]], current: bool = True, start: float = 1.7e9
) -> dict:
    """A linear conversation: root, then one node per (role, text)."""
    mapping = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    for index, (role, text) in enumerate(texts):
        node_id = f"{conversation_id}-{index}"
        mapping[parent]["children"].append(node_id)
        mapping[node_id] = {
            "id": node_id,
            "parent": parent,
            "children": [],
            "message": {
                "id": node_id,
                "author": {"role": role},
                "create_time": start + index,
                "content": {"content_type": "text", "parts": [text]},
                "metadata": {},
            },
        }
        parent = node_id
    data = {
        "id": conversation_id,
        "title": f"Talk {conversation_id}",
        "create_time": start,
        "mapping": mapping,
    }
    if current:
        data["current_node"] = parent
    return data


# --- real exports -------------------------------------------------------------------------------


def test_chatgpt2graph_visible_messages_match_an_independent_count(shared_data: Path) -> None:
    path = shared_data / "chat-exports/chatgpt/chatgpt2graph-2023/conversations.json"
    raw = json.loads(path.read_text(encoding="utf-8"))[0]
    # Independent expectation: this tree never branches (checked here), so the visible branch is
    # every node that has a message, is not system and is not marked hidden.
    assert all(len(node["children"]) <= 1 for node in raw["mapping"].values())
    expected_roles = Counter(
        node["message"]["author"]["role"]
        for node in raw["mapping"].values()
        if node["message"]
        and node["message"]["author"]["role"] != "system"
        and not node["message"]["metadata"].get("is_visually_hidden_from_conversation")
    )
    assert expected_roles == {"user": 8, "assistant": 23, "tool": 11}  # the data README's census

    items, errors = scan(path)
    assert errors == []
    assert len(items) == 1
    item = items[0]
    assert item.kind == "conversation"
    assert item.title == "Average Distance in U(0,1)"
    assert item.container_key == "966da5c4-5bb7-4e4d-ab6d-a7316b96266e"
    assert Counter(m.role for m in item.messages) == expected_roles
    assert item.metadata["skipped"] == {"hidden_or_system": 2}
    types = Counter(m.metadata["content_type"] for m in item.messages)
    assert types == {"text": 20, "code": 11, "execution_output": 11}

    first = item.messages[0]
    assert first.role == "user" and first.text.startswith("given two random independent variables")
    assert first.timestamp == utc(1695326273.969279) == "2023-09-21T19:57:53.969Z"
    assert item.timestamp == "2023-09-21T19:57:53.968Z"
    timestamps = [m.timestamp for m in item.messages]
    assert timestamps == sorted(timestamps)
    code = next(m for m in item.messages if m.metadata["content_type"] == "code")
    assert code.text.startswith("```python\nfrom sympy import") and code.text.endswith("```")
    output = next(m for m in item.messages if m.role == "tool")
    assert output.text == "[python] Output:\n0" and output.metadata["tool"] == "python"
    assert any("[Image]" in m.text for m in item.messages if m.role == "tool")
    assert len({m.key for m in item.messages}) == len(item.messages)


def test_polylogue_native_fixture_keeps_only_the_current_branch(shared_data: Path) -> None:
    path = shared_data / "chat-exports/chatgpt/polylogue-fixtures/native-conversation-v1.json"
    items, errors = scan(path)
    assert errors == []
    instruction, talk = items
    assert instruction.kind == "instruction"
    assert "Privacy-safe fixture profile." in instruction.messages[0].text
    assert "Preserve structured provider evidence." in instruction.messages[0].text

    # current_node = answer-active; its ancestors are recap-active, tool-result, tool-call,
    # thought-active, user, context, root. thoughts / reasoning_recap are skipped by design and
    # the context node is the instruction item, which leaves these four.
    assert [m.key for m in talk.messages] == ["user", "tool-call", "tool-result", "answer-active"]
    assert all("Superseded answer." not in m.text for m in talk.messages)
    assert talk.metadata["branch"] == "current_node"
    assert talk.metadata["skipped"] == {"thoughts": 1, "reasoning_recap": 1}
    user, call, result, answer = talk.messages
    assert user.text.splitlines() == [
        "Analyze the attached fixture and create an artifact.",
        "[Image: fixture-input-image]",
        "[Attached: input.txt]",
    ]
    assert call.role == "assistant" and call.text.startswith("[Call browser.search]")
    assert result.role == "tool" and result.text == "[browser.search] Output:\nPrivacy-safe tool result."
    assert answer.text.endswith("[Image: fixture-output-image]")
    assert answer.timestamp == utc(1784169733.0)
    assert talk.metadata["model"] == "gpt-5-6-pro"


def test_polylogue_minimal_export(shared_data: Path) -> None:
    items, errors = scan(shared_data / "chat-exports/chatgpt/polylogue-fixtures/origin-chatgpt-export.json")
    assert errors == []
    [item] = items
    assert [(m.role, m.text) for m in item.messages] == [("user", "Prove the parser claim.")]
    assert item.timestamp == "2026-08-01T10:00:00.000Z"


def test_detects_chatgpt_but_not_claude(shared_data: Path) -> None:
    exports = shared_data / "chat-exports"
    assert SOURCE.detect(exports / "chatgpt/chatgpt2graph-2023")
    assert SOURCE.detect(exports / "chatgpt/chatgpt2graph-2023/conversations.json")
    assert not SOURCE.detect(exports / "claude/anthropic-data-2025")
    assert not SOURCE.detect(exports / "claude/anthropic-data-2025/conversations.json")
    assert not SOURCE.detect(exports / "gemini/polylogue-aistudio/aistudio-drive.json")


def test_a_folder_of_saved_conversations_is_read_file_by_file(shared_data: Path, tmp_path: Path) -> None:
    """A folder without conversations.json whose JSON files are ChatGPT conversations (as the
    polylogue fixtures are) is detected and read whole; a file that is not one is left alone."""
    fixtures = shared_data / "chat-exports/chatgpt/polylogue-fixtures"
    folder = tmp_path / "saved"
    folder.mkdir()
    for file in fixtures.glob("*.json"):
        (folder / file.name).write_bytes(file.read_bytes())
    (folder / "settings.json").write_text('{"theme": "dark"}')
    assert SOURCE.detect(folder)
    items, errors = scan(folder)
    alone = [scan(file)[0] for file in sorted(fixtures.glob("*.json"))]
    assert errors == [] and sorted(i.key for i in items) == sorted(i.key for found in alone for i in found)
    before = SOURCE.fingerprint(folder)
    (folder / "origin-chatgpt-export.json").write_bytes((fixtures / "origin-chatgpt-export.json").read_bytes() + b" ")
    assert SOURCE.fingerprint(folder) != before  # a changed conversation file is a changed source
    empty = tmp_path / "empty"
    empty.mkdir()
    assert not SOURCE.detect(empty)
    assert [e.reason for e in scan(empty)[1]] == [
        "no conversations.json and no ChatGPT conversation file in this folder"
    ]


# --- shapes ---------------------------------------------------------------------------------------


def test_wrapper_object_with_instructions_and_memories(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(
        json.dumps(
            {
                "conversations": [conversation("a", [("user", "hi"), ("assistant", "hello")])],
                "user_custom_instructions": {"about_user_message": "I lead Project Falcon."},
                "memories": [
                    {"id": "m1", "content": "Alice prefers PostgreSQL.", "created_at": 1700000000},
                    "Bob is on call.",
                ],
            }
        ),
        encoding="utf-8",
    )
    items, errors = scan(path)
    assert errors == []
    assert Counter(i.kind for i in items) == {"conversation": 1, "instruction": 1, "memory": 2}
    memory = next(i for i in items if i.kind == "memory" and i.metadata.get("memory_id") == "m1")
    assert memory.messages[0].text == "Alice prefers PostgreSQL."
    assert memory.timestamp == "2023-11-14T22:13:20.000Z"
    assert (
        next(i for i in items if i.kind == "instruction").messages[0].text
        == "about_user_message: I lead Project Falcon."
    )


def test_missing_current_node_falls_back_to_newest_leaf(tmp_path: Path) -> None:
    data = conversation("b", [("user", "question"), ("assistant", "old answer")], current=False)
    newer = json.loads(json.dumps(data["mapping"]["b-1"]))
    newer.update(id="b-1-new")
    newer["message"].update(id="b-1-new", create_time=data["mapping"]["b-1"]["message"]["create_time"] + 50)
    newer["message"]["content"]["parts"] = ["regenerated answer"]
    data["mapping"]["b-1-new"] = newer
    data["mapping"]["b-0"]["children"].append("b-1-new")
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([data]), encoding="utf-8")
    [item], errors = scan(path)
    assert errors == []
    assert [m.text for m in item.messages] == ["question", "regenerated answer"]
    assert item.metadata["branch"] == "newest_leaf"


def test_parent_cycle_terminates(tmp_path: Path) -> None:
    data = conversation("c", [("user", "one"), ("assistant", "two")])
    data["mapping"]["root"]["parent"] = "c-1"  # a corrupt export: the root points at the leaf
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([data]), encoding="utf-8")
    [item], errors = scan(path)
    assert [m.text for m in item.messages] == ["one", "two"]
    assert [(e.record, e.reason) for e in errors] == [
        ("conversation c", "the parent links from node 'c-1' form a cycle at node 'c-1'; read up to it")
    ]


def test_bad_records_are_located_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    good = conversation("good", [("user", "kept")])
    path.write_text(json.dumps([1, {"id": "nomap", "mapping": 5}, good]), encoding="utf-8")
    items, errors = scan(path)
    assert [i.container_key for i in items] == ["good"]
    assert [e.record for e in errors] == ["conversation 0", "conversation 1 (nomap)"]


def test_truncated_json_keeps_the_conversations_before_the_break(tmp_path: Path) -> None:
    body = json.dumps([conversation(str(i), [("user", f"message {i}")]) for i in range(3)])
    cut = body.index('"2-0"') + 3  # inside the third conversation
    path = tmp_path / "conversations.json"
    path.write_bytes(body[:cut].encode())
    items, errors = scan(path)
    assert [i.container_key for i in items] == ["0", "1"]
    [error] = errors
    assert error.record == "conversation 2" and "premature EOF" in error.reason


def test_invalid_utf8_is_replaced_with_a_located_warning(tmp_path: Path) -> None:
    body = json.dumps(
        [
            conversation("0", [("user", "fine")]),
            conversation("1", [("user", "BROKEN")]),
            conversation("2", [("user", "after")]),
        ]
    ).encode()
    path = tmp_path / "conversations.json"
    path.write_bytes(body.replace(b"BROKEN", b"BR\xff\xfeKEN"))
    items, errors = scan(path)
    assert [i.container_key for i in items] == ["0", "1", "2"]
    assert items[1].messages[0].text == "BR\ufffd\ufffdKEN"
    assert len(errors) == 1 and errors[0].record == "conversation 1 (1)"
    assert errors[0].reason.startswith("invalid UTF-8: 2 bytes replaced with U+FFFD")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "empty file"),
        (b"   \n ", "only whitespace"),
        (bytes(range(256)) * 40, "lexical error"),
        (b'"just a string"', "not a ChatGPT export"),
        (b'{"foo": 1}', "not a ChatGPT export"),
        (b"[" * 200_000, "nested deeper than"),
        (b'[{"mapping": ' + b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"}]", "nested deeper than"),
    ],
)
def test_unusable_files_give_one_error_and_no_exception(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "conversations.json"
    path.write_bytes(content)
    items, errors = scan(path)
    assert items == []
    assert len(errors) == 1 and reason in errors[0].reason


def test_a_50_mb_single_line_message_streams_and_is_cut_while_reading(tmp_path: Path) -> None:
    big = "Project Falcon " * (50 * 1024 * 1024 // 15)
    path = tmp_path / "conversations.json"
    path.write_text(
        json.dumps([conversation("big", [("user", big)]), conversation("after", [("user", "x")])])
    )
    items, errors = scan(path)
    assert [i.container_key for i in items] == ["big", "after"]
    assert items[0].messages[0].text == big[:MAX_STRING_BYTES].strip()
    assert [(e.record, e.reason.split(" was ")[0]) for e in errors] == [
        ("conversation 0 (big)", f"a string of {len(big):,} bytes")
    ]


# --- archives -----------------------------------------------------------------------------------


def test_zip_is_read_in_place_and_unsafe_members_are_skipped(tmp_path: Path) -> None:
    archive = tmp_path / "nested" / "deeper" / "export.zip"
    archive.parent.mkdir(parents=True)
    payload = json.dumps([conversation("z", [("user", "from the zip")])])
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("conversations.json", payload)
        zf.writestr("../../conversations.json", payload)
        zf.writestr("/abs/conversations.json", payload)
        zf.writestr("chat.html", "<html></html>")
    before = sorted(p for p in tmp_path.rglob("*"))
    assert SOURCE.detect(archive)
    items, errors = scan(archive)
    assert [i.container_key for i in items] == ["z"]
    assert items[0].metadata["path"] == f"{archive}!conversations.json"
    assert sorted(e.record for e in errors) == ["../../conversations.json", "/abs/conversations.json"]
    assert all("unsafe" in e.reason for e in errors)
    assert sorted(p for p in tmp_path.rglob("*")) == before  # nothing was extracted anywhere


def test_corrupt_zip_is_an_error(tmp_path: Path) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("conversations.json", json.dumps([conversation("z", [("user", "x" * 5000)])]))
    data = bytearray(archive.read_bytes())
    start = data.index(b"conversations.json") + len("conversations.json") + 5
    data[start : start + 40] = b"\x00" * 40  # damage the compressed stream, keep the directory
    archive.write_bytes(bytes(data))
    items, errors = scan(archive)
    assert items == [] and len(errors) == 1


def test_fingerprint_changes_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text("[]")
    first = SOURCE.fingerprint(path)
    assert SOURCE.fingerprint(tmp_path) == first
    path.write_text("[ ]")
    assert SOURCE.fingerprint(path) != first
