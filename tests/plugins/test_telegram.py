"""Telegram Desktop JSON exports (one chat, the whole account), written by the test itself."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest
from mind_harvest.plugins import _jsonwalk
from mind_harvest.plugins.telegram import TelegramSource

from mind_core import plugins
from mind_core.harvest.items import HarvestError, HarvestItem
from mind_core.testing.message_exports import write_telegram_export
from tests.plugins.messaging import (
    BERLIN,
    CONVERSATION,
    assert_second_turn_lost_alone,
    assert_speaker_question_answered_and_reharvest_quiet,
    split,
    utc,
)

SOURCE = TelegramSource()


def scan(path: Path) -> tuple[list[HarvestItem], list[HarvestError]]:
    return split(SOURCE.scan(path))


@pytest.mark.parametrize("account", [False, True], ids=["one chat", "whole account"])
def test_a_chat_is_read_whole_with_each_messages_own_time_zone_and_speaker(
    tmp_path: Path, account: bool
) -> None:
    path = write_telegram_export(tmp_path / "ChatExport" / "result.json", CONVERSATION, account=account)
    assert plugins.detect_source(path).kind == "telegram"
    assert plugins.rank_sources(tmp_path)[0].kind == "telegram"  # the folder holding the export
    items, errors = scan(path)
    assert errors == [] and len(items) == 1 and items[0].title == "Trip planning"
    assert [(m.author, m.role, m.text, m.timestamp) for m in items[0].messages] == [
        (speaker, speaker, text, utc(moment)) for speaker, text, moment in CONVERSATION
    ]
    assert items[0].messages[0].metadata["local_time"] == "2023-05-03T09:15:04"
    assert items[0].messages[0].metadata["timezone"] == "+02:00"
    assert items[0].metadata["participants"] == ["Caroline", "Melanie"]


def test_replies_edits_media_service_messages_and_entities(tmp_path: Path) -> None:
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "photo_1.jpg").write_bytes(b"\xff\xd8")
    extra = {
        0: {"type": "service", "actor": "Caroline", "action": "invite_members", "members": ["Melanie"], "text": ""},
        1: {"photo": "photos/photo_1.jpg", "reply_to_message_id": 3, "edited": "2023-05-03T10:00:00",
            "edited_unixtime": str(int(datetime(2023, 5, 3, 10, tzinfo=BERLIN).timestamp()))},
        2: {"file": "(File not included. Change data exporting settings to download.)", "media_type": "voice_message",
            "text": ["see ", {"type": "text_link", "text": "this", "href": "https://example.org/hills"}]},
        3: {"type": "unsupported"},
    }  # fmt: skip
    items, errors = scan(write_telegram_export(tmp_path / "result.json", CONVERSATION, extra=extra))
    assert errors == []
    service, photo, voice = items[0].messages
    assert (service.role, service.author, service.text) == (
        "system",
        None,
        "Caroline: invite members Melanie",
    )
    assert photo.text.endswith("[image: photo_1.jpg]") and photo.metadata["attachments"][0]["located"] is True
    assert photo.metadata["in_reply_to"] == "3" and photo.metadata["edited"] is True
    assert photo.metadata["edited_at"] == "2023-05-03T08:00:00.000Z"
    assert voice.text == "see this (https://example.org/hills)\n[audio omitted]"
    assert voice.metadata["attachments"][0] == {
        "kind": "audio", "name": None, "path": None, "located": False,
        "placeholder": "(File not included. Change data exporting settings to download.)",
    }  # fmt: skip
    assert items[0].metadata["skipped_messages"] == 1  # the unsupported one


@pytest.mark.parametrize("minified", [False, True], ids=["as written", "on one line"])
def test_a_broken_message_costs_that_message_alone_and_is_reported(tmp_path: Path, minified: bool) -> None:
    path = write_telegram_export(tmp_path / "result.json", CONVERSATION, account=True)
    if minified:
        path.write_text(json.dumps(json.loads(path.read_text()), separators=(",", ":")))
    broken = '"from":"Melanie"' if minified else '"from": "Melanie"'
    path.write_text(path.read_text().replace(broken, broken.replace(":", " "), 1))
    assert_second_turn_lost_alone(path, SOURCE.scan, "chat Trip planning message 1")


def test_reads_cut_anywhere_give_the_same_chats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_telegram_export(tmp_path / "result.json", CONVERSATION, account=True)
    whole, _ = scan(path)
    path.write_text(json.dumps(json.loads(path.read_text()), separators=(",", ":")))
    monkeypatch.setattr(_jsonwalk, "CHUNK", 3)  # every string, number and literal cut somewhere
    items, errors = scan(path)
    assert errors == [] and [m.text for m in items[0].messages] == [m.text for m in whole[0].messages]


def test_a_json_file_of_another_app_is_not_telegram(tmp_path: Path) -> None:
    other = tmp_path / "result.json"
    other.write_text('{"messages": [{"id": 1, "text": "hi"}], "type": "inbox"}')
    assert "telegram" not in {d.kind for d in plugins.rank_sources(other)}


def test_a_question_naming_a_speaker_ranks_that_speakers_turns_and_reharvest_writes_nothing(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "ChatExport_2023-05-14"
    write_telegram_export(folder / "result.json", CONVERSATION)
    assert_speaker_question_answered_and_reharvest_quiet(tmp_path / "a.mind", folder, "tg")


def test_a_fifo_as_the_export_is_named_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "result.json")
    for path in (tmp_path, tmp_path / "result.json"):
        items, errors = scan(path)
        assert items == [] and "named pipe (FIFO), not a regular file" in errors[0].reason
