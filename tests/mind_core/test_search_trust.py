"""Results a person can trust (issue #18): nonsense is not confident in a mind of code, a
question's dates are not keywords, "last week" is read from the latest memory with a time of its
own, a time that is not a memory's own (its file's, the harvest's) earns no recency, a question
that is only a date is confidently answered from its window, and explain's arithmetic adds up."""

from __future__ import annotations

import re
from datetime import timedelta

import numpy as np
import pytest

from mind_core.cli.output import TableView
from mind_core.cli.recall import format_recall
from mind_core.harvest.importer import import_items
from mind_core.harvest.items import HarvestItem, HarvestMessage
from mind_core.mind import Mind
from mind_core.query.models.recall import RecallResponse
from mind_core.query.models.requests import RecallRequest
from mind_core.retrieval import CombinedRetrieval, record_access
from mind_core.search.config import SearchConfig
from mind_core.search.results import CLEAR_SIMILARITY, CONFIDENT_SIMILARITY
from mind_core.search.scoring import HARVEST_TIME, SCORING_PROFILES, borrowed_time, borrowed_time_sql
from mind_core.search.snippets import bold_markdown
from mind_core.testing.fakes import HashingEmbedder
from mind_core.timestamps import format_utc, utc_now

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


def test_the_now_of_relative_dates_follows_memories_written_after_the_first_question(tmp_path):
    """The latest dated memory is remembered between questions, until the mind changes: through
    this connection or through another one (a harvest in another process)."""
    path = tmp_path / "garden.mind"
    mind = Mind.open(path, embedder=HashingEmbedder())
    mind.sessions.ensure("chat")
    mind.sessions.ensure("vault")
    first = mind.frames.create_i_frame("chat", "we planned the garden beds", created_at="2023-03-06T10:00:00Z")
    copied = mind.frames.create_i_frame(
        "vault", "garden ideas", created_at="2026-11-30T10:00:00Z",
        metadata={"source": {"message": {"dated_by": "file"}}},
    )
    mind.search.index_frames_batch([first, copied])
    question = "what did we plan for the garden last week"
    assert "2023-02-27..2023-03-06" in mind.search.search(question, explain=True)[0].explain["time_window"]
    mind.frames.create_i_frame("chat", "we planned the garden path", created_at="2023-05-08T10:00:00Z")
    assert "2023-05-01..2023-05-08" in mind.search.search(question, explain=True)[0].explain["time_window"]
    with Mind.open(path, embedder=HashingEmbedder()) as other:
        other.frames.create_i_frame("chat", "we planned the garden pond", created_at="2023-09-11T10:00:00Z")
    assert "2023-09-04..2023-09-11" in mind.search.search(question, explain=True)[0].explain["time_window"]
    mind.close()


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


def test_explain_names_the_speaker_and_the_names_left_out_of_the_lanes():
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.sessions.ensure("chat")
    for role, text in (("Melanie", "Melanie: the pottery class was great"), ("Caroline", "Caroline: Melanie, pottery?")):
        mind.frames.create_i_frame("chat", text, metadata={"provenance": {"role": role}})
    mind.search.index_frames_batch(mind.frames.get_many([1, 2]).values())
    lines = explained(mind, "What did Melanie make in pottery class?")
    assert len(lines) == 2
    assert all("(lanes searched without Melanie)" in line for line in lines)
    assert sum("said by Melanie (named)" in line for line in lines) == 1
    assert sum("said by Caroline (another speaker)" in line for line in lines) == 1


def test_the_confidence_reads_the_questions_own_similarity_not_the_lanes():
    """The vector lane searches the question without the speaker's name, blended with its topic
    words; the confidence cuts were calibrated on the question as asked, so ``similarity`` is that."""
    embedder = HashingEmbedder()
    mind = Mind.open(":memory:", embedder=embedder)
    mind.sessions.ensure("chat")
    turns = [("Melanie", "Melanie: I painted a sunset over the lake"), ("Caroline", "Caroline: Melanie, nice!")]
    for role, text in turns:
        mind.frames.create_i_frame("chat", text, metadata={"provenance": {"role": role}})
    mind.search.index_frames_batch(mind.frames.get_many([1, 2]).values())
    query = "What did Melanie paint over the lake?"
    results = mind.search.search(query, explain=True)
    assert results and results[0].explain["lanes_without"] == ["Melanie"]
    for result in results:
        own = float(np.dot(embedder.vector(query), embedder.vector(result.frame.content)))
        assert result.similarity == pytest.approx(own, abs=1e-5)
    painted = results[0]
    assert painted.frame.content.startswith("Melanie: I painted")
    assert abs(painted.explain["vector_similarity"] - painted.similarity) > 0.05  # the lane's is another


def test_a_long_frame_is_as_similar_as_its_closest_chunk():
    embedder = HashingEmbedder()
    mind = Mind.open(":memory:", embedder=embedder)
    mind.sessions.ensure("notes")
    filler = " ".join(f"word{i}" for i in range(400))
    long_frame = mind.frames.create_i_frame("notes", f"{filler} pottery glaze kiln firing")
    short_frame = mind.frames.create_i_frame("notes", "a note on gardening")
    mind.search.index_frames_batch([long_frame, short_frame])
    query = embedder.vector("pottery glaze kiln firing")
    found = mind.search.vectors.similarities(query, [long_frame.id, short_frame.id, 999])
    assert set(found) == {long_frame.id, short_frame.id}  # no vector, no entry
    whole = float(np.dot(query, embedder.vector(long_frame.content)))
    assert found[long_frame.id] > whole + 0.1  # the chunk holding the words, not the whole frame
    assert found[short_frame.id] == pytest.approx(float(np.dot(query, embedder.vector("a note on gardening"))), abs=1e-5)


def test_the_keyword_share_counts_a_word_the_keyword_lane_matched_by_its_stem():
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.sessions.ensure("chat")
    painted = mind.frames.create_i_frame("chat", "Yesterday I painted studies of the lake")
    other = mind.frames.create_i_frame("chat", "the weather by the lake was grey")
    mind.search.index_frames_batch([painted, other])
    results = {r.frame.id: r for r in mind.search.search("paintings study lake", explain=True)}
    # "paintings" and "study" are not in the text as written; FTS5's porter stems match them
    assert results[painted.id].keyword_share == pytest.approx(1.0)
    assert results[painted.id].confident  # every keyword held
    assert results[other.id].keyword_share == pytest.approx(1 / 3)
    assert results[painted.id].explain["keyword_rank"] == 0


# -- a time that is not the memory's own ----------------------------------------------------------
def harvested_mind(dated: list[tuple[str, str]], undated: list[str]) -> Mind:
    """Items imported through the harvest engine, some with their own time and some, like an AI
    Studio prompt or a Claude memory, with none (the import stamps them with the harvest time)."""
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    items = [
        HarvestItem(f"dated-{n}", "conversation", "chat", f"chat-{n}", [HarvestMessage(f"d{n}", text, "user", None, when)])
        for n, (when, text) in enumerate(dated)
    ] + [
        HarvestItem(f"undated-{n}", "memory", "memory", "memories", [HarvestMessage(f"u{n}", text)])
        for n, text in enumerate(undated)
    ]
    summary = import_items(mind, "exports", items, kind="gemini")
    mind.search.index_frames_batch([mind.frames.get_by_id(i) for i in summary.new_frame_ids])
    return mind


def ending(results: list, text: str):
    """The result whose frame holds ``text`` (a harvested frame starts with its title and speaker)."""
    return next(r for r in results if r.frame.content.endswith(text))


def test_an_item_without_a_time_of_its_own_is_not_favoured_by_recency():
    # both are "recent"; the undated one matches better, so only recency can put the dated one first
    two_days_ago = format_utc(utc_now() - timedelta(days=2))
    mind = harvested_mind([(two_days_ago, "Falcon budget: 3 million, approved by the board")], ["Falcon budget"])
    results = mind.search.search("Falcon budget", profile="recent", explain=True)
    stamped, dated = ending(results, "Falcon budget"), ending(results, "approved by the board")
    assert borrowed_time(stamped.frame) == HARVEST_TIME and borrowed_time(dated.frame) is None
    assert stamped.frame.created_at > dated.frame.created_at  # the harvest time is kept to order by
    assert stamped.match_score > dated.match_score
    assert stamped.explain["relevance"]["temporal"] == 0.0 and stamped.explain["borrowed_time"] == "harvest"
    assert dated.explain["relevance"]["temporal"] == 1.0
    assert results[0].frame.id == dated.frame.id


def test_relative_dates_are_not_read_from_the_harvest_time():
    mind = harvested_mind(
        [("2023-03-06T10:00:00Z", "we planned the garden beds"), ("2023-01-10T10:00:00Z", "we planned the garden fence")],
        ["garden ideas without a date"],
    )
    results = mind.search.search("what did we plan for the garden last week", explain=True)
    assert "2023-02-27..2023-03-06" in results[0].explain["time_window"]  # not the week before the harvest
    assert results[0].frame.content.endswith("we planned the garden beds")


def test_the_sql_form_of_the_borrowed_time_rule_agrees_with_it():
    mind = harvested_mind([("2023-03-06T10:00:00Z", "dated chat")], ["undated memory"])
    mind.sessions.ensure("vault")
    mind.frames.create_i_frame("vault", "a note", metadata={"source": {"message": {"dated_by": "file"}}})
    mind.frames.create_i_frame("vault", "a dated note", metadata={"source": {"message": {"dated_by": "name"}}})
    mind.frames.create_i_frame("vault", "remembered directly")  # its time is when it was written
    mind.frames.create_i_frame("vault", "odd export", metadata={"provenance": {"timestamp": ""}})
    frames = mind.frames.get_many([row[0] for row in mind.db.query("SELECT id FROM memory_frames")])
    in_sql = {row[0] for row in mind.db.query(f"SELECT id FROM memory_frames WHERE {borrowed_time_sql()}")}
    not_in_sql = {row[0] for row in mind.db.query(f"SELECT id FROM memory_frames WHERE NOT {borrowed_time_sql()}")}
    assert in_sql == {f.id for f in frames.values() if borrowed_time(f)}
    assert not_in_sql == set(frames) - in_sql
    assert {frames[i].content.split("\n")[-1].split(": ")[-1] for i in in_sql} == {
        "undated memory",
        "a note",
        "odd export",
    }


def test_the_table_and_the_provenance_say_the_time_is_the_harvest_s():
    mind = harvested_mind([("2023-03-06T10:00:00Z", "Falcon notes from the chat")], ["Falcon notes from a memory"])
    result = CombinedRetrieval(mind, record_access_on_recall=False).search("Falcon notes", explain=True, scope="workspace")
    memory, chat = (next(r for r in result.merged() if r.content.endswith(t)) for t in ("a memory", "the chat"))
    assert memory.metadata["provenance"]["dated_by"] == "harvest"
    assert memory.metadata["provenance"]["original_timestamp"] is None
    assert chat.metadata["provenance"]["dated_by"] == "message"
    table = next(part for part in format_recall(result, True) if isinstance(part, TableView))
    times = {row[4]: row[2] for row in table.rows}
    assert next(t for snippet, t in times.items() if "a memory" in snippet).endswith(" (harvest time)")
    assert next(t for snippet, t in times.items() if "the chat" in snippet) == "2023-03-06 10:00"
    lines = [p for part in format_recall(result, True) if isinstance(part, str) for p in part.splitlines()]
    assert any("harvest time: no recency" in line for line in lines)


# -- a question that is only a date ---------------------------------------------------------------
def test_a_question_of_only_a_date_is_confident_when_its_first_answer_is_from_then():
    mind = dated_mind()
    results = mind.search.search("what happened in June 2010")
    assert results[0].frame.content.startswith("Linus: merged")
    assert (results[0].similarity or 0.0) < CONFIDENT_SIMILARITY and results[0].keyword_share < 1.0
    assert results[0].confident  # answered by the window's frame, not by meaning or words
    assert not any(r.confident for r in results[1:])  # November's frames are not from June
    assert CombinedRetrieval(mind, record_access_on_recall=False).search("what happened in June 2010").confident


def test_a_date_with_a_topic_still_needs_the_topic_to_match():
    results = dated_mind().search.search("what did Melanie paint in June 2010")
    assert results[0].frame.content.startswith("Linus: merged")  # the time still boosts it ...
    assert not any(r.confident for r in results)  # ... but nothing says anything about painting


def test_a_window_holding_only_borrowed_times_is_no_confident_answer():
    mind = harvested_mind([("2010-06-14T09:00:00Z", "Linus: merged the scheduler rework")], ["Gemini prompt text"])
    stamped_month = mind.db.scalar("SELECT strftime('%Y-%m', max(created_at)) FROM memory_frames")
    year, month = stamped_month.split("-")
    question = f"what happened in {MONTHS[int(month) - 1]} {year}"  # the month of the harvest
    results = mind.search.search(question, explain=True)
    assert results[0].frame.content.endswith("Gemini prompt text") and "time_window" in results[0].explain
    assert not any(r.confident for r in results)


MONTHS = "January February March April May June July August September October November December".split()


# -- explain's arithmetic -------------------------------------------------------------------------
@pytest.mark.parametrize("profile", sorted(SCORING_PROFILES))
def test_relevance_parts_lie_within_one_and_add_up_to_the_shown_relevance(profile):
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.sessions.ensure("chat")
    frames = [
        mind.frames.create_i_frame("chat", "scheduler rework merged", importance="critical"),
        mind.frames.create_i_frame("chat", "scheduler rework reviewed", created_at="2010-06-14T09:00:00Z"),
        mind.frames.create_i_frame("chat", "scheduler rework dropped", importance="deprecated"),
    ]
    mind.search.index_frames_batch(frames)
    record_access(mind.db, [frames[1].id])
    results = mind.search.search("scheduler rework", profile=profile, explain=True)
    assert len(results) == 3
    for result in results:
        parts = result.explain["relevance_parts"]
        assert all(0.0 <= term["part"] <= 1.0 for term in parts.values())
        assert sum(term["share"] for term in parts.values()) == pytest.approx(1.0)
        share = sum(term["part"] * term["share"] for term in parts.values())
        assert share == pytest.approx(result.relevance_score / result.explain["max_relevance"])
        assert result.explain["relevance_share"] == pytest.approx(share)  # JSON = what --explain prints
        assert result.score == pytest.approx(result.match_score * share)


def test_the_explain_line_is_arithmetic_that_adds_up():
    line = explained(dated_mind(), "scheduler rework")[0]
    score, match, relevance = (float(x) for x in re.search(r"score ([\d.]+) = match ([\d.]+) x relevance ([\d.]+)", line).groups())
    terms = [(float(p), float(s)) for p, s in re.findall(r"[a-z]+ ([\d.]+)x([\d.]+)", line)]
    assert len(terms) == 4 and sum(s for _, s in terms) == pytest.approx(1.0, abs=0.02)
    assert sum(p * s for p, s in terms) == pytest.approx(relevance, abs=0.01)
    assert score == pytest.approx(match * relevance, abs=0.002)


def test_the_explain_line_of_several_minds_shows_the_weight_each_mind_is_multiplied_by():
    # two minds answer (the default scope): each mind's scores are weighed, and the line says by what
    found = CombinedRetrieval(dated_mind(), dated_mind(), record_access_on_recall=False).search(
        "scheduler rework", explain=True
    )
    lines = [part for part in format_recall(found, True, bold_markdown) if isinstance(part, str)]
    line = next(line for text in lines for line in text.splitlines() if line.startswith("#1 "))
    score, match, relevance, weight = (
        float(x)
        for x in re.search(
            r"score ([\d.]+) = match ([\d.]+) x relevance ([\d.]+) \(.*\) x mind weight ([\d.]+);", line
        ).groups()
    )
    assert 0.0 < weight < 1.0
    assert score == pytest.approx(match * relevance * weight, abs=0.003)
    answer = RecallResponse.from_retrieval(found, RecallRequest(query="scheduler rework")).model_dump()
    first = answer["results"][0]["metadata"]  # the JSON of every surface says it too
    assert first["mind_weight"] == pytest.approx(weight, abs=0.005) and 0.0 < first["evidence"] <= 1.0
    alone = CombinedRetrieval(dated_mind(), record_access_on_recall=False).search("scheduler rework", scope="workspace")
    assert "mind_weight" not in RecallResponse.from_retrieval(alone, RecallRequest(query="x")).model_dump()["results"][0]["metadata"]
