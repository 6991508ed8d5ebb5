"""Forgetting a person who speaks in a chat: their turns go, their name in the others' turns goes."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.privacy.forget import forget, plan_forget
from mind_core.privacy.selection import Selector
from mind_core.testing.fakes import HashingEmbedder
from mind_core.testing.message_exports import write_whatsapp_export
from tests.privacy.conftest import NAME, raw_bytes

TURNS = [
    (NAME, "Morning all, the boat leaves at nine from pier four.", datetime(2023, 5, 1, 8, 0)),
    ("Ann Lee", f"Thanks {NAME}! Bringing the sandwiches.", datetime(2023, 5, 1, 8, 5)),
    ("Ann Lee", "Does anyone have a spare life jacket?", datetime(2023, 5, 1, 8, 7)),
    (NAME, "I have two spare life jackets in the car.", datetime(2023, 5, 1, 8, 9)),
]


def test_a_speaker_forgotten_from_a_chat_stays_forgotten(tmp_path):
    export = write_whatsapp_export(tmp_path / "chat" / "_chat.txt", TURNS, "android", system_lines=False)
    mind = Mind.open(tmp_path / "mind.db", embedder=HashingEmbedder())
    register_source(mind, "whatsapp", export, "chat")
    harvest(mind, "chat")
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames") == 4

    plan = plan_forget(mind.db, Selector(person=NAME.upper()))  # any case
    # her two turns go; Ann's two turns name her in the chat's participants, one in its text too
    assert len(plan.frame_ids) == 2 and len(plan.redacted_ids) == 2
    forget(mind, plan, "tester")
    contents = sorted(row[0] + row[1] for row in mind.db.query("SELECT content, metadata FROM memory_frames"))
    assert len(contents) == 2 and any("Thanks [forgotten person]!" in c for c in contents)
    assert not any("pier four" in c or "two spare" in c or "quarlesworth" in c.lower() for c in contents)

    again = harvest(mind, "chat", force=True)
    assert again.imported.messages_forgotten == 2 and again.imported.frames_new == 0
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames") == 2
    mind.close()
    data = raw_bytes(Path(tmp_path / "mind.db"))
    assert b"quarlesworth" not in data and b"pier four" not in data
