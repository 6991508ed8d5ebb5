"""Facts whose only evidence was deleted end, and are kept as history (new-user report 5).

A prune deletes the frames of notes gone from a vault; the note entities, links and tags that
only those frames stated end at that moment (valid time and transaction time), while what other
frames still state stays current. Compaction ends what its pruned frames alone stated and keeps
what its folded P-frames stated (their I-frame states it now).
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from mind_core.cli import EXIT_OK, main
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.knowledge.graph import KnowledgeGraph
from mind_core.knowledge.model import Entity, Relation
from mind_core.mind import Mind
from mind_core.store.db import Database
from mind_core.store.home import MindHome
from mind_core.store.schema import execute_script, migrate
from mind_core.testing.fakes import HashingEmbedder
from mind_core.timestamps import format_utc, utc_now

NOTES = {
    "Movie Template.md": "# Movie Template\n\nRate the film by [[Akira Kurosawa]] standards. #template\n",
    "Book Template.md": "# Book Template\n\nLike the [[Movie Template]], one line per book. #template\n",
    "Akira Kurosawa.md": "# Akira Kurosawa\n\nDirector of Ran and Ikiru; see [[Book Template]].\n",
}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    folder = tmp_path / "vault"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def note(knowledge: KnowledgeGraph, name: str) -> Entity:
    found = [e for e in knowledge.entities_as_of(entity_type="note", name=name)]
    assert len(found) == 1, found
    return found[0]


def relation(knowledge: KnowledgeGraph, source: Entity, target: Entity, relation_type: str) -> Relation:
    found = [r for r in knowledge.relations_as_of(entity_id=source.id, relation_type=relation_type) if r.target_id == target.id]
    assert len(found) == 1, found
    return found[0]


def test_a_pruned_note_ends_what_only_it_stated_and_keeps_the_rest(vault: Path) -> None:
    with Mind.open(":memory:", embedder=HashingEmbedder()) as mind:
        register_source(mind, "markdown", vault, "vault")
        harvest(mind, "vault")
        kg = mind.knowledge
        movie, book, director = (note(kg, n) for n in ("Movie Template", "Book Template", "Akira Kurosawa"))
        tag = kg.find_entity("tag", "template")
        assert tag is not None
        movie_frames = set(kg.frames_for_entity(movie.id))
        only_movie = [  # what the extractors found in the deleted note alone
            e for e in kg.entities_as_of(include_ended=False) if set(kg.frames_for_entity(e.id)) <= movie_frames
        ]
        elsewhere = [
            e for e in kg.entities_as_of(include_ended=False) if set(kg.frames_for_entity(e.id)) - movie_frames
        ]
        assert movie in only_movie and tag in elsewhere and book in elsewhere

        (vault / "Movie Template.md").unlink()
        report = harvest(mind, "vault", prune=True)
        assert report.imported.pruned == len(movie_frames)
        assert report.cognified["entities_ended"] == len(only_movie)

        ended = kg.get_entity(movie.id)
        assert ended is not None and ended.valid_to is not None  # kept, its validity closed
        history = kg.entity_history(movie.id)
        assert history[-2].valid_to is None  # what the mind believed before the prune is kept
        # valid until the prune deleted its frames, recorded as ended right after (same harvest)
        assert history[-2].recorded_at < ended.valid_to <= ended.recorded_at
        believed = kg.entities_as_of(known_at=history[-2].recorded_at, include_ended=False, entity_type="note")
        assert "Movie Template" in {e.name for e in believed}
        for entity in only_movie:
            assert kg.get_entity(entity.id).valid_to == ended.valid_to
        for entity in elsewhere:
            assert kg.get_entity(entity.id).valid_to is None

        # what the note stated ends; a link to it no longer resolves, so it ends too
        for source, target, kind in ((movie, director, "links_to"), (movie, tag, "tagged"), (book, movie, "links_to")):
            assert relation(kg, source, target, kind).valid_to == ended.valid_to
        # what the other notes state stays current
        for source, target, kind in ((book, tag, "tagged"), (director, book, "links_to")):
            assert relation(kg, source, target, kind).valid_to is None

        current = {e.name for e in kg.entities_as_of(entity_type="note", include_ended=False)}
        assert current == {"Book Template", "Akira Kurosawa"}
        assert "Movie Template" in {e.name for e in kg.entities_as_of(entity_type="note")}
        assert mind.db.scalar("SELECT COUNT(*) FROM kg_evidence_lost") == 0

        again = harvest(mind, "vault", prune=True, force=True)  # nothing more to end, no second version
        assert again.cognified["entities_ended"] == again.cognified["relations_ended"] == 0
        assert kg.entity_history(movie.id) == history


def test_a_renamed_section_keeps_its_facts_current(vault: Path) -> None:
    """A renamed heading is a new frame and the old one is pruned: the facts it restates stay
    the same entities and relations, never ended and begun again."""
    with Mind.open(":memory:", embedder=HashingEmbedder()) as mind:
        register_source(mind, "markdown", vault, "vault")
        harvest(mind, "vault")
        kg = mind.knowledge
        book, movie = note(kg, "Book Template"), note(kg, "Movie Template")
        link = relation(kg, book, movie, "links_to")
        path = vault / "Book Template.md"
        path.write_text(path.read_text(encoding="utf-8").replace("# Book Template", "# Books"), encoding="utf-8")
        report = harvest(mind, "vault", prune=True)
        assert report.imported.pruned >= 1
        assert report.cognified["entities_ended"] == report.cognified["relations_ended"] == 0
        assert kg.get_entity(book.id).valid_to is None and kg.get_relation(link.id).valid_to is None
        assert set(kg.frames_for_relation(link.id)) == set(kg.frames_for_entity(book.id))


def test_an_edited_note_ends_what_it_no_longer_states(vault: Path) -> None:
    """A note edited in place is re-extracted: the facts only its old text stated end at that
    harvest (their history kept), what it still states stays current, the new facts begin."""
    with Mind.open(":memory:", embedder=HashingEmbedder()) as mind:
        register_source(mind, "markdown", vault, "vault")
        harvest(mind, "vault")
        kg = mind.knowledge
        director, book, movie = (note(kg, n) for n in ("Akira Kurosawa", "Book Template", "Movie Template"))
        dropped = relation(kg, director, book, "links_to")
        kept = relation(kg, movie, director, "links_to")
        path = vault / "Akira Kurosawa.md"
        path.write_text("# Akira Kurosawa\n\nDirector of Ran and Ikiru; see [[Movie Template]].\n", encoding="utf-8")
        report = harvest(mind, "vault")
        assert report.cognified["relations_ended"] >= 1
        ended = kg.get_relation(dropped.id)
        assert ended is not None and ended.valid_to is not None  # the link the note no longer holds
        assert kg.relation_history(dropped.id)[-2].valid_to is None  # what was believed before is kept
        assert kg.get_relation(kept.id).valid_to is None and kg.get_entity(director.id).valid_to is None
        assert relation(kg, director, movie, "links_to").valid_to is None  # the new link is current
        assert mind.db.scalar("SELECT COUNT(*) FROM kg_evidence_lost") == 0

        again = harvest(mind, "vault", force=True)  # re-reading the same text ends nothing more
        assert again.cognified["entities_ended"] == again.cognified["relations_ended"] == 0


def test_compaction_ends_what_pruned_frames_alone_stated(fake_embedder: HashingEmbedder) -> None:
    with Mind.open(":memory:", embedder=fake_embedder) as mind:
        kept = mind.cognify.cognify("Alice Johnson reviewed the PostgreSQL migration.")
        gone = mind.cognify.cognify("Zoltan Kodaly wrote about PostgreSQL tuning.", importance="temporary")
        kg = mind.knowledge
        only_gone = [e for e in kg.entities_for_frame(gone.frame_id) if kg.frames_for_entity(e.id) == [gone.frame_id]]
        shared = [e for e in kg.entities_for_frame(gone.frame_id) if len(kg.frames_for_entity(e.id)) > 1]
        assert only_gone and shared and kept.entities_extracted
        mind.db.execute(  # the temporary frame is 40 days old
            "UPDATE memory_frames SET created_at = ? WHERE id = ?",
            (format_utc(utc_now() - timedelta(days=40)), gone.frame_id),
        )
        assert mind.frames.compact().temporary_pruned == 1
        assert all(kg.get_entity(e.id).valid_to is not None for e in only_gone)
        assert all(kg.get_entity(e.id).valid_to is None for e in shared)
        touching = [r for e in only_gone for r in kg.relations_as_of(entity_id=e.id)]
        assert touching and all(r.valid_to is not None for r in touching)


def test_compaction_folding_p_frames_keeps_their_facts(fake_embedder: HashingEmbedder) -> None:
    with Mind.open(":memory:", embedder=fake_embedder) as mind:
        session = "notes:fold"
        first = mind.cognify.cognify("Planning notes for the Falcon project.", gop_id=session)
        names = [f"Person Number{i} Smith" for i in range(12)]
        later = [mind.cognify.cognify(f"Met {name} about Falcon, item {i}.", gop_id=session) for i, name in enumerate(names)]
        kg = mind.knowledge
        folded = [r.frame_id for r in later[:-5]]
        facts = [e for f in folded for e in kg.entities_for_frame(f)]
        assert facts and first.frame_id not in folded
        assert mind.frames.compact().p_frames_merged == len(folded)
        assert all(kg.get_entity(e.id).valid_to is None for e in facts)
        assert all(first.frame_id in kg.frames_for_entity(e.id) for e in facts)


def test_an_earlier_mind_gets_its_relation_evidence_from_what_it_holds(tmp_path: Path, vault: Path) -> None:
    path = tmp_path / "mind.sqlite"
    with Mind.open(path, embedder=HashingEmbedder()) as mind:
        register_source(mind, "markdown", vault, "vault")
        harvest(mind, "vault")
        recorded = {tuple(r) for r in mind.db.query("SELECT relation_id, frame_id FROM kg_relation_frames")}
    assert recorded
    db = Database(path)
    try:  # the mind as the version before migration 0010 left it
        execute_script(db, "DROP TABLE kg_relation_frames; DROP TABLE kg_evidence_lost")
        db.execute("DELETE FROM migrations WHERE name = ?", ("0010_knowledge_evidence",))
        assert migrate(db) == ["0010_knowledge_evidence"]
        backfilled = {tuple(r) for r in db.query("SELECT relation_id, frame_id FROM kg_relation_frames")}
        stated = {r[0] for r in db.query("SELECT id FROM knowledge_relations")}
    finally:
        db.close()
    assert {relation_id for relation_id, _ in recorded} == stated  # every relation learned has its frames
    assert recorded <= backfilled and {relation_id for relation_id, _ in backfilled} == stated


def cli(capsys, home: MindHome, *argv: str) -> dict:
    code = main([*argv, "--home", str(home.root), "--embedder", "mock", "--json"])
    out = capsys.readouterr()
    assert code == EXIT_OK and "Traceback" not in out.err, out.err
    return json.loads(out.out)


def test_the_cli_shows_current_notes_and_the_pruned_one_as_history(capsys, tmp_path: Path, vault: Path) -> None:
    home = MindHome(tmp_path / "home")
    cli(capsys, home, "sources", "add", str(vault), "--name", "kvault", "-w", "personal")
    cli(capsys, home, "harvest", "kvault", "-w", "personal")
    (vault / "Movie Template.md").unlink()
    cli(capsys, home, "harvest", "kvault", "-w", "personal", "--prune")

    current = cli(capsys, home, "kg", "entities", "-w", "personal", "--type", "note")
    assert {e["name"] for e in current["entities"]} == {"Book Template", "Akira Kurosawa"}
    assert current["include_ended"] is False
    history = cli(capsys, home, "kg", "entities", "-w", "personal", "--type", "note", "--include-ended")
    ended = {e["name"]: e for e in history["entities"]}
    assert ended["Movie Template"]["valid_to"] is not None and ended["Book Template"]["valid_to"] is None

    links = cli(capsys, home, "kg", "relations", "-w", "personal", "--type", "links_to")
    assert {(r["source"], r["target"]) for r in links["relations"]} == {("Akira Kurosawa", "Book Template")}
    all_links = cli(capsys, home, "kg", "relations", "-w", "personal", "--type", "links_to", "--include-ended")
    assert ("Book Template", "Movie Template") in {(r["source"], r["target"]) for r in all_links["relations"]}
    # --valid-at reads the valid-time axis: before the prune the note held
    held = ended["Movie Template"]["valid_from"]
    before = cli(capsys, home, "kg", "entities", "-w", "personal", "--type", "note", "--valid-at", held)
    assert "Movie Template" in {e["name"] for e in before["entities"]}


def test_a_merged_mention_hands_its_relations_evidence_on(fake_embedder: HashingEmbedder) -> None:
    with Mind.open(":memory:", embedder=fake_embedder) as mind:
        said = mind.cognify.cognify("Alice Johnson reviewed the PostgreSQL migration.")
        kg = mind.knowledge
        mention, postgres = kg.find_entity("person", "Alice Johnson"), kg.find_entity("technology", "PostgreSQL")
        assert mention is not None and postgres is not None
        person = kg.create_entity("person", "Alice M. Johnson")
        assert kg.merge_entity(mention.id, person.id)
        carried = kg.find_relation(person.id, postgres.id, "co_occurs_with")
        assert carried is not None and kg.frames_for_relation(carried.id) == [said.frame_id]
        mind.frames.delete(said.frame_id)
        kg.end_facts_without_evidence()
        assert kg.get_relation(carried.id).valid_to is not None
        assert kg.get_entity(person.id).valid_to is not None  # its only evidence was that frame
