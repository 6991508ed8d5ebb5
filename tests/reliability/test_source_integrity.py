"""A failed source never looks healthy, and no source takes over another, through the real `mind` command."""

import json
import os
from pathlib import Path

import pytest

from mind_core.cli import EXIT_FAILED, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, main
from mind_core.testing.exports import write_chatgpt_export

CLAUDE_EXPORT = [
    {
        "uuid": "c1",
        "name": "Trip",
        "created_at": "2024-01-01T00:00:00Z",
        "chat_messages": [
            {"uuid": "m1", "text": "plan the trip to Porto", "sender": "human", "created_at": "2024-01-01T00:00:00Z"},
            {"uuid": "m2", "text": "sure, Porto in May", "sender": "assistant", "created_at": "2024-01-01T00:01:00Z"},
        ],
    }
]
MBOX = (
    "From alice@example.com Mon Jan  1 00:00:00 2024\nFrom: Alice <alice@example.com>\nTo: bob@example.com\n"
    "Subject: lunch\nDate: Mon, 1 Jan 2024 00:00:00 +0000\nMessage-ID: <1@example.com>\n\nlunch on friday?\n"
)


@pytest.fixture
def mind_cli(tmp_path, capsys):
    base = ["--home", str(tmp_path / "home"), "--embedder", "mock", "-q"]

    def run(*argv):
        code = main([*argv, *base])
        out = capsys.readouterr()
        assert "Traceback" not in out.err
        return code, out.out, out.err

    return run


@pytest.fixture
def inputs(tmp_path):
    chatgpt = write_chatgpt_export(tmp_path / "gpt" / "conversations.json", conversations=2, messages_each=3)
    claude = tmp_path / "claude" / "conversations.json"
    claude.parent.mkdir()
    claude.write_text(json.dumps(CLAUDE_EXPORT))
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "plan.md").write_text("# Plan\nmove the servers to Lisbon\n")
    mbox = tmp_path / "inbox.mbox"
    mbox.write_text(MBOX)
    return {"chatgpt": chatgpt.parent, "claude": claude.parent, "markdown": vault, "email": mbox}


def listed(run, name):
    code, out, _ = run("sources", "list", "--json")
    assert code == EXIT_OK
    return next(s for s in json.loads(out) if s["source"] == name)


def test_sources_add_detects_the_kind(mind_cli, inputs):
    for kind, path in inputs.items():
        code, out, _ = mind_cli("sources", "add", str(path), "--name", f"my-{kind}")
        assert code == EXIT_OK and f"({kind}, detected)" in out
        assert listed(mind_cli, f"my-{kind}")["kind"] == kind


def test_an_explicit_kind_that_contradicts_the_files_is_refused(mind_cli, inputs):
    code, _, err = mind_cli("sources", "add", "chatgpt", str(inputs["claude"]))
    assert code == EXIT_USAGE
    assert err.strip() == (
        f"error: {inputs['claude']} looks like a Claude.ai export, not chatgpt; pass --kind-anyway to insist"
    )
    code, _, err = mind_cli("sources", "add", "markdown", str(inputs["email"]))
    assert code == EXIT_USAGE and "not markdown" in err
    code, _, _ = mind_cli("sources", "add", "chatgpt", str(inputs["claude"]), "--kind-anyway")
    assert code == EXIT_OK and listed(mind_cli, "claude")["kind"] == "chatgpt"  # named after its folder


def test_a_path_that_is_not_utf8_is_one_clean_error(mind_cli, tmp_path):
    folder = os.fsdecode(os.fsencode(str(tmp_path)) + b"/notes-\xff")
    os.mkdir(folder)
    Path(folder, "a.md").write_text("# A\nnote\n")
    code, out, err = mind_cli("sources", "add", "markdown", folder)
    assert code == EXIT_USAGE and "is not valid UTF-8" in err and "\\xff" in err and out == ""


def test_sources_add_refuses_an_existing_name_unless_replace(mind_cli, inputs):
    assert mind_cli("sources", "add", "markdown", str(inputs["markdown"]), "--name", "notes")[0] == EXIT_OK
    code, _, err = mind_cli("sources", "add", "chatgpt", str(inputs["chatgpt"]), "--name", "notes")
    assert code == EXIT_USAGE and "a source named 'notes' already exists" in err and "--replace" in err
    assert listed(mind_cli, "notes")["kind"] == "markdown"
    code, _, _ = mind_cli("sources", "add", "chatgpt", str(inputs["chatgpt"]), "--name", "notes", "--replace")
    assert code == EXIT_OK and listed(mind_cli, "notes")["kind"] == "chatgpt"


def test_a_source_whose_every_record_fails_exits_non_zero_and_is_retried(mind_cli, inputs):
    export = inputs["chatgpt"] / "conversations.json"
    mind_cli("sources", "add", "chatgpt", str(inputs["chatgpt"]), "--name", "gpt")
    export.write_text("this is { not json")
    code, out, _ = mind_cli("harvest", "gpt")
    assert code == EXIT_FAILED and "failed" in out and "gpt: failed: every record failed" in out
    source = listed(mind_cli, "gpt")
    assert source["last_status"] == "failed" and source["last_fingerprint"] is None
    assert source["last_first_errors"] and "conversations.json" in source["last_first_errors"][0]
    code, out, _ = mind_cli("sources", "list")
    assert "failed" in out.splitlines()[2] and "every record failed" in out
    code, out, _ = mind_cli("doctor")
    assert code == EXIT_PROBLEMS and "gpt: failed: every record failed" in out
    code, out, _ = mind_cli("harvest", "gpt", "--json")
    assert code == EXIT_FAILED and json.loads(out)[0]["status"] == "failed"  # tried again, not skipped
    write_chatgpt_export(export, conversations=1, messages_each=2)
    code, out, _ = mind_cli("harvest", "gpt")
    assert code == EXIT_OK and listed(mind_cli, "gpt")["last_status"] == "ok"
    assert mind_cli("doctor")[0] == EXIT_OK


def test_a_missing_source_exits_non_zero_and_doctor_reports_it(mind_cli, inputs, tmp_path):
    mind_cli("sources", "add", "markdown", str(inputs["markdown"]), "--name", "notes")
    assert mind_cli("harvest", "notes")[0] == EXIT_OK
    inputs["markdown"].rename(tmp_path / "unmounted")
    code, out, _ = mind_cli("harvest", "notes")
    assert code == EXIT_FAILED and "missing" in out and "does not exist" in out
    assert listed(mind_cli, "notes")["last_status"] == "missing"
    code, out, _ = mind_cli("doctor")
    assert code == EXIT_PROBLEMS and "notes: missing" in out


def test_a_source_of_the_wrong_kind_is_empty_not_harvested(mind_cli, inputs):
    mind_cli("sources", "add", "email", str(inputs["markdown"]), "--name", "mail", "--kind-anyway")
    code, out, _ = mind_cli("harvest", "mail")
    assert code == EXIT_FAILED
    assert f"mail: empty: no file in {inputs['markdown']} looks like an email export" in out
    code, out, _ = mind_cli("doctor")
    assert code == EXIT_PROBLEMS and "mail: empty" in out


def test_a_refused_prune_exits_non_zero_and_keeps_the_frames(mind_cli, inputs):
    export = inputs["chatgpt"] / "conversations.json"
    mind_cli("sources", "add", str(inputs["chatgpt"]), "--name", "gpt")
    mind_cli("harvest", "gpt")
    export.write_text("[]")
    code, out, _ = mind_cli("harvest", "gpt", "--prune")
    assert code == EXIT_FAILED and "prune refused" in out
    code, out, _ = mind_cli("stats", "--json")
    assert json.loads(out)[0]["frames"] == 6
    code, out, _ = mind_cli("harvest", "gpt", "--prune", "--prune-allow-mass-delete", "--json")
    assert json.loads(out)[0]["imported"]["pruned"] == 6


def test_sources_set_path_starts_a_new_ledger_and_checks_the_kind(mind_cli, inputs, tmp_path):
    other = tmp_path / "other-vault"
    other.mkdir()
    (other / "plan.md").write_text("# Plan\nbuy a boat for the team\n")
    mind_cli("sources", "add", str(inputs["markdown"]), "--name", "notes")
    assert mind_cli("harvest", "notes")[0] == EXIT_OK
    code, _, err = mind_cli("sources", "set", "notes", "--path", str(inputs["email"]))
    assert code == EXIT_USAGE and "looks like an Email" in err and "not markdown" in err
    assert mind_cli("sources", "set", "notes", "--path", str(other))[0] == EXIT_OK
    code, out, _ = mind_cli("harvest", "notes", "--json")
    assert code == EXIT_OK and json.loads(out)[0]["imported"]["frames_new"] == 1
    code, out, _ = mind_cli("recall", "Lisbon", "--json")
    assert "Lisbon" in out
