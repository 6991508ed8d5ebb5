import logging
import re
from datetime import timedelta

import pytest

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.mind import Mind
from mind_core.store.frames import IMPORTANCE_MULTIPLIERS, get_importance_multiplier
from mind_core.timestamps import format_utc, parse_instant, utc_now


@pytest.fixture
def mind():
    m = Mind.open(":memory:")
    m.sessions.ensure("g")
    yield m
    m.close()


def fts_ids(mind, term):
    return [r[0] for r in mind.db.query("SELECT rowid FROM memory_frames_fts WHERE content MATCH ?", (term,))]


def test_t_increases_from_zero_across_frame_types(mind):
    i = mind.frames.create_i_frame("g", "first")
    p = mind.frames.create_p_frame("g", "second", i.id)
    b = mind.frames.create_b_frame("g", "third", i.id, [i.id, p.id])
    assert [i.t, p.t, b.t] == [0, 1, 2]
    assert i.base_frame_id is None and p.base_frame_id == i.id
    assert mind.frames.get_b_frame_references(b.id) == [i.id, p.id]
    assert mind.frames.get_b_frame_references(i.id) == []


def test_reconstruct_state_and_windows(mind):
    assert mind.frames.reconstruct_state("g") == {"iframe": None, "pframes": []}
    i1 = mind.frames.create_i_frame("g", "keyframe one")
    mind.frames.create_p_frame("g", "delta a", i1.id)
    i2 = mind.frames.create_i_frame("g", "keyframe two")
    pb = mind.frames.create_p_frame("g", "delta b", i2.id)
    pc = mind.frames.create_p_frame("g", "delta c", i2.id)
    state = mind.frames.reconstruct_state("g")
    assert state["iframe"].id == i2.id
    assert [p.id for p in state["pframes"]] == [pb.id, pc.id]
    assert [f.t for f in mind.frames.get_gop_frames("g")] == [0, 1, 2, 3, 4]


def test_created_at_is_honoured_normalized_and_original_kept(mind):
    frame = mind.frames.create_i_frame("g", "dated", created_at="2025-12-01T14:32:00+02:00")
    assert frame.created_at == "2025-12-01T12:32:00.000Z" == frame.last_accessed
    assert frame.metadata["original_created_at"] == "2025-12-01T14:32:00+02:00"
    stored = mind.frames.get_by_id(frame.id)
    assert stored.created_at == "2025-12-01T12:32:00.000Z"
    z = mind.frames.create_i_frame("g", "zulu", created_at="2025-12-01T14:32:00Z")
    assert z.created_at == "2025-12-01T14:32:00.000Z"


@pytest.mark.parametrize(
    "bad", [None, "not-a-valid-iso-string", "2025-13-45T99:00:00Z", "2025-12-01 14:32:00", "9999-12-31T23:59:59-01:00"]
)
def test_bad_created_at_falls_back_to_now_with_warning(mind, caplog, bad):
    with caplog.at_level(logging.WARNING):
        frame = mind.frames.create_i_frame("g", f"undated {bad}", created_at=bad)
    age = utc_now() - parse_instant(frame.created_at)
    assert abs(age.total_seconds()) < 5
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z", frame.created_at)
    if bad is not None:
        assert repr(bad) in caplog.text


def test_dedup_returns_the_same_frame_and_touches_it(mind):
    first = mind.frames.create_i_frame("g", "Remember the milk")
    again = mind.frames.create_i_frame("g", "  Remember the milk\n")
    prefixed = mind.frames.create_i_frame("g", "[hm session:s1 src:claude-code event:x] Remember the milk")
    assert again.id == first.id == prefixed.id
    assert not again.inserted and first.inserted
    assert mind.frames.get_by_id(first.id).access_count == 2


def test_dedup_is_not_windowed_after_10000_frames(mind):
    first = mind.frames.create_i_frame("g", "the very first frame")
    with mind.db.transaction():
        for i in range(10_000):
            mind.frames.create_i_frame("g", f"filler frame {i}")
    assert mind.frames.create_i_frame("g", "the very first frame").id == first.id
    assert mind.frames.get_stats()["total"] == 10_001


def test_update_rewrites_content_fts_and_drops_vector(mind):
    frame = mind.frames.create_i_frame("g", "original wording")
    mind.db.execute("INSERT INTO memory_frames_vec (rowid, embedding) VALUES (?, ?)", (frame.id, b"\x00" * 4096))
    updated = mind.frames.update(frame.id, "rewritten sentence", "important")
    assert updated.content == "rewritten sentence" and updated.importance == "important"
    assert fts_ids(mind, "rewritten") == [frame.id]
    assert fts_ids(mind, "original") == []
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames_vec WHERE rowid = ?", (frame.id,)) == 0
    assert mind.frames.update(999, "x") is None


def test_delete_cascades_and_keeps_dependents(mind):
    i = mind.frames.create_i_frame("g", "base frame text")
    p = mind.frames.create_p_frame("g", "dependent delta", i.id)
    mind.db.execute("INSERT INTO memory_frames_vec (rowid, embedding) VALUES (?, ?)", (i.id, b"\x00" * 4096))
    mind.db.execute("INSERT INTO knowledge_entities (entity_type, name) VALUES ('concept', 'Base')")
    mind.db.execute("INSERT INTO kg_entity_frames VALUES (1, ?)", (i.id,))
    assert mind.frames.delete(i.id)
    assert mind.frames.get_by_id(i.id) is None
    assert fts_ids(mind, "base") == []
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames_vec") == 0
    assert mind.db.scalar("SELECT COUNT(*) FROM kg_entity_frames") == 0
    assert mind.frames.get_by_id(p.id).base_frame_id is None
    assert not mind.frames.delete(i.id)


def old_timestamp(days):
    return format_utc(utc_now() - timedelta(days=days))


def test_compact_prunes_old_temporary_and_deprecated_without_orphans(mind):
    old_temp = mind.frames.create_i_frame("g", "old scratch", "temporary", created_at=old_timestamp(100))
    mind.frames.create_p_frame("g", "refers to scratch", old_temp.id)
    mind.frames.create_i_frame("g", "fresh scratch", "temporary")
    mind.frames.create_i_frame("g", "old deprecated", "deprecated", created_at=old_timestamp(120))
    mind.frames.create_i_frame("g", "recent deprecated", "deprecated", created_at=old_timestamp(10))
    result = mind.frames.compact(30, 90)
    assert (result.temporary_pruned, result.deprecated_pruned) == (1, 1)
    orphans = mind.db.scalar("SELECT COUNT(*) FROM memory_frames_fts WHERE rowid NOT IN (SELECT id FROM memory_frames)")
    assert orphans == 0
    assert mind.db.scalar("PRAGMA foreign_key_check") is None


def test_compact_folds_long_p_frame_chains(mind):
    i = mind.frames.create_i_frame("g", "state zero")
    mind.db.execute("INSERT INTO memory_frames_vec (rowid, embedding) VALUES (?, ?)", (i.id, b"\x00" * 4096))
    pframes = [mind.frames.create_p_frame("g", f"change {n}", i.id) for n in range(12)]
    result = mind.frames.compact()
    assert result.p_frames_merged == 7
    merged = mind.frames.get_by_id(i.id)
    assert merged.content == "\n---\n".join(["state zero"] + [f"change {n}" for n in range(7)])
    assert [p.id for p in mind.frames.get_p_frames_since_last_i("g")] == [p.id for p in pframes[7:]]
    assert fts_ids(mind, '"change 3"') == [i.id]
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames_vec") == 0  # stale vector dropped
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames_fts") == 6


def test_stats_recent_and_touch(mind):
    a = mind.frames.create_i_frame("g", "First")
    mind.frames.create_i_frame("g", "Second", "critical")
    c = mind.frames.create_i_frame("g", "Third")
    mind.frames.create_p_frame("g", "Fourth", a.id)
    stats = mind.frames.get_stats()
    assert stats["total"] == 4 and stats["byType"] == {"I": 3, "P": 1, "B": 0}
    assert stats["byImportance"]["critical"] == 1
    assert [f.content for f in mind.frames.get_recent(2)] == ["Fourth", "Third"]
    assert mind.frames.touch(c.id) == 1 and mind.frames.touch(c.id) == 2
    assert mind.frames.touch(12345) is None
    assert IMPORTANCE_MULTIPLIERS["deprecated"] == 0.3 and get_importance_multiplier("critical") == 2.0


def test_recent_filtered_compares_instants_across_formats(mind):
    late = mind.frames.create_i_frame("g", "late", created_at="2024-03-01T23:30:00-05:00")  # 04:30Z on the 2nd
    early = mind.frames.create_i_frame("g", "early", created_at="2024-03-01T10:00:00Z")
    mind.db.execute(
        "INSERT INTO memory_frames (frame_type, gop_id, t, content, created_at) VALUES ('I','g',9,'legacy','2024-03-01 12:00:00')"
    )
    on_first = mind.frames.get_recent_filtered(10, since="2024-03-01", until="2024-03-01")
    assert {f.content for f in on_first} == {"early", "legacy"}
    after_noon = mind.frames.get_recent_filtered(10, since="2024-03-01T12:00:01Z")
    assert [f.id for f in after_noon] == [late.id]
    assert early.id not in [f.id for f in after_noon]
    with pytest.raises(InvalidInputError):
        mind.frames.get_recent_filtered(10, since="yesterday")


@pytest.mark.parametrize(
    "kwargs",
    [{"importance": "huge"}, {"source": "team_sync"}, {"content": None}],
)
def test_invalid_input_is_refused_without_writing(mind, kwargs):
    args = {"gop_id": "g", "content": "text"} | kwargs
    with pytest.raises(InvalidInputError):
        mind.frames.create_i_frame(**args)
    assert mind.frames.get_stats()["total"] == 0


def test_unknown_ids_are_clear_errors(mind):
    with pytest.raises(NotFoundError, match="unknown session"):
        mind.frames.create_i_frame("no-such-session", "text")
    with pytest.raises(NotFoundError, match="base frame 77"):
        mind.frames.create_p_frame("g", "delta", 77)
    assert mind.frames.get_stats()["total"] == 0
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames_fts") == 0


def test_create_i_frames_batch_dedups_orders_t_and_indexes(mind):
    from mind_core.store.frames import NewFrame

    mind.sessions.ensure("h")
    old = mind.frames.create_i_frame("g", "already here")
    out = mind.frames.create_i_frames(
        [
            NewFrame("g", "alpha"),
            NewFrame("h", "beta"),
            NewFrame("g", "already here"),
            NewFrame("g", "alpha"),
            NewFrame("g", "gamma", created_at="2024-01-01T00:00:00+01:00", metadata={"k": 1}),
        ]
    )
    assert [f.inserted for f in out] == [True, True, False, False, True]
    assert out[2].id == old.id and out[3].id == out[0].id
    assert [out[0].t, out[1].t, out[4].t] == [1, 0, 2]
    assert out[4].created_at == "2023-12-31T23:00:00.000Z" and out[4].metadata["k"] == 1
    assert fts_ids(mind, "gamma") == [out[4].id]
    later = mind.frames.create_i_frame("g", "delta after batch")
    assert later.id == out[4].id + 1 and later.t == 3
    with pytest.raises(NotFoundError):
        mind.frames.create_i_frames([NewFrame("nope", "x")])
    assert mind.frames.get_stats()["total"] == 5
