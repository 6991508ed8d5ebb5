"""The turn-context probe: a chat turn embedded with the other side's previous turn, read by the
vector lane instead of, beside or blended with its own vector (benchmark only)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import _memory_eval as ev  # noqa: E402
import _turn_context as tc  # noqa: E402
from _chat_exports import write_export  # noqa: E402

from mind_core.harvest.pipeline import harvest, register_source  # noqa: E402
from mind_core.mind import Mind  # noqa: E402
from mind_core.testing.fakes import HashingEmbedder  # noqa: E402

EPOCH = 1_683_554_160.0


def chat() -> ev.Conversation:
    turns = [
        ("D1:1", "Caroline", "What are you up to this weekend with the family?"),
        ("D1:2", "Melanie", "Off to go swimming with the kids"),
        ("D1:3", "Melanie", "They love the lake"),
        ("D1:4", "Caroline", "Sounds lovely, enjoy it"),
    ]
    session = ev.Session("session_1", "conv-t session 1", [ev.Turn(d, s, t, EPOCH) for d, s, t in turns])
    other = ev.Session(
        "session_2", "conv-t session 2", [ev.Turn("D2:1", "Caroline", "Weekend plans?", EPOCH + 9e5)]
    )
    return ev.Conversation("conv-t", [session, other])


@pytest.fixture
def mind(tmp_path):
    export, _ = write_export([chat()], "chatgpt", tmp_path / "chatgpt")
    opened = Mind.open(tmp_path / "chatgpt.mind", embedder=HashingEmbedder())
    register_source(opened, "chatgpt", export, "bench")
    assert harvest(opened, "bench").imported.error_count == 0
    yield opened
    opened.close()


def frame_of(mind: Mind, words: str) -> int:
    return next(
        frame_id
        for frame_id, content in mind.db.query("SELECT id, content FROM memory_frames")
        if words in content
    )


def test_a_turn_is_written_with_the_other_sides_previous_turn_cut_and_marked(mind):
    texts = tc.context_texts(mind, words=4)
    swimming, lake, lovely = (frame_of(mind, w) for w in ("swimming", "lake", "lovely"))
    assert texts[swimming].endswith("Off to go swimming with the kids (in reply to: What are you up)")
    assert texts[lake].endswith("(in reply to: What are you up)")  # the same side again: the same question
    assert texts[lovely].endswith("(in reply to: They love the lake)")
    assert frame_of(mind, "this weekend") not in texts  # a conversation's first turn answers nothing
    assert frame_of(mind, "Weekend plans") not in texts  # nor does another conversation's first


def test_the_lane_reads_the_context_vector_only_when_asked(mind):
    embedder = HashingEmbedder()
    lane = mind.search.vectors
    swimming = frame_of(mind, "swimming")
    question = embedder.embed("What are you up to this weekend")
    tc.install(mind, embedder, "off", 0.0)
    own = dict(lane.knn(question, 10))
    tc.install(mind, embedder, "instead", 0.0)
    instead = dict(lane.knn(question, 10))
    tc.install(mind, embedder, "max", 0.0)
    best = dict(lane.knn(question, 10))
    tc.install(mind, embedder, "blend", 0.5)
    blend = dict(lane.knn(question, 10))
    assert instead[swimming] < own[swimming]  # distances: the answer is nearer through its context
    assert best[swimming] == pytest.approx(min(own[swimming], instead[swimming]), abs=1e-5)
    assert instead[swimming] < blend[swimming] < own[swimming]
    tc.install(mind, embedder, "off", 0.0)
    assert "knn" not in lane.__dict__  # the product's own lane again


def test_a_scoped_search_keeps_to_its_conversation(mind):
    embedder = HashingEmbedder()
    tc.install(mind, embedder, "instead", 0.0)
    gop = mind.db.scalar("SELECT gop_id FROM memory_frames WHERE id = ?", (frame_of(mind, "Weekend plans"),))
    hits = mind.search.vectors.knn(embedder.embed("weekend"), 10, gop_id=gop)
    assert [frame_id for frame_id, _ in hits] == [frame_of(mind, "Weekend plans")]
    tc.install(mind, embedder, "off", 0.0)


def test_short_turns_only_read_their_context():
    kept = tc.TurnContext(
        ids=np.array([1, 2]),
        own=np.array([[1.0, 0.0], [1.0, 0.0]], dtype=np.float32),
        context=np.array([[0.0, 1.0], [0.0, 1.0]], dtype=np.float32),
        words=np.array([3, 30]),
        embed_cpu_s=0.0,
        texts=2,
    )
    query = np.array([0.0, 1.0], dtype=np.float32)
    assert kept.scores(query, "instead", 0.0).tolist() == [1.0, 1.0]
    assert kept.scores(query, "instead", 0.0, short=12).tolist() == [1.0, 0.0]
    assert kept.scores(query, "blend", 0.25, short=12).tolist() == [0.25, 0.0]


def test_the_grid_axis_is_parsed():
    assert tc.parse("off") == ("off", 0.0, tc.CONTEXT_WORDS, 0)
    assert tc.parse("blend0.3:15") == ("blend", 0.3, 15, 0)
    assert tc.parse("instead@12") == ("instead", 0.0, tc.CONTEXT_WORDS, 12)
    with pytest.raises(ValueError):
        tc.parse("sideways")
