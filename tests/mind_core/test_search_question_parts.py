"""A question about several people is also asked of each of them (issue #35, item 3)."""

from dataclasses import replace
from types import SimpleNamespace

from mind_core.cli.recall import _explain_line
from mind_core.mind import Mind
from mind_core.search.config import SearchConfig
from mind_core.search.question_parts import may_join_people, merge_parts, people_parts
from mind_core.testing.fakes import HashingEmbedder

# a chat exported with the speakers' names (as a messaging app's export is stored): Jon says what
# he loves in many words; Gina's answer ("fashion is my thing") shares no word with the question
CHAT = [
    ("Jon", "i love dancing , dancing is what i love most"),
    ("Jon", "i love the studio , teaching there is love"),
    ("Jon", "i love my students , they love dancing too"),
    ("Jon", "and what do you love , Gina ?"),
    ("Gina", "fashion is my thing , unique pieces every day"),
    ("Jon", "i love that , we both love what we do"),
    ("Gina", "the weather was grey all week"),
    ("Jon", "the rent of the studio went up again"),
]
QUESTION = "What do Jon and Gina both love ?"


def build(config: SearchConfig) -> tuple[Mind, list[int]]:
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.search.config = config
    mind.sessions.ensure("chat")
    frames = [
        mind.frames.create_i_frame(
            "chat", f"[Catching up] {speaker}: {text}", metadata={"provenance": {"role": speaker, "source": "tg"}}
        )
        for speaker, text in CHAT
    ]
    mind.search.index_frames_batch(frames)
    return mind, [frame.id for frame in frames]


def test_a_question_joining_people_is_split_into_one_question_each():
    assert people_parts(QUESTION, {"Jon", "Gina"}) == ["What do Gina love?", "What do Jon love?"]
    assert people_parts("Which city have Jon, Gina and Maria visited?", {"Jon", "Gina", "Maria"}) == [
        "Which city have Gina visited?",
        "Which city have Jon visited?",
        "Which city have Maria visited?",
    ]
    assert people_parts("What did Jon tell Gina about the studio?", {"Jon", "Gina"}) == []  # not joined
    assert people_parts("What did Jon and Kate paint?", {"Jon"}) == []  # one person of the mind
    assert people_parts("Jon and Gina?", {"Jon", "Gina"}) == []  # nothing left to ask of each
    assert may_join_people(QUESTION) and not may_join_people("What did Jon paint?")


def test_each_person_gets_their_own_turn_into_the_results():
    mind, ids = build(SearchConfig(speaker_weight=0.9, question_parts=False))
    ginas_answer = ids[4]
    with mind:
        whole = [result.frame.id for result in mind.search.search(QUESTION, limit=3)]
        assert ginas_answer not in whole  # Jon's many "love" turns fill the list
        mind.search.config = replace(mind.search.config, question_parts=True)  # the default
        results = mind.search.search(QUESTION, limit=3, explain=True)
        assert ginas_answer in [result.frame.id for result in results]
        found_by = {result.frame.id: result.explain["question_part"] for result in results}
        assert found_by[ginas_answer] == "What do Gina love?"
        assert [result.score for result in results] == sorted((result.score for result in results), reverse=True)
        assert all(result.explain["score"] == result.score for result in results)  # the merged, shown score
        for result in results:  # explain's arithmetic adds up: match x relevance x the part's scale
            parts = result.explain
            assert abs(parts["match"] * parts["relevance_share"] * parts["part_scale"] - result.score) < 1e-9
        line = _explain_line(1, SimpleNamespace(**{"metadata": {"match_score": 0.0}, "workspace": "w"}, **{
            "explain": results[0].explain, "score": results[0].score}))
        assert f"x part scale {results[0].explain['part_scale']:.2f}" in line
        assert f"asked as {results[0].explain['question_part']!r}" in line
        # the match the confidence cuts read (here 0) is named when it is not the ranking match
        assert "confidence judged on match 0.000 (without the preferences)" in line
        # a question about one person, or one exchange between two, is searched once, as before
        for question in ("What does Jon love?", "What did Jon ask Gina?"):
            assert mind.search._people_parts(question) == []


def test_a_mind_without_speakers_is_searched_once():
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.search.config = SearchConfig()
    with mind:
        mind.sessions.ensure("notes")
        frame = mind.frames.create_i_frame("notes", "Jon and Gina both love dancing")
        mind.search.index_frames_batch([frame])
        assert mind.search._people_parts(QUESTION) == []
        assert [result.frame.id for result in mind.search.search(QUESTION, limit=3)] == [frame.id]


def test_the_lists_are_merged_by_their_share_of_their_own_best():
    mind, ids = build(SearchConfig(speaker_weight=0.9))
    with mind:
        strong = mind.search.search("dancing studio love", limit=3)
        weak = mind.search.search("fashion", limit=3)
    merged = merge_parts([("strong", strong), ("weak", weak)], limit=4)
    assert merged[0].score == max(r.score for r in strong)
    assert ids[4] in [result.frame.id for result in merged[:2]]  # the weak list's best, scaled to the strongest's
    assert len({result.frame.id for result in merged}) == len(merged) == 4
