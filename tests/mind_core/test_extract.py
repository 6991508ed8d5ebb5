"""Extraction: the original's entity-extractor tests, its bugs fixed, the ordinary-word rule, the
registry, and real LoCoMo chat turns."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from mind_core.knowledge import extraction as extract_module
from mind_core.knowledge.extraction import (
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    RuleBasedExtractor,
    classify_proper_noun,
    extract,
    extract_entities,
    extract_relations,
    get_extractors,
    register_extractor,
    reset_extractors,
)


@pytest.fixture(autouse=True)
def default_extractors() -> Iterator[None]:
    reset_extractors()
    yield
    reset_extractors()


def entities(text: str) -> set[tuple[str, str]]:
    return {(e.name, e.type) for e in extract_entities(text)}


def technologies(text: str) -> list[str]:
    return [e.name for e in extract_entities(text) if e.type == "technology"]


def relations(text: str) -> set[tuple[str, str, str]]:
    found = extract(text).relations
    return {(r.relation_type, r.source, r.target) for r in found}


# -- entity-extractor.test ------------------------------------------------------------------------
def test_person_name_is_a_person() -> None:
    assert ("Alice Johnson", "person") in entities("I had a meeting with Alice Johnson today.")


def test_technologies_found() -> None:
    found = technologies("We are migrating from PostgreSQL to SQLite for the desktop build.")
    assert found == ["PostgreSQL", "SQLite"]
    assert all(
        e.confidence == 0.9 for e in extract_entities("We use PostgreSQL and Redis") if e.type == "technology"
    )


def test_short_text_gives_nothing() -> None:
    assert extract_entities("Hi") == []
    assert extract("Hi") == Extraction()


def test_repeated_name_gives_one_entity() -> None:
    found = extract_entities("Alice Johnson said hi. Then Alice Johnson left. Now Alice Johnson is back.")
    assert [(e.name, e.type) for e in found] == [("Alice Johnson", "person")]
    assert found[0].confidence == 0.7


def test_same_name_under_two_types_is_two_entities() -> None:
    merged = extract_module.merge_extractions(
        [Extraction((ExtractedEntity("Falcon", "project", 0.5), ExtractedEntity("falcon", "concept", 0.6)))]
    )
    assert len(merged.entities) == 2


# -- classification -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Alice Johnson", "person"),
        ("Acme Labs", "organization"),
        ("Stanford University", "organization"),
        ("Project Falcon", "project"),
        ("Migration Strategy", "concept"),
        ("Blue Whale", "concept"),  # no indicator at all
        ("Alice Team", "person"),  # person beats organization
        ("Project Team", "organization"),  # organization beats project
        ("Project Roadmap", "project"),  # project beats concept
        ("Design Group", "organization"),  # organization beats concept
    ],
)
def test_classification_priority(name: str, expected: str) -> None:
    assert classify_proper_noun(name) == expected


def test_proper_noun_rules() -> None:
    assert entities("Thanks Alice Johnson for the review") == {("Alice Johnson", "person")}
    assert entities("Yeah John, that sounds great to me!") == set()  # interjection + one word
    assert entities("Wow Maria Lopez, congratulations on the win") == {("Maria Lopez", "person")}
    # A line break ends a name instead of fusing two lines into one.
    assert entities("Project Falcon\nAlice Johnson joined the team") == {
        ("Project Falcon", "project"),
        ("Alice Johnson", "person"),
    }
    assert entities("we talked about NASA and McDonald today") == set()  # all-caps / camel case break it
    # Hyphenated TitleCase parts are one word of the name, typed by the first name's first part.
    assert entities("I met Alex Botero-Lowry at the conference") == {("Alex Botero-Lowry", "person")}
    assert entities("A letter from Mary-Jane Watson arrived today") == {("Mary-Jane Watson", "person")}


def test_leading_skip_word_is_dropped_not_the_name() -> None:
    # The original skipped the whole match; the project indicator is anchored at the start.
    assert entities("The Falcon Project shipped on time") == {("Falcon Project", "concept")}


# -- technology terms: ordinary words are not technologies ---------------------------------------
@pytest.mark.parametrize(
    "sentence",
    [
        "let's go to the park this afternoon",
        "I need some rest after this week",
        "we took the express train to the city",
        "Go to the park and take a break",
        "the old car is covered in rust",
        "she wanted to express herself through painting",
        "a python escaped from the zoo",
        "how did they react when you told them?",
        "Hey Ruby, how have you been?",
        "Gina: Go for it, Jon! You got this!",
        "at the next node of the tree we stop",
        "a stripe of paint and a fresh bun",
    ],
)
def test_ordinary_words_are_not_technologies(sentence: str) -> None:
    assert technologies(sentence) == []


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("we wrote the service in Go last year", ["Go"]),
        ("we built a REST API for the app", ["REST"]),
        ("our rest api is slow", ["REST"]),
        ("Express middleware handles auth", ["Express"]),
        ("the backend runs Node.js and some node.js scripts", ["Node.js"]),
        ("I am learning python these days", ["Python"]),
        ("the parser was written in rust", ["Rust"]),
        ("a react app with Jest tests", ["React", "Jest"]),
        ("we moved from golang to Rust", ["Go", "Rust"]),
        ("postgres or PostgreSQL, same thing", ["PostgreSQL"]),
        ("deployed on kubernetes with docker and GitHub actions", ["Kubernetes", "Docker", "GitHub"]),
        ("payments go through Stripe now", ["Stripe"]),
    ],
)
def test_technologies_in_context(sentence: str, expected: list[str]) -> None:
    assert technologies(sentence) == expected


def test_technology_word_boundaries() -> None:
    assert technologies("open the node.json file and the my_redis_client module") == []
    assert technologies("upgraded to gpt-4 yesterday") == ["GPT"]


# -- relations ------------------------------------------------------------------------------------
def test_led_by_direction_active_and_passive() -> None:
    assert relations("Alice Johnson leads Project Falcon since spring.") == {
        ("led_by", "Project Falcon", "Alice Johnson")
    }
    assert relations("Project Falcon is led by Alice Johnson since spring.") == {
        ("led_by", "Project Falcon", "Alice Johnson")
    }
    assert relations("Mark Smith manages Project Falcon these days.") == {
        ("led_by", "Project Falcon", "Mark Smith")
    }
    assert relations("Project Falcon is managed by Mark Smith these days.") == {
        ("led_by", "Project Falcon", "Mark Smith")
    }


def test_same_relation_from_two_patterns_is_reported_once() -> None:
    found = extract("Alice Johnson leads Project Falcon. Project Falcon is led by Alice Johnson.").relations
    assert found == (ExtractedRelation("Project Falcon", "Alice Johnson", "led_by", 0.9),)


def test_approved_fires_with_its_object() -> None:
    found = extract("Alice Johnson approved the Falcon Budget yesterday.").relations
    assert found == (ExtractedRelation("Alice Johnson", "Falcon Budget", "approved", 0.8),)
    assert relations("Mark Smith signed the Vendor Contract on Monday.") == {
        ("approved", "Mark Smith", "Vendor Contract")
    }


@pytest.mark.parametrize(
    ("text", "expected", "confidence"),
    [
        (
            "Alice Johnson reports to Mark Smith since May.",
            ("reports_to", "Alice Johnson", "Mark Smith"),
            0.9,
        ),
        ("Alice Johnson works for Acme Labs since May.", ("reports_to", "Alice Johnson", "Acme Labs"), 0.9),
        (
            "Project Falcon depends on the Billing Service.",
            ("depends_on", "Project Falcon", "Billing Service"),
            0.85,
        ),
        (
            "Project Falcon depends on PostgreSQL for storage.",
            ("depends_on", "Project Falcon", "PostgreSQL"),
            0.85,
        ),
        (
            "Project Falcon is maintained by the Platform Team.",
            ("maintained_by", "Project Falcon", "Platform Team"),
            0.85,
        ),
        (
            "Project Falcon was built by the Platform Team.",
            ("maintained_by", "Project Falcon", "Platform Team"),
            0.85,
        ),
        (
            "Alice Johnson from Acme Labs joined the call.",
            ("affiliated_with", "Alice Johnson", "Acme Labs"),
            0.75,
        ),
    ],
)
def test_relation_patterns(text: str, expected: tuple[str, str, str], confidence: float) -> None:
    found = extract(text).relations
    assert [(r.relation_type, r.source, r.target) for r in found] == [expected]
    assert found[0].confidence == confidence


def test_relations_need_two_entities_and_enough_text() -> None:
    only_one = [ExtractedEntity("Alice Johnson", "person", 0.7)]
    assert extract_relations("Alice Johnson leads Project Falcon.", only_one) == []
    two = [*only_one, ExtractedEntity("Project Falcon", "project", 0.7)]
    assert extract_relations("Ab Cd leads Ef Gh", two) == []  # shorter than 20 characters
    assert extract_relations("Alice Johnson leads Project Falcon.", two) != []
    # Neither end is a known entity: nothing is emitted.
    assert extract_relations("Bob Stone leads Team Rocket today.", two) == []


# -- registry -------------------------------------------------------------------------------------
class FixedExtractor:
    def __init__(self, name: str, extraction: Extraction) -> None:
        self.name = name
        self.extraction = extraction
        self.calls = 0

    def extract(self, text: str) -> Extraction:
        self.calls += 1
        return self.extraction


class BrokenExtractor:
    name = "broken"

    def extract(self, text: str) -> Extraction:
        raise RuntimeError("model not loaded")


def test_rule_based_is_registered_by_default() -> None:
    assert [type(e) for e in get_extractors()] == [RuleBasedExtractor]


def test_registered_extractors_are_merged() -> None:
    plugin = FixedExtractor(
        "llm",
        Extraction(
            (
                ExtractedEntity("alice johnson", "person", 0.95),
                ExtractedEntity("Berlin", "location", 0.8),
                ExtractedEntity("", "person", 0.9),
                ExtractedEntity("Nobody", "person", float("nan")),
            ),
            (ExtractedRelation("Alice Johnson", "Berlin", "lives_in", 1.7),),
        ),
    )
    register_extractor(plugin)
    register_extractor(BrokenExtractor())
    result = extract("We met Alice Johnson in the office.")
    assert plugin.calls == 1
    assert [(e.name, e.type, e.confidence) for e in result.entities] == [
        ("Alice Johnson", "person", 0.95),  # first spelling, highest confidence
        ("Berlin", "location", 0.8),
    ]
    assert result.relations == (ExtractedRelation("Alice Johnson", "Berlin", "lives_in", 1.0),)


def test_register_replaces_same_name_and_reset_restores_default() -> None:
    first = FixedExtractor("custom", Extraction())
    second = FixedExtractor("custom", Extraction())
    register_extractor(first)
    register_extractor(second)
    assert [e for e in get_extractors() if e.name == "custom"] == [second]
    reset_extractors()
    assert [e.name for e in get_extractors()] == ["rules"]
    with pytest.raises(TypeError):
        register_extractor(object())


def test_wrong_return_type_is_skipped() -> None:
    register_extractor(FixedExtractor("bad", ["not", "an", "extraction"]))  # type: ignore[arg-type]
    assert [e.name for e in extract("We met Alice Johnson in the office.").entities] == ["Alice Johnson"]


# -- real chat turns ------------------------------------------------------------------------------
def locomo_turns(shared_data: Path) -> list[str]:
    samples = json.loads((shared_data / "benchmarks" / "locomo" / "locomo10_conv1-3.json").read_text("utf-8"))
    turns = []
    for sample in samples:
        for key, session in sample["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns += [f"{turn['speaker']}: {turn['text']}" for turn in session]
    return turns


def test_locomo_chat_has_no_ordinary_word_technologies(shared_data: Path) -> None:
    turns = locomo_turns(shared_data)
    ordinary = re.compile(r"\b(go|rest|express|react|node)\b", re.IGNORECASE)
    with_words = [t for t in turns if ordinary.search(t)]
    assert len(with_words) > 50  # the original would call each of these a technology
    assert [t for t in with_words if technologies(t)] == []
    found = {e.name for t in turns for e in extract(t).entities}
    assert {"Ed Sheeran", "Grand Canyon"} <= found
    assert not any(name.split()[0] in {"Yeah", "Wow", "Hey"} for name in found)


# -- names typed by their context (issue #16 §5) ----------------------------------------------------
def typed(text: str) -> set[tuple[str, str]]:
    return {(e.name, e.type) for e in extract_entities(text)}


def test_mail_senders_with_addresses_are_people_not_concepts() -> None:
    text = (
        "[[PATCH 00/44] remove unnecessary semicolons] Joe Perches <joe@perches.com>: Signed-off-by: "
        "Joe Perches <joe@perches.com>\nAcked-by: Sjur BRENDELAND <sjur@example.com>\n"
        "Dr. Mark K. Joseph <izzy@scr.atm.com> wrote:\nAlexander Botero-Lowry <alex@example.com> replied"
    )
    found = typed(text)
    assert {("Joe Perches", "person"), ("Sjur BRENDELAND", "person"), ("Mark K. Joseph", "person")} <= found
    assert ("Alexander Botero-Lowry", "person") in found
    assert not any(t == "concept" for _, t in found)  # no "Joe Perches" concept, no cut "Alexander Botero"
    assert typed("[Webinar today] Continuity Insights <info@continuityinsights.com>: Register now") == {
        ("Continuity Insights", "organization")  # a role address: a sender that is not a person
    }
    assert typed("[Hi] Sender <sender@example.net>: a single word is not enough") == set()


def test_speakers_greetings_and_sign_offs_are_people() -> None:
    assert ("Maria", "person") in typed("Maria: Yeah, it's like a natural soul-soother when things get tough.")
    assert {("Jon", "person"), ("Gina", "person")} <= typed("Jon: Hey Gina! Good to see you too.")
    assert ("Mel", "person") in typed("Caroline: Thanks, Mel! My goal is to give kids a loving home.")
    assert ("Aron", "person") in typed("the archive link seems to be bogus?\n\nThanks,\nAron")
    assert ("Randy", "person") in typed("Hopefully it won't go that far.\n\n---\n~Randy")
    assert ("Steph Ango", "person") in typed("[Buy wisely] Steph Ango: Reducing the cost side of things")
    chat = typed("[Falcon cutover] Assistant: Note: the Bob Smith runbook is ready")
    assert ("Assistant", "person") not in chat and ("Note", "person") not in chat


def test_sentence_openers_and_headings_make_no_entities() -> None:
    assert typed("After Obsidian starts, open the vault.\nShow Obsidian version\nMeet Attachmate today") == set()
    assert typed("Acked By: nobody in particular, as usual") == set()
    assert ("Obsidian Sync", "project") in typed("Troubleshoot Obsidian Sync when the vault will not open")
    assert ("Deming Software", "organization") in typed("Thanks,\nRon Craswell\nDeming Software")
