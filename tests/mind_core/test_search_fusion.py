"""The convex fusion with session-neighbour context, and the original RRF kept as an option."""

import math

import pytest

from mind_core.errors import InvalidInputError
from mind_core.mind import Mind
from mind_core.search.config import MAX_RRF_SCORE, RELEVANCE_POOL_LIMIT, RRF_K, SearchConfig
from mind_core.search.fusion import session_neighbours
from mind_core.search.lanes import Scope, normalize_by_max, normalize_min_max
from mind_core.search.results import LaneHit
from mind_core.search.speakers import without_names
from mind_core.store.schema import FRAME_ROLE_SQL
from mind_core.testing.fakes import HashingEmbedder

PARTY = [
    "Melanie: how was the birthday party on Saturday",
    "Caroline: we baked a lemon cake and danced until midnight",
    "Melanie: sounds lovely",
]
OTHER = [
    "Caroline: the quarterly budget review moved to Thursday",
    "Melanie: my laptop battery died again",
    "Caroline: remember to water the tomatoes",
    "Melanie: traffic on the bridge was terrible",
]


def build(config: SearchConfig | None = None) -> Mind:
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    if config is not None:
        mind.search.config = config
    for gop in ("party", "other"):
        mind.sessions.ensure(gop)
    frames = [mind.frames.create_i_frame("party", text) for text in PARTY]
    frames += [mind.frames.create_i_frame("other", text) for text in OTHER]
    mind.search.index_frames_batch(frames)
    return mind


def rank_of(results, content: str) -> int | None:
    contents = [r.frame.content for r in results]
    return contents.index(content) if content in contents else None


def test_default_is_convex_with_session_context():
    config = SearchConfig()
    assert (config.fusion, config.vector_weight, config.context_window, config.context_weight) == (
        "convex",
        0.5,
        2,
        0.4,
    )
    assert Mind.open(":memory:").search.config == config


@pytest.mark.parametrize(
    "kwargs",
    [
        {"fusion": "borda"},
        {"vector_weight": 1.5},
        {"lane_depth": 0},
        {"context_window": -1},
        {"context_weight": -0.1},
    ],
)
def test_invalid_configuration_is_a_clear_error(kwargs):
    with pytest.raises(InvalidInputError):
        SearchConfig(**kwargs)


def test_the_answer_next_to_the_question_is_found_through_its_neighbour():
    """'cake' is only in the answer; 'birthday party' only in the question before it."""
    query = "what happened at the birthday party"
    with build() as mind:
        with_context = mind.search.search(query, limit=3, explain=True)
        answer = next(r for r in with_context if r.frame.content == PARTY[1])
        assert rank_of(with_context, PARTY[0]) == 0
        assert rank_of(with_context, PARTY[1]) == 1
        assert answer.explain["keyword_rank"] is None
        assert answer.explain["keyword_context"] > 0
    with build(SearchConfig(context_window=0)) as mind:
        without = {r.frame.content: r for r in mind.search.search(query, limit=10)}
        assert PARTY[1] not in without or without[PARTY[1]].match_score < answer.match_score


def test_context_stays_inside_the_session_and_the_window():
    with build(SearchConfig(context_window=1)) as mind:
        results = mind.search.search("birthday party", limit=10, explain=True)
        by_content = {r.frame.content: r for r in results}
        for text in OTHER:  # another session lends nothing
            if text in by_content:
                assert by_content[text].explain["keyword_context"] == 0
        assert by_content[PARTY[1]].explain["keyword_context"] > 0
        # two steps away from the only keyword hit: outside a window of 1
        assert PARTY[2] not in by_content or by_content[PARTY[2]].explain["keyword_context"] == 0


def test_session_neighbours_follow_t_within_the_window():
    with build() as mind:
        ids = [f.id for f in mind.frames.get_gop_frames("party")]
        neighbours = session_neighbours(mind.db, {ids[0]}, 1, Scope())
        assert neighbours[ids[0]] == [ids[1]]
        assert sorted(session_neighbours(mind.db, {ids[1]}, 1, Scope())[ids[1]]) == [ids[0], ids[2]]
        assert sorted(session_neighbours(mind.db, {ids[0]}, 2, Scope())[ids[0]]) == [ids[1], ids[2]]


def test_a_neighbour_outside_the_time_filter_is_never_returned():
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.sessions.ensure("g")
    question = mind.frames.create_i_frame("g", "where is the spare key", created_at="2024-03-01T10:00:00Z")
    answer = mind.frames.create_i_frame("g", "under the flower pot", created_at="2024-05-01T10:00:00Z")
    mind.search.index_frames_batch([question, answer])
    ids = [r.frame.id for r in mind.search.search("spare key", until="2024-03-31")]
    assert ids == [question.id]
    assert answer.id in [r.frame.id for r in mind.search.search("spare key")]


def test_match_score_keeps_its_scale():
    with build() as mind:
        top = mind.search.search("lemon cake danced midnight", limit=5)
        assert top[0].frame.content == PARTY[1]
        assert top[0].match_score == pytest.approx(1.0)  # best in both lanes
        for result in top:
            assert 0.0 <= result.match_score <= 1.0
            assert result.rrf_score <= MAX_RRF_SCORE + 1e-12
            assert math.isclose(result.final_score, result.rrf_score * result.relevance_score)
    keyword_only = build()
    keyword_only.search.vectors.embedder = None  # the vector lane is unavailable
    for result in keyword_only.search.search("birthday party cake", limit=5):
        assert result.match_score <= 0.5 + 1e-12  # one lane alone


def test_rrf_option_is_the_original_fusion():
    with build(SearchConfig(fusion="rrf")) as mind:
        limit = 3
        keyword = mind.search.keyword_search("birthday party cake budget", limit * 2)
        vector = mind.search.vector_search("birthday party cake budget", limit * 2)
        expected: dict[int, float] = {}
        for ids in (keyword, vector):
            for rank, frame_id in enumerate(ids):
                expected[frame_id] = expected.get(frame_id, 0.0) + 1 / (RRF_K + rank)
        results = mind.search.search("birthday party cake budget", limit=limit, explain=True)
        assert len(results) == limit
        for result in results:
            assert math.isclose(result.rrf_score, expected[result.frame.id])
            assert result.explain["fusion"] == "rrf"


def test_lane_hits_carry_scores_in_rank_order():
    with build() as mind:
        keyword = mind.search.keyword_lane.hits("birthday party", 10, Scope())
        assert keyword and all(hit.score > 0 for hit in keyword)
        assert [h.score for h in keyword] == sorted((h.score for h in keyword), reverse=True)
        vector = mind.search.vector_lane.hits("birthday party", 10, Scope())
        assert [h.score for h in vector] == sorted((h.score for h in vector), reverse=True)
        assert all(-1.0 - 1e-6 <= h.score <= 1.0 + 1e-6 for h in vector)


def test_normalizations():
    hits = [LaneHit(1, 8.0), LaneHit(2, 2.0)]
    assert normalize_by_max(hits) == {1: 1.0, 2: 0.25}
    assert normalize_min_max(hits) == {1: 1.0, 2: 0.0}
    assert normalize_min_max([LaneHit(3, 0.4), LaneHit(4, 0.4)]) == {3: 1.0, 4: 1.0}
    # a list that was not cut at the lane's depth is stretched from 0, not from its worst member
    assert normalize_min_max([LaneHit(1, 0.5), LaneHit(2, 0.4)], cut=False) == pytest.approx({1: 1.0, 2: 0.8})
    assert normalize_by_max([LaneHit(5, 0.0)]) == {5: 1.0}
    assert normalize_min_max([]) == {} and normalize_by_max([]) == {}


@pytest.mark.parametrize("kwargs", [{"time_weight": 1.5}, {"relevance_share": -0.1}, {"speaker_weight": 1.2}])
def test_method_weights_outside_zero_to_one_are_refused(kwargs):
    with pytest.raises(InvalidInputError):
        SearchConfig(**kwargs)


def build_speakers(config: SearchConfig) -> tuple[Mind, dict[str, int]]:
    """Two speakers; Caroline's turns say "Melanie" (she addresses her), Melanie's own do not."""
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.search.config = config
    turns = {
        "asks": ("Caroline", "Caroline: Melanie, what did you paint this weekend?"),
        "answers": ("Melanie", "Melanie: a sunset over the lake, my first painting in oils"),
        "praises": ("Caroline", "Caroline: Melanie, your painting is lovely"),
        "unrelated": ("Melanie", "Melanie: traffic on the bridge was terrible"),
    }
    mind.sessions.ensure("chat")
    ids = {
        name: mind.frames.create_i_frame("chat", text, metadata={"provenance": {"role": role}}).id
        for name, (role, text) in turns.items()
    }
    mind.search.index_frames_batch(mind.frames.get_many(list(ids.values())).values())
    return mind, ids


def test_the_speaker_preference_favours_the_named_speakers_turns():
    query = "What painting did Melanie make?"
    mind, ids = build_speakers(SearchConfig(speaker_weight=0.5))
    with mind:
        preferred = {r.frame.id: r for r in mind.search.search(query, limit=4, explain=True)}
        assert preferred[ids["answers"]].explain["speaker_score"] == 1.0
        assert preferred[ids["praises"]].explain["speaker_score"] == 0.0
        assert preferred[ids["answers"]].rrf_score > preferred[ids["praises"]].rrf_score
    mind, ids = build_speakers(SearchConfig(speaker_weight=0.0))
    with mind:
        plain = {r.frame.id: r for r in mind.search.search(query, limit=4, explain=True)}
        assert "speaker_score" not in plain[ids["answers"]].explain  # off at weight 0
        assert plain[ids["praises"]].rrf_score > preferred[ids["praises"]].rrf_score


def test_a_question_naming_no_speaker_or_every_speaker_leaves_the_match_alone():
    mind, ids = build_speakers(SearchConfig(speaker_weight=0.5))
    with mind:
        frame_ids = list(ids.values())
        assert mind.search.speakers.scores("what was painted?", frame_ids) == {}
        assert mind.search.speakers.scores("What do Caroline and Melanie both paint?", frame_ids) == {}
        scores = mind.search.speakers.scores("What is Melanie's favourite painting?", frame_ids)
        assert scores == {ids["asks"]: 0.0, ids["answers"]: 1.0, ids["praises"]: 0.0, ids["unrelated"]: 1.0}


def test_a_speaker_with_a_full_name_is_named_by_the_first_name():
    """A messaging export records display names ("Melanie Hart"); a question says "Melanie". A
    lower-case word that is also a first name ("will") names no one."""
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.sessions.ensure("chat")
    for role, text in (("Caroline Smith", "hi Melanie"), ("Melanie Hart", "a sunset in oils"), ("Will Byers", "ok")):
        frame = mind.frames.create_i_frame("chat", f"{role}: {text}", metadata={"provenance": {"role": role}})
        mind.search.index_frames_batch([frame])
    with mind:
        speakers = mind.search.speakers
        assert speakers.named("What did Melanie paint?") == {"melanie hart"}
        assert speakers.spoken("What did Melanie paint?") == {"melanie"}
        assert speakers.named("What did melanie hart paint?") == {"melanie hart"}
        assert speakers.named("what will happen next?") == set()
        assert speakers.named("Did Will come?") == {"will byers"}
        frame_ids = [row[0] for row in mind.db.query("SELECT id FROM memory_frames ORDER BY id")]
        assert speakers.scores("What did Melanie paint?", frame_ids) == {
            frame_ids[0]: 0.0,
            frame_ids[1]: 1.0,
            frame_ids[2]: 0.0,
        }


def test_the_lanes_search_the_question_without_the_speakers_names():
    """A turn that only addresses Melanie matches "What did Melanie paint?" by her name alone while
    the name is in the lanes; without it, only words about what was said count, and who said it
    is left to the speaker preference."""
    turns = [
        ("Caroline", "Caroline: hi Melanie how are you"),
        ("Melanie", "Melanie: a sunset over the lake, my first painting in oils"),
        *(("Jon", f"Jon: note {n} about the quarterly budget") for n in range(8)),
    ]
    query = "What painting did Melanie make?"
    found = {}
    for drop in (True, False):
        embedder = HashingEmbedder()
        mind = Mind.open(":memory:", embedder=embedder)
        mind.search.config = SearchConfig(drop_speaker_names=drop)
        mind.sessions.ensure("chat")
        frames = [
            mind.frames.create_i_frame("chat", text, metadata={"provenance": {"role": role}}) for role, text in turns
        ]
        mind.search.index_frames_batch(frames)
        with mind:
            embedder.texts_embedded.clear()
            found[drop] = {r.frame.content: r.explain for r in mind.search.search(query, limit=10, explain=True)}
            assert embedder.texts_embedded[0] == query  # the question's own vector: the confidence reads it
            assert ("What painting did make?" in embedder.texts_embedded) == drop
    greeting, answer = turns[0][1], turns[1][1]
    assert found[True][answer]["lanes_without"] == ["Melanie"]
    assert "lanes_without" not in found[False][answer]
    assert found[False][greeting]["keyword_score"] > 0  # the name alone
    assert found[True].get(greeting, {}).get("keyword_score", 0.0) == 0.0
    assert found[True][answer]["keyword_score"] == 1.0


def test_the_vector_lane_blends_the_question_with_its_topic_words():
    """A question's vector is near other questions; blended with its topic words' vector it moves
    toward the statement that answers it."""
    query = "What painting did Melanie make?"
    found = {}
    for blend in (True, False):
        mind, ids = build_speakers(SearchConfig(topic_blend=blend))
        embedder = mind.search.vectors.embedder
        with mind:
            embedder.texts_embedded.clear()
            found[blend] = {r.frame.id: r.explain for r in mind.search.search(query, limit=4, explain=True)}
            lane_texts = [query, "What painting did make?"]
            assert embedder.texts_embedded == (lane_texts + ["painting make"] if blend else lane_texts)
    assert found[True][ids["answers"]]["vector_blended_with"] == "painting make"
    assert "vector_blended_with" not in found[False][ids["answers"]]
    statement, question = ids["answers"], ids["asks"]
    assert found[True][statement]["vector_similarity"] > found[False][statement]["vector_similarity"]
    assert found[True][question]["vector_similarity"] < found[False][question]["vector_similarity"]
    # what the confidence reads is the question's own similarity, which neither moves
    for frame_id in (statement, question):
        assert found[True][frame_id]["question_similarity"] == pytest.approx(found[False][frame_id]["question_similarity"])
        assert found[True][frame_id]["question_similarity"] != pytest.approx(found[True][frame_id]["vector_similarity"])


def test_a_question_of_only_a_speakers_name_keeps_it():
    mind, ids = build_speakers(SearchConfig())
    with mind:
        assert without_names("What did Melanie's kids paint?", {"melanie"}) == "What did kids paint?"
        assert without_names("Melanie", {"melanie"}) == "Melanie"
        results = mind.search.search("Melanie", limit=4, explain=True)
        assert results and all("lanes_without" not in r.explain for r in results)
        assert {r.frame.id for r in results if r.explain.get("keyword_score")} >= {ids["asks"], ids["answers"]}


def garden_mind() -> Mind:
    """60 notes that all match one question, of many dates and importances."""
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.sessions.ensure("garden")
    importance = ("deprecated", "normal", "important", "critical")
    frames = [
        mind.frames.create_i_frame(
            "garden",
            f"note {n}: the tomatoes need water" + " and more words" * (n % 7),
            importance=importance[n % 4],
            created_at=f"{2000 + n % 25}-0{1 + n % 9}-1{n % 10}T10:00:00Z",
        )
        for n in range(60)
    ]
    mind.search.index_frames_batch(frames)
    return mind


@pytest.mark.parametrize("share", [1.0, 0.5])
def test_a_longer_limit_up_to_ten_extends_the_list_and_never_reorders_its_head(share):
    """Relevance (recency, importance) reorders the best-matching candidates; up to the default
    limit they are the same pool, so the first result is the same at limit 1 as at limit 10."""
    mind = garden_mind()
    mind.search.config = SearchConfig(relevance_share=share)
    full = [(r.frame.id, r.score) for r in mind.search.search("water the tomatoes", limit=RELEVANCE_POOL_LIMIT)]
    assert len(full) == RELEVANCE_POOL_LIMIT
    assert [score for _, score in full] == sorted((score for _, score in full), reverse=True)
    matches = [r.rrf_score for r in mind.search.search("water the tomatoes", limit=60)]
    assert matches != sorted(matches, reverse=True)  # relevance did reorder the match order
    for limit in (1, 2, 3, 5, 9):
        head = [(r.frame.id, r.score) for r in mind.search.search("water the tomatoes", limit=limit)]
        assert head == full[:limit]


def test_the_relevance_share_bounds_what_relevance_takes_from_the_match():
    mind = garden_mind()
    for share in (0.0, 0.5, 1.0):
        mind.search.config = SearchConfig(relevance_share=share)
        for r in mind.search.search("water the tomatoes", limit=60):
            match = r.rrf_score / MAX_RRF_SCORE
            assert match * (1 - share) - 1e-9 <= r.score <= match + 1e-9
    mind.search.config = SearchConfig(relevance_share=0.0)
    matches = [r.rrf_score for r in mind.search.search("water the tomatoes", limit=60)]
    assert matches == sorted(matches, reverse=True)  # relevance only breaks ties
    with pytest.raises(InvalidInputError, match="relevance_share"):
        SearchConfig(relevance_share=1.5)


def test_a_chats_generic_roles_name_no_speaker():
    """In an AI chat the two sides are "user" and "assistant": a question about adding a user
    must not push the assistant's answer down."""
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.sessions.ensure("chat")
    turns = [("user", "how do I add a user to postgres?"), ("assistant", "run CREATE ROLE with LOGIN")]
    ids = [mind.frames.create_i_frame("chat", text, metadata={"provenance": {"role": role}}).id for role, text in turns]
    with mind:
        assert mind.search.speakers.scores("add a user to postgres", ids) == {}
        assert mind.search.speakers.scores("what did the assistant answer?", ids) == {}


def test_the_minds_speakers_come_from_the_role_index_and_follow_new_frames():
    """A question naming none of the mind's speakers reads no frame's role: the speakers are the
    distinct values of ``idx_frames_role``; a speaker harvested later is seen at the next question."""
    mind, ids = build_speakers(SearchConfig(speaker_weight=0.5))
    with mind:
        frame_ids = list(ids.values())
        assert mind.search.speakers.scores("what did Jon say about the lake?", frame_ids) == {}
        plan = " ".join(str(row[-1]) for row in mind.db.query(f"EXPLAIN QUERY PLAN SELECT MIN({FRAME_ROLE_SQL}) FROM memory_frames"))
        assert "idx_frames_role" in plan
        jon = mind.frames.create_i_frame("chat", "Jon: the lake froze", metadata={"provenance": {"role": "Jon"}}).id
        scores = mind.search.speakers.scores("what did Jon say about the lake?", [*frame_ids, jon])
        assert scores[jon] == 1.0 and scores[ids["answers"]] == 0.0
