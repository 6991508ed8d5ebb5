"""KnowledgeGraph: the original's knowledge / knowledge-hive-mind / temporal-knowledge tests, plus
as-of history, mixed timestamp formats, indexed lookup, upserts and the entity-frame bridge."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.knowledge.entities import text_name_candidates
from mind_core.knowledge.graph import KnowledgeGraph
from mind_core.knowledge.model import CO_OCCURS_WITH, RelationSighting
from mind_core.store.db import Database
from mind_core.store.schema import ensure_schema
from mind_core.timestamps import format_utc, now_iso, utc_now


@pytest.fixture
def db() -> Database:
    database = Database(":memory:")
    ensure_schema(database, dimensions=8)
    yield database
    database.close()


@pytest.fixture
def kg(db: Database) -> KnowledgeGraph:
    return KnowledgeGraph(db)


def shifted(seconds: float) -> str:
    return format_utc(utc_now() + timedelta(seconds=seconds))


def add_frames(db: Database, count: int) -> list[int]:
    """Minimal frames (and their session) so kg_entity_frames' foreign keys hold."""
    db.execute("INSERT OR IGNORE INTO sessions (gop_id) VALUES ('g1')")
    ids = []
    for i in range(count):
        cursor = db.execute(
            "INSERT INTO memory_frames (frame_type, gop_id, t, content) VALUES ('I', 'g1', ?, ?)",
            (i, f"frame {i}"),
        )
        ids.append(cursor.lastrowid)
    return ids


# -- entities (knowledge.test / knowledge-hive-mind.test) -----------------------------------------
def test_create_get_update_entity(kg: KnowledgeGraph) -> None:
    entity = kg.create_entity("person", "Alice Johnson", {"role": "lead"})
    fetched = kg.get_entity(entity.id)
    assert fetched == entity
    assert fetched.properties == {"role": "lead"} and fetched.active
    assert kg.get_entity(entity.id + 999) is None

    updated = kg.update_entity(entity.id, name="Alice J.", properties={"role": "director"})
    assert (updated.id, updated.name, updated.properties) == (entity.id, "Alice J.", {"role": "director"})
    assert updated.recorded_at >= entity.recorded_at
    assert kg.get_entity_count() == 1  # in place: no new version


def test_retire_excludes_from_type_queries_but_get_still_returns(kg: KnowledgeGraph) -> None:
    alice = kg.create_entity("person", "Alice")
    kg.create_entity("person", "Bob")
    assert kg.retire_entity(alice.id) is True
    assert [e.name for e in kg.get_entities_by_type("person")] == ["Bob"]
    assert [e.name for e in kg.get_entities()] == ["Bob"]
    retired = kg.get_entity(alice.id)
    assert retired is not None and retired.valid_to is not None and not retired.active
    assert kg.retire_entity(alice.id) is False  # already retired: its end is kept
    assert kg.get_entity(alice.id).valid_to == retired.valid_to


def test_entities_ordered_by_name_with_limit_offset_and_empty_type(kg: KnowledgeGraph) -> None:
    for name in ["Carol", "Alice", "Bob"]:
        kg.create_entity("person", name)
    kg.create_entity("project", "Apollo")
    assert [e.name for e in kg.get_entities(limit=2, offset=1)] == ["Apollo", "Bob"]
    assert [e.name for e in kg.get_entities_by_type("person", limit=2)] == ["Alice", "Bob"]
    assert len(kg.get_entities_by_type("", limit=10)) == 4


def test_relations_from_to_type_filter_and_retire(kg: KnowledgeGraph) -> None:
    a, b, c = (kg.create_entity("person", n) for n in ("A", "B", "C"))
    ab = kg.create_relation(a.id, b.id, "knows", 0.9, {"since": 2020})
    ac = kg.create_relation(a.id, c.id, "manages")
    assert {r.target_id for r in kg.get_relations_from(a.id)} == {b.id, c.id}
    assert [r.id for r in kg.get_relations_from(a.id, "knows")] == [ab.id]
    assert [r.source_id for r in kg.get_relations_to(c.id)] == [a.id]
    assert kg.get_relation(ab.id).properties == {"since": 2020}
    assert kg.get_relation(ab.id).confidence == pytest.approx(0.9)
    assert kg.retire_relation(ac.id) is True
    assert [r.id for r in kg.get_relations_from(a.id)] == [ab.id]
    assert kg.get_relations_to(c.id) == []
    assert kg.get_relation(ac.id).valid_to is not None


def test_retire_and_recreate_leaves_one_active_and_as_of_queries(kg: KnowledgeGraph) -> None:
    old = kg.create_entity("project", "Falcon")
    assert [e.id for e in kg.get_entities_valid_at(now_iso())] == [old.id]
    kg.retire_entity(old.id)
    new = kg.create_entity("project", "Falcon")
    assert [e.id for e in kg.get_entities_by_type("project")] == [new.id]
    later = [e.id for e in kg.get_entities_valid_at(shifted(60))]
    assert later == [new.id]  # the retired version is excluded at now + 60 s


def test_traverse_depths_and_cycles(kg: KnowledgeGraph) -> None:
    a, b, c, d = (kg.create_entity("node", n) for n in "ABCD")
    for src, tgt in [(a, b), (b, c), (c, d)]:
        kg.create_relation(src.id, tgt.id, "next")
    kg.create_relation(a.id, d.id, "other")
    assert [e.name for e in kg.traverse(a.id, "next", 1)] == ["B"]
    assert [e.name for e in kg.traverse(a.id, "next", 3)] == ["B", "C", "D"]

    x, y = kg.create_entity("node", "X"), kg.create_entity("node", "Y")
    kg.create_relation(x.id, y.id, "loop")
    kg.create_relation(y.id, x.id, "loop")
    assert [e.name for e in kg.traverse(x.id, "loop", 5)] == ["Y"]
    assert kg.traverse(9999, "next", 3) == []


def test_traverse_skips_retired_entities_and_relations(kg: KnowledgeGraph) -> None:
    a, b, c = (kg.create_entity("node", n) for n in "ABC")
    kg.create_relation(a.id, b.id, "next")
    kg.create_relation(b.id, c.id, "next")
    kg.retire_entity(b.id)
    assert kg.traverse(a.id, "next", 3) == []  # a retired entity is neither returned nor crossed
    d = kg.create_entity("node", "D")
    rel = kg.create_relation(a.id, d.id, "next")
    kg.retire_relation(rel.id)
    assert kg.traverse(a.id, "next", 3) == []


def test_bfs_distances(kg: KnowledgeGraph) -> None:
    a, b, c, d, e = (kg.create_entity("node", n) for n in "ABCDE")
    kg.create_relation(a.id, b.id, "x")
    kg.create_relation(b.id, c.id, "y")
    kg.create_relation(c.id, d.id, "z")
    kg.create_relation(d.id, e.id, "z")
    kg.create_relation(b.id, a.id, "back")
    assert kg.bfs_distances(a.id, 3) == {b.id: 1, c.id: 2, d.id: 3}
    assert kg.bfs_distances(a.id, 1) == {b.id: 1}
    kg.retire_entity(c.id)  # as in the original, retired targets still count
    assert kg.bfs_distances(a.id, 2) == {b.id: 1, c.id: 2}


def test_validation_schema(kg: KnowledgeGraph) -> None:
    kg.set_validation_schema(
        {"person": {"required": ["email"], "allowedRelations": ["knows"]}, "project": {"required": []}}
    )
    with pytest.raises(InvalidInputError) as missing:
        kg.create_entity("person", "Alice", {"name": "x"})
    assert str(missing.value) == "Validation failed: required property 'email' missing for type 'person'"
    alice = kg.create_entity("person", "Alice", {"email": "a@x"})
    bob = kg.create_entity("person", "Bob", {"email": "b@x"})
    kg.create_relation(alice.id, bob.id, "knows")
    with pytest.raises(InvalidInputError) as bad_relation:
        kg.create_relation(alice.id, bob.id, "manages")
    assert str(bad_relation.value) == "Validation failed: relation 'manages' not allowed for type 'person'"
    tool = kg.create_entity("tool", "Hammer")  # a type without a rule passes
    kg.create_relation(tool.id, alice.id, "anything")
    project = kg.create_entity("project", "Falcon")  # a rule without allowed relations allows any
    kg.create_relation(project.id, alice.id, "led_by")
    kg.set_validation_schema(None)
    kg.create_entity("person", "Carol")


def test_search_entities_substring_escaped(kg: KnowledgeGraph) -> None:
    for name in ["PostgreSQL", "Postman", "SQLite", "100% Done", "100 Percent", "snake_case", "snakeXcase"]:
        kg.create_entity("thing", name)
    assert [e.name for e in kg.search_entities("post")] == ["PostgreSQL", "Postman"]
    assert [e.name for e in kg.search_entities("sql")] == ["PostgreSQL", "SQLite"]
    assert [e.name for e in kg.search_entities("100%")] == ["100% Done"]
    assert [e.name for e in kg.search_entities("snake_")] == ["snake_case"]
    assert len(kg.search_entities("s", limit=2)) == 2


def test_type_counts_and_total(kg: KnowledgeGraph) -> None:
    for name in ["A", "B", "C"]:
        kg.create_entity("person", name)
    kg.create_entity("project", "P")
    retired = kg.create_entity("project", "Q")
    kg.retire_entity(retired.id)
    assert kg.get_entity_type_counts() == [("person", 3), ("project", 1)]
    assert kg.get_entity_count() == 4


# -- temporal-knowledge.test ----------------------------------------------------------------------
def test_explicit_validity_windows(kg: KnowledgeGraph) -> None:
    alpha = kg.create_entity(
        "project", "Alpha", valid_from="2024-01-01T00:00:00Z", valid_to="2024-02-01T00:00:00Z"
    )
    beta = kg.create_entity(
        "project", "Beta", valid_from="2024-02-01T00:00:00Z", valid_to="2024-03-01T00:00:00Z"
    )
    future = kg.create_entity("project", "Gamma", valid_from=shifted(3600))
    current = kg.create_entity("project", "Delta")
    assert [e.id for e in kg.get_entities_valid_at("2024-01-15T12:00:00Z")] == [alpha.id]
    assert [e.id for e in kg.get_entities_valid_at("2024-02-15T12:00:00Z")] == [beta.id]
    assert [e.id for e in kg.get_entities_valid_at("2024-02-01T00:00:00Z")] == [beta.id]  # end is exclusive
    at_now = [e.id for e in kg.get_entities_valid_at(now_iso())]
    assert current.id in at_now and future.id not in at_now and alpha.id not in at_now
    assert future.id in [e.id for e in kg.get_entities_valid_at(shifted(7200))]
    assert alpha.valid_from == "2024-01-01T00:00:00.000Z"  # stored normalised


def test_explicit_valid_to_alone_starts_now(kg: KnowledgeGraph) -> None:
    entity = kg.create_entity("project", "Short", valid_to=shifted(60))
    assert entity.valid_to is not None
    assert [e.id for e in kg.get_entities_valid_at(now_iso())] == [entity.id]
    assert kg.get_entities_valid_at(shifted(120)) == []


def test_as_of_across_retire_and_recreate_history(kg: KnowledgeGraph) -> None:
    """A project's lead changes twice; as-of queries replay who was the lead when."""
    falcon = kg.create_entity("project", "Falcon", valid_from="2024-01-01T00:00:00Z")
    alice_v1 = kg.create_entity(
        "person", "Alice", valid_from="2024-01-01T00:00:00Z", valid_to="2024-03-01T00:00:00Z"
    )
    alice_v2 = kg.create_entity("person", "Alice", {"title": "VP"}, valid_from="2024-03-01T00:00:00Z")
    bob = kg.create_entity("person", "Bob", valid_from="2024-01-01T00:00:00Z")
    kg.create_relation(
        falcon.id, alice_v1.id, "led_by", valid_from="2024-01-01T00:00:00Z", valid_to="2024-04-01T00:00:00Z"
    )
    kg.create_relation(falcon.id, bob.id, "led_by", valid_from="2024-04-01T00:00:00Z")

    def lead_at(instant: str) -> list[int]:
        return [
            r.target_id
            for r in kg.get_relations_valid_at(instant, source_id=falcon.id, relation_type="led_by")
        ]

    def alice_at(instant: str) -> list[int]:
        return [e.id for e in kg.get_entities_valid_at(instant) if e.name == "Alice"]

    assert lead_at("2024-02-01T00:00:00Z") == [alice_v1.id]
    assert lead_at("2024-05-01T00:00:00Z") == [bob.id]
    assert lead_at("2023-12-31T23:59:59Z") == []
    assert alice_at("2024-02-01T00:00:00Z") == [alice_v1.id]
    assert alice_at("2024-03-01T00:00:00Z") == [alice_v2.id]

    # The same history made live: retire, then recreate; the past stays answerable.
    before = shifted(-1)
    current = kg.get_relations_from(falcon.id, "led_by")
    assert [r.target_id for r in current] == [bob.id]
    kg.retire_relation(current[0].id)
    kg.retire_entity(bob.id)
    carol = kg.create_entity("person", "Carol")
    kg.create_relation(falcon.id, carol.id, "led_by")
    assert lead_at(before) == [bob.id]
    assert lead_at(shifted(60)) == [carol.id]
    assert bob.id in [e.id for e in kg.get_entities_valid_at(before)]
    assert bob.id not in [e.id for e in kg.get_entities_valid_at(shifted(60))]
    assert [r.target_id for r in kg.get_relations_from(falcon.id, "led_by")] == [carol.id]


def test_instants_compared_across_mixed_formats(db: Database, kg: KnowledgeGraph) -> None:
    """Rows in SQLite's 'YYYY-MM-DD HH:MM:SS' and in ISO with offsets compare as instants."""
    db.execute(
        "INSERT INTO knowledge_entities (entity_type, name, valid_from) VALUES ('e', 'naive-later', '2025-03-01 11:00:00')"
    )
    db.execute(
        "INSERT INTO knowledge_entities (entity_type, name, valid_from) VALUES ('e', 'offset-earlier', ?)",
        ("2025-03-01T11:00:00+02:00",),  # 09:00 UTC
    )
    db.execute(
        "INSERT INTO knowledge_entities (entity_type, name, valid_from, valid_to)"
        " VALUES ('e', 'naive-ended', '2025-03-01 08:00:00', '2025-03-01 10:00:00')"
    )
    # 10:15 UTC, written with an offset; string comparison would get all three wrong.
    names = {e.name for e in kg.get_entities_valid_at("2025-03-01T11:15:00+01:00")}
    assert names == {"offset-earlier"}
    names = {e.name for e in kg.get_entities_valid_at("2025-03-01T09:30:00Z")}
    assert names == {"offset-earlier", "naive-ended"}
    a, b = kg.find_entity("e", "naive-later"), kg.find_entity("e", "offset-earlier")
    db.execute(
        "INSERT INTO knowledge_relations (source_id, target_id, relation_type, valid_from)"
        " VALUES (?, ?, 'r', ?)",
        (a.id, b.id, shifted(3600)),
    )
    assert kg.get_relations_valid_at(now_iso()) == []
    assert len(kg.get_relations_valid_at(shifted(2 * 3600))) == 1


# -- lookup and upserts ---------------------------------------------------------------------------
def test_find_entity_sees_beyond_the_first_500(db: Database, kg: KnowledgeGraph) -> None:
    with db.transaction():
        for i in range(600):
            kg.create_entity("person", f"Person {i:04d}")
    assert len(kg.get_entities_by_type("person")) == 500
    last = kg.find_entity("person", "PERSON 0599")
    assert last is not None and last.name == "Person 0599"
    assert kg.find_entity("project", "Person 0599") is None
    kg.retire_entity(last.id)
    assert kg.find_entity("person", "person 0599") is None
    plan = " ".join(
        str(tuple(row))
        for row in db.query(
            "EXPLAIN QUERY PLAN SELECT * FROM knowledge_entities WHERE entity_type = ? AND lower(name) = lower(?)"
            " AND valid_to IS NULL ORDER BY id LIMIT 1",
            ("person", "x"),
        )
    )
    assert "idx_entities_type_lname" in plan


def test_upsert_entity_is_idempotent(kg: KnowledgeGraph) -> None:
    first = kg.upsert_entity("technology", "PostgreSQL", {"source": "cognify"})
    again = kg.upsert_entity("technology", "postgresql", {"source": "other"})
    assert first[1] is True and again == (first[0], False)
    assert kg.get_entity(first[0]).properties == {"source": "cognify"}
    other_type = kg.upsert_entity("concept", "PostgreSQL")
    assert other_type[1] is True and other_type[0] != first[0]
    kg.retire_entity(first[0])
    recreated = kg.upsert_entity("technology", "PostgreSQL")
    assert recreated[1] is True and recreated[0] != first[0]
    assert kg.get_entity_count() == 2


def test_upsert_relation_counts_sightings_and_keeps_max_confidence(kg: KnowledgeGraph) -> None:
    falcon, alice = kg.create_entity("project", "Falcon"), kg.create_entity("person", "Alice")
    rel_id, created = kg.upsert_relation(falcon.id, alice.id, "led_by", 0.7, {"source": "semantic"})
    assert created
    assert kg.upsert_relation(falcon.id, alice.id, "led_by", 0.9) == (rel_id, False)
    assert kg.upsert_relation(falcon.id, alice.id, "led_by", 0.5) == (rel_id, False)
    relation = kg.get_relation(rel_id)
    assert relation.properties == {"source": "semantic", "count": 3}
    assert relation.confidence == pytest.approx(0.9)
    reverse_id, reverse_created = kg.upsert_relation(alice.id, falcon.id, "led_by", 0.9)
    assert reverse_created and reverse_id != rel_id  # typed relations are directed
    assert len(kg.get_relations_from(falcon.id)) == 1


def test_co_occurrence_is_undirected(kg: KnowledgeGraph) -> None:
    a, b = kg.create_entity("person", "A"), kg.create_entity("person", "B")
    rel_id, created = kg.upsert_relation(a.id, b.id, CO_OCCURS_WITH, 0.8)
    assert created
    assert kg.upsert_relation(b.id, a.id, CO_OCCURS_WITH, 0.8) == (rel_id, False)
    assert kg.upsert_relation(a.id, b.id, CO_OCCURS_WITH, 0.8) == (rel_id, False)
    assert kg.get_relation(rel_id).properties["count"] == 3
    assert len(kg.get_relations_from(a.id)) + len(kg.get_relations_from(b.id)) == 1
    kg.retire_relation(rel_id)
    assert kg.upsert_relation(b.id, a.id, CO_OCCURS_WITH, 0.8)[1] is True


# -- errors ---------------------------------------------------------------------------------------
def test_unknown_ids_and_bad_arguments(kg: KnowledgeGraph) -> None:
    alice = kg.create_entity("person", "Alice")
    with pytest.raises(NotFoundError):
        kg.update_entity(999, name="x")
    with pytest.raises(NotFoundError):
        kg.retire_entity(999)
    with pytest.raises(NotFoundError):
        kg.retire_relation(999)
    with pytest.raises(NotFoundError):
        kg.create_relation(alice.id, 999, "knows")
    assert kg.get_relation(999) is None and kg.bfs_distances(999, 3) == {}
    for call in [
        lambda: kg.create_entity("", "x"),
        lambda: kg.create_entity("person", "   "),
        lambda: kg.create_entity("person", "x", properties=["not", "a", "mapping"]),
        lambda: kg.create_entity("person", "x", {"bad": object()}),
        lambda: kg.create_entity("person", "x", valid_from="not a date"),
        lambda: kg.create_entity(
            "person", "x", valid_from="2024-02-01T00:00:00Z", valid_to="2024-01-01T00:00:00Z"
        ),
        lambda: kg.create_relation(alice.id, alice.id, "self", confidence=1.5),
        lambda: kg.create_relation(alice.id, alice.id, "self", confidence=float("nan")),
        lambda: kg.create_relation("1", alice.id, "knows"),
        lambda: kg.get_entities(limit=-1),
        lambda: kg.get_entities_valid_at("yesterday"),
    ]:
        with pytest.raises(InvalidInputError):
            call()
    assert kg.get_entity_count() == 1


# -- entity <-> frame bridge, text lookup, frame distances ---------------------------------------
def test_link_entities_to_frames(db: Database, kg: KnowledgeGraph) -> None:
    f1, f2 = add_frames(db, 2)
    alice, bob = kg.create_entity("person", "Alice"), kg.create_entity("person", "Bob")
    assert kg.link_entity_to_frame(alice.id, f1) is True
    assert kg.link_entity_to_frame(alice.id, f1) is False
    assert kg.link_entities_to_frame([alice.id, bob.id, bob.id], f2) == 2
    assert [e.name for e in kg.entities_for_frame(f2)] == ["Alice", "Bob"]
    assert kg.frames_for_entity(alice.id) == [f1, f2]
    with pytest.raises(NotFoundError):
        kg.link_entity_to_frame(alice.id, 9999)
    with pytest.raises(NotFoundError):
        kg.link_entity_to_frame(9999, f1)


def test_text_name_candidates() -> None:
    grams = text_name_candidates("Met Alice Johnson. Falcon's (PostgreSQL) U.S. Army")
    assert {"alice johnson", "falcon", "postgresql", "u.s. army", "met alice johnson"} <= grams
    assert "johnson falcon" not in grams and "alice johnson falcon" not in grams  # the full stop separates


def test_find_entities_in_text(kg: KnowledgeGraph) -> None:
    alice = kg.create_entity("person", "Alice Johnson")
    rust = kg.create_entity("technology", "Rust")
    falcon = kg.create_entity("project", "Project Falcon")
    kg.create_entity("technology", "Go")  # too short to be looked up
    retired = kg.create_entity("concept", "Roadmap")
    kg.retire_entity(retired.id)
    found = kg.find_entities_in_text("ALICE JOHNSON reviewed project falcon's roadmap; written in Rust, go!")
    assert [e.id for e in found] == [falcon.id, alice.id, rust.id]  # longest name first
    assert kg.find_entities_in_text("I trust the process") == []  # whole words only
    assert [e.id for e in kg.find_entities_in_text("Alice Johnson and Project Falcon", limit=1)] == [
        falcon.id
    ]
    assert kg.find_entities_in_text("") == []


def test_find_entities_in_text_with_thousands_of_entities(db: Database, kg: KnowledgeGraph) -> None:
    with db.transaction():
        for i in range(3000):
            kg.create_entity("concept" if i % 2 else "person", f"Topic Number {i}")
    found = kg.find_entities_in_text("notes on topic number 2999 and Topic Number 17, not topic number 30000")
    assert sorted(e.name for e in found) == ["Topic Number 17", "Topic Number 2999"]


def test_frame_distances_from_entities(db: Database, kg: KnowledgeGraph) -> None:
    frames = add_frames(db, 6)
    a, b, c, d, e, lone = (kg.create_entity("thing", n) for n in ["Aa", "Bb", "Cc", "Dd", "Ee", "Lone"])
    kg.create_relation(a.id, b.id, CO_OCCURS_WITH)
    kg.create_relation(c.id, b.id, "depends_on")  # pointing at b: crossed backwards (undirected)
    kg.create_relation(c.id, d.id, "led_by")
    kg.create_relation(d.id, e.id, "x")
    retired = kg.create_relation(a.id, lone.id, "x")
    kg.retire_relation(retired.id)
    for entity, frame in [(a, 0), (b, 1), (c, 2), (d, 3), (e, 4), (lone, 5), (d, 0)]:
        kg.link_entity_to_frame(entity.id, frames[frame])

    distances = kg.frame_distances_from_entities([a.id])
    # frame 0 holds a (0) and d (3): the minimum wins; e is 4 hops away, lone only via a retired edge.
    assert distances == {frames[0]: 0, frames[1]: 1, frames[2]: 2, frames[3]: 3}
    assert kg.frame_distances_from_entities([a.id], max_depth=1) == {frames[0]: 0, frames[1]: 1}
    both = kg.frame_distances_from_entities([a.id, e.id])
    assert both[frames[4]] == 0 and both[frames[3]] == 1 and both[frames[2]] == 2 and both[frames[1]] == 1
    assert kg.frame_distances_from_entities([]) == {}
    # only the frames asked about (a search's candidates), each at the same distance as above
    some = [frames[0], frames[3], frames[4], frames[5]]
    assert kg.frame_distances_from_entities([a.id], frame_ids=some) == {frames[0]: 0, frames[3]: 3}


# -- two time axes: versions, as_of_valid, as_of_recorded (issue #16 §3) ---------------------------
class SteppingClock:
    """Transaction time that advances one day per write, so versions differ without sleeping."""

    def __init__(self, start: str = "2025-01-01T00:00:00.000Z") -> None:
        self.now = datetime.fromisoformat(start.replace("Z", "+00:00"))

    def __call__(self) -> str:
        self.now += timedelta(days=1)
        return format_utc(self.now)


def test_updates_keep_the_previous_version_and_both_axes_can_be_queried(db: Database) -> None:
    kg = KnowledgeGraph(db, clock=SteppingClock())
    alice = kg.create_entity("person", "Alice", {"role": "engineer"}, valid_from="2009-03-01T00:00:00Z")
    known_as_engineer = alice.recorded_at  # 2025-01-02
    kg.update_entity(alice.id, properties={"role": "lead"})  # recorded 2025-01-03
    kg.extend_validity_back("entity", alice.id, "2008-06-01T00:00:00Z")  # recorded 2025-01-04
    kg.retire_entity(alice.id)  # valid_to and recorded 2025-01-05

    history = kg.entity_history(alice.id)
    assert [e.properties.get("role") for e in history] == ["engineer", "lead", "lead", "lead"]
    assert [e.valid_from[:10] for e in history] == ["2009-03-01", "2009-03-01", "2008-06-01", "2008-06-01"]
    assert history[-1].valid_to is not None and all(e.valid_to is None for e in history[:-1])

    def roles(**axes: str) -> list[str]:
        return [e.properties["role"] for e in kg.entities_as_of(**axes)]

    assert roles(known_at=known_as_engineer) == ["engineer"]
    assert roles(known_at="2025-01-03T12:00:00Z") == ["lead"]
    assert roles(known_at="2025-01-01T00:00:00Z") == []  # not yet recorded
    assert roles(valid_at="2008-12-01T00:00:00Z") == ["lead"]  # valid then, as now believed
    assert roles(valid_at="2025-02-01T00:00:00Z") == []  # after its retirement
    # what the mind believed on 2025-01-04 about 2008-12: valid (moved back), still active then
    assert roles(valid_at="2008-12-01T00:00:00Z", known_at="2025-01-04T12:00:00Z") == ["lead"]
    assert roles(valid_at="2008-12-01T00:00:00Z", known_at="2025-01-03T12:00:00Z") == []  # not yet moved back
    assert kg.extend_validity_back("entity", alice.id, "2010-01-01T00:00:00Z") is False  # later: no change


def test_as_of_filters_by_ids_and_name_on_live_rows_and_versions_alike(db: Database) -> None:
    kg = KnowledgeGraph(db, clock=SteppingClock())
    alice = kg.create_entity("person", "Alice Smith")
    bob = kg.create_entity("person", "Bob")
    before_rename = alice.recorded_at
    kg.update_entity(alice.id, name="Alice Jones")  # the old name now lives only in knowledge_versions
    assert [e.name for e in kg.entities_as_of(name="alice jones")] == ["Alice Jones"]
    assert kg.entities_as_of(name="ALICE SMITH") == []
    assert [e.name for e in kg.entities_as_of(name="alice smith", known_at=before_rename)] == ["Alice Smith"]
    assert [e.id for e in kg.entities_as_of(ids=[bob.id, 9999])] == [bob.id]
    assert [e.name for e in kg.entities_as_of(ids={alice.id}, known_at=before_rename)] == ["Alice Smith"]
    assert kg.entities_as_of(ids=[]) == []


def test_relation_versions_and_sightings_with_event_time(db: Database) -> None:
    kg = KnowledgeGraph(db, clock=SteppingClock())
    a, b = kg.create_entity("person", "A"), kg.create_entity("project", "B")
    (rid, created), = kg.upsert_relations([RelationSighting(a.id, b.id, "works_on", valid_from="2012-05-01T00:00:00Z")])
    assert created and kg.get_relation(rid).valid_from == "2012-05-01T00:00:00.000Z"
    kg.upsert_relations([RelationSighting(a.id, b.id, "works_on", valid_from="2010-01-01T00:00:00Z")])
    relation = kg.get_relation(rid)
    assert relation.valid_from == "2010-01-01T00:00:00.000Z" and relation.properties["count"] == 2
    assert [r.valid_from[:4] for r in kg.relation_history(rid)] == ["2012", "2010"]
    assert [r.id for r in kg.relations_as_of(valid_at="2011-01-01T00:00:00Z", entity_id=a.id)] == [rid]
    first_known = kg.relation_history(rid)[0].recorded_at
    assert kg.relations_as_of(valid_at="2011-01-01T00:00:00Z", known_at=first_known) == []
    kg.upsert_relations([RelationSighting(a.id, b.id, "works_on", valid_from="2015-01-01T00:00:00Z")])
    assert len(kg.relation_history(rid)) == 2  # a later sighting only counts: no new version
