"""The vector lane's ANN index (issue #31): it answers as the exact scan does, follows every write
path through its change log, and a missing, stale or foreign index is refused, reported by doctor
and rebuilt by reconcile."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from mind_core.mind import Mind
from mind_core.search import ann
from mind_core.store import reconcile
from tests.conftest import REPO_ROOT
from tests.mind_core.test_vector_prescan import WORDS, DenseHashingEmbedder, fill, sentences


@pytest.fixture
def mind(tmp_path):
    with Mind.open(tmp_path / "ann.mind", embedder=DenseHashingEmbedder()) as opened:
        opened.search.vectors.ann_min_vectors = 0  # the ANN path forced on a small mind
        yield opened


def build(mind: Mind) -> None:
    assert reconcile.reconcile_indexes(mind.db, mind.embedder, ann_min_vectors=0).ann_rebuilt > 0


def blob(mind: Mind, text: str) -> bytes:
    return np.asarray(mind.embedder.embed(text), dtype="float32").tobytes()


def ann_nearest(mind: Mind, text: str, k: int = 10, table: str = "memory_frames_vec") -> list[tuple[int, float]]:
    vectors = mind.search.vectors
    assert vectors.ann_index() is not None  # the lane goes through the graph
    return vectors.nearest(table, blob(mind, text), k)


def exact_nearest(mind: Mind, text: str, k: int = 10, table: str = "memory_frames_vec") -> list[tuple[int, float]]:
    return mind.search.vectors.nearest(table, blob(mind, text), k, prescan=False)


def assert_same(found: list[tuple[int, float]], exact: list[tuple[int, float]]) -> None:
    """The graph's neighbours are the exact scan's, at distances of its half-precision copies."""
    assert [d for _, d in found] == pytest.approx([d for _, d in exact], abs=1e-3)
    tenth = exact[-1][1]  # frames (nearly) tied with the last may stand in either order
    assert {f for f, d in found if d < tenth - 1e-3} == {f for f, d in exact if d < tenth - 1e-3}


def graph_rows(mind: Mind) -> dict[str, set[int]]:
    graphs = mind.search.vectors.ann_index()
    assert graphs is not None
    return {table: {int(key) for key in graph.keys} for table, graph in graphs.graphs.items()}


def vector_rows(mind: Mind) -> dict[str, set[int]]:
    return {table: {row[0] for row in mind.db.query(f"SELECT rowid FROM {table}")} for table in ann.VECTOR_TABLES}


def test_the_ann_path_returns_the_exact_scans_neighbours_and_distances(mind):
    texts = sentences(1500)
    fill(mind, [*texts, " ".join(WORDS * 12)])
    build(mind)
    for query in ["budget meeting friday", "borrow checker rust review", "bread flour oven recipe", texts[321]]:
        assert_same(ann_nearest(mind, query), exact_nearest(mind, query))
        assert_same(
            ann_nearest(mind, query, table="memory_frame_chunks_vec"),
            exact_nearest(mind, query, table="memory_frame_chunks_vec"),
        )
    fast = mind.search.search("bread flour oven recipe", limit=10)
    mind.search.vectors.ann_min_vectors = 10**9  # the same search without the graph
    slow = mind.search.search("bread flour oven recipe", limit=10)
    assert [r.frame.id for r in fast] == [r.frame.id for r in slow]


def test_the_index_is_persisted_beside_the_mind_with_its_parameters(mind, tmp_path):
    fill(mind, sentences(200))
    build(mind)
    manifest = json.loads((tmp_path / "ann.mind.ann" / "ann.json").read_text())
    assert manifest["parameters"]["connectivity"] == ann.PARAMETERS.connectivity
    assert manifest["fingerprint"] == mind.search.vectors.stored_fingerprint()
    assert manifest["counts"] == {"memory_frames_vec": 200, "memory_frame_chunks_vec": 0}
    assert manifest["indexed_dims"] == 256
    with Mind.open(tmp_path / "ann.mind", embedder=DenseHashingEmbedder(), readonly=True) as reader:
        reader.search.vectors.ann_min_vectors = 0
        assert_same(ann_nearest(reader, "tomato garden harvest"), exact_nearest(reader, "tomato garden harvest"))


def test_the_index_follows_inserts_updates_deletes_and_compaction(mind, tmp_path):
    ids = fill(mind, sentences(300))
    build(mind)
    assert mind.search.vectors.ann_index().viewed  # nothing to add: the files memory-mapped
    with Mind.open(tmp_path / "ann.mind", embedder=DenseHashingEmbedder()) as other:  # a second writer
        added = fill(other, ["zebra xylophone quartz", " ".join(WORDS * 12)])
    assert graph_rows(mind) == vector_rows(mind)
    assert not mind.search.vectors.ann_index().viewed  # read again as copies that take the changes
    assert ann_nearest(mind, "zebra xylophone quartz", 1)[0][0] == added[0]
    mind.frames.update(ids[4], "an edited frame about tomatoes")  # drops the vector
    mind.frames.delete(ids[5])
    mind.frames.delete(added[1])  # a frame with chunk vectors
    assert graph_rows(mind) == vector_rows(mind)
    mind.search.index_frames_batch([(ids[6], "walrus umbrella")])  # re-indexing replaces
    assert ann_nearest(mind, "walrus umbrella", 1)[0][0] == ids[6]
    mind.sessions.ensure("p")
    first = mind.frames.create_i_frame("p", "the plan")
    chain = [mind.frames.create_p_frame("p", f"step {i} of the plan", first.id) for i in range(12)]
    mind.search.index_frames_batch([(f.id, f.content) for f in [first, *chain]])
    assert graph_rows(mind) == vector_rows(mind)
    assert mind.frames.compact().p_frames_merged > 0
    assert graph_rows(mind) == vector_rows(mind)
    assert_same(ann_nearest(mind, "budget meeting friday"), exact_nearest(mind, "budget meeting friday"))
    pending = ann.pending(mind.db, 0)
    assert pending > 0  # the files lag; the log holds the changes ...
    reconcile.reconcile_indexes(mind.db, mind.embedder, ann_min_vectors=0)
    assert ann.pending(mind.db, 0) == 0  # ... until reconcile folds them in
    manifest = ann.read_manifest(mind.db)
    assert manifest is not None
    assert manifest["counts"] == {table: len(rows) for table, rows in vector_rows(mind).items()}
    assert reconcile.doctor(mind.db, mind.embedder, ann_min_vectors=0).finding("ann_index").ok


def test_many_removals_make_reconcile_rebuild_the_index_without_the_deleted_vectors(mind, tmp_path):
    ids = fill(mind, sentences(100))
    build(mind)
    gone = np.frombuffer(blob(mind, sentences(100)[0]), dtype="float32").astype("float16").tobytes()
    for frame_id in ids[:5]:  # 5 % of the graph: the log is folded in, the slots stay
        mind.frames.delete(frame_id)
    assert reconcile.reconcile_indexes(mind.db, mind.embedder, ann_min_vectors=0).ann_rebuilt == 0
    assert ann.read_manifest(mind.db)["tombstones"] == 5
    assert gone in (tmp_path / "ann.mind.ann" / "memory_frames_vec.usearch").read_bytes()
    for frame_id in ids[5:15]:
        mind.frames.delete(frame_id)
    assert reconcile.reconcile_indexes(mind.db, mind.embedder, ann_min_vectors=0).ann_rebuilt == 85
    assert ann.read_manifest(mind.db)["tombstones"] == 0
    assert gone not in (tmp_path / "ann.mind.ann" / "memory_frames_vec.usearch").read_bytes()
    assert graph_rows(mind) == vector_rows(mind)


def test_a_missing_or_stale_index_is_reported_by_doctor_and_rebuilt_by_reconcile(mind, tmp_path):
    fill(mind, sentences(200))
    assert reconcile.doctor(mind.db, mind.embedder).finding("ann_index").ok  # small: not needed
    report = reconcile.doctor(mind.db, mind.embedder, ann_min_vectors=100)
    assert report.count("ann_index") == 1 and "missing" in report.finding("ann_index").detail
    assert mind.search.vectors.ann_index() is None  # the lane scans exactly meanwhile
    build(mind)
    assert reconcile.doctor(mind.db, mind.embedder, ann_min_vectors=0).ok
    newcomer = mind.frames.create_i_frame("g", "zebra xylophone quartz")
    with mind.db.transaction():  # a writer that bypasses the log (the original engine)
        mind.db.execute(
            "INSERT INTO memory_frames_vec (rowid, embedding) VALUES (?, ?)",
            (newcomer.id, blob(mind, newcomer.content)),
        )
    fresh = Mind.open(tmp_path / "ann.mind", embedder=DenseHashingEmbedder(), readonly=True)
    with fresh:
        fresh.search.vectors.ann_min_vectors = 0
        assert fresh.search.vectors.ann_index() is None  # its counts differ: refused
    assert "counts differ" in reconcile.doctor(mind.db, mind.embedder, ann_min_vectors=0).finding("ann_index").detail
    repaired = reconcile.doctor(mind.db, mind.embedder, repair=True, ann_min_vectors=0)
    assert repaired.after is not None and repaired.after.finding("ann_index").ok
    mind.search.vectors.ann_graphs = None
    assert ann_nearest(mind, "zebra xylophone quartz", 1)[0][0] == newcomer.id
    for path in (tmp_path / "ann.mind.ann").iterdir():
        path.unlink()
    mind.search.vectors.ann_graphs = None
    assert mind.search.vectors.ann_index() is None
    assert reconcile.doctor(mind.db, mind.embedder, ann_min_vectors=0).count("ann_index") == 1
    assert reconcile.reconcile_indexes(mind.db, mind.embedder, ann_min_vectors=0).ann_rebuilt == 201


def test_an_index_made_from_another_embedders_vectors_is_refused(mind, tmp_path):
    fill(mind, sentences(200))
    build(mind)
    path = tmp_path / "ann.mind.ann" / "ann.json"
    manifest = json.loads(path.read_text())
    manifest["fingerprint"] = {**manifest["fingerprint"], "embedding_model": "another-model"}
    path.write_text(json.dumps(manifest))
    mind.search.vectors.ann_graphs = None
    assert mind.search.vectors.ann_index() is None
    finding = reconcile.doctor(mind.db, mind.embedder, ann_min_vectors=0).finding("ann_index")
    assert finding.count == 1 and "another embedder" in finding.detail
    assert mind.search.vector_search("budget meeting friday", 3)  # the exact path answers
    build(mind)
    assert mind.search.vectors.ann_index() is not None


def test_a_reindex_forgets_the_index_until_reconcile_builds_it_again(mind):
    fill(mind, sentences(100))
    build(mind)
    mind.search.vectors.rebuild()
    assert not ann.enabled(mind.db) and mind.search.vectors.ann_index() is None
    reconcile.reconcile_indexes(mind.db, mind.embedder, ann_min_vectors=0)
    assert graph_rows(mind) == vector_rows(mind)
    assert_same(ann_nearest(mind, "budget meeting friday"), exact_nearest(mind, "budget meeting friday"))


class PaddedEmbedder(DenseHashingEmbedder):
    """256 real values zero-padded to 1024, as MiniLM's 384 in a mind shared with the original."""

    provider = "fake-padded"

    def __init__(self) -> None:
        super().__init__(256)
        self.dimensions = 1024

    def vector(self, text: str) -> np.ndarray:
        try:
            dense = super().vector(text)
        finally:
            self.dimensions = 1024
        return np.pad(dense, (0, 1024 - len(dense)))


def test_a_padded_mind_indexes_only_its_real_values(tmp_path):
    with Mind.open(tmp_path / "wide.mind", embedder=PaddedEmbedder()) as wide:
        wide.search.vectors.ann_min_vectors = 0
        fill(wide, sentences(200))
        assert wide.search.vectors.dimensions == 1024
        build(wide)
        assert wide.search.vectors.ann_index().dims == 256
        assert_same(ann_nearest(wide, "tomato garden"), exact_nearest(wide, "tomato garden"))


def test_a_mind_in_memory_keeps_no_index():
    with Mind.open(":memory:", embedder=DenseHashingEmbedder()) as mind:
        fill(mind, sentences(50))
        assert reconcile.reconcile_indexes(mind.db, mind.embedder, ann_min_vectors=0).ann_rebuilt == 0
        assert reconcile.doctor(mind.db, mind.embedder, ann_min_vectors=0).finding("ann_index").ok


def test_the_build_reads_the_vectors_in_bounded_pages_each_copied_once(mind, monkeypatch):
    """The graph is built from pages of BUILD_PAGE vectors (a few MB whatever the mind's size),
    each page one float32 block holding the stored vectors' values, cut to the indexed width."""
    fill(mind, sentences(230))
    monkeypatch.setattr(ann, "BUILD_PAGE", 50)
    pages = list(ann._pages(mind.db, "memory_frames_vec", 7))
    assert [len(keys) for keys, _ in pages] == [50, 50, 50, 50, len(pages[-1][0])] and len(pages[-1][0]) >= 30
    stored = {row[0]: np.frombuffer(row[1], dtype=np.float32) for row in mind.db.query(
        "SELECT rowid, embedding FROM memory_frames_vec")}
    for keys, block in pages:
        assert block.dtype == np.float32 and block.flags.c_contiguous and block.shape == (len(keys), 7)
        for key, row in zip(keys, block, strict=True):
            assert np.array_equal(row, stored[int(key)][:7])
    build(mind)  # and a graph built page by page answers as the exact scan
    assert_same(ann_nearest(mind, "budget meeting friday"), exact_nearest(mind, "budget meeting friday"))


def test_a_question_embedded_after_a_graph_was_opened_does_not_crash_the_process(tmp_path):
    """usearch loaded before ONNX Runtime made the later ONNX Runtime import crash the process
    (SIGSEGV): a reconcile or a search opening the graph, then the model loaded for a question.
    Run in a fresh process, where nothing else has loaded either library yet."""
    script = (
        "from mind_core.search import ann\n"
        "ann.usearch_index()\n"
        "import onnxruntime\n"
        "print(onnxruntime.get_device())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "CPU"
