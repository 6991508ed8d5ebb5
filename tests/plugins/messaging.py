"""What the messaging exports' tests (Slack, Telegram, Discord) share: one conversation with its
speakers' own times, the stored form of an instant, a scan split into items and errors, the
scan of an export with one broken message, and the harvest that a question naming a speaker is
asked of."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from mind_core.harvest.items import HarvestError, HarvestItem, ScanEvent
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.testing.fakes import HashingEmbedder

BERLIN = ZoneInfo("Europe/Berlin")
CONVERSATION = [
    ("Caroline", "Hi Melanie, how was the art class?", datetime(2023, 5, 3, 9, 15, 4, tzinfo=BERLIN)),
    ("Melanie", "I painted a sunset over the lake,\nmy first painting in oils", datetime(2023, 5, 3, 9, 17, 30, tzinfo=BERLIN)),
    ("Caroline", "That sounds lovely, I went hiking in the hills", datetime(2023, 5, 3, 21, 2, 0, tzinfo=BERLIN)),
    ("Melanie", "Next week I start a portrait of my dog", datetime(2023, 5, 13, 8, 0, 0, tzinfo=BERLIN)),
]  # fmt: skip


def utc(moment: datetime) -> str:
    return moment.astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def split(events: Iterable[ScanEvent]) -> tuple[list[HarvestItem], list[HarvestError]]:
    """A scan's items and its errors, each in the order the scan gave them."""
    events = list(events)
    return [e for e in events if isinstance(e, HarvestItem)], [
        e for e in events if isinstance(e, HarvestError)
    ]


def assert_second_turn_lost_alone(path: Path, scan: Callable[[Path], Iterable[ScanEvent]], record: str) -> None:
    """A scan of an export of ``CONVERSATION`` whose second message was broken: the other turns
    are kept and the lost one is one error, located at ``record``."""
    items, errors = split(scan(path))
    assert [m.text for m in items[0].messages] == [
        text for i, (_, text, _) in enumerate(CONVERSATION) if i != 1
    ]
    assert len(errors) == 1 and errors[0].record == record
    assert "message lost" in errors[0].reason and "near byte" in errors[0].reason


def assert_speaker_question_answered_and_reharvest_quiet(mind_path: Path, export: Path, name: str) -> None:
    """Harvest an export of ``CONVERSATION``: every turn is a frame at its own time by its
    speaker, "What did Melanie paint?" ranks Melanie's painting turn first on her name, both
    speakers are persons, and a forced re-harvest writes nothing."""
    with Mind.open(mind_path, embedder=HashingEmbedder()) as mind:
        register_source(mind, None, export, name)
        report = harvest(mind, name)
        assert report.imported.errors == [] and report.imported.frames_new == len(CONVERSATION)
        rows = mind.db.query(
            "SELECT content, created_at, json_extract(metadata, '$.provenance.author') AS author"
            " FROM memory_frames ORDER BY created_at"
        )
        assert [(r["author"], r["created_at"]) for r in rows] == [(s, utc(m)) for s, _, m in CONVERSATION]
        results = mind.search.search("What did Melanie paint?", limit=5, explain=True)
        assert results[0].frame.content == rows[1]["content"]
        assert results[0].explain["speaker_score"] == 1.0
        persons = {e.name for e in mind.knowledge.get_entities_by_type("person")}
        assert {"Caroline", "Melanie"} <= persons
        again = harvest(mind, name, force=True)
        assert again.imported.frames_new == 0 and again.imported.unchanged
