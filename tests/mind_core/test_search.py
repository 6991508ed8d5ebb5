import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mind_core.embeddings.base import to_blob
from mind_core.errors import FingerprintMismatchError, InvalidInputError
from mind_core.mind import Mind
from mind_core.search.config import RRF_K
from mind_core.search.keywords import keyword_tokens
from mind_core.search.lanes import fts_query
from mind_core.search.scoring import (
    SCORING_PROFILES,
    compute_contextual_score,
    compute_popularity_score,
    compute_temporal_score,
)
from mind_core.search.vector_index import split_chunks
from mind_core.testing.fakes import HashingEmbedder
from mind_core.timestamps import format_utc, utc_now

TOPICS = [
    "Machine learning models learn patterns from training data",
    "PostgreSQL is a relational database with strong SQL support",
    "The weekly team standup happens every Monday morning",
    "Docker containers package applications with their dependencies",
    "Quarterly revenue grew by five percent in the last report",
    "Neural networks and deep learning power modern machine learning",
    "The office coffee machine was repaired on Friday",
    "Kubernetes orchestrates containers across a cluster of nodes",
    "Our hiking trip to the mountains is planned for July",
    "TypeScript adds static types to JavaScript code",
]


@pytest.fixture
def mind():
    m = Mind.open(":memory:", embedder=HashingEmbedder())
    m.sessions.ensure("g1")
    m.sessions.ensure("g2")
    frames = [m.frames.create_i_frame("g1" if i % 2 == 0 else "g2", text) for i, text in enumerate(TOPICS)]
    m.search.index_frames_batch(frames)
    yield m
    m.close()


def test_keyword_lane_finds_exact_words_and_nothing_else(mind):
    ids = mind.search.keyword_search("PostgreSQL", 10)
    assert [mind.frames.get_by_id(i).content for i in ids] == [TOPICS[1]]
    assert mind.search.keyword_search("xylophone", 10) == []
    # porter stemming: "learn" matches "learning"
    assert len(mind.search.keyword_search("learn", 10)) == 2


def test_vector_lane_finds_similar_and_is_empty_on_empty_index():
    m = Mind.open(":memory:", embedder=HashingEmbedder())
    assert m.search.vector_search("anything", 5) == []


def test_machine_learning_frame_ranks_top_three(mind):
    results = mind.search.search("machine learning")
    assert TOPICS[0] in [r.frame.content for r in results[:3]]


def test_final_score_is_rrf_times_relevance_sorted_and_limited(mind):
    results = mind.search.search("containers cluster database", limit=3)
    assert len(results) == 3
    for r in results:
        assert math.isclose(r.final_score, r.rrf_score * r.relevance_score)
        assert r.rrf_score <= 2 / RRF_K + 1e-12
    assert [r.final_score for r in results] == sorted((r.final_score for r in results), reverse=True)


def test_gop_scoping_applies_to_both_lanes(mind):
    for result in mind.search.search("learning containers database", gop_id="g2"):
        assert result.frame.gop_id == "g2"
    assert set(mind.search.vector_search("containers", 10, gop_id="g1")) <= {
        f.id for f in mind.frames.get_gop_frames("g1")
    }


def test_stop_word_only_query_returns_nothing_from_keywords(mind):
    assert fts_query("the and of it is") == ""
    assert mind.search.keyword_search("the and of it is", 10) == []


def test_tokens_keep_unicode_letters_and_drop_syntax():
    assert keyword_tokens('naïve "café" AND (crème) NEAR/3 x') == ["naïve", "café", "crème", "NEAR3"]
    assert fts_query('col:val* "unbalanced') == '"colval" OR "unbalanced"'


def test_profiles_sum_to_one_and_important_ranks_critical_first():
    for weights in SCORING_PROFILES.values():
        assert math.isclose(sum(weights.__dict__.values()), 1.0)
    m = Mind.open(":memory:", embedder=HashingEmbedder())
    m.sessions.ensure("g")
    normal = m.frames.create_i_frame("g", "budget meeting notes normal")
    critical = m.frames.create_i_frame("g", "budget meeting notes critical", "critical")
    m.search.index_frames_batch([normal, critical])
    top = m.search.search("budget meeting", profile="important")[0]
    assert top.frame.id == critical.id


def test_scoring_formulas():
    now_ts = format_utc(utc_now())
    assert compute_temporal_score(now_ts) == 1.0
    from datetime import timedelta

    three = format_utc(utc_now() - timedelta(days=3))
    thirty_seven = format_utc(utc_now() - timedelta(days=37))
    assert compute_temporal_score(three) == 1.0
    assert 0.3 < compute_temporal_score(thirty_seven) < 0.6
    assert compute_temporal_score("2000-01-01T00:00:00Z") < 0.001
    assert compute_popularity_score(0) == 1.0
    assert compute_popularity_score(1000) / compute_popularity_score(10) < 2
    assert [compute_contextual_score(1, {1: d}) for d in (0, 1, 2, 3, 4)] == [1.0, 0.7, 0.4, 0.2, 0.0]
    assert compute_contextual_score(1, None) == 0.0 and compute_contextual_score(2, {1: 0}) == 0.0


def test_recency_uses_event_time_not_last_access():
    m = Mind.open(":memory:", embedder=HashingEmbedder())
    m.sessions.ensure("g")
    old = m.frames.create_i_frame("g", "the launch plan from long ago", created_at="2019-01-01T00:00:00Z")
    new = m.frames.create_i_frame("g", "the launch plan for this week")
    m.search.index_frames_batch([old, new])
    for _ in range(3):
        m.frames.touch(old.id)  # recently accessed, but still an old event
    results = {r.frame.id: r for r in m.search.search("launch plan", profile="recent", explain=True)}
    assert results[old.id].explain["relevance"]["temporal"] < 0.01
    assert results[new.id].explain["relevance"]["temporal"] == 1.0


def test_since_until_filter_on_event_time(mind):
    mind.sessions.ensure("g3")
    march = mind.frames.create_i_frame(
        "g3", "Kubernetes upgrade in March", created_at="2024-03-10T09:00:00+01:00"
    )
    april = mind.frames.create_i_frame("g3", "Kubernetes upgrade in April", created_at="2024-04-10T09:00:00Z")
    mind.search.index_frames_batch([march, april])
    hits = mind.search.search("Kubernetes upgrade", since="2024-03-01", until="2024-03-31")
    assert [r.frame.id for r in hits] == [march.id]


def test_explain_reports_lane_ranks_and_components(mind):
    result = mind.search.search("PostgreSQL database", explain=True)[0]
    assert result.frame.content == TOPICS[1]
    assert result.explain["keyword_rank"] == 0
    assert result.explain["vector_rank"] is not None
    assert set(result.explain["relevance"]) == {"temporal", "popularity", "contextual", "importance"}


def test_deleted_frame_is_never_returned_even_with_orphan_rows(mind):
    target = mind.search.search("PostgreSQL")[0].frame
    mind.frames.delete(target.id)
    mind.db.execute(
        "INSERT INTO memory_frames_fts (rowid, content) VALUES (?, ?)", (target.id, target.content)
    )
    assert target.id not in [r.frame.id for r in mind.search.search("PostgreSQL relational database")]


def test_reindexing_replaces_vector_and_bad_ids_raise(mind):
    frame = mind.frames.get_recent(1)[0]
    mind.search.index_frame(frame.id, frame.content)
    mind.search.index_frame(frame.id, frame.content)
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames_vec WHERE rowid = ?", (frame.id,)) == 1
    for bad in (float("nan"), float("inf"), "7", None):
        with pytest.raises(InvalidInputError):
            mind.search.index_frame(bad, "x")
    before = mind.db.scalar("SELECT COUNT(*) FROM memory_frames_vec")
    with pytest.raises(InvalidInputError):
        mind.search.index_frames_batch([(frame.id, "fine"), (float("nan"), "bad")])
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames_vec") == before


def test_a_frame_listed_twice_in_a_batch_keeps_its_last_text_and_its_chunks_follow_it(mind):
    frame = mind.frames.get_recent(1)[0]
    long_text = " ".join(f"word{i}" for i in range(600))
    assert mind.search.index_frames_batch([(frame.id, "first text"), (frame.id, long_text)]) == 1
    chunks = mind.db.scalar("SELECT COUNT(*) FROM memory_frame_chunks WHERE frame_id = ?", (frame.id,))
    assert chunks == len(split_chunks(long_text)) > 0
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frame_chunks_vec") == chunks
    mind.search.index_frame(frame.id, "short again")  # re-indexing a long frame as short drops its chunks
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frame_chunks") == 0
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frame_chunks_vec") == 0
    stored = mind.db.scalar("SELECT embedding FROM memory_frames_vec WHERE rowid = ?", (frame.id,))
    assert stored == to_blob(mind.embedder.embed("short again"))


def test_batch_embeds_in_one_call():
    embedder = HashingEmbedder()
    m = Mind.open(":memory:", embedder=embedder)
    m.sessions.ensure("g")
    frames = [m.frames.create_i_frame("g", f"note number {i}") for i in range(40)]
    m.search.index_frames_batch(frames)
    assert embedder.calls == 1 and len(embedder.texts_embedded) == 40


HOSTILE = [
    '"unbalanced',
    "a OR b NOT (c",
    "'; DROP TABLE memory_frames; --",
    "😀🔥" * 20,
    "x" * 10_000,
    "",
    "   ",
    "NEAR(a b)",
    "col:val*",
    "content MATCH 'x'",
    "\x00\x01",
    "%_\\",
    "AND OR NOT",
    "(((",
    "^start",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(mind, query):
    results = mind.search.search(query)
    assert isinstance(results, list)
    assert mind.frames.get_stats()["total"] == len(TOPICS)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=300))
def test_any_text_query_is_safe(mind, query):
    for result in mind.search.search(query, limit=5):
        assert mind.frames.get_by_id(result.frame.id) is not None


def test_unknown_profile_is_a_clear_error(mind):
    with pytest.raises(InvalidInputError, match="unknown profile"):
        mind.search.search("x", profile="loud")


def test_fingerprint_mismatch_is_refused_unless_rebuilt(tmp_path):
    path = tmp_path / "fp.mind"
    with Mind.open(path, embedder=HashingEmbedder()) as m:
        m.sessions.ensure("g")
        m.search.index_frame(m.frames.create_i_frame("g", "hello vectors").id, "hello vectors")
    other = HashingEmbedder()
    other.model_name = "another-model"
    with pytest.raises(FingerprintMismatchError, match="mind reindex"):
        Mind.open(path, embedder=other)
    with pytest.raises(FingerprintMismatchError, match="dimensional"):
        Mind.open(path, embedder=HashingEmbedder(dimensions=384))
    with Mind.open(path, embedder=HashingEmbedder(dimensions=384), rebuild_vectors=True) as m:
        assert m.db.scalar("SELECT COUNT(*) FROM memory_frames_vec") == 0
        assert m.reconcile().vectors_fixed == 1
        assert m.search.search("hello vectors")[0].frame.content == "hello vectors"


def test_split_chunks_covers_text_after_first_window():
    words = [f"w{i}" for i in range(1000)]
    chunks = split_chunks(" ".join(words))
    assert chunks[0].text.split()[0] == "w120"
    assert chunks[-1].text.split()[-1] == "w999"
    assert split_chunks("short text") == []


FILLER = (
    "The committee reviewed the budget lines for office supplies and travel. "
    "Several members asked about the timeline for the procurement process. "
    "Minutes were approved without objection and the next meeting was scheduled. "
)
LAST_PARAGRAPH = (
    "Finally, the old lighthouse keeper climbed the spiral stairs every spring and repainted the red and white "
    "stripes on the tower after the winter storms had faded them."
)


@pytest.mark.real_model
@pytest.mark.slow
def test_long_frame_is_found_by_a_paraphrase_of_its_last_paragraph(real_embedder):
    m = Mind.open(":memory:", embedder=real_embedder)
    m.sessions.ensure("g")
    body = FILLER * 92  # ~3,000 words of unrelated minutes
    long_frame = m.frames.create_i_frame("g", body + "\n\n" + LAST_PARAGRAPH)
    assert len(long_frame.content.split()) > 3000 - 200
    others = [m.frames.create_i_frame("g", f"{t} ({i})") for i, t in enumerate(TOPICS * 3)]
    m.search.index_frames_batch([long_frame, *others])
    hits = m.search.vector_search("who repaints the stripes of the coastal tower each year", 3)
    assert long_frame.id in hits


@pytest.mark.real_model
@pytest.mark.slow
def test_real_model_end_to_end(real_embedder):
    m = Mind.open(":memory:", embedder=real_embedder)
    m.sessions.ensure("g")
    frames = [m.frames.create_i_frame("g", t) for t in TOPICS]
    m.search.index_frames_batch(frames)
    # no shared keyword: only the vector lane can answer
    top = m.search.search("sales figures went up", limit=3)
    assert top[0].frame.content == TOPICS[4]
    assert m.search.search("deep neural nets", limit=2)[0].frame.content == TOPICS[5]
