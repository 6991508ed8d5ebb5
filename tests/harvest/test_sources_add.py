"""`mind sources add`: what it says about a path already registered, a path another source reads,
a path given through a symlink, and a mixed folder whose other exports it will not read."""

import json
import os

from mind_core.cli import EXIT_OK, EXIT_USAGE, main
from mind_core.testing.exports import write_chatgpt_export

MBOX = (
    "From alice@example.org Mon Jun  3 10:00:00 1996\n"
    "From: Alice <alice@example.org>\n"
    "To: Bob <bob@example.org>\n"
    "Subject: billing database\n"
    "Date: Mon, 3 Jun 1996 10:00:00 +0000\n"
    "Message-ID: <1@example.org>\n"
    "\n"
    "The billing database moves on Friday.\n"
)


def run(capsys, *argv):
    code = main([*argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def base(tmp_path):
    return ["--home", str(tmp_path / "home"), "--embedder", "mock"]


def listed(capsys, tmp_path):
    return json.loads(run(capsys, "sources", "list", "--json", *base(tmp_path))[1])


def test_adding_a_registered_path_again_says_so_and_changes_nothing(tmp_path, capsys):
    mailbox = tmp_path / "simple.mbox"
    mailbox.write_text(MBOX)
    code, out, _ = run(capsys, "sources", "add", str(mailbox), *base(tmp_path))
    assert code == EXIT_OK and out.startswith("added source 'simple' (email, detected)")
    before = listed(capsys, tmp_path)
    code, out, err = run(capsys, "sources", "add", str(mailbox), *base(tmp_path))
    assert code == EXIT_OK and not err
    assert "source 'simple' (email) is already registered" in out and "nothing changed" in out
    assert "added" not in out
    assert listed(capsys, tmp_path) == before
    code, out, _ = run(capsys, "sources", "add", str(mailbox), "--json", *base(tmp_path))
    assert json.loads(out)["already_registered"] is True


def test_adding_a_path_registered_under_another_name_names_that_source(tmp_path, capsys):
    mailbox = tmp_path / "simple.mbox"
    mailbox.write_text(MBOX)
    run(capsys, "sources", "add", str(mailbox), "--name", "inbox", *base(tmp_path))
    code, out, _ = run(capsys, "sources", "add", str(mailbox), *base(tmp_path))  # the derived name is 'simple'
    assert code == EXIT_OK and "source 'inbox' (email) is already registered" in out
    assert [s["source"] for s in listed(capsys, tmp_path)] == ["inbox"]


def test_a_sync_option_on_a_registered_path_changes_only_the_sync(tmp_path, capsys):
    mailbox = tmp_path / "simple.mbox"
    mailbox.write_text(MBOX)
    run(capsys, "sources", "add", str(mailbox), *base(tmp_path))
    code, out, _ = run(
        capsys, "sources", "add", str(mailbox), "--auto-sync", "--interval-hours", "6", *base(tmp_path)
    )
    assert code == EXIT_OK and "already registered" in out and "auto-sync on, every 6h" in out
    (source,) = listed(capsys, tmp_path)
    assert (source["source"], source["auto_sync"], source["sync_interval_hours"]) == ("simple", True, 6)


def test_another_name_for_a_path_another_source_reads_is_added_with_a_warning(tmp_path, capsys):
    folder = tmp_path / "mail"
    folder.mkdir()
    mailbox = folder / "simple.mbox"
    mailbox.write_text(MBOX)
    run(capsys, "sources", "add", str(mailbox), *base(tmp_path))
    code, out, err = run(capsys, "sources", "add", str(mailbox), "--name", "simple2", *base(tmp_path))
    assert code == EXIT_OK and out.startswith("added source 'simple2'")
    assert err.startswith("warning: source 'simple' (email) reads the same path") and "shared, not copied" in err
    code, out, err = run(capsys, "sources", "add", str(folder), "--name", "all-mail", *base(tmp_path))
    assert code == EXIT_OK and out.startswith("added source 'all-mail'")
    assert err.count("warning:") == 2 and f"reads {mailbox}, which lies inside this path" in err
    assert [s["source"] for s in listed(capsys, tmp_path)] == ["all-mail", "simple", "simple2"]


def test_an_error_names_the_path_as_typed_with_the_resolved_one_beside_it(tmp_path, capsys, monkeypatch):
    target = tmp_path / "bin" / "tool-3.11"
    target.parent.mkdir()
    target.write_bytes(b"\x7fELF\x02\x01\x01\x00")
    link = tmp_path / "tool"
    os.symlink(target, link)
    code, _, err = run(capsys, "sources", "add", str(link), *base(tmp_path))
    assert code == EXIT_USAGE and err.startswith(f"error: cannot tell what {link} ({target}) holds")
    code, _, err = run(capsys, "sources", "add", str(target), *base(tmp_path))
    assert f"cannot tell what {target} holds" in err  # typed as it resolves: shown once
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "sources", "add", "gone.mbox", *base(tmp_path))
    assert code == EXIT_USAGE and f"source path does not exist: gone.mbox ({tmp_path / 'gone.mbox'})" in err


def test_a_mixed_folder_names_the_other_kinds_below_it(tmp_path, capsys):
    mixed = tmp_path / "data"
    (mixed / "notes").mkdir(parents=True)
    (mixed / "README.md").write_text("# Data\n\nWhat lies here.\n")
    (mixed / "notes" / "plan.md").write_text("# Plan\n\nShip it.\n")
    (mixed / "archive" / "mail").mkdir(parents=True)
    (mixed / "archive" / "mail" / "inbox.mbox").write_text(MBOX)
    write_chatgpt_export(mixed / "exports" / "gpt" / "conversations.json", 1, 2)
    code, out, _ = run(capsys, "sources", "add", str(mixed), *base(tmp_path))
    added, note = out.strip().splitlines()
    assert code == EXIT_OK and added.startswith("added source 'data' (markdown, detected)")
    assert note.startswith("also found below: email (archive/mail); chatgpt (exports/gpt);")
    assert "add those folders as sources of their own" in note
    code, out, _ = run(capsys, "sources", "add", str(mixed), "--name", "again", "--json", *base(tmp_path))
    assert json.loads(out)["also_found_below"] == {
        "email": [str(mixed / "archive" / "mail")],
        "chatgpt": [str(mixed / "exports" / "gpt")],
    }


def test_a_folder_of_one_kind_gets_no_note(tmp_path, capsys):
    vault = tmp_path / "vault"
    (vault / "daily").mkdir(parents=True)
    (vault / "index.md").write_text("# Index\n")
    (vault / "daily" / "monday.md").write_text("# Monday\n")
    code, out, _ = run(capsys, "sources", "add", str(vault), *base(tmp_path))
    assert code == EXIT_OK and out.strip().splitlines() == [out.strip()] and "also found" not in out


def test_the_shared_data_folder_names_its_mailboxes_and_chat_exports(tmp_path, capsys, shared_data):
    code, out, _ = run(capsys, "sources", "add", str(shared_data), "--json", *base(tmp_path))
    added = json.loads(out)
    found = added["also_found_below"]
    # a mixed folder is read as one kind (its README.md no longer makes it notes); the others are named
    assert code == EXIT_OK and {"email", "chatgpt", "claude", "gemini"} <= {added["kind"], *found}
    assert str(shared_data.resolve() / "email" / "mimekit-mbox") in found["email"]
