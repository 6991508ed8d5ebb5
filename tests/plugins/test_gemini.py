"""Gemini source: Takeout activity grouping and time zones, AI Studio prompts, broken inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mind_harvest.plugins.gemini import GeminiSource
from mind_harvest.plugins.html_text import html_to_text

from mind_core.harvest.items import HarvestError, HarvestItem

SOURCE = GeminiSource()


def scan(path: Path) -> tuple[list[HarvestItem], list[HarvestError]]:
    events = list(SOURCE.scan(path))
    return [e for e in events if isinstance(e, HarvestItem)], [
        e for e in events if isinstance(e, HarvestError)
    ]


def entry(
    time: str, title: str, html: str | None = None, header: str = "Gemini Apps", **extra: object
) -> dict:
    data = {"header": header, "title": title, "time": time, "products": [header], **extra}
    if html is not None:
        data["safeHtmlItem"] = [{"html": html}]
    return data


# Oldest first here; Takeout writes the file newest first, so the fixture is reversed below.
# Instants in UTC: A 10:00, A 10:30 (exactly 30 min: same conversation), B 11:01 (31 min: new),
# C 06:50 next day written as 23:50 at -07:00 (the local date is still May 1), C 07:00, C 07:10
# written at +02:00.
TAKEOUT_ENTRIES = [
    entry(
        "2024-05-01T10:00:00.000Z",
        "Prompted Draft an email to Alice Johnson about Project Falcon",
        "<p>Hi Alice,</p><ul><li>Falcon ships Friday</li><li>PostgreSQL 16 &amp; pgvector</li></ul>",
    ),
    entry("2024-05-01T10:30:00.000Z", "Prompted Make it shorter", "<p>Falcon ships <b>Friday</b>.</p>"),
    entry("2024-05-01T11:01:00Z", "Prompted What is pgvector?", "<p>A PostgreSQL extension for vectors.</p>"),
    entry(
        "2024-05-01T23:50:00-07:00",
        "Prompted Plan the PostgreSQL upgrade",
        "<h2>Steps</h2><ol><li>Back up</li><li>Upgrade</li></ol>",
        attachedFiles=["upgrade-notes.pdf"],
    ),
    entry("2024-05-02T07:00:00Z", "Prompted Summarize the plan", "<p>Back up, then upgrade.</p>"),
    entry("2024-05-02T07:05:00Z", "Used an Extension"),
    entry("2024-05-02T07:06:00Z", "Searched for falcon", header="Search"),
    entry("2024-05-02T09:10:00+02:00", "Prompted And the rollback plan?", "<p>Restore the backup.</p>"),
]


@pytest.fixture
def takeout(tmp_path: Path) -> Path:
    folder = tmp_path / "Takeout" / "My Activity" / "Gemini Apps"
    folder.mkdir(parents=True)
    path = folder / "MyActivity.json"
    path.write_text(json.dumps(list(reversed(TAKEOUT_ENTRIES)), indent=2), encoding="utf-8")
    return path


def test_takeout_log_is_grouped_by_time_gaps_in_utc(takeout: Path) -> None:
    assert SOURCE.detect(takeout)
    items, errors = scan(takeout)
    assert errors == []
    prompts = [[m.text.splitlines()[0] for m in item.messages if m.role == "user"] for item in items]
    assert prompts == [
        ["Draft an email to Alice Johnson about Project Falcon", "Make it shorter"],
        ["What is pgvector?"],
        ["Plan the PostgreSQL upgrade", "Summarize the plan", "And the rollback plan?"],
    ]
    first, _, third = items
    assert first.title == "Draft an email to Alice Johnson about Project Falcon"
    assert [m.role for m in first.messages] == ["user", "assistant", "user", "assistant"]
    assert first.messages[1].text == "Hi Alice,\n\n- Falcon ships Friday\n- PostgreSQL 16 & pgvector"
    assert first.timestamp == "2024-05-01T10:00:00.000Z"
    assert [m.timestamp for m in third.messages if m.role == "user"] == [
        "2024-05-02T06:50:00.000Z",
        "2024-05-02T07:00:00.000Z",
        "2024-05-02T07:10:00.000Z",
    ]
    assert third.messages[0].metadata["original_time"] == "2024-05-01T23:50:00-07:00"
    assert third.messages[0].text == "Plan the PostgreSQL upgrade\n[Attached: upgrade-notes.pdf]"
    assert third.messages[1].text == "## Steps\n\n1. Back up\n2. Upgrade"
    assert third.metadata["skipped_in_file"] == {"not_a_prompt": 2}
    assert len({i.key for i in items}) == 3


def test_takeout_keys_survive_a_later_export_with_more_prompts(takeout: Path) -> None:
    before = {i.title: i.key for i in scan(takeout)[0]}
    later = [
        entry("2024-05-02T07:30:00Z", "Prompted One more thing", "<p>Sure.</p>"),
        *reversed(TAKEOUT_ENTRIES),
    ]
    takeout.write_text(json.dumps(later), encoding="utf-8")
    after = scan(takeout)[0]
    assert {i.title: i.key for i in after} == before
    assert len(after[-1].messages) == 8


def test_takeout_folder_scan_finds_the_log(takeout: Path) -> None:
    root = takeout.parents[2]
    (root / "My Activity" / "Search").mkdir()
    (root / "My Activity" / "Search" / "MyActivity.json").write_text(
        json.dumps([entry("2024-01-01T00:00:00Z", "Searched", header="Search")])
    )
    assert SOURCE.detect(root)
    items, errors = scan(root)
    assert errors == [] and len(items) == 3


def test_bad_entries_and_truncation_are_located(tmp_path: Path) -> None:
    entries = [
        entry("2024-05-01T10:00:00Z", "Prompted kept", "<p>yes</p>"),
        entry("yesterday", "Prompted bad time", "<p>no</p>"),
        "not an entry",
        entry("2024-05-01T10:05:00Z", "Prompted also kept", "<p>yes</p>"),
        entry("2024-05-01T10:06:00Z", "Prompted cut off", "<p>…</p>"),
    ]
    body = json.dumps(entries)
    path = tmp_path / "MyActivity.json"
    path.write_text(body[: body.index("cut off")], encoding="utf-8")
    items, errors = scan(path)
    assert [[m.text for m in i.messages if m.role == "user"] for i in items] == [["kept", "also kept"]]
    assert [e.record for e in errors] == ["entry 1", "entry 2", "entry 4"]


def test_takeout_html_flavour_is_explained(tmp_path: Path) -> None:
    path = tmp_path / "MyActivity.html"
    path.write_text("<html><body><div>Gemini Apps</div></body></html>", encoding="utf-8")
    _, [error] = scan(path)
    assert "as JSON" in error.reason


# --- AI Studio ------------------------------------------------------------------------------------


def test_aistudio_real_prompt_files(shared_data: Path) -> None:
    folder = shared_data / "chat-exports/gemini/polylogue-aistudio"
    assert SOURCE.detect(folder)
    items, errors = scan(folder)
    assert errors == []
    by_id = {i.metadata["prompt_id"]: i for i in items}
    assert set(by_id) == {"origin-matrix-aistudio", "origin-matrix-aistudio-drive"}
    assert [(m.key, m.role, m.text) for m in by_id["origin-matrix-aistudio"].messages] == [
        ("matrix-user", "user", "Prove the parser claim."),
        ("matrix-assistant", "assistant", "The production route parsed this witness."),
    ]
    assert all(m.timestamp is None for i in items for m in i.messages)  # AI Studio stores no times


def test_aistudio_thoughts_system_instruction_and_drive_files(tmp_path: Path) -> None:
    prompt = {
        "runSettings": {"model": "models/gemini-2.5-pro"},
        "systemInstruction": {"parts": [{"text": "You are the Falcon release assistant."}]},
        "chunkedPrompt": {
            "chunks": [
                {"role": "user", "text": "Review this doc", "driveDocument": {"id": "drive-123"}},
                {"role": "model", "text": "Thinking about it", "isThought": True},
                {"role": "model", "parts": [{"text": "Looks good."}, {"text": "hidden", "thought": True}]},
            ]
        },
    }
    path = tmp_path / "Falcon release review"  # AI Studio files in Drive have no extension
    path.write_text(json.dumps(prompt), encoding="utf-8")
    assert SOURCE.detect(path)
    instruction, talk = scan(path)[0]
    assert instruction.kind == "instruction"
    assert instruction.messages[0].text == "You are the Falcon release assistant."
    assert talk.title == "Falcon release review"
    assert [(m.role, m.text) for m in talk.messages] == [
        ("user", "Review this doc\n[Attached: drive-123]"),
        ("assistant", "Looks good."),
    ]
    assert talk.metadata["skipped"] == {"thoughts": 1}
    assert talk.metadata["model"] == "models/gemini-2.5-pro"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "empty file"),
        (b"\x89PNG\r\n\x1a\n\x00\x00binary", "neither"),
        (b'{"chunkedPrompt": {"chunks": 5}}', "no 'chunks' list"),
        (b'[{"header": "Gemini Apps", "title": "Prompted x", "time": ' + b"[" * 10_000, "nested deeper"),
    ],
)
def test_unusable_files_give_an_error_not_an_exception(tmp_path: Path, content: bytes, fragment: str) -> None:
    path = tmp_path / "input.json"
    path.write_bytes(content)
    items, errors = scan(path)
    assert items == [] and len(errors) == 1 and fragment in errors[0].reason


def test_invalid_utf8_in_a_prompt_file_is_replaced_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "input.json"
    path.write_bytes(b'{"chunkedPrompt": {"chunks": [{"role": "user", "text": "ok \xff\xfe"}]}}')
    [item], [error] = scan(path)
    assert item.messages[0].text == "ok \ufffd\ufffd"
    assert error.record == "prompt" and error.reason.startswith("invalid UTF-8: 2 bytes replaced")


def test_an_image_only_answer_is_kept_as_a_placeholder(tmp_path: Path) -> None:
    path = tmp_path / "MyActivity.json"
    entries = [entry("2024-05-01T10:00:00Z", "Prompted Draw a falcon", '<p><img src="falcon.png"></p>')]
    path.write_text(json.dumps(entries), encoding="utf-8")
    [item], errors = scan(path)
    assert errors == []
    assert [(m.role, m.text) for m in item.messages] == [("user", "Draw a falcon"), ("assistant", "[Image]")]


def test_html_to_text_keeps_structure() -> None:
    html = (
        "<h1>Plan</h1><p>Use <code>pg_upgrade</code> &mdash; then <a href='x'>check</a>.</p>"
        "<pre>line 1\n  line 2</pre><table><tr><th>Step</th><th>Owner</th></tr><tr><td>1</td><td>Bob</td></tr></table>"
        "<script>alert(1)</script><p>Done<br>now</p>"
    )
    assert (
        html_to_text(html)
        == "# Plan\n\nUse pg_upgrade — then check.\n\nline 1\n  line 2\n\nStep | Owner\n1 | Bob\n\nDone\nnow"
    )


def test_html_to_text_numbers_and_nests_lists() -> None:
    html = "<p>Risks:</p><ol><li>Types<ul><li>zero dates</li></ul></li><li>Downtime</li></ol><p>End</p>"
    assert html_to_text(html) == "Risks:\n\n1. Types\n  - zero dates\n2. Downtime\n\nEnd"
