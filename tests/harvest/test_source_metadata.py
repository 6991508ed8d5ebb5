"""What a plugin read stays in the frame: metadata kept, filtered on, snapshotted (issue #16 §1)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mind_core.analytics.snapshot import snapshot_mind
from mind_core.cli import EXIT_OK, main
from mind_core.embeddings import create_embedding_provider
from mind_core.errors import InvalidInputError
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.search.filters import SourceFilter
from mind_core.store.home import MindHome

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


LIST_MAIL = """From ops@example.com Fri Mar 15 09:00:00 2024
From: Ops Bot <ops@example.com>
To: payments-team@example.com
Subject: Nightly PostgreSQL backup report
Date: Fri, 15 Mar 2024 09:00:00 +0000
Message-ID: <backup-report-1@example.com>
List-Id: Payments team <payments.lists.example.com>
Content-Type: text/plain; charset=utf-8

All PostgreSQL backups completed.
"""


def harvest_examples(mind: Mind, vault: Path) -> None:
    mail = vault.parent / "mail"
    shutil.copytree(EXAMPLES / "mail", mail)
    (mail / "lists.mbox").write_text(LIST_MAIL)
    for kind, path, name in (
        ("markdown", vault, "vault"),
        ("email", mail, "mail"),
        ("chatgpt", EXAMPLES / "chatgpt", "gpt"),
    ):
        register_source(mind, kind, path, name)
        harvest(mind, name)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    copy = tmp_path / "vault"
    shutil.copytree(EXAMPLES / "vault", copy)
    return copy


@pytest.fixture
def home(tmp_path: Path, vault: Path) -> MindHome:
    home = MindHome(tmp_path / "home")
    with Mind.open(home.workspace_path("default"), embedder=create_embedding_provider("mock")) as mind:
        harvest_examples(mind, vault)
    return home


def frames_of(mind: Mind, plugin: str) -> list:
    return [f for f in mind.frames.get_recent(1000) if f.metadata["provenance"]["plugin"] == plugin]


def test_every_plugin_keeps_what_it_read(home: MindHome) -> None:
    with Mind.open(home.workspace_path("default"), readonly=True) as mind:
        notes = frames_of(mind, "markdown")
        project = [f for f in notes if f.metadata["provenance"]["path"] == "Project Falcon.md"]
        item = project[0].metadata["source"]["item"]
        assert item["frontmatter"]["status"] == "active" and item["aliases"] == ["Falcon"]
        assert {"project", "project/falcon"} <= set(item["tags"]) and "Alice Johnson" in item["links"]
        team = next(f for f in project if f.metadata["source"]["message"]["heading"] == "Team")
        assert team.metadata["source"]["message"]["links"] == ["Alice Johnson", "Bob Smith"]

        mails = {f.metadata["source"]["message"]["message_id"]: f for f in frames_of(mind, "email")}
        reply = mails["falcon-plan-2@example.com"].metadata["source"]["message"]
        assert reply["from"] == "Bob Smith <bob.smith@example.com>"
        assert reply["to"] == ["Alice Johnson <alice.johnson@example.com>"]
        assert reply["in_reply_to"] == "falcon-plan-1@example.com"
        assert reply["references"] == ["falcon-plan-1@example.com"]
        assert reply["subject"] == "Re: PostgreSQL migration plan for Falcon" and reply["list_id"] is None
        assert any(f.metadata["source"]["message"]["cc"] for f in mails.values())
        listed = mails["backup-report-1@example.com"].metadata["source"]["message"]
        assert listed["list_id"] == "Payments team <payments.lists.example.com>"

        turns = frames_of(mind, "chatgpt")
        assistant = next(f for f in turns if f.metadata["provenance"]["role"] == "assistant")
        assert assistant.metadata["source"]["message"]["model"].startswith("gpt-4")
        assert assistant.metadata["provenance"]["title"] and assistant.metadata["source"]["item"]["model"]


def test_a_frontmatter_change_alone_updates_the_frames_metadata(tmp_path: Path, vault: Path) -> None:
    note = vault / "Project Falcon.md"
    with Mind.open(tmp_path / "m.mind", embedder=create_embedding_provider("mock")) as mind:
        register_source(mind, "markdown", vault, "vault")
        assert harvest(mind, "vault").imported.frames_metadata_refreshed == 0
        note.write_text(note.read_text().replace("status: active", "status: done"))
        report = harvest(mind, "vault")
        assert report.imported.frames_updated == 0
        assert report.imported.frames_metadata_refreshed == len(
            [f for f in frames_of(mind, "markdown") if f.metadata["provenance"]["path"] == "Project Falcon.md"]
        )
        statuses = {
            f.metadata["source"]["item"]["frontmatter"]["status"]
            for f in frames_of(mind, "markdown")
            if f.metadata["provenance"]["path"] == "Project Falcon.md"
        }
        assert statuses == {"done"}


def test_search_filters_on_tag_sender_and_source_kind(home: MindHome) -> None:
    with Mind.open(home.workspace_path("default"), embedder=create_embedding_provider("mock")) as mind:
        everything = mind.search.search("PostgreSQL", limit=50)
        assert {r.frame.metadata["provenance"]["plugin"] for r in everything} == {"markdown", "email", "chatgpt"}

        def plugins_and_paths(source: SourceFilter) -> set[tuple[str, str | None]]:
            results = mind.search.search("PostgreSQL", limit=50, source=source)
            return {(r.frame.metadata["provenance"]["plugin"], r.frame.metadata["provenance"]["path"]) for r in results}

        # each mail frame names the file its message was read from
        assert plugins_and_paths(SourceFilter(source_kind="email")) == {("email", "falcon.mbox"), ("email", "lists.mbox")}
        assert {p for p, _ in plugins_and_paths(SourceFilter(source_kind="note"))} == {"markdown"}
        meeting = plugins_and_paths(SourceFilter(tags=("meeting",)))
        assert meeting == {("markdown", "Meetings/2024-03-12 Falcon sync.md")}
        nested = plugins_and_paths(SourceFilter(tags=("#Project",)))  # the parent of project/falcon
        assert nested == {("markdown", "Project Falcon.md")}
        bob = mind.search.search("PostgreSQL", limit=50, source=SourceFilter(sender="bob.smith@"))
        assert bob and all("Bob Smith" in r.frame.metadata["source"]["message"]["from"] for r in bob)
        assert mind.search.search("PostgreSQL", source=SourceFilter(tags=("meeting",), source_kind="email")) == []
    with pytest.raises(InvalidInputError):
        SourceFilter(tags=("",))


def test_recall_command_takes_the_filters(capsys, home: MindHome) -> None:
    code = main(
        [
            "recall", "--home", str(home.root), "--embedder", "mock", "--json",
            "PostgreSQL", "--tag", "meeting", "--source-kind", "markdown",
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    results = json.loads(out)["results"]
    assert code == EXIT_OK and results
    assert all(r["metadata"]["source_fields"]["item"]["tags"] == ["meeting", "decision", "action"] for r in results)
    code = main(["recall", "--home", str(home.root), "--embedder", "mock", "--json", "PostgreSQL", "--from", "carol"])
    carol = json.loads(capsys.readouterr().out)["results"]
    assert code == EXIT_OK and carol
    assert all(r["metadata"]["source_fields"]["message"]["from"].startswith("Carol Diaz") for r in carol)


def test_snapshot_has_the_source_columns(home: MindHome, tmp_path: Path) -> None:
    snapshot_mind(home.workspace_path("default"), tmp_path / "snap", "default", "2024-06-01")
    table = pq.read_table(next((tmp_path / "snap").rglob("frames/**/*.parquet"))).to_pylist()
    mails = [row for row in table if row["plugin"] == "email"]
    assert all(row["sender"] and row["subject"] and json.loads(row["source_metadata"])["message"] for row in mails)
    project = [row for row in table if row["path"] == "Project Falcon.md"]
    assert all("project/falcon" in row["tags"] for row in project)
    assert any(row["links"] == ["Alice Johnson", "Bob Smith"] for row in project)
    assert all(row["model"] for row in table if row["plugin"] == "chatgpt" and row["role"] == "assistant")
