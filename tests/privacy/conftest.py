"""A mailbox in which one person, Zephyrine Quarlesworth, writes, receives and is mentioned."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from mind_core.testing.exports import SyntheticMail, write_mbox

NAME, ADDRESS = "Zephyrine Quarlesworth", "zq@quarles.example"
ZEPHYRINE = (NAME, ADDRESS)
BOB = ("Bob Smith", "bob.smith@example.com")
ALICE = ("Alice Johnson", "alice.johnson@example.com")


def _mail(
    n: int, sender: tuple[str, str], recipient: tuple[str, str], subject: str, text: str
) -> SyntheticMail:
    return SyntheticMail(
        message_id=f"m{n}@example.com",
        thread=n,
        sender=sender,
        recipient=recipient,
        subject=subject,
        sent=datetime(2023, 3, 1 + n, 9, 0, tzinfo=UTC),
        text=text,
    )


MAILS = [
    _mail(0, ZEPHYRINE, BOB, "Budget draft", "Here is the budget draft for the lighthouse restoration."),
    _mail(1, BOB, ZEPHYRINE, "Lighthouse paint", "Thanks, the lighthouse paint order went out yesterday."),
    _mail(
        2,
        ALICE,
        BOB,
        "Who knows the harbour",
        f"Ask {NAME} ({ADDRESS}) about the harbour permits, she knows.",
    ),
    _mail(3, ALICE, BOB, "Ferry timetable", "The ferry timetable changes in April, plan the trip around it."),
    _mail(4, BOB, ALICE, "Kite festival", "The kite festival moved to the northern beach this spring."),
]


@pytest.fixture
def mailbox(tmp_path: Path) -> Path:
    return write_mbox(tmp_path / "mail" / "inbox.mbox", MAILS)


def raw_bytes(mind_path: Path) -> bytes:
    """The mind's main file and its WAL as they are on disk, lower-cased."""
    data = b""
    for path in (mind_path, mind_path.with_name(mind_path.name + "-wal")):
        if path.exists():
            data += path.read_bytes()
    return data.lower()
