"""CognifyPipeline: reference-behaviour §14 cognify.test / cognify-linking.test, plus idempotency,
batching, relation direction, as-of history and the connected relevance profile."""

from __future__ import annotations

import pytest

from mind_core.errors import InvalidInputError
from mind_core.knowledge import graph as knowledge_module
from mind_core.knowledge.cognify import COGNIFIED_KEY, CognifyPipeline
from mind_core.knowledge.extraction import Extraction, register_extractor, reset_extractors
from mind_core.knowledge.model import CO_OCCURS_WITH, RelationSighting
from mind_core.mind import Mind
from mind_core.search.linker import MemoryLinker
from mind_core.store import frames as frames_module
from mind_core.store.frames import NewFrame
from mind_core.testing.fakes import HashingEmbedder, SteppingClock

MEETING = (
    "Had a meeting with Alice Johnson about the database migration from PostgreSQL to SQLite. "
    "We agreed to finish it before the next release."
)
OTHER_NOTES = [
    "The weekly team standup happens every Monday morning",
    "Our hiking trip to the mountains is planned for July",
    "The office coffee machine was repaired on Friday",
]


@pytest.fixture
def mind(fake_embedder):
    m = Mind.open(":memory:", embedder=fake_embedder)
    yield m
    m.close()


def counts(m: Mind) -> dict[str, object]:
    """Everything cognify writes, so a re-run can be compared with the first run."""
    return {
        "frames": m.db.scalar("SELECT COUNT(*) FROM memory_frames"),
        "entities": m.db.scalar("SELECT COUNT(*) FROM knowledge_entities"),
        "relations": m.db.scalar("SELECT COUNT(*) FROM knowledge_relations"),
        "links": m.db.scalar("SELECT COUNT(*) FROM kg_entity_frames"),
        "vectors": m.db.scalar("SELECT COUNT(*) FROM memory_frames_vec"),
        "properties": [r[0] for r in m.db.query("SELECT properties FROM knowledge_relations ORDER BY id")],
    }


def entity(m: Mind, entity_type: str, name: str) -> int:
    found = m.knowledge.find_entity(entity_type, name)
    assert found is not None, f"{entity_type} {name!r} not in the graph"
    return found.id


# -- reference-behaviour §14: cognify.test -----------------------------------------------------
def test_meeting_yields_entities_relations_links_and_a_vector(mind, fake_embedder):
    result = mind.cognify.cognify(MEETING)
    assert result.entities_extracted >= 2
    assert result.relations_created >= 1
    assert result.related_frames is None
    names = {(e.entity_type, e.name) for e in mind.knowledge.entities_for_frame(result.frame_id)}
    assert {("person", "Alice Johnson"), ("technology", "PostgreSQL"), ("technology", "SQLite")} <= names
    assert len(names) == result.entities_extracted
    assert fake_embedder.texts_embedded == [MEETING]
    postgres, sqlite = entity(mind, "technology", "PostgreSQL"), entity(mind, "technology", "SQLite")
    co = mind.knowledge.find_relation(sqlite, postgres, CO_OCCURS_WITH)
    assert co is not None and co.confidence == 0.8 and co.properties == {"count": 1, "source": "cognify"}


def test_cognified_frame_is_first_for_database_migration(mind):
    for note in OTHER_NOTES:
        mind.cognify.cognify(note)
    target = mind.cognify.cognify(MEETING)
    assert mind.search.search("database migration")[0].frame.id == target.frame_id


def test_first_cognify_makes_an_i_frame_and_the_second_a_p_frame(mind):
    first = mind.frames.get_by_id(mind.cognify.cognify(MEETING).frame_id)
    second = mind.frames.get_by_id(mind.cognify.cognify(OTHER_NOTES[0]).frame_id)
    assert first.frame_type == "I"
    assert (second.frame_type, second.base_frame_id, second.gop_id) == ("P", first.id, first.gop_id)


def test_importance_is_stored_and_the_given_gop_is_used(mind):
    result = mind.cognify.cognify(MEETING, importance="critical", gop_id="session:given")
    frame = mind.frames.get_by_id(result.frame_id)
    assert (frame.importance, frame.gop_id) == ("critical", "session:given")
    assert mind.sessions.get_by_gop_id("session:given")["status"] == "active"
    for content in ("another note", MEETING):  # also when the content is already a frame
        with pytest.raises(InvalidInputError):
            mind.cognify.cognify(content, importance="urgent")


def test_a_repeated_name_is_one_entity(mind):
    result = mind.cognify.cognify("We compared PostgreSQL and PostgreSQL again today")
    assert result.entities_extracted == 1
    assert [e.name for e in mind.knowledge.get_entities()] == ["PostgreSQL"]
    assert result.relations_created == 0


# -- cognify-linking.test ----------------------------------------------------------------------
def linking_pipeline(mind: Mind, linker: MemoryLinker | None = None) -> CognifyPipeline:
    """The mind's write path with linking on (``mind.cognify`` has it off)."""
    return CognifyPipeline(
        mind.frames, mind.sessions, mind.knowledge, mind.search, linker=linker or mind.linker, enable_linking=True
    )


def test_linking_returns_related_frames_without_self(mind):
    for i, note in enumerate(OTHER_NOTES):
        mind.cognify.cognify(note, gop_id=f"notes-{i}")
    linking = linking_pipeline(mind)
    first = linking.cognify("PostgreSQL database migration plan for Project Falcon", gop_id="plan-1")
    assert isinstance(first.related_frames, list)
    assert first.frame_id not in [link.frame_id for link in first.related_frames]
    assert mind.cognify.cognify("An unrelated note about lunch").related_frames is None

    # with every match accepted, the closest other frame comes first and the frame itself never
    accept_all = linking_pipeline(mind, MemoryLinker(mind.search, threshold=0.0))
    second = accept_all.cognify(
        "PostgreSQL database migration plan for Project Falcon, next week", gop_id="plan-2"
    )
    related = [link.frame_id for link in second.related_frames]
    assert related[0] == first.frame_id and second.frame_id not in related
    assert 0.0 < second.related_frames[0].score <= 1.0


# -- idempotency, duplicates, batches ----------------------------------------------------------
def test_recognify_is_idempotent(mind, fake_embedder):
    first = mind.cognify.cognify(MEETING)
    second = mind.cognify.cognify("Alice Johnson leads Project Falcon and it depends on PostgreSQL")
    before, calls = counts(mind), fake_embedder.calls

    again = mind.cognify.cognify_frame(first.frame_id)
    assert (again.frame_id, again.entities_extracted, again.relations_created) == (
        first.frame_id,
        first.entities_extracted,
        0,
    )
    batch = mind.cognify.cognify_batch([first.frame_id, second.frame_id])
    mentions = first.entities_extracted + second.entities_extracted
    assert batch == {
        "processed": 2,
        "skipped": 2,
        "missing": 0,
        "entities": mentions,
        "relations": 0,
        "vectors": 0,
    }
    repeated = mind.cognify.cognify(MEETING)  # the same content is not stored twice
    assert (repeated.frame_id, repeated.relations_created) == (first.frame_id, 0)

    assert counts(mind) == before
    assert fake_embedder.calls == calls
    assert mind.frames.get_by_id(first.frame_id).access_count == 1  # the duplicate was touched


def test_duplicate_content_reuses_the_frame_even_as_a_p_frame(mind):
    mind.cognify.cognify(OTHER_NOTES[0])
    first = mind.cognify.cognify(MEETING)
    again = mind.cognify.cognify(MEETING)
    assert again.frame_id == first.frame_id
    assert mind.frames.get_stats()["byType"] == {"I": 1, "P": 1, "B": 0}


def test_frames_stored_elsewhere_are_cognified_in_batches_with_one_embedding_call_each(mind, fake_embedder):
    mind.sessions.ensure("import")
    texts = [f"{MEETING} Note {i}." for i in range(6)] + OTHER_NOTES + ["Alice Johnson leads Project Falcon"]
    ids = [f.id for f in mind.frames.create_i_frames([NewFrame("import", t) for t in texts])]

    progress = []
    totals = mind.cognify.cognify_batch(ids, batch_size=4, progress=lambda done, total: progress.append((done, total)))
    assert fake_embedder.calls == 3  # 10 frames in batches of 4: one embedder call per batch
    assert progress == [(4, 10), (8, 10), (10, 10)]
    assert sorted(fake_embedder.texts_embedded) == sorted(texts)
    assert totals == {
        "processed": 10,
        "skipped": 0,
        "missing": 0,
        "entities": 6 * 3 + 2,
        "relations": 3 + 2,
        "vectors": 10,
    }
    alice, postgres = entity(mind, "person", "Alice Johnson"), entity(mind, "technology", "PostgreSQL")
    assert mind.knowledge.frames_for_entity(alice) == ids[:6] + [ids[-1]]
    # one relation per pair, its count raised once per frame that names both
    assert mind.knowledge.find_relation(alice, postgres, CO_OCCURS_WITH).properties["count"] == 6
    assert all(
        mind.frames.get_by_id(i).metadata[COGNIFIED_KEY] == mind.frames.get_by_id(i).content_hash for i in ids
    )


def test_batch_writes_the_same_graph_as_one_frame_at_a_time(fake_embedder):
    texts = [
        MEETING,
        "Alice Johnson leads Project Falcon",
        "Project Falcon depends on PostgreSQL and Redis",
        "Mark Smith reports to Alice Johnson on Project Falcon",
        "Redis and PostgreSQL and SQLite in one stack",
    ]

    def graph(m: Mind) -> tuple[set, set, set]:
        names = {
            r["id"]: (r["entity_type"], r["name"]) for r in m.db.query("SELECT * FROM knowledge_entities")
        }
        relations = {
            (r["relation_type"], names[r["source_id"]], names[r["target_id"]], r["properties"])
            for r in m.db.query("SELECT * FROM knowledge_relations")
        }
        links = {(names[r[0]], r[1]) for r in m.db.query("SELECT entity_id, frame_id FROM kg_entity_frames")}
        return set(names.values()), relations, links

    results = []
    for one_at_a_time in (False, True):
        with Mind.open(":memory:", embedder=HashingEmbedder()) as m:
            m.sessions.ensure("g")
            ids = [f.id for f in m.frames.create_i_frames([NewFrame("g", t) for t in texts])]
            if one_at_a_time:
                for frame_id in ids:
                    m.cognify.cognify_frame(frame_id)
            else:
                m.cognify.cognify_batch(ids)
            results.append(graph(m))
    assert results[0] == results[1]
    assert len(results[0][1]) >= 10


def test_changed_content_is_re_extracted_and_re_embedded(mind, fake_embedder):
    result = mind.cognify.cognify(MEETING)
    calls = fake_embedder.calls
    mind.frames.update(result.frame_id, "Mark Smith now owns the migration to MySQL")
    again = mind.cognify.cognify_frame(result.frame_id)
    assert fake_embedder.calls == calls + 1
    assert {e.name for e in mind.knowledge.entities_for_frame(result.frame_id)} == {"Mark Smith", "MySQL"}
    assert again.entities_extracted == 2 and again.relations_created == 1
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames_vec") == 1


def test_a_frame_cognified_by_another_writer_meanwhile_is_not_counted_twice(tmp_path):
    """Extraction runs before the write lock; a concurrent writer (here: a second connection,
    triggered from inside extraction) that cognifies the same frame first must win cleanly."""
    path = tmp_path / "shared.mind"
    with (
        Mind.open(path, embedder=HashingEmbedder()) as first,
        Mind.open(path, embedder=HashingEmbedder()) as other,
    ):
        first.sessions.ensure("g")
        frame_id = first.frames.create_i_frames([NewFrame("g", MEETING)])[0].id

        class ConcurrentWriter:
            name = "concurrent-writer"
            fired = False

            def extract(self, text: str) -> Extraction:
                if not self.fired:  # once, from the first writer's extraction
                    self.fired = True
                    other.cognify.cognify_frame(frame_id)
                return Extraction()

        reset_extractors()
        register_extractor(ConcurrentWriter())
        try:
            totals = first.cognify.cognify_batch([frame_id])
        finally:
            reset_extractors()
        assert (totals["skipped"], totals["relations"], totals["vectors"]) == (1, 0, 0)
        counts_after = counts(first)
        assert counts_after["links"] == 3 and counts_after["vectors"] == 1
        assert all('"count": 1' in p for p in counts_after["properties"])


def test_missing_frames_and_bad_ids(mind):
    frame_id = mind.cognify.cognify(MEETING).frame_id
    assert mind.cognify.cognify_frame(9999) is None
    totals = mind.cognify.cognify_batch([9999, frame_id])
    assert (totals["processed"], totals["missing"], totals["skipped"]) == (1, 1, 1)
    with pytest.raises(InvalidInputError):
        mind.cognify.cognify_frame("1")
    with pytest.raises(InvalidInputError):
        mind.cognify.cognify_batch([frame_id], batch_size=0)
    with pytest.raises(InvalidInputError):
        mind.cognify.cognify(None)


def test_entities_a_validation_schema_rejects_are_skipped_not_fatal(mind, caplog):
    mind.knowledge.set_validation_schema({"person": {"required": ["email"]}})
    result = mind.cognify.cognify(MEETING)
    names = {e.name for e in mind.knowledge.entities_for_frame(result.frame_id)}
    assert names == {"PostgreSQL", "SQLite"}
    assert result.relations_created == 1
    assert f"frame {result.frame_id}: entity person 'Alice Johnson' skipped" in caplog.text


def test_relations_a_validation_schema_rejects_are_skipped_not_fatal(mind, caplog):
    mind.knowledge.set_validation_schema({"project": {"allowed_relations": ["depends_on"]}})
    result = mind.cognify.cognify("Alice Johnson leads Project Falcon")
    falcon, alice = entity(mind, "project", "Project Falcon"), entity(mind, "person", "Alice Johnson")
    assert mind.knowledge.get_relations_from(falcon, "led_by") == []
    assert mind.knowledge.find_relation(alice, falcon, CO_OCCURS_WITH) is not None  # from a person: allowed
    assert result.relations_created == 1
    assert f"frame {result.frame_id}: relation led_by {falcon}->{alice} skipped" in caplog.text


def test_upsert_relations_matches_upsert_relation_called_in_order():
    """The bulk relation write of a batch gives the graph that one upsert per sighting gives."""
    sightings = [
        (1, 2, CO_OCCURS_WITH, 0.8),
        (2, 1, CO_OCCURS_WITH, 0.9),  # the same undirected relation, seen the other way round
        (3, 1, "led_by", 0.9),
        (1, 3, "led_by", 0.7),  # directed: a different relation
        (3, 1, "led_by", 0.95),
        (2, 3, CO_OCCURS_WITH, 0.8),
    ]
    graphs = []
    for bulk in (False, True):
        with Mind.open(":memory:") as m:
            for name in ("A", "B", "C"):
                m.knowledge.create_entity("node", name)
            m.knowledge.upsert_relation(2, 3, CO_OCCURS_WITH, 0.5, {"source": "earlier"})
            if bulk:
                results = m.knowledge.upsert_relations(
                    [RelationSighting(s, t, r, c, {"source": "x"}) for s, t, r, c in sightings]
                )
            else:
                results = [
                    m.knowledge.upsert_relation(s, t, r, c, {"source": "x"}) for s, t, r, c in sightings
                ]
            rows = m.db.query(
                "SELECT id, source_id, target_id, relation_type, confidence, properties, valid_to"
                " FROM knowledge_relations ORDER BY id"
            )
            graphs.append((results, [tuple(r) for r in rows]))
    assert graphs[0] == graphs[1]
    assert [created for _, created in graphs[1][0]] == [True, False, True, True, False, False]


def test_without_an_embedder_the_graph_is_still_written():
    with Mind.open(":memory:") as m:
        result = m.cognify.cognify(MEETING)
        assert result.entities_extracted >= 3
        assert m.db.scalar("SELECT COUNT(*) FROM memory_frames_vec") == 0
        assert m.search.search("migration")[0].frame.id == result.frame_id


# -- relations and their history -----------------------------------------------------------------
def test_relation_direction_through_cognify(mind):
    mind.cognify.cognify("Alice Johnson leads Project Falcon")
    mind.cognify.cognify("Mark Smith reports to Alice Johnson since March")
    alice, falcon = entity(mind, "person", "Alice Johnson"), entity(mind, "project", "Project Falcon")
    mark = entity(mind, "person", "Mark Smith")
    assert [r.target_id for r in mind.knowledge.get_relations_from(falcon, "led_by")] == [alice]
    assert mind.knowledge.get_relations_from(alice, "led_by") == []
    assert [r.target_id for r in mind.knowledge.get_relations_from(mark, "reports_to")] == [alice]
    assert mind.knowledge.get_relations_from(alice, "reports_to") == []


def test_as_of_queries_after_retire_and_recreate_through_cognify(mind, monkeypatch):
    clock = SteppingClock()
    monkeypatch.setattr(knowledge_module, "now_iso", clock)
    monkeypatch.setattr(frames_module, "now_iso", clock)  # valid time is the frames' event time
    _tick = clock  # each reading is an instant strictly between the graph's writes before and after it
    mind.cognify.cognify("Alice Johnson leads Project Falcon")
    falcon_v1 = entity(mind, "project", "Project Falcon")
    alice = entity(mind, "person", "Alice Johnson")
    alice_era = _tick()

    mind.knowledge.retire_relation(mind.knowledge.get_relations_from(falcon_v1, "led_by")[0].id)
    mind.cognify.cognify("Mark Smith leads Project Falcon")
    mark = entity(mind, "person", "Mark Smith")
    mark_era = _tick()

    mind.knowledge.retire_entity(falcon_v1)
    mind.cognify.cognify("Sarah Davis leads Project Falcon after the restart")
    falcon_v2 = entity(mind, "project", "Project Falcon")
    sarah = entity(mind, "person", "Sarah Davis")
    assert falcon_v2 != falcon_v1
    restart_era = _tick()

    def leads_at(instant: str) -> list[tuple[int, int]]:
        return [
            (r.source_id, r.target_id)
            for r in mind.knowledge.get_relations_valid_at(instant, relation_type="led_by")
        ]

    def falcons_at(instant: str) -> list[int]:
        return [e.id for e in mind.knowledge.get_entities_valid_at(instant) if e.name == "Project Falcon"]

    assert leads_at(alice_era) == [(falcon_v1, alice)]
    assert leads_at(mark_era) == [(falcon_v1, mark)]
    # the entity was retired, not the relation: as-of answers what the graph recorded
    assert leads_at(restart_era) == [(falcon_v1, mark), (falcon_v2, sarah)]
    assert falcons_at(mark_era) == [falcon_v1]
    assert falcons_at(restart_era) == [falcon_v2]
    assert mind.knowledge.get_entities_valid_at("2000-01-01T00:00:00Z") == []


# -- the connected relevance profile --------------------------------------------------------------
def test_connected_profile_ranks_frames_about_related_entities_higher(mind):
    """A frame that names only an entity related to the query's entity (Project Falcon, led by
    Alice Johnson) climbs under `connected`; its twin about an unrelated project does not.

    Distractors match the query with 1 to 8 of its words, so their lane scores form a ladder
    around the two twins whatever the fusion; each frame has its own session so no frame borrows
    its neighbours' scores. With the graph wiring broken both profiles would rank alike and the
    twins would tie on relevance.
    """
    words = "release schedule budget review quarterly roadmap hiring plan".split()
    mind.cognify.cognify("Alice Johnson leads Project Falcon", gop_id="lead")
    related = mind.cognify.cognify(
        "Project Falcon release schedule budget review is done", gop_id="falcon"
    ).frame_id
    unrelated = mind.cognify.cognify(
        "Project Heron release schedule budget review is done", gop_id="heron"
    ).frame_id
    for i in range(32):
        filler = " ".join(f"note{i}x{k}" for k in range(6))
        mind.cognify.cognify(" ".join(words[: i % 8 + 1]) + f" {filler}", gop_id=f"d{i}")
    query = "Alice Johnson asked about the " + " ".join(words)

    def ranks(profile: str) -> tuple[int, int]:
        ids = [r.frame.id for r in mind.search.search(query, limit=50, profile=profile)]
        return ids.index(related), ids.index(unrelated)

    balanced, connected = ranks("balanced"), ranks("connected")
    assert connected[0] < connected[1]  # the related twin beats the unrelated one
    assert connected[0] + 3 <= balanced[0]  # and climbs past several distractors
    assert connected[1] >= balanced[1]  # while the unrelated twin does not climb


@pytest.mark.real_model
@pytest.mark.slow
def test_real_model_cognified_frame_is_first_for_database_migration(real_embedder):
    with Mind.open(":memory:", embedder=real_embedder) as m:
        for note in OTHER_NOTES:
            m.cognify.cognify(note)
        target = m.cognify.cognify(MEETING)
        assert m.search.search("moving our data to another database engine")[0].frame.id == target.frame_id


class _CityExtractor:
    name = "cities"

    def extract(self, text: str):
        from mind_core.knowledge.extraction import ExtractedEntity

        return Extraction(tuple(ExtractedEntity(c, "location", 0.8) for c in ("Berlin", "Lisbon") if c in text))


class _CityPlugin:
    from mind_core.plugins import hookimpl

    @hookimpl
    def register_extractors(self, register):
        register(_CityExtractor())


def test_cognify_runs_the_extractors_plugins_register_and_records_who_found_what(mind):
    from mind_core import plugins

    plugins.register_plugin(_CityPlugin(), name="test-city-plugin")
    try:
        mind.cognify.cognify("Alice Johnson flew from Berlin to Lisbon to review the PostgreSQL setup")
    finally:
        plugins.get_plugin_manager(refresh=True)  # the plugin is gone again
    berlin = mind.knowledge.find_entity("location", "Berlin")
    assert berlin is not None and berlin.properties["extractors"] == ["cities"]
    assert mind.knowledge.find_entity("technology", "PostgreSQL").properties["extractors"] == ["rules"]
    mind.cognify.cognify("Back in Berlin again after the trip")
    assert mind.knowledge.find_entity("location", "Lisbon") is not None
    assert len([e for e in mind.knowledge.get_entities_by_type("location")]) == 2  # the plugin is gone


class _PeopleExtractor:
    name = "people"

    def extract(self, text: str):
        from mind_core.knowledge.extraction import ExtractedEntity

        return Extraction(tuple(ExtractedEntity(n, "person", 0.95) for n in ("Alice Johnson",) if n in text))


class _PeoplePlugin:
    from mind_core.plugins import hookimpl

    @hookimpl
    def register_extractors(self, register):
        register(_PeopleExtractor())


def test_a_later_sighting_by_another_extractor_is_added_to_the_entitys_extractors(mind):
    from mind_core import plugins

    mind.cognify.cognify("Thanks for the review, Alice Johnson <alice@example.com> wrote the plan")
    alice = mind.knowledge.find_entity("person", "Alice Johnson")
    assert alice is not None and alice.properties["extractors"] == ["rules"]
    plugins.register_plugin(_PeoplePlugin(), name="test-people-plugin")
    try:
        mind.cognify.cognify("Alice Johnson <alice@example.com> moved the meeting to Friday")
    finally:
        plugins.get_plugin_manager(refresh=True)
    again = mind.knowledge.find_entity("person", "Alice Johnson")
    assert again.id == alice.id and again.properties["extractors"] == ["rules", "people"]
    assert mind.knowledge.entity_history(alice.id)[0].properties["extractors"] == ["rules"]  # kept
    version_count = len(mind.knowledge.entity_history(alice.id))
    mind.cognify.cognify("Alice Johnson <alice@example.com> is back from holiday")  # nothing new found it
    assert len(mind.knowledge.entity_history(alice.id)) == version_count


def test_an_entity_the_structure_stated_records_the_extractor_that_later_names_it(mind):
    stated = mind.knowledge.create_entity("person", "Carl Worth", {"extractor": "structure", "confidence": 1.0})
    mind.cognify.cognify("Carl Worth <cworth@cworth.org> sent the patch for review")
    assert mind.knowledge.get_entity(stated.id).properties["extractors"] == ["structure", "rules"]
