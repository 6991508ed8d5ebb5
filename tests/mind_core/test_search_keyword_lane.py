"""The keyword lane at archive size: BM25 order under SQLite's top-k sorter, the frames table joined
only for a scope (an orphaned index row still never comes back), and the common-word counts kept
until the mind changes."""

from __future__ import annotations

from mind_core.mind import Mind
from mind_core.search.config import SearchConfig
from mind_core.search.lanes import Scope
from mind_core.store.frames import NewFrame

TEXTS = [
    *(f"alice talked about the weather and the garden {i}" for i in range(40)),
    "bob likes pottery and the garden",
    "alice likes pottery",
    "pottery pottery class on friday",
    "the garden party on friday",
]


def written(mind: Mind, texts: list[str]) -> dict[str, int]:
    mind.sessions.ensure("g")
    return {f.content: f.id for f in mind.frames.create_i_frames([NewFrame("g", t) for t in texts])}


def fts5_rank_order(mind: Mind, expression: str, limit: int) -> list[int]:
    """The order FTS5's own ``ORDER BY rank`` gives: what the lane returned before."""
    rows = mind.db.query(
        "SELECT rowid FROM memory_frames_fts WHERE memory_frames_fts MATCH ? ORDER BY rank LIMIT ?", (expression, limit)
    )
    return [row[0] for row in rows]


def test_the_lane_ranks_as_fts5s_rank_does_ties_included(tmp_path):
    with Mind.open(tmp_path / "rank.mind") as mind:
        written(mind, TEXTS)
        for query in ("alice garden", "pottery friday", "weather", "the garden party"):
            expression = mind.search.keyword_match(query)
            for limit in (3, 10, 100):
                assert mind.search.keyword_search(query, limit) == fts5_rank_order(mind, expression, limit)


def test_an_orphaned_index_row_is_never_a_hit_with_or_without_a_scope(tmp_path):
    with Mind.open(tmp_path / "orphan.mind") as mind:
        ids = written(mind, TEXTS)
        gone = ids["alice likes pottery"]
        with mind.db.transaction():  # the frame goes, its FTS row stays (what reconcile repairs)
            mind.db.execute("DELETE FROM memory_frames WHERE id = ?", (gone,))
        assert mind.db.scalar("SELECT count(*) FROM memory_frames_fts WHERE rowid = ?", (gone,)) == 1
        found = mind.search.keyword_search("alice pottery", 100)
        assert gone not in found
        assert ids["bob likes pottery and the garden"] in found and ids["pottery pottery class on friday"] in found
        scoped = mind.search.keyword_lane.hits("alice pottery", 100, Scope(gop_id="g"))
        assert [hit.frame_id for hit in scoped] == found


def test_a_word_that_becomes_common_is_counted_again_once_the_mind_changes(tmp_path):
    with Mind.open(tmp_path / "common.mind") as mind:
        written(mind, [f"note {i} about the weather" for i in range(40)] + ["pottery class", "pottery glaze"])
        mind.search.config = SearchConfig(keyword_split_frames=0)
        assert mind.search.keyword_match("weather pottery") == '("pottery") AND ("weather" OR "pottery")'
        written(mind, [f"pottery wheel number {i}" for i in range(40)])  # pottery is common now
        assert mind.search.keyword_match("weather pottery") == '"weather" OR "pottery"'
