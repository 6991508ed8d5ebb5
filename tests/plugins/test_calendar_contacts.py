"""Calendars and address books become knowledge: events dated by their own start with their
organizer and attendees as persons with addresses; contacts as persons with their addresses and
phones, working at their organization."""

from __future__ import annotations

from datetime import UTC, datetime

from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.testing.fakes import HashingEmbedder
from mind_core.testing.message_exports import write_ics, write_vcf

EVENT = {
    "uid": "review-1@example.com",
    "summary": "Budget review",
    "start": datetime(2026, 3, 4, 9, 0, tzinfo=UTC),
    "end": datetime(2026, 3, 4, 10, 0, tzinfo=UTC),
    "zone": "Europe/Berlin",
    "organizer": ("Alice Johnson", "alice@example.com"),
    "attendees": [("Bob Stone", "bob@example.com"), ("Carol Diaz", "carol@example.org")],
    "location": "Room 4",
}
CONTACT = {
    "name": ("Dana", "Okafor"),
    "emails": ["dana@example.com", "dana.okafor@home.example"],
    "phones": ["+49 30 1234567"],
    "organization": "Falcon GmbH",
    "title": "CTO",
    "uid": "dana-1",
}


def harvested(tmp_path, path, kind):
    mind = Mind.open(tmp_path / "m.mind", embedder=HashingEmbedder())
    register_source(mind, kind, path, kind)
    report = harvest(mind, kind)
    assert report.status == "ok", report.reason
    return mind


def relations(mind, entity, relation_type):
    kg = mind.knowledge
    return {kg.get_entity(r.target_id).name for r in kg.relations_as_of(entity_id=entity.id, relation_type=relation_type) if r.source_id == entity.id}


def test_an_event_is_dated_by_its_start_with_its_organizer_and_attendees(tmp_path):
    with harvested(tmp_path, write_ics(tmp_path / "cal" / "work.ics", [EVENT]), "icalendar") as mind:
        kg = mind.knowledge
        event = kg.find_entity("event", "Budget review")
        assert event is not None and event.valid_from.startswith("2026-03-04T09:00")
        alice = kg.find_entity("person", "Alice Johnson")
        assert alice.properties["addresses"] == ["alice@example.com"]
        assert relations(mind, alice, "organizes") == {"Budget review"}
        for name, address in EVENT["attendees"]:
            person = kg.find_entity("person", name)
            assert person.properties["addresses"] == [address]
            assert relations(mind, person, "attends") == {"Budget review"}


def test_a_contact_is_a_person_with_addresses_phones_and_employer(tmp_path):
    with harvested(tmp_path, write_vcf(tmp_path / "book" / "contacts.vcf", [CONTACT]), "vcard") as mind:
        dana = mind.knowledge.find_entity("person", "Dana Okafor")
        assert dana.properties["addresses"] == CONTACT["emails"]
        assert dana.properties["phones"] == CONTACT["phones"] and dana.properties["title"] == "CTO"
        assert relations(mind, dana, "works_at") == {"Falcon GmbH"}
