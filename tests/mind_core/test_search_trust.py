"""Results a person can trust (issue #18): nonsense is not confident in a mind of code, a
question's dates are not keywords, and "last week" is read from the latest dated memory."""

from __future__ import annotations

import numpy as np
import pytest

from mind_core.cli.recall import format_recall
from mind_core.mind import Mind
from mind_core.retrieval import CombinedRetrieval
from mind_core.search import CLEAR_SIMILARITY, CONFIDENT_SIMILARITY, SearchConfig
from mind_core.snippets import bold_markdown
from tests.fakes import HashingEmbedder

PATCH_MAILS = [
    "[PATCH] mm: fix the page cache refcount in filemap_fault\n@@ -12,7 +12,7 @@",
    "Re: [PATCH v2] net: drop the stale skb before requeue\n> On Tue, 2 Nov 2010 Greg wrote:",
    "[PATCH] ext4: check the extent header before reading the tree",
]
NONSENSE = ["zxqv blorft quuxle", "lorem ipsum dolor", "kjhsd fjkhsdf 8723"]


class FixedSimilarityEmbedder(HashingEmbedder):
    """Every stored text at the same cosine similarity to every query: what a code mind gives
    nonsense (its best frame just over the cut), without a model. Queries are the texts embedded
    after ``asking`` is set."""

    def __init__(self, similarity: float) -> None:
        super().__init__(dimensions=64)
        self.similarity = similarity
        self.asking = False

    def vector(self, text: str) -> np.ndarray:
        out = np.zeros(self.dimensions, dtype=np.float32)
        if self.asking:
            out[0] = 1.0
        else:
            out[0] = self.similarity
            out[1 + _slot(text, self.dimensions - 1)] = float(np.sqrt(1.0 - self.similarity**2))
        return out


def _slot(text: str, slots: int) -> int:
    """A stable slot per text, so the frames differ from each other."""
    return sum(text.encode()) % slots


def code_mind(similarity: float) -> tuple[Mind, FixedSimilarityEmbedder]:
    embedder = FixedSimilarityEmbedder(similarity)
    mind = Mind.open(":memory:", embedder=embedder)
    mind.sessions.ensure("mails")
    frames = [mind.frames.create_i_frame("mails", text, created_at="2010-11-02T10:00:00Z") for text in PATCH_MAILS]
    mind.search.index_frames_batch(frames)
    embedder.asking = True
    return mind, embedder


@pytest.mark.parametrize("query", NONSENSE)
def test_nonsense_just_over_the_cut_is_not_confident_in_a_mind_of_code(query):
    mind, _ = code_mind(0.3312)
    results = mind.search.search(query)
    assert results and results[0].similarity == pytest.approx(0.3312, abs=1e-3)
    assert results[0].similarity >= CONFIDENT_SIMILARITY  # the old single cut called this a match
    assert not any(r.confident for r in results)


def test_a_similarity_over_the_cut_counts_with_a_keyword_of_the_query_in_the_frame():
    mind, _ = code_mind(0.3312)
    results = mind.search.search("refcount bug in the page cache")
    assert results[0].frame.content == PATCH_MAILS[0]
    assert results[0].confident
    assert not any(r.confident for r in results[1:])  # they hold none of its words


def test_a_clearly_close_meaning_is_confident_without_shared_words():
    mind, _ = code_mind(CLEAR_SIMILARITY + 0.01)
    assert all(r.confident for r in mind.search.search("zxqv blorft quuxle"))


# -- a question's dates are not keywords --------------------------------------------------------
def dated_mind() -> Mind:
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.search.config = SearchConfig()
    mind.sessions.ensure("mails")
    texts = [
        ("2010-06-14T09:00:00Z", "Linus: merged the scheduler rework for the next release"),
        ("2010-11-20T09:00:00Z", "> On Tue, 2 Nov 2010 Linus wrote: the scheduler rework is merged"),
        ("2010-11-21T09:00:00Z", "Greg: the last stable release went out"),
    ]
    frames = [mind.frames.create_i_frame("mails", text, created_at=when) for when, text in texts]
    mind.search.index_frames_batch(frames)
    return mind


def test_the_words_of_a_parsed_date_do_not_feed_the_keyword_lane():
    mind = dated_mind()
    results = mind.search.search("what happened in June 2010", explain=True)
    by_text = {r.frame.content: r.explain for r in results}
    quoted = by_text["> On Tue, 2 Nov 2010 Linus wrote: the scheduler rework is merged"]
    assert quoted["keyword_rank"] is None  # the "2010" of its quoted header no longer counts
    assert results[0].frame.content.startswith("Linus: merged")  # the one inside the window
    noted = mind.search.search("what was discussed last week", explain=True)
    assert all(r.explain["keyword_rank"] is None for r in noted)  # "last" is not a keyword


def test_a_question_of_only_a_date_finds_the_memories_of_that_time():
    mind = dated_mind()
    mind.sessions.ensure("later")
    later = [
        mind.frames.create_i_frame("later", f"Greg: review round {n}", created_at=f"2011-0{n}-01T09:00:00Z")
        for n in range(1, 4)
    ]
    mind.search.index_frames_batch(later)
    mind.search.config = SearchConfig(lane_depth=2)  # the vector lane alone would not reach June 2010
    results = mind.search.search("what happened in June 2010", limit=1, explain=True)
    assert results[0].frame.content.startswith("Linus: merged")
    assert results[0].explain["keyword_lane"] == "time window" and results[0].explain["keyword_rank"] == 0
    lines = explained(mind, "what happened in June 2010")
    assert "time window rank 1," in lines[0]


def test_a_date_phrase_still_matches_as_a_whole_phrase():
    mind = dated_mind()
    mind.sessions.ensure("chat")
    told = mind.frames.create_i_frame(
        "chat", "Melanie: our camping trip last year was the best", created_at="2010-11-10T09:00:00Z"
    )
    mind.search.index_frames_batch([told])
    results = mind.search.search("what did we see on the camping trip last year", explain=True)
    assert results[0].frame.content == told.content
    by_text = {r.frame.content: r.explain for r in results}
    assert by_text["Greg: the last stable release went out"]["keyword_rank"] is None  # "last" alone


def test_a_question_without_a_window_keeps_its_words_as_keywords():
    mind = dated_mind()
    results = mind.search.search("the last stable release", explain=True)
    assert results[0].frame.content == "Greg: the last stable release went out"
    assert results[0].explain["keyword_rank"] == 0


def test_the_words_of_a_window_no_memory_is_near_stay_keywords():
    # 2019 is nine years from every memory: no time of this mind, so "last" may be the topic
    results = dated_mind().search.search("the last stable release in 2019", explain=True)
    assert results[0].frame.content == "Greg: the last stable release went out"
    assert results[0].explain["keyword_rank"] == 0 and "time_window_ignored" in results[0].explain


def test_a_window_far_from_every_candidate_is_reported_as_ignored():
    mind = dated_mind()
    results = mind.search.search("scheduler rework in May 2023", explain=True)
    assert "time_score" not in results[0].explain
    assert "2023-05-01..2023-06-01" in results[0].explain["time_window_ignored"]


# -- the "now" of relative dates --------------------------------------------------------------------
def test_relative_dates_are_read_from_the_latest_memory_with_a_date_of_its_own():
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.sessions.ensure("chat")
    mind.sessions.ensure("vault")
    dated = [
        mind.frames.create_i_frame("chat", "we planned the garden beds", created_at="2023-03-06T10:00:00Z"),
        mind.frames.create_i_frame("chat", "we planned the garden fence", created_at="2023-01-10T10:00:00Z"),
    ]
    copied = mind.frames.create_i_frame(
        "vault",
        "garden ideas",
        created_at="2026-11-30T10:00:00Z",
        metadata={"source": {"message": {"dated_by": "file"}}},
    )
    mind.search.index_frames_batch([*dated, copied])
    # the latest dated memory is 6 March 2023: "last week" is the week before, not November 2026's
    results = mind.search.search("what did we plan for the garden last week", explain=True)
    first = results[0]
    assert first.frame.content == "we planned the garden beds"
    assert "2023-02-27..2023-03-06" in first.explain["time_window"]


def test_a_mind_of_only_file_dated_notes_reads_relative_dates_from_them():
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.sessions.ensure("vault")
    undated = {"source": {"message": {"dated_by": "file"}}}
    frames = [
        mind.frames.create_i_frame("vault", "garden beds plan", created_at="2024-05-20T10:00:00Z", metadata=undated),
        mind.frames.create_i_frame("vault", "garden fence plan", created_at="2024-05-13T10:00:00Z", metadata=undated),
    ]
    mind.search.index_frames_batch(frames)
    results = mind.search.search("garden plan last week", explain=True)
    assert "2024-05-13..2024-05-20" in results[0].explain["time_window"]
    assert results[0].frame.content == "garden fence plan"


# -- explain a person can read ------------------------------------------------------------------
def explained(mind: Mind, query: str) -> list[str]:
    result = CombinedRetrieval(mind, record_access_on_recall=False).search(query, explain=True, scope="workspace")
    lines = [part for part in format_recall(result, True, bold_markdown) if isinstance(part, str)]
    return [line for text in lines for line in text.splitlines() if line.startswith("#")]


def test_explain_counts_ranks_from_one_and_names_an_ignored_window():
    lines = explained(dated_mind(), "scheduler rework in May 2023")
    assert "keyword rank 1," in lines[0]  # the JSON's keyword_rank 0
    assert "time window 2023-05-01..2023-06-01 (May 2023) ignored: no memory near it" in lines[0]


def test_explain_says_when_only_the_neighbouring_turn_brought_a_frame_in():
    mind = Mind.open(":memory:", embedder=None)  # the keyword lane alone: no vector rank for every frame
    mind.sessions.ensure("chat")
    mind.frames.create_i_frame("chat", "Melanie: the pottery class was great", created_at="2023-06-01T10:00:00Z")
    mind.frames.create_i_frame("chat", "Caroline: I loved the bowl you made", created_at="2023-06-01T10:01:00Z")
    lines = explained(mind, "pottery class")
    assert "keyword rank 1, vector rank -" in lines[0]
    assert "via neighbouring turn" in lines[1] and "keyword rank" not in lines[1]
