"""The keyword lane's top-k index (issue #31): built by reconcile for a large mind, it ranks as
FTS5's BM25 does, finds frames written after it was built, never returns deleted frames, is
reported by doctor when missing or worn, and leaves a mind below its threshold as it was.
Small thresholds stand in for a large mind."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from mind_core.mind import Mind
from mind_core.privacy.forget import forget, plan_forget
from mind_core.privacy.selection import Selector
from mind_core.search import keyword_index
from mind_core.search.keyword_index import KeywordIndexParameters
from mind_core.search.lanes import Scope
from mind_core.store import reconcile
from mind_core.store.schema import set_meta
from mind_core.testing.fakes import HashingEmbedder
from tests.mind_core.test_vector_prescan import WORDS, fill

# every word of the fixture held by more than 5 frames gets a list, each list read whole
EVERYTHING = KeywordIndexParameters(min_frames=50, list_min_frames=5, kept=10_000)
QUESTIONS = (
    "budget meeting on friday",
    "the cat on the sofa",
    "rust borrow checker review",
    "piano concert violin lesson note",
    "marathon knee doctor",
    "lisbon hotel flight invoice",
    "bread flour recipe oven kitchen",
    "zebra",
    "tomato",
    "note",
)


def texts(count: int, seed: int = 11) -> list[str]:
    """Frames of varied length with repeated words (term frequencies above 1), a few rare words."""
    rng = random.Random(seed)
    made = []
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(2, 14))]
        if i % 37 == 0:
            words.append("zebra")
        made.append(" ".join(words) + (" note" if i % 3 else ""))
    return made


@pytest.fixture
def mind(tmp_path):
    with Mind.open(tmp_path / "keywords.mind", embedder=HashingEmbedder()) as opened:
        fill(opened, texts(400))
        opened.search.keyword_lane.index = EVERYTHING
        yield opened


def lane(mind: Mind, query: str, limit: int = 20, index: KeywordIndexParameters | None = EVERYTHING) -> list[tuple[int, float]]:
    keyword_lane = mind.search.keyword_lane
    keyword_lane.index = index
    return [(hit.frame_id, round(hit.score, 6)) for hit in keyword_lane.hits(query, limit, Scope())]


def build(mind: Mind, params: KeywordIndexParameters = EVERYTHING) -> int:
    built = reconcile.reconcile_indexes(mind.db, mind.embedder, keyword_params=params).keyword_index_rebuilt
    assert built > 0
    return built


@pytest.fixture
def index_calls(monkeypatch):
    calls = []
    original = keyword_index.best_frames

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(keyword_index, "best_frames", counted)
    return calls


@pytest.mark.parametrize("split_frames", [0, 10**9])
def test_the_index_ranks_as_fts5_bm25_when_its_lists_hold_every_frame(mind, index_calls, split_frames):
    build(mind)
    mind.search.keyword_lane.split_frames = split_frames  # the rarer-words split on, then off
    for question in QUESTIONS:
        assert lane(mind, question) == lane(mind, question, index=None), question
    assert len(index_calls) == len(QUESTIONS)  # every question went through the index


def test_a_listed_word_mixed_with_rare_ones_keeps_the_exact_order(mind):
    """A word with a list and words FTS5 scores (held by few frames) add up as BM25 does."""
    mixed = KeywordIndexParameters(min_frames=50, list_min_frames=30, kept=10_000)
    build(mind, mixed)
    mind.search.keyword_lane.split_frames = 0
    for question in QUESTIONS:
        assert lane(mind, question, index=mixed) == lane(mind, question, index=None), question


def test_short_lists_still_find_the_best_frames(mind):
    """Lists cut to a few frames a word: the answer may differ below the top, the best frame stays."""
    short = KeywordIndexParameters(min_frames=50, list_min_frames=5, kept=40)
    build(mind, short)
    for question in QUESTIONS:
        found = lane(mind, question, limit=5, index=short)
        assert found[0] == lane(mind, question, limit=5, index=None)[0], question


def ids(found: list[tuple[int, float]]) -> list[int]:
    return [frame_id for frame_id, _ in found]


def test_frames_written_or_edited_after_the_build_are_found(mind, index_calls):
    """Scores drift from FTS5's by the build's frame count and average length; the order holds."""
    build(mind)
    (added,) = fill(mind, ["zebra zebra zebra crossing"])
    edited = lane(mind, "tomato", index=None)[-1][0]
    mind.frames.update(edited, "tomato tomato tomato harvest")
    found = [frame_id for frame_id, _ in lane(mind, "zebra")]
    assert found[0] == added
    assert ids(lane(mind, "zebra")) == ids(lane(mind, "zebra", index=None))
    assert lane(mind, "tomato")[0][0] == edited
    assert ids(lane(mind, "tomato")) == ids(lane(mind, "tomato", index=None))
    assert index_calls  # still through the index: two changes do not wear it


def test_deleted_frames_are_never_returned(mind):
    build(mind)
    best = [frame_id for frame_id, _ in lane(mind, "marathon knee", limit=5)]
    for frame_id in best[:3]:
        assert mind.frames.delete(frame_id)
    found = [frame_id for frame_id, _ in lane(mind, "marathon knee", limit=50)]
    assert not set(best[:3]) & set(found)
    assert found == ids(lane(mind, "marathon knee", limit=50, index=None))


def test_forget_makes_the_index_again_without_the_forgotten_frames(mind):
    build(mind)
    gone = ids(lane(mind, "marathon knee", limit=3))
    forget(mind, plan_forget(mind.db, Selector(frame_ids=tuple(gone))), "tester", vacuum=False)
    for ids_blob, in mind.db.query(f"SELECT ids FROM {keyword_index.TABLE}"):
        assert not set(gone) & set(np.frombuffer(ids_blob, dtype="<i4").tolist())
    assert keyword_index.problem(mind.db, EVERYTHING) is None  # made again with its parameters
    assert ids(lane(mind, "marathon knee", limit=50)) == ids(lane(mind, "marathon knee", limit=50, index=None))


def test_doctor_reports_a_missing_or_worn_index_and_repair_builds_it(mind, monkeypatch):
    finding = reconcile.doctor(mind.db, mind.embedder, keyword_params=EVERYTHING).finding("keyword_index")
    assert finding.count == 1 and "missing" in finding.detail
    report = reconcile.doctor(mind.db, mind.embedder, repair=True, keyword_params=EVERYTHING)
    assert report.repaired is not None and report.repaired.keyword_index_rebuilt > 0
    assert report.after is not None and report.after.finding("keyword_index").ok
    other = KeywordIndexParameters(min_frames=50, list_min_frames=6, kept=10_000)
    assert "other parameters" in reconcile.doctor(mind.db, mind.embedder, keyword_params=other).finding("keyword_index").detail
    manifest = keyword_index.read_manifest(mind.db)
    with mind.db.transaction():
        set_meta(mind.db, keyword_index.META_KEY, json.dumps({**manifest, "format": keyword_index.FORMAT - 1}))
    assert "another version" in reconcile.doctor(mind.db, mind.embedder, keyword_params=EVERYTHING).finding("keyword_index").detail
    assert keyword_index.usable(mind.db, EVERYTHING) is None
    build(mind)

    monkeypatch.setattr(keyword_index, "MAX_EDITED", 1)
    for frame_id in (1, 2):
        mind.frames.update(frame_id, f"rewritten frame {frame_id}")
    finding = reconcile.doctor(mind.db, mind.embedder, keyword_params=EVERYTHING).finding("keyword_index")
    assert finding.count == 1 and "worn" in finding.detail
    assert keyword_index.usable(mind.db, EVERYTHING) is None  # the lane asks FTS5 meanwhile
    assert lane(mind, "rewritten") == lane(mind, "rewritten", index=None)
    build(mind)
    assert reconcile.doctor(mind.db, mind.embedder, keyword_params=EVERYTHING).finding("keyword_index").ok


def test_a_mind_below_the_threshold_is_unchanged(mind, index_calls):
    small = KeywordIndexParameters(min_frames=10_000, list_min_frames=5, kept=10_000)
    result = reconcile.reconcile_indexes(mind.db, mind.embedder, keyword_params=small)
    assert result.keyword_index_rebuilt == 0 and keyword_index.read_manifest(mind.db) is None
    finding = reconcile.doctor(mind.db, mind.embedder, keyword_params=small).finding("keyword_index")
    assert finding.ok and "not kept" in finding.detail
    assert lane(mind, "budget meeting", index=small) == lane(mind, "budget meeting", index=None)
    assert not index_calls


def test_the_lists_read_stay_in_memory_until_the_index_is_rebuilt(mind):
    build(mind)
    lane(mind, "budget meeting")
    cache = mind.search.keyword_lane.word_lists
    read = dict(cache.lists)
    assert read and cache.nbytes > 0
    fill(mind, ["budget review"])  # a change of the mind: the lists are those of the same build
    lane(mind, "budget meeting")
    assert all(cache.lists[word] is listed for word, listed in read.items())
    keyword_index.build(mind.db, EVERYTHING)  # a rebuild empties them
    lane(mind, "budget meeting")
    assert all(cache.lists[word] is not listed for word, listed in read.items() if word in cache.lists)


def test_the_default_reconcile_builds_nothing_for_a_small_mind(mind):
    assert mind.reconcile().keyword_index_rebuilt == 0
    assert not mind.db.table_exists(keyword_index.TABLE)
