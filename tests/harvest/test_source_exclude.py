"""`mind sources add/set --exclude`: files of a folder source that are never read, skipped without
an error and counted, the exclusions part of the source's fingerprint."""

from __future__ import annotations

import json
from pathlib import Path

from mind_core.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main
from mind_core.harvest.source_files import ReadingRules, exclusion_patterns
from mind_core.harvest.stores import HarvestSourceStore
from mind_core.mind import Mind
from mind_core.store.home import MindHome

MAIL = (
    "From: Alice <alice@example.org>\n"
    "To: Bob <bob@example.org>\n"
    "Subject: billing database\n"
    "Date: Mon, 3 Jun 1996 10:00:00 +0000\n"
    "Message-ID: <1@example.org>\n"
    "\n"
    "The zqbilling database moves on Friday.\n"
)
# the head of an Outlook .msg (an OLE compound file): not a mail the email plugin can read
OLE_HEAD = bytes.fromhex("d0cf11e0a1b11ae1") + b"\x00" * 504


def run(capsys, home: Path, *argv: str) -> tuple[int, str]:
    code = main([*argv, "--home", str(home), "--embedder", "mock"])
    return code, capsys.readouterr().out


def mail_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "mail"
    (folder / "drafts").mkdir(parents=True)
    (folder / "good.eml").write_text(MAIL, encoding="utf-8")
    (folder / "outlook_1").write_bytes(OLE_HEAD)  # no suffix: read as a mail, so an error
    (folder / "drafts" / "outlook_2").write_bytes(OLE_HEAD)
    return folder


def fingerprint(home: Path) -> str | None:
    with Mind.open(MindHome(home).workspace_path("default")) as mind:
        return HarvestSourceStore(mind.db).get_by_source("mail").last_fingerprint


def harvest(capsys, home: Path, *argv: str) -> tuple[int, dict]:
    code, out = run(capsys, home, "harvest", "--json", *argv)
    [report] = json.loads(out)
    return code, report


def test_an_unreadable_file_is_excluded_counted_and_the_source_read_again(tmp_path: Path, capsys) -> None:
    home, folder = tmp_path / "home", mail_folder(tmp_path)
    assert run(capsys, home, "sources", "add", str(folder), "--kind", "email")[0] == EXIT_OK
    code, report = harvest(capsys, home)
    assert code == EXIT_FAILED and report["status"] == "partial" and report["excluded_files"] == 0
    located = sorted(Path(error.split(":")[0]).name for error in report["imported"]["errors"])
    assert located == ["outlook_1", "outlook_2"]
    assert all("not RFC 822 mail" in error for error in report["imported"]["errors"])
    assert fingerprint(home) is None  # partial: read again, every time

    code, out = run(capsys, home, "sources", "set", "mail", "--exclude", "outlook_*")
    assert code == EXIT_OK and "excludes outlook_*" in out
    code, report = harvest(capsys, home)
    assert code == EXIT_OK and report["status"] == "ok" and not report["imported"]["errors"]
    assert report["excluded_files"] == 2  # a glob without '/' matches names at any depth
    excluded_once = fingerprint(home)
    assert excluded_once is not None
    code, report = harvest(capsys, home)
    assert code == EXIT_OK and report["status"] == "skipped"
    (folder / "outlook_1").write_bytes(OLE_HEAD * 2)  # an excluded file changing is no change
    assert harvest(capsys, home)[1]["status"] == "skipped"

    code, out = run(capsys, home, "sources", "set", "mail", "--exclude", "./drafts/**", "--exclude", "outlook_1")
    assert code == EXIT_OK
    code, out = run(capsys, home, "harvest")
    assert code == EXIT_OK and "mail: excluded 2 files (its --exclude globs)" in out
    assert fingerprint(home) not in (None, excluded_once)  # other exclusions: another fingerprint
    [listed] = json.loads(run(capsys, home, "sources", "list", "--json")[1])
    assert listed["exclude"] == ["drafts/**", "outlook_1"]
    assert "default/mail: excludes drafts/**, outlook_1" in run(capsys, home, "sources", "list")[1]
    with Mind.open(MindHome(home).workspace_path("default")) as mind:
        assert mind.db.scalar("SELECT count(*) FROM memory_frames WHERE content LIKE '%zqbilling%'") == 1

    code, out = run(capsys, home, "sources", "set", "mail", "--no-exclude")
    assert code == EXIT_OK and "excludes" not in out
    assert json.loads(run(capsys, home, "sources", "list", "--json")[1])[0]["exclude"] == []
    code, report = harvest(capsys, home)  # not "unchanged": the exclusions went
    assert code == EXIT_FAILED and report["status"] == "partial" and report["excluded_files"] == 0


def test_sources_add_stores_the_exclusions_and_refuses_an_empty_one(tmp_path: Path, capsys) -> None:
    home, folder = tmp_path / "home", mail_folder(tmp_path)
    argv = ("sources", "add", str(folder), "--kind", "email")
    assert run(capsys, home, *argv, "--exclude", "")[0] == EXIT_USAGE
    assert not MindHome(home).workspace_path("default").exists()  # refused before a mind is created
    assert run(capsys, home, *argv, "--exclude", "*_?", "--exclude", "*_?")[0] == EXIT_OK
    with Mind.open(MindHome(home).workspace_path("default")) as mind:
        assert HarvestSourceStore(mind.db).reading_rules("mail").exclude == ("*_?",)
    code, report = harvest(capsys, home)
    assert code == EXIT_OK and report["status"] == "ok" and report["excluded_files"] == 2


def test_exclusion_globs_match_paths_names_and_folders() -> None:
    rules = ReadingRules(exclude=exclusion_patterns(["*.msg", "./drafts/**", "archive", "top.txt"]))
    assert rules.is_excluded("a.msg") and rules.is_excluded("deep/below/b.msg")
    assert rules.is_excluded("drafts/x.eml") and rules.is_excluded("drafts/sub/y.eml")
    assert rules.is_excluded("archive/old.eml") and rules.is_excluded("year/archive/old.eml")
    assert rules.is_excluded("top.txt") and rules.is_excluded("sub/top.txt")
    assert not rules.is_excluded("drafts.eml") and not rules.is_excluded("inbox/a.eml")
    assert not ReadingRules(exclude=("sub/*.eml",)).is_excluded("a.eml")
    assert ReadingRules.from_json(rules.to_json()) == rules
    assert ReadingRules.from_json('{"max_file_bytes": null}').exclude == ()


def test_the_real_outlook_file_among_real_mails_is_excluded(tmp_path: Path, capsys, shared_data: Path) -> None:
    home, folder = tmp_path / "home", shared_data / "email" / "mail-parser"
    assert run(capsys, home, "sources", "add", str(folder), "--name", "mail")[0] == EXIT_OK
    code, report = harvest(capsys, home)
    assert code == EXIT_FAILED and report["status"] == "partial"
    assert any("mail_outlook_1: binary Outlook .msg" in error for error in report["imported"]["errors"])
    assert run(capsys, home, "sources", "set", "mail", "--exclude", "mail_outlook_*")[0] == EXIT_OK
    code, report = harvest(capsys, home)
    assert code == EXIT_OK and report["status"] == "ok" and report["excluded_files"] == 1
