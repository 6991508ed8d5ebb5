import json
import re
import threading
from pathlib import Path

import pytest

from mind_core.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main
from mind_core.harvest.importer import frame_content
from mind_core.harvest.items import HarvestItem
from mind_core.harvest.pipeline import default_source_name
from mind_core.plugins import get_source
from mind_core.store.home import DEFAULT_WORKSPACE, MindHome
from mind_core.store.schema import content_hash
from mind_core.store.write_lock import mind_write_lock
from mind_core.testing.exports import write_chatgpt_export


def run(capsys, *argv):
    code = main([*argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def report_row(table: str, source: str) -> dict[str, str]:
    """The plain harvest table's row of ``source``, by column (headers hold spaces: two or more
    spaces separate the columns)."""
    header, _, *rows = table.strip().splitlines()
    columns = re.split(r"\s{2,}", header.strip())
    row = next(re.split(r"\s{2,}", line.strip()) for line in rows if f" {source} " in f" {line} ")
    return dict(zip(columns, row, strict=True))


def test_the_harvest_table_speaks_the_readmes_words(tmp_path, capsys):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 2, 5)
    base = ["--home", str(tmp_path / "home"), "--embedder", "mock", "-q"]
    run(capsys, "sources", "add", "chatgpt", str(export), "--name", "gpt", *base)
    code, out, _ = run(capsys, "harvest", *base)
    row = report_row(out, "gpt")
    assert code == EXIT_OK and row["status"] == "harvested" and row["new frames"] == "10"
    assert row["entity mentions"].isdigit() and row["vectors"] == "10"


def test_sources_add_list_set_remove_and_harvest(tmp_path, capsys):
    home = str(tmp_path / "home")
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 2, 5)
    base = ["--home", home, "--embedder", "mock", "-q"]
    code, out, _ = run(capsys, "sources", "add", "chatgpt", str(export), "--name", "gpt", *base)
    assert code == EXIT_OK and "added source 'gpt'" in out
    code, out, _ = run(capsys, "sources", "set", "gpt", "--auto-sync", "--interval-hours", "6", *base)
    assert "auto-sync on, every 6h" in out
    code, out, _ = run(capsys, "sources", "list", *base, "--json")
    listed = json.loads(out)
    assert listed[0]["source"] == "gpt" and listed[0]["auto_sync"] is True

    code, out, _ = run(capsys, "harvest", *base, "--json")
    report = json.loads(out)[0]
    assert code == EXIT_OK and report["imported"]["frames_new"] == 10
    code, out, _ = run(capsys, "harvest", "--due", *base)
    assert "nothing to harvest" in out  # just synced: not due
    code, out, _ = run(capsys, "harvest", "gpt", *base)
    assert report_row(out, "gpt")["status"] == "unchanged"
    code, out, _ = run(capsys, "stats", *base, "--json")
    assert json.loads(out)[0]["frames"] == 10
    code, out, _ = run(capsys, "doctor", *base)
    assert code == EXIT_OK and "status: ok" in out
    code, out, _ = run(capsys, "sources", "remove", "gpt", *base)
    assert code == EXIT_OK


def test_errors_are_one_line_with_meaningful_exit_codes(tmp_path, capsys):
    base = ["--home", str(tmp_path / "home"), "--embedder", "mock", "-q"]
    code, _, err = run(capsys, "sources", "add", "myspace", str(tmp_path), *base)
    assert code == EXIT_USAGE and err.startswith("error: unknown source kind") and "chatgpt" in err
    assert "Traceback" not in err
    code, _, err = run(capsys, "sources", "add", "chatgpt", str(tmp_path / "missing.json"), *base)
    assert code == EXIT_USAGE and "does not exist" in err
    code, _, err = run(capsys, "stats", "--workspace", "../etc", *base)
    assert code == EXIT_USAGE and "invalid workspace name" in err
    code, _, err = run(capsys, "harvest", "nope", *base)
    assert code == EXIT_USAGE and "no mind for workspace 'default'" in err
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 1, 2)
    run(capsys, "sources", "add", str(export), *base)
    code, _, err = run(capsys, "harvest", "nope", *base)
    assert code == EXIT_USAGE and "no source named 'nope'" in err


SHARED_SOURCES = [
    ("chatgpt", "chat-exports/chatgpt/chatgpt2graph-2023/conversations.json"),
    ("chatgpt", "chat-exports/chatgpt/polylogue-fixtures/native-conversation-v1.json"),
    ("chatgpt", "chat-exports/chatgpt/polylogue-fixtures/origin-chatgpt-export.json"),
    ("claude", "chat-exports/claude/anthropic-data-2025"),
    ("claude", "chat-exports/claude/polylogue-fixtures/origin-claude-ai-export.json"),
    ("gemini", "chat-exports/gemini/polylogue-aistudio"),
    ("markdown", "markdown/obsidian-help-en"),
    ("markdown", "markdown/kepano-obsidian"),
    ("email", "email/cpython-test_email"),
    ("email", "email/mail-parser"),
    ("email", "email/notmuch-corpus"),
    ("email", "email/mimekit-mbox"),
]


def expected_frames(kind: str, path: Path) -> set[str]:
    """Distinct frame contents, computed from the plugin's scan without the import engine."""
    hashes = set()
    for event in get_source(kind).scan(path):
        if isinstance(event, HarvestItem):
            hashes.update(content_hash(frame_content(event, m)) for m in event.messages if m.text.strip())
    return hashes


@pytest.mark.slow
def test_harvest_all_shared_data_through_the_cli(tmp_path, capsys, shared_data):
    base = ["--home", str(tmp_path / "home"), "--embedder", "mock", "-q"]
    expected: set[str] = set()
    for index, (kind, rel) in enumerate(SHARED_SOURCES):
        code, _, err = run(
            capsys, "sources", "add", kind, str(shared_data / rel), "--name", f"{kind}-{index}", *base
        )
        assert code == EXIT_OK, err
        expected |= expected_frames(kind, shared_data / rel)
    code, out, err = run(capsys, "harvest", *base, "--json")
    reports = json.loads(out)
    assert code == EXIT_FAILED, err  # one source lost an item (below): partial, and the run says so
    assert [r["source"] for r in reports if r["status"] != "ok"] == ["email-9"]
    assert len(reports) == len(SHARED_SOURCES) and not any(r["skipped"] for r in reports)
    code, out, _ = run(capsys, "stats", *base, "--json")
    stats = json.loads(out)[0]
    assert stats["frames"] == len(expected) > 1500
    assert stats["sources"] == len(SHARED_SOURCES)
    assert stats["vectors"] == stats["frames"] and stats["entities"] > 100
    errors = {r["source"]: r["imported"]["error_count"] for r in reports}
    outlook = "email-9"  # mail-parser: its binary Outlook .msg is a located error, not a crash
    by_source = {r["source"]: r for r in reports}
    assert errors[outlook] == 1 and "mail_outlook_1" in by_source[outlook]["imported"]["errors"][0]
    assert sum(errors.values()) == 1


def test_snapshot_and_analytics_commands(tmp_path, capsys):
    home = str(tmp_path / "home")
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 3, 4)
    base = ["--home", home, "--embedder", "mock", "-q"]
    assert run(capsys, "sources", "add", "chatgpt", str(export), "--name", "gpt", *base)[0] == EXIT_OK
    assert run(capsys, "harvest", *base)[0] == EXIT_OK
    code, out, _ = run(capsys, "snapshot", *base, "--date", "2024-05-01", "--json")
    assert code == EXIT_OK and json.loads(out)["minds"]["default"]["rows"]["frames"] == 12
    code, out, _ = run(capsys, "analytics", "run", "frames_by_source", "--home", home, "--format", "json")
    assert code == EXIT_OK and sum(row["frames"] for row in json.loads(out)) == 12
    code, out, _ = run(capsys, "analytics", "sql", "SELECT count(*) AS n FROM frames_latest", "--home", home,
                       "--format", "csv")
    assert out.split() == ["n", "12"]
    code, out, _ = run(capsys, "analytics", "report", "--out", str(tmp_path / "report"), "--home", home)
    assert code == EXIT_OK and (tmp_path / "report" / "index.html").is_file()
    code, _, err = run(capsys, "analytics", "sql", "SELECT nonsense FROM nowhere", "--home", home)
    assert code == EXIT_USAGE and "Traceback" not in err


@pytest.mark.slow
def test_a_cli_harvest_waits_for_the_mind_s_other_writer(tmp_path, capsys):
    home = tmp_path / "home"
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 2, 5)
    base = ["--home", str(home), "--embedder", "mock", "-q"]
    assert run(capsys, "sources", "add", "chatgpt", str(export), "--name", "gpt", *base)[0] == EXIT_OK
    mind_path = MindHome(home).mind_path(DEFAULT_WORKSPACE)
    held, release = threading.Event(), threading.Event()

    def other_writer():  # flock locks belong to open files: another open file in this process is another holder
        with mind_write_lock(mind_path):
            held.set()
            release.wait(30)

    holder = threading.Thread(target=other_writer)
    holder.start()
    assert held.wait(30)
    threading.Timer(1.0, release.set).start()
    code, out, err = run(capsys, "harvest", *base, "--json")
    finished_after_release = release.is_set()  # the other writer lets go only once released
    holder.join(30)
    assert code == EXIT_OK and json.loads(out)[0]["imported"]["frames_new"] == 10
    assert "waiting for the other writer" in err and finished_after_release


def test_all_workspaces_covers_every_mind_of_the_home_the_personal_one_included(tmp_path, capsys):
    home = MindHome(tmp_path / "home")
    base = ["--home", str(home.root), "--embedder", "mock", "-q", "--json"]
    for workspace, conversations in (("personal", 1), ("team", 2)):
        export = write_chatgpt_export(tmp_path / workspace / "conversations.json", conversations, 2)
        run(capsys, "sources", "add", "chatgpt", str(export), "--name", "gpt", "-w", workspace, *base)
    assert home.minds() == ["personal", "team"]
    code, out, _ = run(capsys, "harvest", "--all-workspaces", *base)
    harvested = {(r["workspace"], r["imported"]["frames_new"]) for r in json.loads(out)}
    assert code == EXIT_OK and harvested == {("personal", 2), ("team", 4)}
    code, out, _ = run(capsys, "sources", "list", "--all-workspaces", *base)
    assert {s["workspace"] for s in json.loads(out)} == {"personal", "team"}
    code, out, _ = run(capsys, "stats", "--all-workspaces", *base)
    assert [m["workspace"] for m in json.loads(out)] == ["personal", "team"]
    code, out, _ = run(capsys, "doctor", "--all-workspaces", *base)
    assert code == EXIT_OK and [d["workspace"] for d in json.loads(out)] == ["personal", "team"]


def test_doctor_and_a_missing_source_name_the_workspace(tmp_path, capsys):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 1, 2)
    base = ["--home", str(tmp_path / "home"), "--embedder", "mock", "-q", "-w", "team"]
    run(capsys, "sources", "add", "chatgpt", str(export), "--name", "gpt", *base)
    code, out, _ = run(capsys, "doctor", *base)
    assert code == EXIT_OK and out.splitlines()[0] == "workspace: team"
    code, _, err = run(capsys, "harvest", "nosuch", *base)
    assert code == EXIT_USAGE
    assert "error: no source named 'nosuch' in workspace 'team' (registered: gpt)\n" in err
    code, _, err = run(capsys, "sources", "set", "nosuch", "--auto-sync", *base)
    assert code == EXIT_USAGE and "in workspace 'team'" in err


def test_a_prune_that_deleted_frames_shows_them_in_the_table(tmp_path, capsys):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 4, 5)
    base = ["--home", str(tmp_path / "home"), "--embedder", "mock", "-q"]
    run(capsys, "sources", "add", "chatgpt", str(export), "--name", "gpt", *base)
    code, out, _ = run(capsys, "harvest", *base)
    assert code == EXIT_OK and "pruned" not in out  # nothing pruned: no column for it
    write_chatgpt_export(export, 3, 5)  # the same first three conversations: the fourth is gone
    code, out, _ = run(capsys, "harvest", "gpt", "--prune", *base)
    row = report_row(out, "gpt")
    assert code == EXIT_OK and row["pruned frames"] == "5" and row["unchanged frames"] == "15"


def test_an_unchanged_source_shows_the_frames_it_holds_not_zero_counts(tmp_path, capsys):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 2, 5)
    base = ["--home", str(tmp_path / "home"), "--embedder", "mock", "-q"]
    run(capsys, "sources", "add", "chatgpt", str(export), "--name", "gpt", *base)
    run(capsys, "harvest", *base)
    code, out, _ = run(capsys, "harvest", *base)
    row = report_row(out, "gpt")
    assert code == EXIT_OK and row["status"] == "unchanged"
    assert (row["items"], row["new frames"], row["unchanged frames"], row["errors"]) == ("-", "0", "10", "-")
    assert "unchanged: the files are as at the last harvest" in out
    code, out, _ = run(capsys, "harvest", *base, "--json")
    assert json.loads(out)[0]["frames_held"] == 10


def test_sources_list_names_per_harvest_and_cumulative_counts_apart(tmp_path, capsys):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 2, 3)
    base = ["--home", str(tmp_path / "home"), "--embedder", "mock", "-q"]
    run(capsys, "sources", "add", "chatgpt", str(export), "--name", "gpt", *base)
    run(capsys, "harvest", *base)
    write_chatgpt_export(export, 3, 3)  # one conversation more
    run(capsys, "harvest", *base)
    _, out, _ = run(capsys, "sources", "list", *base, "--json")
    listed = json.loads(out)[0]
    assert (listed["last_harvest_items"], listed["items_imported_total"]) == (3, 5)
    assert (listed["frames_held"], listed["frames_created_total"], listed["last_harvest_errors"]) == (9, 9, 0)
    assert not {"last_items", "items_imported", "last_frames"} & listed.keys()
    _, out, _ = run(capsys, "sources", "list", *base)
    assert re.split(r"\s{2,}", out.splitlines()[0].strip())[6:9] == ["last items", "frames held", "last errors"]


def test_a_source_added_without_a_name_is_named_after_its_path(tmp_path, capsys):
    base = ["--home", str(tmp_path / "home"), "--embedder", "mock", "-q"]
    first = write_chatgpt_export(tmp_path / "Work Chats" / "conversations.json", 1, 2)
    second = write_chatgpt_export(tmp_path / "chatgpt-export.json", 1, 2, seed=3)
    code, out, _ = run(capsys, "sources", "add", "chatgpt", str(first.parent), *base)
    assert code == EXIT_OK and "added source 'work-chats' (chatgpt)" in out
    code, out, _ = run(capsys, "sources", "add", str(second), *base)  # the same kind, detected
    assert code == EXIT_OK and "added source 'chatgpt-export' (chatgpt, detected)" in out
    assert run(capsys, "sources", "add", str(second), *base)[0] == EXIT_OK  # the same path again: no change
    clash = write_chatgpt_export(tmp_path / "other" / "chatgpt-export.json", 1, 2, seed=5)
    code, _, err = run(capsys, "sources", "add", str(clash), *base)
    assert code == EXIT_USAGE and err.count("\n") == 1
    assert "a source named 'chatgpt-export' (the name derived from 'chatgpt-export.json')" in err
    assert "--name NAME" in err
    assert run(capsys, "sources", "add", str(clash), "--name", "gpt-other", *base)[0] == EXIT_OK


def test_the_derived_source_name_is_the_path_s_last_part_as_a_slug(tmp_path):
    mailbox = tmp_path / "Work Inbox.mbox"
    mailbox.write_text("")
    notes = tmp_path / "Notizen Über v1.2"
    notes.mkdir()
    assert default_source_name(mailbox, "email") == "work-inbox"  # a file's extension dropped
    assert default_source_name(notes, "markdown") == "notizen-uber-v1-2"  # a folder's name whole
    assert default_source_name(tmp_path / "日本語", "markdown") == "markdown"  # nothing left: the kind
