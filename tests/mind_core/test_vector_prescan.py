"""The vector lane's pre-scan (issue #19): sign bits, then int8 codes, then the float vectors of
the best. It answers as the exact scan does, and every write path keeps its companion tables
equal to the vector tables."""

from __future__ import annotations

import random

import numpy as np
import pytest

from mind_core.mind import Mind
from mind_core.search import vector_codes
from mind_core.search.config import SearchConfig
from mind_core.store.frames import NewFrame
from mind_core.store.schema import applied_migrations
from mind_core.testing.fakes import HashingEmbedder

WORDS = (
    "budget meeting friday cat sofa rust borrow checker garden tomato harvest train station ticket "
    "piano lesson concert violin paper deadline review coffee beans roast marathon knee doctor "
    "holiday lisbon flight hotel invoice tax refund kitchen oven bread flour recipe"
).split()
PRESCAN = SearchConfig(prescan_min_vectors=0)
EXACT = SearchConfig(prescan_min_vectors=10**9)


class DenseHashingEmbedder(HashingEmbedder):
    """The hashing embedder's bag of words through a fixed random projection: dense vectors with
    both signs, as a real model's are (the bag itself is all zeros and positives, which leaves
    sign bits little to tell)."""

    provider = "fake-dense"

    def __init__(self, dimensions: int = 256) -> None:
        super().__init__(1024)
        self.projection = np.random.default_rng(3).normal(size=(dimensions, 1024)).astype(np.float32)
        self.dimensions = dimensions

    def vector(self, text: str) -> np.ndarray:
        self.dimensions = 1024
        try:
            dense = self.projection @ super().vector(text)
        finally:
            self.dimensions = len(self.projection)
        norm = float(np.linalg.norm(dense))
        return dense / norm if norm > 0 else dense


def sentences(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.sample(WORDS, rng.randint(3, 8))) + f" note {i}" for i in range(count)]


def fill(mind: Mind, texts: list[str], gop: str = "g") -> list[int]:
    mind.sessions.ensure(gop)
    frames = mind.frames.create_i_frames([NewFrame(gop, text) for text in texts])
    mind.search.index_frames_batch(frames)
    return [frame.id for frame in frames]


def companion_rows(mind: Mind, table: str) -> tuple[set[int], set[int]]:
    """The rowids the sign-bit blocks and the int8 codes hold for ``table``."""
    bits: set[int] = set()
    for ids, _ in mind.db.query("SELECT ids, bits FROM vector_bit_blocks WHERE vec_table = ?", (table,)):
        bits |= set(np.frombuffer(ids, dtype="int64").tolist())
    codes = {row[0] for row in mind.db.query("SELECT row FROM vector_int8_codes WHERE vec_table = ?", (table,))}
    return bits, codes


def assert_consistent(mind: Mind) -> None:
    for table in vector_codes.VECTOR_TABLES:
        vectors = {row[0] for row in mind.db.query(f"SELECT rowid FROM {table}")}
        assert companion_rows(mind, table) == (vectors, vectors), table
        assert vector_codes.is_current(mind.db, table)


@pytest.fixture
def mind(tmp_path):
    with Mind.open(tmp_path / "prescan.mind", embedder=DenseHashingEmbedder()) as opened:
        yield opened


def test_the_prescan_returns_the_exact_scans_top_ten(mind):
    texts = sentences(3000)
    fill(mind, texts)
    vectors = mind.search.vectors
    for query in ["budget meeting friday", "borrow checker rust review", "bread flour oven recipe", texts[1234]]:
        blob = np.asarray(mind.embedder.embed(query), dtype="float32").tobytes()
        exact = vectors.nearest("memory_frames_vec", blob, 10, prescan=False)
        quick = vectors.nearest("memory_frames_vec", blob, 10, prescan=True)
        assert [d for _, d in quick] == pytest.approx([d for _, d in exact], abs=1e-6)
        tenth = exact[-1][1]  # frames tied with the tenth may stand in either order
        assert {f for f, d in quick if d < tenth - 1e-6} == {f for f, d in exact if d < tenth - 1e-6}
        mind.search.config = PRESCAN
        fast = mind.search.search(query, limit=10)
        mind.search.config = EXACT
        slow = mind.search.search(query, limit=10)
        assert [r.frame.id for r in fast] == [r.frame.id for r in slow]
        # the vector lane's normalization floor is its 100th frame, which a tie may swap
        assert [r.score for r in fast] == pytest.approx([r.score for r in slow], abs=1e-3)


def test_the_prescan_keeps_time_and_session_filters(mind):
    fill(mind, sentences(400), gop="a")
    kept = fill(mind, sentences(400, seed=8), gop="b")
    mind.search.config = PRESCAN
    found = mind.search.vector_search("budget meeting friday", 10, gop_id="b")
    assert found and set(found) <= set(kept)


def test_every_write_path_keeps_the_companions_equal_to_the_vectors(mind):
    long_text = " ".join(WORDS * 12)  # long enough for chunk vectors
    ids = fill(mind, [*sentences(50), long_text])
    assert mind.db.scalar("SELECT count(*) FROM memory_frame_chunks_vec") > 0
    assert_consistent(mind)
    mind.frames.delete(ids[3])  # delete
    mind.frames.delete(ids[-1])  # a frame with chunk vectors
    assert_consistent(mind)
    mind.frames.update(ids[4], "an edited frame about tomatoes")  # edit drops the vector ...
    assert_consistent(mind)
    mind.reconcile()  # ... and reconcile embeds it again
    assert_consistent(mind)
    mind.search.index_frames_batch([(ids[5], "the same frame indexed again")])  # re-index replaces
    assert_consistent(mind)
    mind.db.execute("DELETE FROM memory_frames WHERE id = ?", (ids[6],))  # an orphaned vector ...
    mind.reconcile()  # ... swept
    assert_consistent(mind)
    mind.search.vectors.rebuild()  # reindex: everything dropped, then re-embedded
    assert_consistent(mind)
    mind.reconcile()
    assert_consistent(mind)
    assert mind.doctor().ok


def test_a_writer_that_bypasses_the_companions_gets_the_exact_scan_until_reconcile(mind):
    ids = fill(mind, sentences(300))
    newcomer = mind.frames.create_i_frame("g", "zebra xylophone quartz")
    vector = mind.embedder.embed(newcomer.content)
    with mind.db.transaction():  # as the original engine writes a shared mind
        mind.db.execute(
            "INSERT INTO memory_frames_vec (rowid, embedding) VALUES (?, ?)",
            (newcomer.id, np.asarray(vector, dtype="float32").tobytes()),
        )
    assert not vector_codes.is_current(mind.db, "memory_frames_vec")
    mind.search.config = PRESCAN
    assert mind.search.vector_search("zebra xylophone quartz", 1) == [newcomer.id]
    assert not mind.doctor().ok
    mind.reconcile()
    assert_consistent(mind)
    assert mind.search.vector_search("zebra xylophone quartz", 1) == [newcomer.id]
    assert newcomer.id not in ids


def test_an_existing_mind_gets_its_companions_by_migration(tmp_path):
    path = tmp_path / "old.mind"
    with Mind.open(path, embedder=DenseHashingEmbedder()) as mind:
        fill(mind, [*sentences(40), " ".join(WORDS * 12)])
        with mind.db.transaction():  # the mind as it was before migration 0009
            mind.db.execute("DROP TABLE vector_bit_blocks")
            mind.db.execute("DROP TABLE vector_int8_codes")
            mind.db.execute("DELETE FROM migrations WHERE name = '0009_vector_codes'")
    with Mind.open(path, embedder=DenseHashingEmbedder()) as mind:
        assert "0009_vector_codes" in applied_migrations(mind.db)
        assert_consistent(mind)
        assert mind.db.scalar("SELECT count(*) FROM vector_int8_codes") > 40  # frames and chunks


def test_int8_codes_keep_the_vectors_close():
    vectors = np.random.default_rng(1).normal(size=(20, 384)).astype("float32")
    decoded = vector_codes.decode_int8(vector_codes.int8_codes(vectors))
    assert abs(decoded - vectors).max() <= abs(vectors).max() / 127


def test_in_a_large_mind_the_keyword_lane_keeps_frames_with_a_rarer_word_ranked_by_every_word(tmp_path):
    with Mind.open(tmp_path / "words.mind") as mind:
        mind.sessions.ensure("g")
        texts = [f"alice talked about the weather {i}" for i in range(60)]
        texts += ["bob likes pottery", "alice likes pottery", "pottery pottery class"]
        ids = {f.content: f.id for f in mind.frames.create_i_frames([NewFrame("g", t) for t in texts])}
        query = "alice pottery"
        mind.search.config = SearchConfig(keyword_split_frames=10**9)
        assert mind.search.keyword_match(query) == '"alice" OR "pottery"'
        everything = mind.search.keyword_search(query, 100)
        mind.search.config = SearchConfig(keyword_split_frames=0)
        assert mind.search.keyword_match(query) == '("pottery") AND ("alice" OR "pottery")'
        split = mind.search.keyword_search(query, 100)
        assert set(split) == {ids["bob likes pottery"], ids["alice likes pottery"], ids["pottery pottery class"]}
        assert split.index(ids["alice likes pottery"]) < split.index(ids["bob likes pottery"])
        assert len(everything) == 63
        assert mind.search.keyword_match("pottery class") == '"pottery" OR "class"'  # nothing common


def test_a_reader_keeping_the_bits_in_memory_sees_another_connections_writes(tmp_path):
    path = tmp_path / "shared.mind"
    with Mind.open(path, embedder=DenseHashingEmbedder()) as writer:
        fill(writer, sentences(300))
        with Mind.open(path, embedder=DenseHashingEmbedder(), readonly=True) as reader:
            reader.search.config = PRESCAN
            assert reader.search.vector_search("budget meeting friday", 5)
            assert "memory_frames_vec" in reader.search.vectors.bits_cache
            added = fill(writer, ["zebra xylophone quartz"])
            writer.frames.delete(added[0] - 1)
            assert reader.search.vector_search("zebra xylophone quartz", 1) == added
            assert added[0] - 1 not in reader.search.vector_search("budget meeting friday", 300)
