"""The email plugin on written mailboxes (no ../shared needed): the same threads as an mbox, a
maildir and a folder of .eml files read back as the same messages, with the quoted parent, the
attribution and the signature gone, HTML bodies as text and every date in UTC."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from mind_harvest.plugins.email import EmailSource

from mind_core import plugins
from mind_core.harvest.items import HarvestError, HarvestItem, HarvestMessage
from mind_core.testing.exports import (
    SyntheticMail,
    mail_threads,
    write_eml_folder,
    write_maildir,
    write_mbox,
)

MAILS = mail_threads(threads=4, replies_each=3)
LAYOUTS: dict[str, Callable[[Path], Path]] = {
    "mbox": lambda root: write_mbox(root / "archive.mbox", MAILS),
    "maildir": lambda root: write_maildir(root / "Maildir", MAILS),
    "eml": lambda root: write_eml_folder(root / "mail", MAILS),
}


def scan(path: Path) -> list[HarvestItem]:
    events = list(EmailSource().scan(path))
    assert [e for e in events if isinstance(e, HarvestError)] == []
    return [e for e in events if isinstance(e, HarvestItem)]


def as_read(mail: SyntheticMail) -> tuple[str, str, str, str]:
    return (mail.message_id, f"{mail.sender[0]} <{mail.sender[1]}>", mail.timestamp, mail.text)


def read(message: HarvestMessage) -> tuple[str, str, str, str]:
    return (message.metadata["message_id"], message.author, message.timestamp, message.text)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_each_layout_reads_back_the_written_threads(tmp_path: Path, layout: str) -> None:
    path = LAYOUTS[layout](tmp_path)
    assert plugins.detect_source(path).kind == "email"
    items = scan(path)
    assert [[read(m) for m in item.messages] for item in items] == [
        [as_read(m) for m in MAILS if m.thread == thread] for thread in range(4)
    ]
    for item, thread in zip(items, range(4), strict=True):
        first = next(m for m in MAILS if m.thread == thread)
        assert item.title == first.subject and item.timestamp == first.timestamp
        assert item.metadata["participants"] == [f"{n} <{a}>" for n, a in (first.sender, first.recipient)]


def test_replies_lose_their_quotes_and_signatures_and_html_becomes_text(tmp_path: Path) -> None:
    items = scan(write_mbox(tmp_path / "a.mbox", MAILS))
    messages = {m.metadata["message_id"]: m for item in items for m in item.messages}
    for mail in MAILS:
        metadata = messages[mail.message_id].metadata
        assert metadata["content_type"] == ("text/html" if mail.html else "text/plain")
        assert metadata["signature_removed"] is not mail.html
        assert (metadata["quoted_lines_removed"] > 0) is (mail.parent is not None)
        assert metadata["in_reply_to"] == (mail.parent.message_id if mail.parent else None)
    assert any(m.html for m in MAILS) and any(m.text.startswith("From ") for m in MAILS)
    assert b"\n>From my side:" in (tmp_path / "a.mbox").read_bytes()  # escaped on disk, not in the text


def test_maildir_flags_are_read_and_a_mail_still_in_tmp_is_skipped(tmp_path: Path) -> None:
    folder = write_maildir(tmp_path / "Maildir", MAILS)
    messages = [m for item in scan(folder) for m in item.messages]
    assert "partial@example.com" not in {m.metadata["message_id"] for m in messages}
    flags = {m.metadata["path"].split("/")[0]: set() for m in messages}
    for message in messages:
        flags[message.metadata["path"].split("/")[0]].add(message.metadata.get("maildir_flags"))
    assert flags == {"cur": {"S"}, "new": {None}}
