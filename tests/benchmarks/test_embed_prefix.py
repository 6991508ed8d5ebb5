"""The embedded-prefix probe: every frame re-embedded without a generic speaker, without its
title or from its message text alone, read by the vector lane instead of the stored vectors
(benchmark only)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import _embed_prefix as ep  # noqa: E402
import _memory_eval as ev  # noqa: E402
import select_constants as sc  # noqa: E402
from _chat_exports import write_export  # noqa: E402

from mind_core.harvest.pipeline import harvest, register_source  # noqa: E402
from mind_core.mind import Mind  # noqa: E402
from mind_core.testing.fakes import HashingEmbedder  # noqa: E402

EPOCH = 1_683_554_160.0


def chat() -> ev.Conversation:
    turns = [
        ("D1:1", "Caroline", "What are you up to this weekend with the family?"),
        ("D1:2", "Melanie", "Off to go swimming with the kids"),
    ]
    session = ev.Session("session_1", "conv-t session 1", [ev.Turn(d, s, t, EPOCH) for d, s, t in turns])
    return ev.Conversation("conv-t", [session])


def harvested(tmp_path: Path, kind: str) -> Mind:
    export, _ = write_export([chat()], kind, tmp_path / kind)
    mind = Mind.open(tmp_path / f"{kind}.mind", embedder=HashingEmbedder())
    register_source(mind, kind, export, "bench")
    assert harvest(mind, "bench").imported.error_count == 0
    return mind


def swimming_text(mind: Mind, mode: str) -> str:
    return next(text for text in ep.texts(mind, mode).values() if "swimming" in text)


@pytest.fixture
def chatgpt(tmp_path):
    mind = harvested(tmp_path, "chatgpt")
    yield mind
    mind.close()


def test_a_chatgpt_turn_loses_its_role_word_its_title_or_both(chatgpt):
    stored = swimming_text(chatgpt, "full")
    assert stored == chatgpt.db.scalar("SELECT content FROM memory_frames WHERE content LIKE '%swimming%'")
    assert stored == "[conv-t session 1] Assistant: Off to go swimming with the kids"
    assert swimming_text(chatgpt, "no-speaker") == "[conv-t session 1] Off to go swimming with the kids"
    assert swimming_text(chatgpt, "no-title") == "Assistant: Off to go swimming with the kids"
    assert swimming_text(chatgpt, "none") == "Off to go swimming with the kids"


def test_a_telegram_turn_keeps_its_speakers_real_name(tmp_path):
    mind = harvested(tmp_path, "telegram")
    try:
        stored = swimming_text(mind, "full")
        assert stored.endswith("] Melanie: Off to go swimming with the kids")
        assert swimming_text(mind, "no-speaker") == stored  # a name is not a role word
        assert swimming_text(mind, "no-title") == "Melanie: Off to go swimming with the kids"
        assert swimming_text(mind, "none") == "Off to go swimming with the kids"
    finally:
        mind.close()


def test_a_text_not_written_as_a_chat_turn_is_embedded_as_stored():
    assert ep.split("a note without the importer's prefix", {"title": "Notes", "role": "user"}) is None


def test_the_lane_reads_the_reembedded_vectors_only_when_asked(chatgpt):
    embedder = HashingEmbedder()
    lane = chatgpt.search.vectors
    swimming = next(i for i, text in ep.texts(chatgpt, "none").items() if "swimming" in text)
    question = embedder.embed("Off to go swimming with the kids")
    ep.install(chatgpt, embedder, "full")
    stored = dict(lane.knn(question, 10))
    ep.install(chatgpt, embedder, "none")
    bare = dict(lane.knn(question, 10))
    assert bare[swimming] == pytest.approx(0.0, abs=1e-3)  # the same text, the same vector
    assert stored[swimming] > 0.1  # the stored vector carries the prefix too
    ep.install(chatgpt, embedder, "full")
    assert "knn" not in lane.__dict__  # the product's own lane again


def test_the_grid_crosses_the_prefix_with_the_defaults_and_not_with_turn_context():
    args = sc.arguments().parse_args(
        [
            "--context-weights",
            "0.4",
            "--vector-weights",
            "0.5",
            "--time-weights",
            "0.6",
            "--speaker-weights",
            "0.3",
        ]
        + ["--without-off", "--turn-context", "off", "max", "--embed-prefix", "full", "none"]
    )
    settings = sc.grid(args)
    assert {s.embed_prefix for s in settings} == {"full", "none"}
    assert not any(s.embed_prefix != "full" and s.turn_context_mode != "off" for s in settings)
    assert "embedded prefix none" in sc.label(next(s for s in settings if s.embed_prefix == "none"))
    with pytest.raises(SystemExit):
        sc.arguments().parse_args(["--embed-prefix", "sideways"])
