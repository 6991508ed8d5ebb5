"""Redaction on a real harvest: planted secrets and personal data never reach the mind's files or
the embedder, the report counts them, the dry run lists them, and a new policy re-harvests."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from mind_core.cli import EXIT_OK, main
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.harvest.redaction_preview import preview_redaction
from mind_core.mind import Mind
from mind_core.privacy.redaction_policy import RedactionPolicy, set_source_policy, set_workspace_policy
from mind_core.store.home import MindHome
from mind_core.testing.exports import SyntheticMail, write_mbox
from mind_core.testing.fakes import HashingEmbedder
from mind_core.testing.redaction_corpus import redaction_messages, write_redaction_export
from tests.privacy.conftest import BOB, MAILS, raw_bytes

MESSAGES = redaction_messages(80, seed=5)
PLANTED = [value for m in MESSAGES for _, value in m.planted]
# what the report must count: per message, each planted value once, by its kind
EXPECTED = Counter(kind for m in MESSAGES for kind, _ in set(m.planted))


@pytest.fixture
def export(tmp_path: Path) -> Path:
    return write_redaction_export(tmp_path / "export" / "conversations.json", MESSAGES).parent


def _mind(tmp_path: Path, export: Path, policy: str | None) -> tuple[Path, Mind, HashingEmbedder]:
    path, embedder = tmp_path / "mind.db", HashingEmbedder()
    mind = Mind.open(path, embedder=embedder)
    if policy is not None:
        set_workspace_policy(mind.db, RedactionPolicy.parse(policy))
    register_source(mind, "chatgpt", export, "chat")
    return path, mind, embedder


def _left(data: bytes) -> list[str]:
    return [value for value in PLANTED if value.lower().encode() in data]


def test_nothing_planted_reaches_the_mind_files_or_the_embedder(tmp_path, export):
    assert len(PLANTED) > 40 and len(EXPECTED) == 12  # every kind planted
    path, mind, embedder = _mind(tmp_path, export, "all")
    report = harvest(mind, "chat")
    assert report.status == "ok" and report.imported.frames_new == len(MESSAGES)
    assert report.imported.redacted == dict(EXPECTED)
    assert report.imported.messages_redacted == sum(1 for m in MESSAGES if m.planted)
    embedded = "\n".join(embedder.texts_embedded)
    assert "[secret:aws-key]" in embedded and "[iban]" in embedded
    assert not [v for v in PLANTED if v in embedded]  # the vectors' source texts
    texts = [row[0] + row[1] for row in mind.db.query("SELECT content, metadata FROM memory_frames")]
    assert not [v for v in PLANTED if any(v in t for t in texts)]
    mind.close()
    assert _left(raw_bytes(path)) == []


def test_the_dry_run_lists_every_finding_masked_and_writes_nothing(tmp_path, export):
    path, mind, _ = _mind(tmp_path, export, None)
    assert preview_redaction(mind, "chat").counts == {}  # no policy: nothing to redact
    found = preview_redaction(mind, "chat", RedactionPolicy.parse("all"), limit=None)
    assert found.counts == dict(EXPECTED) and len(found.hits) == sum(EXPECTED.values())
    assert {h.file for h in found.hits} == {str(export / "conversations.json")}
    assert all(h.message.startswith(h.message.split("/")[0]) and h.field == "text" for h in found.hits)
    shown = json.dumps(found.to_dict())
    assert not [v for v in PLANTED if v in shown]
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames") == 0
    mind.close()


def test_the_dry_run_from_the_command_line(tmp_path, export, capsys):
    home = MindHome(tmp_path / "home")
    base = ["--home", str(home.root), "--embedder", "mock"]
    assert main(["sources", "add", str(export), "--name", "chat", "--redact", "secrets", *base]) == EXIT_OK
    capsys.readouterr()
    assert main(["redaction", "preview", "chat", "--limit", "10", "--json", *base]) == EXIT_OK
    (result,) = json.loads(capsys.readouterr().out)
    secrets = {k: v for k, v in EXPECTED.items() if k.startswith("secret:")}
    assert result["policy"] == "secrets" and result["counts"] == secrets
    assert len(result["hits"]) == 10 and result["hits_not_listed"] == sum(secrets.values()) - 10
    assert main(["redaction", "preview", "chat", "--kinds", "email", *base]) == EXIT_OK
    out = capsys.readouterr().out
    assert f"{EXPECTED['email']} email" in out and "would redact (nothing written)" in out
    assert not [v for v in PLANTED if v in out]
    assert main(["sources", "add", str(export), "--name", "plain", *base]) == EXIT_OK
    capsys.readouterr()
    assert main(["redaction", "preview", "plain", *base]) == EXIT_OK  # no policy: says so, not "0 of 0"
    assert "no redaction policy, nothing to preview (try one with --kinds" in capsys.readouterr().out
    assert main(["sources", "remove", "plain", *base]) == EXIT_OK
    capsys.readouterr()
    assert main(["harvest", "--json", *base]) == EXIT_OK
    (report,) = json.loads(capsys.readouterr().out)
    assert report["imported"]["redacted"] == secrets
    with Mind.open(home.mind_path("default")) as mind:
        assert "@" in "".join(row[0] for row in mind.db.query("SELECT content FROM memory_frames"))


def test_a_new_policy_re_harvests_and_scrubs_what_it_now_redacts(tmp_path, export):
    path, mind, _ = _mind(tmp_path, export, None)
    assert harvest(mind, "chat").imported.redacted == {}
    assert harvest(mind, "chat").skipped  # unchanged files, unchanged policy
    mind.db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    assert len(_left(raw_bytes(path))) == len(PLANTED)

    set_workspace_policy(mind.db, RedactionPolicy.parse("all"))
    again = harvest(mind, "chat")
    assert not again.skipped and again.imported.redacted == dict(EXPECTED)
    assert again.imported.frames_updated == sum(1 for m in MESSAGES if m.planted)
    assert again.scrubbed is True
    assert harvest(mind, "chat").skipped  # the policy is now the one harvested under

    set_source_policy(mind.db, "chat", RedactionPolicy.parse("email"))  # the source's own wins
    narrower = harvest(mind, "chat")
    assert not narrower.skipped and narrower.imported.redacted == {"email": EXPECTED["email"]}
    assert narrower.scrubbed is True  # any change to a redacting policy scrubs (the mark cannot tell more)
    set_source_policy(mind.db, "chat", RedactionPolicy.parse("none"))
    off = harvest(mind, "chat")
    assert not off.skipped and off.imported.redacted == {} and off.scrubbed is None
    mind.close()
    assert len(_left(raw_bytes(path))) == len(PLANTED)  # redaction off: the source's text as it is


def test_mail_headers_are_redacted_and_redacted_senders_stay_apart(tmp_path):
    mails = [
        *MAILS[3:],
        SyntheticMail(
            message_id="m9@example.com",
            thread=9,
            sender=("Farid Haddad", "farid.haddad@corp.example.net"),
            recipient=BOB,
            subject="Bank details",
            sent=MAILS[0].sent,
            text="My IBAN is DE89 3704 0044 0532 0130 00, call +41 44 668 18 00 if anything is unclear.",
        ),
    ]
    mailbox = write_mbox(tmp_path / "mail" / "inbox.mbox", mails)
    mind = Mind.open(tmp_path / "mind.db", embedder=HashingEmbedder())
    set_workspace_policy(mind.db, RedactionPolicy.parse("personal"))
    register_source(mind, "email", mailbox, "mail")
    report = harvest(mind, "mail")
    assert report.imported.redacted["iban"] == 1 and report.imported.redacted["phone"] == 1
    assert report.imported.redacted["email"] == 6  # each mail's sender and recipient, once per mail
    stored = "".join(row[0] + row[1] for row in mind.db.query("SELECT content, metadata FROM memory_frames"))
    assert "alice.johnson@" not in stored and "bob.smith@" not in stored and "farid.haddad@" not in stored and "DE89" not in stored and "668 18 00" not in stored
    assert "m9@example.com" in stored  # a Message-ID is an identifier, not an address: kept
    people = {row[0] for row in mind.db.query("SELECT name FROM knowledge_entities WHERE entity_type = 'person'")}
    assert {"Alice Johnson", "Bob Smith", "Farid Haddad"} <= people and "[email]" not in people
    mind.close()


def test_policies_from_the_command_line_and_the_harvest_table(tmp_path, export, capsys):
    home = MindHome(tmp_path / "home")
    base = ["--home", str(home.root), "--embedder", "mock"]
    assert main(["sources", "add", str(export), "--name", "chat", *base]) == EXIT_OK
    assert main(["redaction", "set", "iban,card", *base]) == EXIT_OK
    assert "workspace 'default' now redacts: iban,card; the next harvest reads 'chat' again" in capsys.readouterr().out
    assert main(["redaction", "set", "bogus", *base]) == 2  # refused, nothing changed
    assert "unknown redaction kind 'bogus'" in capsys.readouterr().err
    assert main(["redaction", "show", "--json", *base]) == EXIT_OK
    (shown,) = json.loads(capsys.readouterr().out)
    assert shown["policy"] == "iban,card" and shown["sources"] == [{"source": "chat", "own": False, "policy": "iban,card"}]
    assert main(["harvest", *base]) == EXIT_OK
    out = capsys.readouterr().out
    assert "redacted" in out.splitlines()[0]  # the table's column, there because something was
    assert f"default/chat: redacted {max(EXPECTED['iban'], EXPECTED['card'])} " in out
    assert main(["sources", "set", "chat", "--redact", "none", *base]) == EXIT_OK
    capsys.readouterr()
    assert main(["redaction", "show", "--json", *base]) == EXIT_OK
    (shown,) = json.loads(capsys.readouterr().out)
    assert shown["sources"] == [{"source": "chat", "own": True, "policy": "none"}]
