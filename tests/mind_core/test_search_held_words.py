"""The keyword share's word lookup (mind_core/search/held_words.py): the words a shown frame holds
through FTS5's stems are found in a scratch table of the shown frames only, and they are exactly
the ones the mind's own index matches there."""

from __future__ import annotations

from mind_core.mind import Mind
from mind_core.search.held_words import HeldWords
from mind_core.search.keywords import keyword_tokens
from mind_core.testing.fakes import HashingEmbedder

TEXTS = [
    "Yesterday I painted studies of the lake",
    "The painters' studio: café, naïve art and the running club",
    "She ran to the cafe after running, then relaxed",
    "nothing here matches",
    "Über straße — Straßen und Cafés",
]
QUESTIONS = ["paintings study lake", "cafe runs painting naive", "strasse cafes relaxing", "Straße über"]


def index_answer(mind: Mind, words: list[str], frame_ids: list[int]) -> dict[int, set[str]]:
    """What the mind's own FTS5 index says each frame holds (the keyword lane's matching)."""
    held: dict[int, set[str]] = {frame_id: set() for frame_id in frame_ids}
    for word in words:
        for frame_id in frame_ids:
            if mind.db.query_one(
                "SELECT 1 FROM memory_frames_fts WHERE memory_frames_fts MATCH ? AND rowid = ?", (f'"{word}"', frame_id)
            ):
                held[frame_id].add(word)
    return held


def test_the_words_held_are_those_the_minds_index_matches(tmp_path) -> None:
    mind = Mind.open(tmp_path / "held.mind", embedder=HashingEmbedder())
    mind.sessions.ensure("chat")
    frames = [mind.frames.create_i_frame("chat", text) for text in TEXTS]
    shown = mind.frames.get_many([frame.id for frame in frames])
    lookup = HeldWords(mind.db)
    for question in QUESTIONS:
        words = [word.lower() for word in keyword_tokens(question)]
        held = lookup.held(words, shown)
        literal = {frame_id: {w for w in words if w in frame.content.lower()} for frame_id, frame in shown.items()}
        matched = index_answer(mind, words, list(shown))
        assert held == {frame_id: literal[frame_id] | matched[frame_id] for frame_id in shown}, question
    assert "painting" in lookup.held(["painting"], shown)[frames[0].id]  # by its stem
    # the scratch table keeps no frame between calls
    assert lookup._scratch.execute("SELECT count(*) FROM shown").fetchone()[0] == 0
    mind.close()


def test_the_scratch_table_takes_the_minds_tokenizer(tmp_path) -> None:
    mind = Mind.open(tmp_path / "held.mind", embedder=HashingEmbedder())
    mind.sessions.ensure("chat")
    frame = mind.frames.create_i_frame("chat", "We were running late")
    lookup = HeldWords(mind.db)
    assert lookup.held(["runs"], mind.frames.get_many([frame.id])) == {frame.id: {"runs"}}
    made = lookup._scratch.execute("SELECT sql FROM sqlite_master WHERE name = 'shown'").fetchone()[0]
    assert "tokenize='porter unicode61'" in made
    mind.close()
