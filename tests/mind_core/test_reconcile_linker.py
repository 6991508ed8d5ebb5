import pytest

from mind_core.mind import Mind
from mind_core.search.linker import DEFAULT_LINK_THRESHOLD, MemoryLinker
from mind_core.store import reconcile
from mind_core.testing.fakes import HashingEmbedder


@pytest.fixture
def mind():
    m = Mind.open(":memory:", embedder=HashingEmbedder())
    m.sessions.ensure("g")
    yield m
    m.close()


def add_unindexed(mind, texts):
    return [mind.frames.create_i_frame("g", t) for t in texts]


def test_in_sync_mind_reconciles_to_zero(mind):
    assert reconcile.reconcile_indexes(mind.db, mind.embedder) == reconcile.ReconcileResult(0, 0, 0)
    frames = add_unindexed(mind, ["alpha note", "beta note"])
    mind.search.index_frames_batch(frames)
    assert reconcile.reconcile_indexes(mind.db, mind.embedder) == reconcile.ReconcileResult(0, 0, 0)


def test_missing_fts_rows_are_repaired_and_searchable(mind):
    frames = add_unindexed(mind, ["zebra crossing", "yak shaving", "walrus song"])
    mind.db.execute("DELETE FROM memory_frames_fts WHERE rowid IN (?, ?)", (frames[0].id, frames[2].id))
    assert mind.search.keyword_search("zebra", 5) == []
    assert reconcile.reconcile_fts_index(mind.db) == 2
    assert mind.search.keyword_search("zebra", 5) == [frames[0].id]
    assert reconcile.reconcile_fts_index(mind.db) == 0


def test_vectors_are_embedded_and_written_a_batch_at_a_time(mind):
    frames = add_unindexed(mind, [f"frame about topic {i}" for i in range(120)])
    seen = []
    pairs = [(f.id, f.content) for f in frames]
    assert mind.search.vectors.index_frames(pairs, batch_size=50, progress=lambda *p: seen.append(p)) == 120
    assert mind.embedder.calls == 3 and seen == [(50, 120), (100, 120), (120, 120)]
    assert mind.doctor().ok


def test_missing_and_stale_vectors_are_embedded_in_one_call_per_batch(mind):
    frames = add_unindexed(mind, [f"frame about topic {i}" for i in range(120)])
    embedder = mind.embedder
    seen = []
    assert reconcile.reconcile_vec_index(mind.db, embedder, lambda *p: seen.append(p)) == 120
    assert embedder.calls == 1 and seen == [(120, 120)]  # fewer than EMBED_BATCH frames
    mind.frames.update(frames[0].id, "rewritten content about giraffes")
    mind.db.execute("UPDATE memory_frames SET embedded_hash = 'old' WHERE id = ?", (frames[1].id,))
    report = mind.doctor()
    assert report.count("vec_missing") == 1 and report.count("vec_stale") == 1 and not report.ok
    assert reconcile.reconcile_vec_index(mind.db, embedder) == 2
    assert mind.search.vector_search("giraffes rewritten", 1) == [frames[0].id]
    assert mind.doctor().ok


def test_orphans_are_swept(mind):
    frames = add_unindexed(mind, ["one", "two"])
    mind.search.index_frames_batch(frames)
    mind.db.execute("DELETE FROM memory_frames WHERE id = ?", (frames[1].id,))  # behind the store's back
    report = mind.doctor()
    assert report.count("fts_orphans") == 1 and report.count("vec_orphans") == 1
    assert reconcile.clean_orphan_fts(mind.db) == 1
    assert reconcile.clean_orphan_vectors(mind.db) == 1
    assert mind.doctor().ok


def test_reconcile_without_embedder_repairs_fts_only(mind):
    frames = add_unindexed(mind, ["lonely frame"])
    mind.db.execute("DELETE FROM memory_frames_fts")
    assert reconcile.reconcile_indexes(mind.db) == reconcile.ReconcileResult(
        fts_fixed=1, vectors_fixed=0, orphans_removed=0
    )
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames_vec WHERE rowid = ?", (frames[0].id,)) == 0


def test_doctor_repair_fixes_everything(mind):
    frames = add_unindexed(mind, ["red", "green", "blue"])
    mind.db.execute("DELETE FROM memory_frames_fts WHERE rowid = ?", (frames[0].id,))
    report = mind.doctor(repair=True)
    assert set(report.problems) == {"fts_missing", "vec_missing"}
    assert report.repaired == reconcile.ReconcileResult(fts_fixed=1, vectors_fixed=3, orphans_removed=0)
    assert report.after is not None and report.after.ok and report.healthy
    assert report.to_dict()["after"]["ok"] and report.to_dict()["problems"] == report.problems


def test_linker_threshold_is_reachable_with_real_scores(mind):
    frames = add_unindexed(
        mind,
        [
            "Alice decided to migrate the billing service to PostgreSQL",
            "The billing service migration to PostgreSQL starts Monday",
            "Lunch menu: soup and sandwiches",
        ],
    )
    mind.search.index_frames_batch(frames)
    links = MemoryLinker(mind.search).find_related(
        "billing service PostgreSQL migration", exclude_frame_id=frames[0].id
    )
    assert [link.frame_id for link in links][0] == frames[1].id
    assert all(link.score >= DEFAULT_LINK_THRESHOLD for link in links)
    assert frames[0].id not in [link.frame_id for link in links]
    assert all(link.frame_id != frames[2].id for link in links)  # unrelated stays below the threshold


def test_linker_limit_and_mapping(mind):
    frames = add_unindexed(mind, [f"shared words here {i}" for i in range(10)])
    mind.search.index_frames_batch(frames)
    links = MemoryLinker(mind.search, threshold=0.0).find_related("shared words here", limit=5)
    assert len(links) == 5
    assert {link.content for link in links} <= {f.content for f in frames}


def test_a_deleted_chunk_vector_is_reported_and_repaired(mind):
    long_text = " ".join(f"word{i}" for i in range(600))
    frame = add_unindexed(mind, [long_text])[0]
    mind.search.index_frames_batch([frame])
    chunk_id = mind.db.scalar("SELECT MIN(id) FROM memory_frame_chunks WHERE frame_id = ?", (frame.id,))
    mind.db.execute("DELETE FROM memory_frame_chunks_vec WHERE rowid = ?", (chunk_id,))
    report = mind.doctor()
    # deleted behind the vector index's back: its quantized companion lags as well (issue #19)
    assert report.count("vec_chunks_missing") == 1 and report.problems == ["vec_chunks_missing", "vec_bits"]
    repaired = mind.doctor(repair=True)
    assert repaired.repaired.vectors_fixed == 1 and repaired.after.ok
    chunks = mind.db.scalar("SELECT COUNT(*) FROM memory_frame_chunks WHERE frame_id = ?", (frame.id,))
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frame_chunks_vec") == chunks > 0


def test_a_long_frame_whose_chunks_are_gone_is_reported_and_repaired(mind):
    long_text = " ".join(f"word{i}" for i in range(600))
    frame = add_unindexed(mind, [long_text])[0]
    mind.search.index_frames_batch([frame])
    mind.db.execute("DELETE FROM memory_frame_chunks_vec")
    mind.db.execute("DELETE FROM memory_frame_chunks")
    assert mind.doctor().count("vec_chunks_missing") == 1
    assert reconcile.reconcile_vec_index(mind.db, mind.embedder) == 1
    assert mind.doctor().ok
