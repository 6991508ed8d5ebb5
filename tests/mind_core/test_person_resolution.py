"""One person, one entity: lists are not people, first-name mentions join their full name
(mind_core.knowledge.people, KnowledgeGraph.merge_entity), on hand-made mail and on the notmuch corpus."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mind_core.embeddings import create_embedding_provider
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.knowledge.graph import KnowledgeGraph
from mind_core.knowledge.model import CO_OCCURS_WITH
from mind_core.knowledge.people import resolve_people
from mind_core.mind import Mind
from mind_core.query.graph import neighbours
from mind_core.query.models.requests import NeighboursRequest
from mind_core.store.db import Database
from mind_core.store.schema import ensure_schema
from mind_core.timestamps import format_utc

LIST_HEADERS = "List-Id: notmuch <notmuch.notmuchmail.org>\nList-Post: <mailto:notmuch@notmuchmail.org>\n"


def mail(folder: Path, name: str, sender: str, to: str, body: str, day: int, headers: str = "") -> None:
    (folder / name).write_text(
        f"From: {sender}\nTo: {to}\nSubject: note {name}\nMessage-ID: <{name}@example.org>\n"
        f"Date: Tue, {day} Nov 2009 12:00:00 +0000\n{headers}\n{body}\n"
    )


def harvested(folder: Path) -> Mind:
    mind = Mind.open(":memory:", embedder=create_embedding_provider("mock"))
    register_source(mind, "email", folder, "mail")
    harvest(mind, "mail")
    return mind


def active(mind: Mind, entity_type: str) -> dict[str, dict]:
    return {e.name: e.properties for e in mind.knowledge.get_entities_by_type(entity_type, limit=1000)}


def test_a_first_name_joins_its_sender_and_a_list_is_no_person(tmp_path: Path) -> None:
    mail(tmp_path, "a.eml", "Carl Worth <cworth@cworth.org>", "notmuch <notmuch@notmuchmail.org>",
         "The patch is pushed now.\n\n-Carl", 17, LIST_HEADERS)
    mail(tmp_path, "b.eml", "Keith Packard <keithp@keithp.com>", "Carl Worth <cworth@cworth.org>",
         "Hi Carl, thanks for the review of the parser.", 18)
    with harvested(tmp_path) as mind:
        people = active(mind, "person")
        assert "Carl" not in people and "notmuch" not in people
        assert people["Carl Worth"]["aliases"] == ["Carl"]
        assert active(mind, "mailing_list")["notmuch"]["addresses"] == ["notmuch@notmuchmail.org"]
        carl = mind.knowledge.find_entity("person", "Carl Worth")
        assert len(mind.knowledge.frames_for_entity(carl.id)) == 2  # the mention's frames came along
        merged = mind.knowledge.entities_as_of(name="Carl")
        assert merged == []  # held at no time: no valid-time listing shows it
        assert resolve_people(mind.db, mind.knowledge) == []  # a second run finds nothing
        answer = neighbours(mind.knowledge, NeighboursRequest(name="carl"))  # found by its alias
        assert [e.name for e in answer.entities] == ["Carl Worth"] and answer.neighbours


def test_headers_name_people_as_text_does_and_mailboxes_are_no_people(tmp_path: Path) -> None:
    mail(tmp_path, "a.eml", '"Dr. Mark K. Joseph (lab)" <izzy@scr.example>',
         "Aneesh Kumar K. V <aneesh@ibm.example>, Mail Delivery Subsystem <MAILER-DAEMON@mx.example>",
         "A note.", 17, "Cc: linux-arm-kernel@lists.infradead.org, ppp-request@zzz.example\n")
    mail(tmp_path, "b.eml", "Aneesh Kumar K.V <aneesh@gmane.example>", "Russell King <linux@arm.linux.org.uk>",
         "Another note.", 18)
    with harvested(tmp_path) as mind:
        people = active(mind, "person")
        assert {"Mark K. Joseph", "Russell King"} <= set(people)
        [aneesh] = [name for name in people if name.startswith("Aneesh")]  # two spellings, one person
        assert sorted(people[aneesh]["addresses"]) == ["aneesh@gmane.example", "aneesh@ibm.example"]
        assert set(active(mind, "mailing_list")) == {"linux-arm-kernel@lists.infradead.org", "ppp-request@zzz.example"}
        assert set(active(mind, "organization")) == {"Mail Delivery Subsystem"}


def test_two_people_sharing_a_first_name_stay_apart(tmp_path: Path) -> None:
    mail(tmp_path, "a.eml", "Carl Worth <cworth@cworth.org>", "Keith Packard <keithp@keithp.com>",
         "The patch is pushed now.\n\n-Carl", 17)
    mail(tmp_path, "b.eml", "Carl Smith <carl@smith.example>", "Keith Packard <keithp@keithp.com>",
         "The tests pass on my machine.\n\n-Carl", 18)
    with harvested(tmp_path) as mind:
        people = active(mind, "person")
        assert {"Carl", "Carl Worth", "Carl Smith"} <= set(people)
        assert "aliases" not in people["Carl Worth"] and "aliases" not in people["Carl Smith"]


def test_a_mention_with_no_sender_of_that_name_needs_a_single_full_name(tmp_path: Path) -> None:
    mail(tmp_path, "a.eml", "Carl Worth <cworth@cworth.org>", "Keith Packard <keithp@keithp.com>",
         "The patch is pushed.", 17)
    mail(tmp_path, "b.eml", "Keith Packard <keithp@keithp.com>", "Jan Janak <jan@ryngle.com>",
         "Thanks, Carl! I merged your patch.", 18)
    with harvested(tmp_path) as mind:
        assert active(mind, "person")["Carl Worth"]["aliases"] == ["Carl"]
    mail(tmp_path, "c.eml", "Carl Smith <carl@smith.example>", "Jan Janak <jan@ryngle.com>", "Tests pass.", 19)
    with harvested(tmp_path) as mind:  # two Carls in the mind: "Thanks, Carl!" names neither for sure
        assert "Carl" in active(mind, "person")


def test_merge_entity_carries_links_and_relations_over(tmp_path: Path) -> None:
    db = Database(":memory:")
    ensure_schema(db, dimensions=8)
    ticks = itertools.count()  # transaction time that moves on each call, so before_merge is its own instant
    kg = KnowledgeGraph(db, clock=lambda: format_utc(datetime(2025, 1, 1, tzinfo=UTC) + timedelta(seconds=next(ticks))))
    carl = kg.create_entity("person", "Carl Worth", {"extractor": "structure"}, valid_from="2009-11-20T00:00:00Z")
    mention = kg.create_entity("person", "Carl", {"extractors": ["rules"]}, valid_from="2009-11-17T00:00:00Z")
    git = kg.create_entity("technology", "Git")
    kg.upsert_relation(mention.id, git.id, CO_OCCURS_WITH, 0.8)
    kg.upsert_relation(mention.id, git.id, CO_OCCURS_WITH, 0.8)  # count 2
    kg.upsert_relation(git.id, carl.id, CO_OCCURS_WITH, 0.8)  # count 1, the other direction
    self_loop = kg.create_relation(mention.id, carl.id, CO_OCCURS_WITH, 0.8)
    before_merge = kg.clock()
    assert kg.merge_entity(mention.id, carl.id)
    merged = kg.find_entity("person", "Carl Worth")
    assert merged.valid_from == "2009-11-17T00:00:00.000Z" and merged.properties["aliases"] == ["Carl"]
    assert "rules" in merged.properties["extractors"]  # who found the mention
    [carried] = kg.get_relations_to(carl.id, CO_OCCURS_WITH)
    assert carried.properties["count"] == 3 and carried.source_id == git.id
    assert kg.get_relation(self_loop.id).valid_to is not None
    assert kg.find_entity("person", "Carl") is None
    assert [e.name for e in kg.entities_as_of(entity_type="person")] == ["Carl Worth"]
    assert {e.name for e in kg.entities_as_of(entity_type="person", known_at=before_merge)} == {"Carl", "Carl Worth"}
    assert not kg.merge_entity(mention.id, carl.id)  # already merged
    db.close()


def test_notmuch_corpus_people_lists_and_first_names(shared_data: Path) -> None:
    with harvested(shared_data / "email" / "notmuch-corpus") as mind:
        people = active(mind, "person")
        lists = active(mind, "mailing_list")
        addresses = {a for properties in people.values() for a in properties.get("addresses", [])}
        assert "notmuch@notmuchmail.org" not in addresses and "linux-kernel@vger.kernel.org" not in addresses
        assert {"notmuch@notmuchmail.org", "linux-kernel@vger.kernel.org", "alsa-devel@alsa-project.org"} <= {
            a for properties in lists.values() for a in properties["addresses"]
        }
        assert "Carl" not in people and "Carl" in people["Carl Worth"]["aliases"]
        gmane_lists = {a for a in addresses if a.endswith("-u79uwxl29ty76z2rm5mhxa@public.gmane.org")}
        assert gmane_lists == set()  # Gmane's rewrites of vger's lists are lists too
        for full_name, properties in people.items():  # every one-word alias is a word of that person's names
            full_names = [full_name, *(a for a in properties.get("aliases", []) if len(a.split()) > 1)]
            for alias in properties.get("aliases", []):  # a first name, or a header's "Iwai <tiwai@suse.de>"
                assert len(alias.split()) > 1 or alias in {w for n in full_names for w in n.split()}
        # one address, two names in its headers: one person known by both ("Alex" is theirs too)
        holders = [(n, p) for n, p in people.items() if "alex.boterolowry@gmail.com" in p.get("addresses", [])]
        assert len(holders) == 1 and "Botero-Lowry" not in " ".join(n for n in people if n != holders[0][0])
        assert {holders[0][0], *holders[0][1]["aliases"]} >= {"Alex Botero-Lowry", "Alexander Botero-Lowry", "Alex"}


def test_a_concept_with_a_stated_persons_full_name_is_that_person() -> None:
    db = Database(":memory:")
    ensure_schema(db, dimensions=8)
    kg = KnowledgeGraph(db)
    carl = kg.create_entity("person", "Carl Worth", {"extractor": "structure", "addresses": ["cworth@cworth.org"]})
    concept = kg.create_entity("concept", "Carl  worth", {"extractors": ["rules"]})
    program = kg.create_entity("concept", "Notmuch", {"extractors": ["rules"]})
    kg.create_entity("mailing_list", "notmuch", {"extractor": "structure", "addresses": ["notmuch@notmuchmail.org"]})
    kg.create_entity("person", "Jan Janak", {"extractor": "structure"})
    kg.create_entity("person", "Jan Janak", {"extractor": "structure", "addresses": ["jan@other.example"]})
    twice = kg.create_entity("concept", "Jan Janak", {"extractors": ["rules"]})  # two people of that name
    merges = resolve_people(db, kg)
    assert [(m.mention, m.into, m.rule) for m in merges] == [("Carl  worth", "Carl Worth", "a person's name")]
    assert kg.find_entity("concept", "Carl  worth") is None and kg.get_entity(carl.id).properties["aliases"] == ["Carl  worth"]
    assert kg.get_entity(program.id).valid_to is None and kg.get_entity(twice.id).valid_to is None
    assert concept.id != carl.id and resolve_people(db, kg) == []
    db.close()
