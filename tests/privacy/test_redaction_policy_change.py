"""A policy set after a harvest: the re-harvest brings the knowledge graph, its history and the
summaries to the policy too (modelled on the mail-parser corpus: senders named only by their
address, a non-ASCII local part, one mail in two files, a source left ``partial`` by a file it
cannot read), and the mind's file keeps no byte of an address."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.privacy.redaction_policy import RedactionPolicy, set_workspace_policy
from mind_core.testing.exports import SyntheticMail, write_eml_folder
from mind_core.testing.fakes import HashingEmbedder
from tests.privacy.conftest import raw_bytes

ALICE = ("", "alice@example.com")  # no display name: the person is named by the address
DANG = ("", "dangl-ue@email.com")  # written "danglüe@email.com", raw UTF-8 in the header, as the corpus has it
BOB = ("Bob Smith", "bob.smith@example.org")
ADDRESSES = ("alice@example.com", "danglüe@email.com", "bob.smith@example.org", "cc.only@example.net")


def _mail(n: int, sender: tuple[str, str], recipient: tuple[str, str], text: str) -> SyntheticMail:
    return SyntheticMail(
        f"id{n}.{n}@msgid.invalid", n, sender, recipient, f"Subject {n}", datetime(2024, 1, 1 + n, 12, tzinfo=UTC), text
    )


MAILS = [
    _mail(0, ALICE, BOB, "The invoice is attached, write to cc.only@example.net for the copy."),
    _mail(1, BOB, ALICE, "Thanks, paid today."),
    _mail(2, DANG, BOB, "Grüße aus Berlin, the parcel left this morning."),
]


def _mailbox(tmp_path):
    folder = write_eml_folder(tmp_path / "mail", MAILS)
    (folder / "copy").mkdir()
    (folder / "copy" / "same.eml").write_bytes(MAILS[2].to_bytes())  # one mail in two files
    for eml in folder.rglob("*.eml"):
        eml.write_bytes(eml.read_bytes().replace(DANG[1].encode(), "danglüe@email.com".encode()))
    (folder / "broken.msg").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600)  # an Outlook .msg
    return folder


def _addresses_in(mind: Mind, sql: str) -> list[str]:
    text = " ".join(str(row[0]) for row in mind.db.query(sql)).lower()
    return [a for a in ADDRESSES if a in text or json.dumps(a)[1:-1] in text]


def test_a_new_policy_rewrites_the_knowledge_and_leaves_no_address_in_the_file(tmp_path):
    path = tmp_path / "mind.db"
    mind = Mind.open(path, embedder=HashingEmbedder())
    register_source(mind, "email", _mailbox(tmp_path), "mail")
    first = harvest(mind, "mail")
    assert first.status == "partial"  # the .msg: no fingerprint recorded, read again next time
    people = {row[0] for row in mind.db.query("SELECT name FROM knowledge_entities WHERE entity_type = 'person'")}
    assert {"alice@example.com", "danglüe@email.com"} <= people
    mind.db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    assert all(a.encode() in raw_bytes(path) for a in ADDRESSES)

    set_workspace_policy(mind.db, RedactionPolicy.parse("secrets,personal"))
    again = harvest(mind, "mail")
    assert again.imported.redacted["email"] >= 4 and again.scrubbed is True
    for sql in (
        "SELECT name || properties FROM knowledge_entities",
        "SELECT properties FROM knowledge_relations",
        "SELECT data FROM knowledge_versions",
        "SELECT summary FROM sessions",
        "SELECT content || metadata FROM memory_frames",
    ):
        assert _addresses_in(mind, sql) == [], sql
    persons = [
        (row[0], json.loads(row[1]))
        for row in mind.db.query("SELECT name, properties FROM knowledge_entities WHERE entity_type = 'person'")
    ]
    assert not [name for name, _ in persons if "@" in name or "[email]" in name]  # the bare addresses went
    bob = [properties for name, properties in persons if name == BOB[0]]
    assert bob and "addresses" not in bob[0]  # its one address redacted: no "addresses": ["[email]"]
    assert harvest(mind, "mail").scrubbed is None  # the policy is now the one its frames hold
    mind.close()
    assert [a for a in ADDRESSES if a.encode() in raw_bytes(path)] == []
