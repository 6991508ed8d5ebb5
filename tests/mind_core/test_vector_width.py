"""The width a mind stores its vectors at: the model's own for a new mind, the original engine's
1024 when asked for, and an existing mind's own whatever the embedder's."""

from __future__ import annotations

import numpy as np
import pytest

from mind_core.embeddings import InprocessEmbedder, MockEmbedder, create_embedding_provider
from mind_core.embeddings.base import DIMENSIONS_ENV, requested_dimensions
from mind_core.errors import FingerprintMismatchError, InvalidInputError
from mind_core.mind import Mind
from mind_core.query.service import SerializedEmbedder
from mind_core.store.schema import get_meta, vec_dimensions

TEXTS = ["budget meeting moved to friday", "the cat sleeps on the sofa", "rust borrow checker errors"]


def _fill(mind: Mind, texts: list[str] = TEXTS) -> list[int]:
    mind.sessions.ensure("g")
    frames = [mind.frames.create_i_frame("g", text) for text in texts]
    mind.search.index_frames_batch(frames)
    return [frame.id for frame in frames]


def _stored_widths(mind: Mind) -> set[int]:
    return {len(blob) // 4 for (blob,) in mind.db.query("SELECT embedding FROM memory_frames_vec")}


def test_a_new_mind_stores_vectors_at_the_embedders_own_width(tmp_path):
    with Mind.open(tmp_path / "native.mind", embedder=MockEmbedder(384)) as mind:
        _fill(mind)
        assert vec_dimensions(mind.db) == vec_dimensions(mind.db, "memory_frame_chunks_vec") == 384
        assert _stored_widths(mind) == {384}
        assert get_meta(mind.db, "embedding_dim") == "384"


def test_the_original_width_can_be_asked_for(tmp_path):
    with Mind.open(tmp_path / "shared.mind", embedder=MockEmbedder(384), dimensions=1024) as mind:
        _fill(mind)
        assert _stored_widths(mind) == {1024}
        assert get_meta(mind.db, "embedding_dim") == "1024"


def test_a_1024_mind_keeps_its_width_and_still_searches_with_a_native_embedder(tmp_path):
    path = tmp_path / "old.mind"
    with Mind.open(path, embedder=MockEmbedder(1024)) as mind:
        ids = _fill(mind)
        before = [r.frame.id for r in mind.search.search(TEXTS[1], limit=3)]
    with Mind.open(path, embedder=MockEmbedder(384)) as mind:
        assert mind.embedder is not None and mind.embedder.dimensions == 1024
        assert [r.frame.id for r in mind.search.search(TEXTS[1], limit=3)] == before
        assert mind.search.vector_search(TEXTS[2], 1) == [ids[2]]
        _fill(mind, ["a new frame written later"])
        assert _stored_widths(mind) == {1024}
        assert get_meta(mind.db, "embedding_dim") == "1024"
        assert mind.doctor().ok


def test_a_mind_made_without_an_embedder_takes_the_first_embedders_width(tmp_path):
    path = tmp_path / "sources-first.mind"
    Mind.open(path).close()  # e.g. `mind sources add`: no embedder yet
    with Mind.open(path, embedder=MockEmbedder(384)) as mind:
        assert vec_dimensions(mind.db) == 384
        _fill(mind)
    with Mind.open(path, embedder=MockEmbedder(1024)) as mind:  # vectors exist now: the width stays
        assert vec_dimensions(mind.db) == 384
        assert mind.search.vector_search(TEXTS[0], 1)


def test_reindex_moves_a_1024_mind_to_the_native_width(tmp_path):
    path = tmp_path / "move.mind"
    with Mind.open(path, embedder=MockEmbedder(1024)) as mind:
        ids = _fill(mind)
    with Mind.open(path, embedder=MockEmbedder(384), rebuild_vectors=True) as mind:
        assert vec_dimensions(mind.db) == vec_dimensions(mind.db, "memory_frame_chunks_vec") == 384
        assert mind.reconcile().vectors_fixed == len(ids)
        assert _stored_widths(mind) == {384}
        assert get_meta(mind.db, "embedding_dim") == "384"
        assert mind.search.vector_search(TEXTS[2], 1) == [ids[2]]
        assert mind.doctor().ok


def test_another_model_is_still_refused_whatever_the_width(tmp_path):
    path = tmp_path / "fp.mind"
    with Mind.open(path, embedder=MockEmbedder(1024)) as mind:
        _fill(mind)
    other = MockEmbedder(384)
    other.model_name = "another-model"
    with pytest.raises(FingerprintMismatchError, match=r"deterministic-mock \(1024 dims.*another-model \(1024 dims.*mind reindex"):
        Mind.open(path, embedder=other)
    report = Mind.open(path).doctor()
    assert report.stored_fingerprint is not None and report.stored_fingerprint["embedding_dim"] == "1024"


def test_provider_width_comes_from_the_argument_the_environment_or_the_model():
    assert requested_dimensions(None, {}) is None
    assert requested_dimensions(None, {DIMENSIONS_ENV: "1024"}) == 1024
    assert requested_dimensions(None, {DIMENSIONS_ENV: "native"}) is None
    assert requested_dimensions(512, {DIMENSIONS_ENV: "1024"}) == 512
    for bad in ("wide", "0", "-3"):
        with pytest.raises(InvalidInputError, match=DIMENSIONS_ENV):
            requested_dimensions(None, {DIMENSIONS_ENV: bad})
    native = create_embedding_provider("inprocess", lazy=True, env={})
    assert native.dimensions == 384 and native.get_status()["dimensions"] == 384
    assert create_embedding_provider("inprocess", lazy=True, env={DIMENSIONS_ENV: "1024"}).dimensions == 1024
    padded = native.at_width(1024)
    assert padded.dimensions == 1024 and padded.provider == "inprocess" and native.dimensions == 384
    shared = SerializedEmbedder(native)
    assert shared.at_width(1024).dimensions == 1024 and shared.at_width(384) is shared


@pytest.mark.real_model
@pytest.mark.slow
def test_real_model_native_and_padded_minds_rank_alike(real_embedder, tmp_path):
    native = InprocessEmbedder(backend=real_embedder.backend)
    assert native.dimensions == 384
    texts = [*TEXTS, "sales figures went up last quarter", "deep neural networks learn features"]
    rankings = []
    for name, embedder in (("padded", real_embedder), ("native", native)):
        with Mind.open(tmp_path / f"{name}.mind", embedder=embedder) as mind:
            _fill(mind, texts)
            assert _stored_widths(mind) == {embedder.dimensions}
            rankings.append(
                [(hit, round(d, 5)) for hit, d in mind.search.vectors.knn(mind.search.vectors.embed_query("revenue grew"), 5)]
            )
    assert rankings[0] == rankings[1]
    np.testing.assert_array_equal(real_embedder.embed("x")[:384], native.embed("x"))
