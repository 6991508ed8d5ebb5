"""Slack workspace exports (users, channels, a file per day, threads), written by the test itself."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

from mind_harvest.plugins.slack import SlackSource

from mind_core import plugins
from mind_core.harvest.items import HarvestError, HarvestItem
from mind_core.testing.message_exports import write_slack_export
from tests.plugins.messaging import (
    BERLIN,
    CONVERSATION,
    assert_second_turn_lost_alone,
    assert_speaker_question_answered_and_reharvest_quiet,
    split,
    utc,
)

SOURCE = SlackSource()


def scan(path: Path) -> tuple[list[HarvestItem], list[HarvestError]]:
    return split(SOURCE.scan(path))


def test_a_channel_is_read_whole_across_day_files_with_each_messages_own_time_and_speaker(
    tmp_path: Path,
) -> None:
    folder = write_slack_export(tmp_path / "export", CONVERSATION)
    assert sorted(p.name for p in (folder / "general").iterdir()) == ["2023-05-03.json", "2023-05-13.json"]
    assert plugins.detect_source(folder).kind == "slack"
    items, errors = scan(folder)
    assert errors == [] and [i.title for i in items] == ["#general"]
    assert [(m.author, m.role, m.text, m.timestamp) for m in items[0].messages] == [
        (speaker, speaker, text, utc(moment)) for speaker, text, moment in CONVERSATION
    ]
    first = items[0].messages[0].metadata
    assert (first["author_handle"], first["timezone"], first["local_time"]) == (
        "caroline",
        "UTC",
        "2023-05-03T07:15:04",
    )


def test_threads_edits_deletions_joins_files_and_mentions(tmp_path: Path) -> None:
    extra = {
        2: {"edited": {"user": "U00000001", "ts": f"{datetime(2023, 5, 3, 22, tzinfo=BERLIN).timestamp():.6f}"},
            "text": "<@U00000002> lovely &amp; <https://example.org/hills|the hills>"},
        3: {"files": [{"name": "dog.jpg", "mimetype": "image/jpeg", "url_private": "https://files.slack.com/dog.jpg"}]},
    }  # fmt: skip
    folder = write_slack_export(tmp_path / "export", CONVERSATION, replies={2: 1, 3: 1}, extra=extra)
    day = folder / "general" / "2023-05-03.json"
    records = json.loads(day.read_text())
    records.insert(
        0,
        {
            "type": "message",
            "subtype": "channel_join",
            "user": "U00000002",
            "text": "<@U00000002> has joined the channel",
            "ts": "1683090000.000100",
        },
    )
    records.append(
        {
            "type": "message",
            "subtype": "tombstone",
            "text": "This message was deleted.",
            "ts": "1683140000.000100",
        }
    )
    day.write_text(json.dumps(records, indent=4))
    users = json.loads((folder / "users.json").read_text())
    (folder / "users.json").write_text(json.dumps([{**users[0], "tz": "Europe/Berlin"}, users[1]]))
    items, errors = scan(folder)
    assert errors == []
    channel, thread = items
    assert [(m.role, m.text) for m in channel.messages][:1] == [("system", "@Melanie has joined the channel")]
    assert [m.author for m in channel.messages[1:]] == ["Caroline", "Melanie"]
    assert channel.metadata["deleted_messages"] == 1
    assert thread.title.startswith("#general thread: I painted a sunset")
    edited, photo = thread.messages
    assert edited.text == "@Melanie lovely & the hills (https://example.org/hills)"
    assert edited.metadata["edited"] is True and edited.metadata["edited_at"] == "2023-05-03T20:00:00.000Z"
    assert (
        edited.metadata["in_reply_to"] == channel.messages[2].key
        and edited.metadata["reply_to_author"] == "Melanie"
    )
    assert photo.text == "Next week I start a portrait of my dog\n[image: dog.jpg]"
    assert photo.metadata["attachments"][0]["located"] is False
    assert photo.metadata["attachments"][0]["url"] == "https://files.slack.com/dog.jpg"
    greeting = channel.messages[1].metadata  # Caroline's zone from users.json: her wall clock
    assert (greeting["local_time"], greeting["timezone"]) == ("2023-05-03T09:15:04", "Europe/Berlin")


def test_a_broken_message_costs_that_message_alone_and_is_reported(tmp_path: Path) -> None:
    folder = write_slack_export(tmp_path / "export", CONVERSATION)
    day = folder / "general" / "2023-05-03.json"
    day.write_text(day.read_text().replace('"user": "U00000002"', '"user" "U00000002"', 1))
    assert_second_turn_lost_alone(folder, SOURCE.scan, "general/2023-05-03.json message 1")


def test_a_question_naming_a_speaker_ranks_that_speakers_turns_and_reharvest_writes_nothing(
    tmp_path: Path,
) -> None:
    folder = write_slack_export(tmp_path / "export", CONVERSATION)
    assert_speaker_question_answered_and_reharvest_quiet(tmp_path / "a.mind", folder, "team")


def test_a_conversation_folder_outside_the_export_is_never_read(tmp_path: Path) -> None:
    folder = write_slack_export(tmp_path / "export", CONVERSATION)
    write_slack_export(tmp_path / "elsewhere", CONVERSATION, channel="secret")
    channels = json.loads((folder / "channels.json").read_text())
    (folder / "channels.json").write_text(
        json.dumps([*channels, {"id": "C2", "name": "../elsewhere/secret"}])
    )
    (folder / "linked").symlink_to(tmp_path / "elsewhere" / "secret")
    items, errors = scan(folder)
    assert [i.title for i in items] == ["#general"]
    assert sorted(e.reason for e in errors) == [
        "a link to a folder; not followed",
        "conversation folder '../elsewhere/secret' is not a name in the export; skipped",
    ]


def test_a_fifo_as_the_user_list_is_named_never_opened(tmp_path: Path) -> None:
    folder = write_slack_export(tmp_path / "export", CONVERSATION)
    (folder / "users.json").unlink()
    os.mkfifo(folder / "users.json")
    items, errors = scan(folder)
    assert [m.author for m in items[0].messages] == ["U00000001", "U00000002", "U00000001", "U00000002"]
    assert len(errors) == 1 and "named pipe (FIFO), not a regular file" in errors[0].reason
