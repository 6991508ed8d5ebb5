"""DiscordChatExporter JSON exports, written by the test itself."""

from __future__ import annotations

import os
from pathlib import Path

from mind_harvest.plugins.discord import DiscordSource

from mind_core import plugins
from mind_core.harvest.items import HarvestError, HarvestItem
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.testing.fakes import HashingEmbedder
from mind_core.testing.message_exports import write_discord_export
from tests.plugins.messaging import (
    CONVERSATION,
    assert_second_turn_lost_alone,
    assert_speaker_question_answered_and_reharvest_quiet,
    split,
    utc,
)

SOURCE = DiscordSource()


def scan(path: Path) -> tuple[list[HarvestItem], list[HarvestError]]:
    return split(SOURCE.scan(path))


def test_a_channel_is_read_whole_with_each_messages_own_time_zone_and_speaker(tmp_path: Path) -> None:
    path = write_discord_export(tmp_path / "Book club - general [2].json", CONVERSATION)
    assert plugins.detect_source(path).kind == "discord"
    assert plugins.rank_sources(tmp_path)[0].kind == "discord"
    items, errors = scan(path)
    assert errors == [] and [i.title for i in items] == ["#general (Book club)"]
    assert [(m.author, m.role, m.text, m.timestamp) for m in items[0].messages] == [
        (speaker, speaker, text, utc(moment)) for speaker, text, moment in CONVERSATION
    ]
    first = items[0].messages[0].metadata
    assert (first["local_time"], first["timezone"]) == ("2023-05-03T09:15:04+02:00", "+02:00")
    assert first["author_handle"] == "caroline"


def test_replies_edits_attachments_stickers_and_system_messages(tmp_path: Path) -> None:
    (tmp_path / "general_Files").mkdir()
    (tmp_path / "general_Files" / "sunset-1A2B.png").write_bytes(b"\x89PNG")
    extra = {
        0: {"type": "GuildMemberJoin", "content": "Joined the server."},
        1: {"attachments": [{"id": "9", "url": "general_Files/sunset-1A2B.png", "fileName": "sunset.png", "fileSizeBytes": 4}],
            "timestampEdited": "2023-05-03T09:20:00+02:00"},
        2: {"type": "Reply", "reference": {"messageId": "1000000000000001", "channelId": "2", "guildId": "1"},
            "stickers": [{"id": "5", "name": "thumbs up", "format": "Png", "sourceUrl": ""}]},
        3: {"attachments": [{"id": "8", "url": "https://cdn.discordapp.com/attachments/dog.mp4", "fileName": "dog.mp4"}]},
    }  # fmt: skip
    items, errors = scan(write_discord_export(tmp_path / "general.json", CONVERSATION, extra=extra))
    assert errors == []
    join, painted, reply, video = items[0].messages
    assert (join.role, join.author, join.text) == ("system", None, "Caroline: Joined the server.")
    assert painted.text.endswith("[image: sunset.png]") and painted.metadata["edited"] is True
    assert painted.metadata["attachments"][0]["located"] is True
    assert painted.metadata["attachments"][0]["path"] == "general_Files/sunset-1A2B.png"
    assert painted.metadata["edited_at"] == "2023-05-03T07:20:00.000Z"
    assert reply.text.endswith("[sticker: thumbs up]")
    assert reply.metadata["in_reply_to"] == painted.key and reply.metadata["reply_to_author"] == "Melanie"
    assert video.metadata["attachments"][0]["located"] is False
    assert video.metadata["attachments"][0]["url"] == "https://cdn.discordapp.com/attachments/dog.mp4"


def test_a_broken_message_costs_that_message_alone_and_is_reported(tmp_path: Path) -> None:
    path = write_discord_export(tmp_path / "general.json", CONVERSATION)
    path.write_text(path.read_text().replace('"nickname": "Melanie"', '"nickname" "Melanie"', 1))
    assert_second_turn_lost_alone(path, SOURCE.scan, "#general message 1")


def test_a_question_naming_a_speaker_ranks_that_speakers_turns_and_reharvest_writes_nothing(
    tmp_path: Path,
) -> None:
    write_discord_export(tmp_path / "exports" / "general.json", CONVERSATION)
    assert_speaker_question_answered_and_reharvest_quiet(tmp_path / "a.mind", tmp_path / "exports", "club")


def test_a_fifo_among_the_exports_is_named_never_opened(tmp_path: Path) -> None:
    write_discord_export(tmp_path / "general.json", CONVERSATION)
    os.mkfifo(tmp_path / "random.json")
    items, errors = scan(tmp_path)
    assert len(items) == 1 and len(errors) == 1 and "named pipe (FIFO)" in errors[0].reason


def test_a_reply_is_a_relation_between_its_author_and_the_replied_to_speaker(tmp_path: Path) -> None:
    extra = {2: {"type": "Reply", "reference": {"messageId": "1000000000000001", "channelId": "2", "guildId": "1"}}}
    path = write_discord_export(tmp_path / "general.json", CONVERSATION, extra=extra)
    with Mind.open(tmp_path / "m.mind", embedder=HashingEmbedder()) as mind:
        register_source(mind, "discord", path, "club")
        harvest(mind, "club")
        kg = mind.knowledge
        caroline, melanie = kg.find_entity("person", "Caroline"), kg.find_entity("person", "Melanie")
        replied = kg.relations_as_of(entity_id=caroline.id, relation_type="replied_to")
        assert [(r.source_id, r.target_id) for r in replied] == [(caroline.id, melanie.id)]
