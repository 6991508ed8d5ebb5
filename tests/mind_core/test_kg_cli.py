"""`mind kg entities|relations|neighbours` on both time axes, and `mind recall --as-of` (issue #16 §4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mind_core.cli import EXIT_OK, EXIT_USAGE, main
from mind_core.embeddings import create_embedding_provider
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.store.home import MindHome

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def home(tmp_path: Path) -> MindHome:
    home = MindHome(tmp_path / "home")
    with Mind.open(home.workspace_path("default"), embedder=create_embedding_provider("mock")) as mind:
        register_source(mind, "email", EXAMPLES / "mail", "mail")
        harvest(mind, "mail")
    return home


def run(capsys, home: MindHome, *argv: str) -> tuple[int, object]:
    code = main([*argv, "--home", str(home.root), "--embedder", "mock", "--json"])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    answer = json.loads(out.out)  # with --json an error is an {"error", "exit_code"} object too
    return code, answer if code == EXIT_OK else answer["error"]


def test_kg_entities_on_the_valid_time_axis(capsys, home: MindHome) -> None:
    code, people = run(capsys, home, "kg", "entities", "--type", "person")
    assert code == EXIT_OK and {"Alice Johnson", "Bob Smith", "Carol Diaz"} <= {
        p["name"] for p in people["entities"]
    }
    _, before = run(capsys, home, "kg", "entities", "--type", "person", "--valid-at", "2024-03-10")
    assert before["entities"] == []  # the first mail is of 11 March 2024: nobody was known to exist before
    _, on_the_day = run(
        capsys, home, "kg", "entities", "--type", "person", "--valid-at", "2024-03-11T12:00:00Z"
    )
    names = {p["name"] for p in on_the_day["entities"]}
    assert {"Alice Johnson", "Bob Smith"} <= names and "Carol Diaz" not in names  # her first mail: 12 March
    _, known_before = run(capsys, home, "kg", "entities", "--known-at", "2024-03-12")
    assert known_before["entities"] == []  # harvested today: the mind knew nothing in 2024


def test_kg_relations_and_neighbours(capsys, home: MindHome) -> None:
    code, relations = run(capsys, home, "kg", "relations", "--type", "replied_to")
    assert code == EXIT_OK and ("Bob Smith", "PostgreSQL migration plan for Falcon") in {
        (r["source"], r["target"]) for r in relations["relations"]
    }
    code, neighbours = run(capsys, home, "kg", "neighbours", "Bob", "Smith", "--valid-at", "2024-03-12")
    assert code == EXIT_OK
    assert {("replied_to", "out", "PostgreSQL migration plan for Falcon")} <= {
        (n["relation"]["relation_type"], n["direction"], n["neighbour"]) for n in neighbours["neighbours"]
    }
    code, error = run(capsys, home, "kg", "neighbours", "Nobody", "Here")
    assert code == EXIT_USAGE and "no entity named 'Nobody Here'" in error
    code, _ = run(capsys, home, "kg", "entities", "--valid-at", "someday")
    assert code == EXIT_USAGE


def test_recall_as_of_sees_only_what_was_there(capsys, home: MindHome) -> None:
    code, now = run(capsys, home, "recall", "PostgreSQL", "staging")
    assert code == EXIT_OK and len(now["results"]) >= 2
    _, then = run(capsys, home, "recall", "PostgreSQL", "staging", "--as-of", "2024-03-11T12:00:00Z")
    times = [r["metadata"]["created_at"] for r in then["results"]]
    assert times and all(t <= "2024-03-11T12:00:00.000Z" for t in times) and len(times) < len(now["results"])


def test_a_type_no_entity_or_relation_has_is_refused_with_the_types_there_are(capsys, home: MindHome) -> None:
    code, error = run(capsys, home, "kg", "entities", "--type", "persons")
    assert code == EXIT_USAGE and error.startswith("unknown entity type 'persons'; known types: ")
    assert {"person", "project", "thread"} <= set(error.split("known types: ")[1].split(", "))
    code, answer = run(capsys, home, "kg", "entities", "--type", "tool")  # known, none in this mind
    assert code == EXIT_OK and answer["entities"] == []
    code, error = run(capsys, home, "kg", "relations", "--type", "replied")
    assert code == EXIT_USAGE and "replied_to" in error.split("known types: ")[1].split(", ")


def test_neighbours_name_their_entity_and_put_stated_relations_first(capsys, home: MindHome) -> None:
    """Two entities share a name (new-user report 8): every row says which one it belongs to, and
    a person's stated relations (confidence 1.0) come before mere co-occurrences (0.8)."""
    with Mind.open(home.workspace_path("default")) as mind:
        kg = mind.knowledge
        person = kg.find_entity("person", "Bob Smith")
        postgres = kg.find_entity("technology", "PostgreSQL")
        assert person is not None and postgres is not None
        concept = kg.create_entity("concept", "Bob Smith")
        kg.create_relation(concept.id, postgres.id, "co_occurs_with", 0.8)
        kg.create_relation(concept.id, postgres.id, "mentions", 0.5)
    code, answer = run(capsys, home, "kg", "neighbours", "Bob", "Smith")
    assert code == EXIT_OK
    assert [(e["id"], e["entity_type"]) for e in answer["entities"]] == [(person.id, "person"), (concept.id, "concept")]
    rows = answer["neighbours"]
    owners = {(n["entity_id"], n["entity_type"], n["entity"]) for n in rows}
    assert owners == {(person.id, "person", "Bob Smith"), (concept.id, "concept", "Bob Smith")}
    kinds = [n["relation"]["relation_type"] == "co_occurs_with" for n in rows]
    assert kinds == sorted(kinds) and True in kinds and False in kinds  # typed relations, then co-occurrences
    for group in (False, True):
        confidences = [n["relation"]["confidence"] for n, k in zip(rows, kinds, strict=True) if k is group]
        assert confidences == sorted(confidences, reverse=True)
    assert ("mentions", concept.id) in {(n["relation"]["relation_type"], n["entity_id"]) for n in rows}

    assert main(["kg", "neighbours", "Bob", "Smith", "--home", str(home.root)]) == EXIT_OK
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:2] == ["entity", "relation"]
    assert any(line.startswith(f"#{person.id} person Bob Smith") and " replied_to " in line for line in table)
    assert any(line.startswith(f"#{concept.id} concept Bob Smith") and " mentions " in line for line in table)


def test_a_table_cut_by_limit_says_so(capsys, home: MindHome) -> None:
    _, everyone = run(capsys, home, "kg", "entities", "--type", "person")
    count = len(everyone["entities"])
    assert count >= 3 and everyone["truncated"] is False
    _, cut = run(capsys, home, "kg", "entities", "--type", "person", "--limit", str(count - 1))
    assert cut["truncated"] is True and cut["entities"] == everyone["entities"][: count - 1]
    _, relations = run(capsys, home, "kg", "relations", "--limit", "1")
    assert relations["truncated"] is True and len(relations["relations"]) == 1
    code = main(["kg", "entities", "--type", "person", "--limit", "1", "--home", str(home.root)])
    assert code == EXIT_OK and "the first 1 rows: more match; raise --limit" in capsys.readouterr().out
    main(["kg", "entities", "--type", "person", "--home", str(home.root)])
    assert "raise --limit" not in capsys.readouterr().out
