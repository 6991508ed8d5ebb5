"""What a user sees after a hostile input: a partial harvest exits non-zero and is read again next
time, `--all-workspaces` goes on past a corrupt mind, an emptied note keeps its frames, a killed
snapshot's staging files go with a later run, and a source's reading rules are its own."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from mind_core.analytics.snapshot import snapshot_mind
from mind_core.cli import EXIT_FAILED, EXIT_OK, EXIT_PROBLEMS, main
from mind_core.embeddings.mock import MockEmbedder
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.harvest.source_files import ReadingRules
from mind_core.harvest.stores import HarvestSourceStore
from mind_core.mind import Mind
from mind_core.store.home import MindHome
from mind_core.testing.exports import chatgpt_conversation

LONG_AGO = 978_307_200  # 2001-01-01, as a file time


def export(path: Path, broken: bool) -> Path:
    parts = [
        json.dumps(chatgpt_conversation(f"c{i}", f"chat {i}", [f"zqconv{i} question", f"zqconv{i} answer"]))
        for i in range(5)
    ]
    if broken:
        parts[2] = parts[2].replace('"title"', "'title\"", 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[" + ", ".join(parts) + "]", encoding="utf-8")
    return path


def run(*argv: str) -> int:
    return main([*argv, "--embedder", "mock"])


def test_a_partial_harvest_exits_non_zero_and_is_read_again(tmp_path: Path, capsys) -> None:
    home = str(tmp_path / "home")
    path = export(tmp_path / "gpt" / "conversations.json", broken=True)
    assert run("sources", "add", str(path), "--home", home) == EXIT_OK
    assert run("harvest", "--home", home, "--json") == EXIT_FAILED
    capsys.readouterr()
    assert run("harvest", "--home", home, "--json") == EXIT_FAILED  # not "unchanged": read again
    [report] = json.loads(capsys.readouterr().out)
    assert report["status"] == "partial" and report["imported"]["items_seen"] == 4
    assert "conversation 2]: conversation lost" in report["imported"]["errors"][0]
    assert run("doctor", "--home", home) == EXIT_PROBLEMS
    export(path, broken=False)
    assert run("harvest", "--home", home, "--json") == EXIT_OK
    capsys.readouterr()
    assert run("harvest", "--home", home, "--json") == EXIT_OK
    assert [r["status"] for r in json.loads(capsys.readouterr().out)] == ["skipped"]  # ok: fingerprint kept
    with Mind.open(MindHome(Path(home)).workspace_path("default")) as mind:
        assert mind.db.scalar("SELECT count(*) FROM memory_frames WHERE content LIKE '%zqconv2%'") == 2
        assert HarvestSourceStore(mind.db).get_by_source("gpt").last_fingerprint is not None


def test_all_workspaces_go_on_past_a_corrupt_mind(tmp_path: Path, capsys) -> None:
    home = tmp_path / "home"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nzqworkspace note\n", encoding="utf-8")
    for workspace in ("alpha", "omega"):
        assert run("sources", "add", str(notes), "-w", workspace, "--home", str(home)) == EXIT_OK
    (home / "workspaces" / "middle.mind").write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 64)
    capsys.readouterr()
    assert run("harvest", "--all-workspaces", "--home", str(home), "--json") == EXIT_FAILED
    rows = {row["workspace"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["alpha"]["status"] == rows["omega"]["status"] == "ok"
    assert rows["middle"]["status"] == "failed" and "not a database" in rows["middle"]["reason"]
    assert run("doctor", "--all-workspaces", "--home", str(home), "--json") == EXIT_PROBLEMS
    checked = {row["workspace"]: row for row in json.loads(capsys.readouterr().out)}
    assert checked["alpha"]["ok"] and checked["omega"]["ok"]
    assert not checked["middle"]["ok"] and "not a database" in checked["middle"]["error"]


def test_an_emptied_note_keeps_its_frames_and_is_reported(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "kept.md").write_text("# Kept\n\nzqkept text\n", encoding="utf-8")
    (vault / "other.md").write_text("# Other\n\nzqother text\n", encoding="utf-8")
    (vault / "never.md").write_bytes(b"")  # empty from the start: nothing to keep, nothing said
    with Mind.open(tmp_path / "m.mind", embedder=MockEmbedder(1024)) as mind:
        register_source(mind, "markdown", vault, "vault")
        assert harvest(mind, "vault").status == "ok"
        (vault / "kept.md").write_bytes(b"")
        report = harvest(mind, "vault", prune=True)
        assert report.status == "partial" and report.imported.pruned == 0
        [error] = report.imported.errors
        assert error.path == "kept.md" and "now empty (0 bytes) but held 1 message(s)" in error.reason
        assert mind.db.scalar("SELECT count(*) FROM memory_frames WHERE content LIKE '%zqkept%'") == 1


def test_a_killed_snapshots_staging_goes_with_a_later_run(tmp_path: Path) -> None:
    with Mind.open(tmp_path / "m.mind", embedder=MockEmbedder(1024)) as mind:
        mind.sessions.ensure("notes")
        mind.frames.create_i_frame("notes", "zqsnapshot frame")
    root = tmp_path / "snapshots"
    killed = root / ".staging" / "killed-run" / "frames"
    killed.mkdir(parents=True)
    pq.write_table(pa.table({"id": [1]}), killed / "part-0.parquet")
    for path in (killed / "part-0.parquet", killed, killed.parent):
        os.utime(path, (LONG_AGO, LONG_AGO))
    running = root / ".staging" / "running-run" / "frames"
    running.mkdir(parents=True)
    snapshot_mind(tmp_path / "m.mind", root, "ws", "2024-03-10")
    assert [p.name for p in (root / ".staging").iterdir()] == ["running-run"]


def test_a_sources_reading_rules_are_its_own(tmp_path: Path, capsys) -> None:
    home = tmp_path / "home"
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "small.md").write_text("# Small\n\nzqsmall\n", encoding="utf-8")
    (vault / "large.md").write_text("# Large\n\n" + "zqlarge " * 400, encoding="utf-8")
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n\nzqoutside\n", encoding="utf-8")
    (vault / "outside.md").symlink_to(outside)
    argv = ("sources", "add", str(vault), "--name", "v", "--home", str(home))
    assert run(*argv, "--max-file-size", "1K", "--follow-outside-links") == EXIT_OK
    with Mind.open(MindHome(home).workspace_path("default")) as mind:
        assert HarvestSourceStore(mind.db).reading_rules("v") == ReadingRules(1024, True)
    capsys.readouterr()
    assert run("harvest", "--home", str(home), "--json") == EXIT_FAILED
    [report] = json.loads(capsys.readouterr().out)
    [error] = report["imported"]["errors"]
    assert error.endswith(
        "large.md: cannot read: 3,209 bytes, over the 1,024-byte limit for one file; skipped (raise it with --max-file-size)"
    )
    assert (
        run("sources", "set", "v", "--max-file-size", "64K", "--no-follow-outside-links", "--home", str(home))
        == EXIT_OK
    )
    capsys.readouterr()
    assert run("harvest", "--home", str(home), "--json") == EXIT_FAILED
    [report] = json.loads(capsys.readouterr().out)
    [error] = report["imported"]["errors"]
    assert "outside.md: a symlink to" in error and "outside the source's folder" in error
    with Mind.open(MindHome(home).workspace_path("default")) as mind:
        found = {
            word: mind.db.scalar("SELECT count(*) FROM memory_frames WHERE content LIKE ?", (f"%{word}%",))
            for word in ("zqsmall", "zqlarge", "zqoutside")
        }
    assert found == {"zqsmall": 1, "zqlarge": 1, "zqoutside": 1}  # the outside note from the first run stays
