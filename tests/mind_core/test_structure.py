"""Structure becomes knowledge: notes, links, tags, mail people and chat participants (issue #16 §2)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from mind_core.embeddings import create_embedding_provider
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.knowledge.structure import NoteResolver, split_address
from mind_core.mind import Mind

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WIKILINK = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
INLINE_CODE = re.compile(r"(`+).+?\1")


def harvested(path: Path, kind: str, name: str) -> Mind:
    mind = Mind.open(":memory:", embedder=create_embedding_provider("mock"))
    register_source(mind, kind, path, name)
    harvest(mind, name)
    return mind


def relations(mind: Mind, relation_type: str) -> set[tuple[str, str]]:
    rows = mind.db.query(
        "SELECT s.name AS source, t.name AS target FROM knowledge_relations r "
        "JOIN knowledge_entities s ON s.id = r.source_id JOIN knowledge_entities t ON t.id = r.target_id "
        "WHERE r.relation_type = ?",
        (relation_type,),
    )
    return {(r["source"], r["target"]) for r in rows}


def resolvable_link_pairs(vault: Path) -> set[tuple[str, str]]:
    """A plain count: every [[target]] outside code whose target (before | and #) names a note of
    the vault by its path, its file name or a frontmatter alias; one per (note, target note)."""
    notes = {
        p.relative_to(vault).as_posix(): p
        for p in vault.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(vault).parts)
    }
    names: dict[str, str] = {}
    for path in sorted(notes, key=lambda p: (p.count("/"), len(p), p), reverse=True):
        names[path[:-3].lower()] = path
        names[Path(path).stem.lower()] = path
    for path, file in notes.items():
        front = file.read_text(errors="replace").split("\n---", 1)[0]
        for alias in re.findall(r"^\s+- ['\"]?(.+?)['\"]?$", front.split("aliases:", 1)[1], re.M) if "aliases:" in front else ():
            names.setdefault(alias.strip().lower(), path)
    pairs = set()
    for path, file in notes.items():
        text = INLINE_CODE.sub("", FENCE.sub("", file.read_text(errors="replace")))
        for match in WIKILINK.finditer(text):
            target = re.split(r"\\?\|", match.group(1))[0].split("#")[0].strip().lower()
            target = target[:-3] if target.endswith(".md") else target
            resolved = names.get(target)
            if resolved is not None and resolved != path:
                pairs.add((path, resolved))
    return pairs


@pytest.mark.parametrize("vault_name", ["obsidian-help-en", "kepano-obsidian"])
def test_links_to_relations_match_the_vaults_resolvable_wikilinks(shared_data: Path, vault_name: str) -> None:
    vault = shared_data / "markdown" / vault_name
    expected = resolvable_link_pairs(vault)
    with harvested(vault, "markdown", "vault") as mind:
        rows = mind.db.query(
            "SELECT json_extract(s.properties, '$.path') AS source, json_extract(t.properties, '$.path') AS target,"
            " r.confidence, r.properties FROM knowledge_relations r JOIN knowledge_entities s ON s.id = r.source_id"
            " JOIN knowledge_entities t ON t.id = r.target_id WHERE r.relation_type = 'links_to'"
        )
        found = {(r["source"], r["target"]) for r in rows}
        assert all(r["confidence"] == 1.0 for r in rows)
        assert len(found) == len(rows) > 20
        assert len(found) == len(expected)
        overlap = len(found & expected) / len(expected)
        assert overlap >= 0.97  # the rest: a name shared by several notes resolved to another one


def test_a_note_is_an_entity_with_its_aliases_tags_and_evidence(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLES / "vault", vault)
    with harvested(vault, "markdown", "vault") as mind:
        falcon = mind.knowledge.find_entity("project", "Project Falcon")  # its tag `project` names a type
        assert falcon is not None and falcon.properties["aliases"] == ["Falcon"]
        frames = [mind.frames.get_by_id(f) for f in mind.knowledge.frames_for_entity(falcon.id)]
        assert {f.metadata["provenance"]["path"] for f in frames} >= {"Project Falcon.md", "People/Alice Johnson.md"}
        # valid from the earliest frame naming it (Alice's note of 2023-11-20), not the import
        assert falcon.valid_from == min(f.created_at for f in frames) == "2023-11-20T00:00:00.000Z"
        assert {("Project Falcon", "Alice Johnson"), ("Project Falcon", "Bob Smith")} <= relations(mind, "links_to")
        assert ("Project Falcon", "project/falcon") in relations(mind, "tagged")
        meeting = "2024-03-12 Falcon sync"
        assert {(meeting, "Alice Johnson"), (meeting, "Bob Smith")} <= relations(mind, "links_to")  # attendees
        assert {(meeting, "meeting"), (meeting, "decision"), (meeting, "action")} <= relations(mind, "tagged")
        counts = mind.db.scalar("SELECT COUNT(*) FROM knowledge_relations")
        register_source(mind, "markdown", vault, "again")  # the same notes again: nothing new
        harvest(mind, "vault", force=True)
        assert mind.db.scalar("SELECT COUNT(*) FROM knowledge_relations") == counts


def test_mail_people_threads_and_their_relations() -> None:
    with harvested(EXAMPLES / "mail", "email", "mail") as mind:
        bob = mind.knowledge.find_entity("person", "Bob Smith")
        assert bob is not None and bob.properties["addresses"] == ["bob.smith@example.com"]
        thread = "PostgreSQL migration plan for Falcon"
        assert ("Alice Johnson", thread) in relations(mind, "sent")
        assert ("Bob Smith", thread) in relations(mind, "replied_to")
        assert ("Bob Smith", thread) in relations(mind, "to")
        assert any(source == "Carol Diaz" for source, _ in relations(mind, "cc"))
        assert bob.valid_from == "2024-03-11T08:15:00.000Z"  # the first mail naming him (To:)
        alice = mind.knowledge.find_entity("person", "Alice Johnson")  # named in the text, then stated
        assert alice is not None and alice.properties["extractors"] == ["rules", "structure"]


def test_chat_participants() -> None:
    with harvested(EXAMPLES / "claude", "claude", "claude") as mind:
        senders = relations(mind, "sent")
        assert senders and {t for _, t in senders} <= {
            e.name for e in mind.knowledge.get_entities_by_type("conversation")
        }
        people = {s for s, _ in senders} & {e.name for e in mind.knowledge.get_entities_by_type("person")}
        assert people  # the named user of users.json


def test_obsidian_resolution_rules() -> None:
    resolver = NoteResolver(
        ["Home.md", "a/Note.md", "b/c/Note.md", "b/Other.md", "Deep/x/Guide.md"],
        {"b/Other.md": ["Alias One"]},
    )
    assert resolver.resolve("Home", "b/Other.md") == "Home.md"
    assert resolver.resolve("note", "b/c/Note.md") == "b/c/Note.md"  # same folder first
    assert resolver.resolve("Note", "Home.md") == "a/Note.md"  # else the shortest path
    assert resolver.resolve("c/Note", "Home.md") == "b/c/Note.md"  # a path matches its ending
    assert resolver.resolve("b/c/Note.md", "Home.md") == "b/c/Note.md"
    assert resolver.resolve("alias one", "Home.md") == "b/Other.md"
    assert resolver.resolve("Guide", "Home.md") == "Deep/x/Guide.md"
    assert resolver.resolve("Missing", "Home.md") is None and resolver.resolve("image.png", "Home.md") is None


def test_addresses_as_the_email_plugin_writes_them() -> None:
    assert split_address("Carl Worth <CWorth@cworth.org>") == ("Carl Worth", "cworth@cworth.org")
    assert split_address('"Worth, Carl" <c@x.org>') == ("Worth, Carl", "c@x.org")
    assert split_address("payments-team@example.com") == ("", "payments-team@example.com")


def test_shared_mail_people_are_valid_from_their_first_mail(shared_data: Path) -> None:
    with harvested(shared_data / "email", "email", "mail") as mind:
        first_mail: dict[str, str] = {}
        for frame in mind.frames.get_recent(10_000):
            message = frame.metadata["source"]["message"]
            for value in [message.get("from") or "", *message.get("to", []), *message.get("cc", [])]:
                address = split_address(value)[1]
                if address and frame.created_at < first_mail.get(address, "9999"):
                    first_mail[address] = frame.created_at
        people = [p for p in mind.knowledge.get_entities_by_type("person", limit=5000) if p.properties.get("addresses")]
        assert len(people) > 100
        for person in people:
            assert person.valid_from <= min(first_mail[a] for a in person.properties["addresses"]), person
            assert person.recorded_at > person.valid_from  # learned now, valid since the mail
        carl = mind.knowledge.find_entity("person", "Carl Worth")
        assert carl is not None and carl.valid_from[:4] == "2009"
        assert min(p.valid_from for p in people)[:4] < "2000"  # the corpus reaches back to the 1990s


def test_structure_is_learned_even_when_a_crash_came_after_cognify(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLES / "vault", vault)
    with Mind.open(":memory:", embedder=create_embedding_provider("mock")) as mind:
        register_source(mind, "markdown", vault, "vault")
        harvest(mind, "vault", cognify=False)
        mind.cognify.cognify_batch([f.id for f in mind.frames.get_recent(100)])  # cognified, then "killed"
        assert relations(mind, "links_to") == set()
        harvest(mind, "vault", force=True)  # nothing left to cognify
        assert ("Project Falcon", "Alice Johnson") in relations(mind, "links_to")


def test_a_note_marked_done_ends_its_validity_at_its_last_edit(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLES / "vault", vault)
    note = vault / "Project Falcon.md"
    with Mind.open(":memory:", embedder=create_embedding_provider("mock")) as mind:
        register_source(mind, "markdown", vault, "vault")
        harvest(mind, "vault")
        falcon = mind.knowledge.find_entity("project", "Project Falcon")
        assert falcon is not None and falcon.valid_to is None
        note.write_text(note.read_text().replace("status: active", "status: done\nupdated: 2024-07-01"))
        harvest(mind, "vault")
        ended = mind.knowledge.get_entity(falcon.id)
        assert ended.valid_to == "2024-07-01T00:00:00.000Z"  # the note's own time, not the harvest's
        history = mind.knowledge.entity_history(falcon.id)
        assert history[-2].valid_to is None and history[-1].valid_to == ended.valid_to  # the open version kept
        summer = "2024-08-01T00:00:00Z"  # both axes: no longer valid then, but believed so before this harvest
        assert "Project Falcon" not in {e.name for e in mind.knowledge.entities_as_of(valid_at=summer)}
        believed = mind.knowledge.entities_as_of(valid_at=summer, known_at=history[-2].recorded_at)
        assert "Project Falcon" in {e.name for e in believed}
        harvest(mind, "vault", force=True)  # again: the same entity, no second "Project Falcon"
        rows = mind.db.scalar("SELECT COUNT(*) FROM knowledge_entities WHERE name = 'Project Falcon'")
        assert rows == 1


def test_a_superseding_note_ends_what_it_supersedes_on_both_axes(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLES / "vault", vault)
    with Mind.open(":memory:", embedder=create_embedding_provider("mock")) as mind:
        register_source(mind, "markdown", vault, "vault")
        harvest(mind, "vault")
        falcon = mind.knowledge.find_entity("project", "Project Falcon")
        assert falcon is not None and falcon.valid_to is None
        (vault / "Falcon Phase Two.md").write_text(
            '---\nsupersedes: "[[Project Falcon|the first phase]]"\ncreated: 2024-09-01\n---\n'
            "Phase two moves reporting to the new PostgreSQL cluster.\n"
        )
        harvest(mind, "vault")
        ended = mind.knowledge.get_entity(falcon.id)
        assert ended.valid_to == "2024-09-01T00:00:00.000Z"  # when the replacing note was created
        assert ("Falcon Phase Two", "Project Falcon") in relations(mind, "supersedes")
        held = {e.name for e in mind.knowledge.entities_as_of(valid_at="2024-08-01", entity_type="project")}
        assert "Project Falcon" in held
        assert "Project Falcon" not in {e.name for e in mind.knowledge.entities_as_of(valid_at="2024-10-01")}
        open_version = mind.knowledge.entity_history(falcon.id)[-2]
        assert open_version.valid_to is None  # what the mind believed before the second harvest
        believed = mind.knowledge.entities_as_of(valid_at="2024-10-01", known_at=open_version.recorded_at)
        assert "Project Falcon" in {e.name for e in believed}
        harvest(mind, "vault", force=True)  # again: no second entity, the same ending
        assert mind.db.scalar("SELECT COUNT(*) FROM knowledge_entities WHERE name = 'Project Falcon'") == 1
        assert mind.knowledge.get_entity(falcon.id).valid_to == ended.valid_to


def test_superseded_by_names_the_replacement_from_the_old_note(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Runbook v1.md").write_text(
        "---\ncreated: 2021-02-01\nsuperseded_by:\n  - '[[Runbook v2]]'\n---\nRestart the queue.\n"
    )
    (vault / "Runbook v2.md").write_text(
        "---\ncreated: 2022-03-15\n---\nRestart the queue, then the workers.\n"
    )
    (vault / "Old FAQ.md").write_text(
        "---\ncreated: 2019-01-01\nupdated: 2020-06-30\nsuperseded_by: The wiki page\n---\nAsk Bob.\n"
    )
    with harvested(vault, "markdown", "vault") as mind:
        v1 = mind.knowledge.find_entity("note", "Runbook v1") or next(
            e for e in mind.knowledge.entities_as_of() if e.name == "Runbook v1"
        )
        assert (v1.valid_from, v1.valid_to) == (
            "2021-02-01T00:00:00.000Z",
            "2022-03-15T00:00:00.000Z",
        )  # v2's creation
        assert ("Runbook v2", "Runbook v1") in relations(mind, "supersedes")
        faq = next(e for e in mind.knowledge.entities_as_of() if e.name == "Old FAQ")
        assert faq.valid_to == "2020-06-30T00:00:00.000Z"  # a replacement outside the vault: its last edit
        assert mind.knowledge.find_entity("note", "Runbook v2").valid_to is None
