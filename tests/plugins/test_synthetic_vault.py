"""The markdown plugin on a written Obsidian vault (no ../shared needed): frontmatter aliases,
tags and dates, inline tags and wikilinks (plain and aliased, across folders, never inside code)
are read per note, and the harvest turns them into the notes' links_to and tagged relations."""

from __future__ import annotations

from pathlib import Path

from mind_harvest.plugins.markdown import MarkdownSource

from mind_core import plugins
from mind_core.embeddings import create_embedding_provider
from mind_core.harvest.items import HarvestError, HarvestItem
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.testing.exports import vault_notes, write_obsidian_vault

NOTES = vault_notes(6)


def scan(path: Path) -> list[HarvestItem]:
    events = list(MarkdownSource().scan(path))
    assert [e for e in events if isinstance(e, HarvestError)] == []
    return [e for e in events if isinstance(e, HarvestItem)]


def relations(mind: Mind, relation_type: str) -> set[tuple[str, str]]:
    rows = mind.db.query(
        "SELECT s.name AS source, t.name AS target FROM knowledge_relations r "
        "JOIN knowledge_entities s ON s.id = r.source_id JOIN knowledge_entities t ON t.id = r.target_id "
        "WHERE r.relation_type = ?",
        (relation_type,),
    )
    return {(r["source"], r["target"]) for r in rows}


def test_each_note_reads_back_its_properties_tags_and_links(tmp_path: Path) -> None:
    vault = write_obsidian_vault(tmp_path / "vault", NOTES)
    assert plugins.detect_source(vault).kind == "markdown"
    items = {item.metadata["path"]: item for item in scan(vault)}
    assert set(items) == {note.path for note in NOTES}  # no settings, canvas or Bases file
    for note in NOTES:
        item = items[note.path]
        assert (item.title, item.timestamp) == (note.title, note.created)
        assert item.metadata["aliases"] == list(note.aliases)
        assert item.metadata["tags"] == list(note.tags)  # never the #notatag inside code
        assert item.metadata["links"] == list(note.links)  # never the [[Not A Link]] inside code
        assert [m.text.split("\n")[0] for m in item.messages] == [heading for heading, _ in note.sections]


def test_the_harvest_learns_the_vaults_links_and_tags(tmp_path: Path) -> None:
    vault = write_obsidian_vault(tmp_path / "vault", NOTES)
    with Mind.open(":memory:", embedder=create_embedding_provider("mock")) as mind:
        register_source(mind, "markdown", vault, "vault")
        harvest(mind, "vault")
        assert relations(mind, "links_to") == {(note.title, link) for note in NOTES for link in note.links}
        assert relations(mind, "tagged") == {(note.title, tag) for note in NOTES for tag in note.tags}
        for note in NOTES:
            entity = mind.knowledge.find_entity("project", note.title)  # its tag `project` names the type
            assert entity is not None and entity.properties["aliases"] == list(note.aliases)
