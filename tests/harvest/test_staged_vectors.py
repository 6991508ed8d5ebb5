"""Staged texts and vector chunks at archive size: one row group per chunk, each chunk reading
only its own, chunks kept across runs when their texts are the same, vectors loaded a batch at a time."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mind_core.harvest.pipeline import harvest, register_source
from mind_core.harvest.staged_vectors import embed_chunk, load_vectors, stage_pending_texts
from mind_core.harvest.staging_store import StagingStore
from mind_core.mind import Mind
from mind_core.store.reconcile import ids_needing_vectors
from mind_core.testing.dump import canonical_dump
from mind_core.testing.exports import write_chatgpt_export
from mind_core.testing.fakes import HashingEmbedder


def imported_mind(tmp_path: Path, conversations: int = 3, messages: int = 5) -> Mind:
    """A mind whose frames are imported but not yet embedded (as the Dagster chain leaves it)."""
    export = write_chatgpt_export(tmp_path / "export" / "conversations.json", conversations, messages)
    mind = Mind.open(tmp_path / "a.mind", embedder=HashingEmbedder())
    register_source(mind, "chatgpt", export, "gpt")
    harvest(mind, "gpt")
    mind.db.execute("DELETE FROM memory_frames_vec")
    mind.db.execute("UPDATE memory_frames SET embedded_hash = NULL")
    return mind


def test_each_chunk_is_one_row_group_and_reads_only_its_own(tmp_path, monkeypatch):
    with imported_mind(tmp_path) as mind:
        store = StagingStore(tmp_path.as_uri())
        staged = stage_pending_texts(mind, store.texts_url("w", "gpt"), chunk_size=4)
        assert staged.texts == 15 and len(staged.chunk_keys) == 4 and len(set(staged.chunk_keys)) == 4
        groups = pq.ParquetFile(tmp_path / "w" / "gpt.vectors" / "texts.parquet").metadata
        assert [groups.row_group(g).num_rows for g in range(groups.num_row_groups)] == [4, 4, 4, 3]
        read: list[int] = []
        original = pq.ParquetFile.read_row_group
        monkeypatch.setattr(pq.ParquetFile, "read_row_group", lambda self, g, *a, **k: read.append(g) or original(self, g, *a, **k))
        done = embed_chunk(store.texts_url("w", "gpt"), 2, 4, HashingEmbedder(), store.chunk_url("w", "gpt", staged.chunk_keys[2]))
        assert read == [2] and done.texts == 4


def test_a_second_run_keeps_the_chunks_already_embedded_and_removes_stale_ones(tmp_path):
    with imported_mind(tmp_path) as mind:
        store = StagingStore(tmp_path.as_uri())
        texts_url = store.texts_url("w", "gpt")
        first = stage_pending_texts(mind, texts_url, chunk_size=4)
        embedder = HashingEmbedder()  # records what it embeds
        made = [embed_chunk(texts_url, n, 4, embedder, store.chunk_url("w", "gpt", key)) for n, key in enumerate(first.chunk_keys[:2])]
        assert embedder.texts_embedded and not any(chunk.kept for chunk in made)
        stale = store.chunk_url("w", "gpt", "0" * 24)
        Path(stale.removeprefix("file://")).write_bytes(Path(made[0].url.removeprefix("file://")).read_bytes())
        again = stage_pending_texts(mind, texts_url, chunk_size=4)  # the run retried: the same texts
        assert again.chunk_keys == first.chunk_keys
        assert store.keep_only_chunks("w", "gpt", again.chunk_keys) == 1
        embedder.texts_embedded.clear()
        redone = [embed_chunk(texts_url, n, 4, embedder, store.chunk_url("w", "gpt", key)) for n, key in enumerate(again.chunk_keys)]
        assert [chunk.kept for chunk in redone] == [True, True, False, False]
        assert [chunk.texts for chunk in redone] == [4, 4, 4, 3]
        assert len(embedder.texts_embedded) == 7  # the two chunks not embedded before, nothing else


def test_a_chunk_made_by_another_embedder_is_embedded_again(tmp_path):
    with imported_mind(tmp_path) as mind:
        store = StagingStore(tmp_path.as_uri())
        texts_url = store.texts_url("w", "gpt")
        staged = stage_pending_texts(mind, texts_url, chunk_size=8)
        url = store.chunk_url("w", "gpt", staged.chunk_keys[0])
        embed_chunk(texts_url, 0, 8, HashingEmbedder(dimensions=512), url)
        assert not embed_chunk(texts_url, 0, 8, HashingEmbedder(), url).kept


@pytest.mark.parametrize("chunk_size", [1, 4, 100])
def test_loading_the_chunks_gives_the_minds_own_vectors(tmp_path, chunk_size):
    with imported_mind(tmp_path, 3, 5) as mind:
        store = StagingStore(tmp_path.as_uri())
        texts_url = store.texts_url("w", "gpt")
        staged = stage_pending_texts(mind, texts_url, chunk_size=chunk_size)
        urls = [embed_chunk(texts_url, n, chunk_size, HashingEmbedder(), store.chunk_url("w", "gpt", key)).url for n, key in enumerate(staged.chunk_keys)]
        loaded = load_vectors(mind, urls[1:])  # the first chunk is missing: its frames embedded at home
        assert loaded.loaded + loaded.embedded_here == 15 and loaded.embedded_here == min(chunk_size, 15)
        assert ids_needing_vectors(mind.db) == []
        loaded_dump = canonical_dump(mind)
    with Mind.open(tmp_path / "engine.mind", embedder=HashingEmbedder()) as engine:
        register_source(engine, "chatgpt", tmp_path / "export" / "conversations.json", "gpt")
        harvest(engine, "gpt")
        assert canonical_dump(engine) == loaded_dump
