"""WhatsApp "Export chat" files, as the four locales write them, written by the test itself."""

from __future__ import annotations

import os
import zipfile
from datetime import datetime
from pathlib import Path

import pytest
from mind_harvest.plugins.whatsapp import TIMEZONE_FILE, WhatsAppSource, date_order

from mind_core import plugins
from mind_core.harvest.items import HarvestError, HarvestItem
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.testing.fakes import HashingEmbedder
from mind_core.testing.message_exports import WHATSAPP_STYLES, write_whatsapp_export

SOURCE = WhatsAppSource()
# The 3rd and 13th: only the 13th tells day from month, and only in the last message.
CONVERSATION = [
    ("Caroline", "Hi Melanie, how was the art class?", datetime(2023, 5, 3, 9, 15, 4)),
    (
        "Melanie",
        "I painted a sunset over the lake,\nmy first painting in oils",
        datetime(2023, 5, 3, 9, 17, 30),
    ),
    ("Caroline", "That sounds lovely, I went hiking in the hills", datetime(2023, 5, 3, 21, 2, 0)),
    ("Melanie", "Next week I start a portrait of my dog", datetime(2023, 5, 13, 8, 0, 0)),
]


def scan(path: Path) -> tuple[list[HarvestItem], list[HarvestError]]:
    events = list(SOURCE.scan(path))
    return [e for e in events if isinstance(e, HarvestItem)], [
        e for e in events if isinstance(e, HarvestError)
    ]


def expected_utc(moment: datetime, style: str) -> str:
    seconds = moment.second if style == "ios" else 0  # only iOS writes seconds
    return moment.replace(second=seconds).strftime("%Y-%m-%dT%H:%M:%S.000Z")


@pytest.mark.parametrize("style", WHATSAPP_STYLES)
def test_each_locale_is_read_whole_with_each_messages_own_time_and_speaker(
    tmp_path: Path, style: str
) -> None:
    path = write_whatsapp_export(tmp_path / "_chat.txt", CONVERSATION, style)
    assert plugins.detect_source(path).kind == "whatsapp"
    items, errors = scan(path)
    assert errors == [] and len(items) == 1
    spoken = [m for m in items[0].messages if m.role != "system"]
    assert [(m.author, m.role, m.text, m.timestamp) for m in spoken] == [
        (speaker, speaker, text, expected_utc(moment, style)) for speaker, text, moment in CONVERSATION
    ]
    assert items[0].metadata["participants"] == ["Caroline", "Melanie"]
    assert items[0].metadata["dropped_notices"] == 1  # the encryption notice
    joins = [m for m in items[0].messages if m.role == "system"]
    assert [(m.author, m.text) for m in joins] == [(None, "Caroline joined using this group's invite link")]


def test_day_or_month_first_is_decided_by_the_files_values() -> None:
    assert date_order(["03/05/2023", "13/05/2023"], twelve_hour=False).day == 0
    assert date_order(["05/03/23", "05/13/23"], twelve_hour=False).day == 1
    assert date_order(["05/03/23", "02/04/23"], twelve_hour=True).day == 0  # the day went back
    assert date_order(["03/05/23", "04/02/23"], twelve_hour=False).day == 1  # the day went back
    assert date_order(["05/03/23"], twelve_hour=True).day == 1  # undecided: a US 12-hour export
    assert date_order(["05.03.23"], twelve_hour=False).day == 0  # undecided: day first
    assert date_order(["2023-05-03"], twelve_hour=False).year == 0


def test_an_undecided_us_file_reads_month_first(tmp_path: Path) -> None:
    turns = [("Ann", "see you", datetime(2023, 2, 5, 14, 30))]  # 2/5/23: nothing above 12
    items, _ = scan(write_whatsapp_export(tmp_path / "_chat.txt", turns, "us", system_lines=False))
    assert items[0].messages[0].timestamp == "2023-02-05T14:30:00.000Z"
    assert "12-hour" in items[0].metadata["date_order"]


def test_the_zone_file_beside_the_export_sets_the_wall_clocks_zone(tmp_path: Path) -> None:
    path = write_whatsapp_export(tmp_path / "_chat.txt", CONVERSATION[:1], "android", system_lines=False)
    (tmp_path / TIMEZONE_FILE).write_text("Europe/Berlin\n")
    message = scan(path)[0][0].messages[0]
    assert message.timestamp == "2023-05-03T07:15:00.000Z"  # 09:15 summer time in Berlin
    assert (
        message.metadata["local_time"] == "03/05/2023 09:15"
        and message.metadata["timezone"] == "Europe/Berlin"
    )
    (tmp_path / TIMEZONE_FILE).write_text("Mars/Olympus\n")
    items, errors = scan(path)
    assert items[0].messages[0].timestamp == "2023-05-03T09:15:00.000Z"
    assert len(errors) == 1 and "not a time zone" in errors[0].reason


def test_media_edits_and_deletions(tmp_path: Path) -> None:
    moment = datetime(2023, 5, 13, 10, 0)
    turns = [
        ("Ann", "\u200e<attached: 00000012-PHOTO-2023-05-13-10-00-00.jpg>", moment),
        ("Ann", "\u200eimage omitted", moment),
        ("Bob", "<Media omitted>", moment),
        ("Bob", "This message was deleted", moment),
        ("Bob", "the meeting is at noon <This message was edited>", moment),
    ]
    path = write_whatsapp_export(
        tmp_path / "chat.zip", turns, "ios", system_lines=False,
        media={"00000012-PHOTO-2023-05-13-10-00-00.jpg": b"\xff\xd8"},
    )  # fmt: skip
    assert plugins.detect_source(path).kind == "whatsapp"
    items, errors = scan(path)
    assert errors == []
    messages = items[0].messages
    assert [m.text for m in messages] == [
        "[image: 00000012-PHOTO-2023-05-13-10-00-00.jpg]",
        "[image omitted]",
        "[media omitted]",
        "the meeting is at noon",
    ]
    first = messages[0].metadata["attachments"][0]
    assert first["located"] is True and first["path"] == "chat.zip/00000012-PHOTO-2023-05-13-10-00-00.jpg"
    with zipfile.ZipFile(path) as archive:
        assert archive.read("00000012-PHOTO-2023-05-13-10-00-00.jpg") == b"\xff\xd8"
    assert messages[1].metadata["attachments"][0]["located"] is False
    assert messages[3].metadata["edited"] is True
    assert items[0].metadata["deleted_messages"] == 1
    assert len({m.key for m in messages}) == 4  # same minute, same speaker: still four messages


def test_a_plain_text_file_is_not_a_chat(tmp_path: Path) -> None:
    note = tmp_path / "notes.txt"
    note.write_text("Shopping list\n\nmilk, eggs\n")
    assert "whatsapp" not in {d.kind for d in plugins.rank_sources(note)}


def test_a_harvested_chat_answers_a_question_naming_a_speaker_with_that_speakers_turns(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "WhatsApp Chat with Melanie"
    write_whatsapp_export(folder / "WhatsApp Chat with Melanie.txt", CONVERSATION, "ios")
    with Mind.open(tmp_path / "a.mind", embedder=HashingEmbedder()) as mind:
        register_source(mind, None, folder, "wa")
        report = harvest(mind, "wa")
        assert report.imported.errors == [] and report.imported.frames_new == len(CONVERSATION) + 1
        rows = mind.db.query(
            "SELECT content, created_at, json_extract(metadata, '$.provenance.author') AS author,"
            " json_extract(metadata, '$.provenance.role') AS role FROM memory_frames"
            " WHERE json_extract(metadata, '$.provenance.role') != 'system' ORDER BY created_at"
        )
        assert [(r["author"], r["role"], r["created_at"]) for r in rows] == [
            (speaker, speaker, expected_utc(moment, "ios")) for speaker, _, moment in CONVERSATION
        ]
        assert rows[1]["content"].startswith("[WhatsApp Chat with Melanie] Melanie: I painted a sunset")
        results = mind.search.search("What did Melanie paint?", limit=5, explain=True)
        assert results[0].frame.content == rows[1]["content"]
        assert results[0].explain["speaker_score"] == 1.0
        greeting = next(r for r in results if r.frame.content == rows[0]["content"])
        assert greeting.explain["speaker_score"] == 0.0
        persons = {e.name: e for e in mind.knowledge.get_entities_by_type("person")}
        assert "structure" in persons["Melanie"].properties["extractors"]  # stated by the export
        assert "structure" in persons["Caroline"].properties["extractors"]
        again = harvest(mind, "wa", force=True)  # the same export read again writes nothing
        assert again.imported.frames_new == 0 and again.imported.unchanged


def test_a_fifo_given_as_the_chat_or_beside_it_as_the_time_zone_is_named_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "_chat.txt")
    items, errors = scan(tmp_path / "_chat.txt")
    assert items == [] and "named pipe (FIFO), not a regular file" in errors[0].reason
    chat = write_whatsapp_export(tmp_path / "trip" / "_chat.txt", CONVERSATION)
    os.mkfifo(tmp_path / "trip" / TIMEZONE_FILE)
    items, errors = scan(chat)
    assert len(items[0].messages) == 5 and items[0].metadata["timezone"] == "UTC"  # 4 turns and a join
    assert [e.path for e in errors] == [str(tmp_path / "trip" / TIMEZONE_FILE)]
    assert "named pipe" in errors[0].reason
