"""benchmarks/search_parts.py: a whole search's CPU time charged to its parts, each once (a part
called inside another is taken off that one), and the instrumented search answers as before."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import search_parts  # noqa: E402

from mind_core.mind import Mind  # noqa: E402
from mind_core.search import hybrid  # noqa: E402
from mind_core.testing.fakes import HashingEmbedder  # noqa: E402


def spin(seconds: float) -> None:
    began = time.process_time()
    while time.process_time() - began < seconds:
        pass


def test_a_part_called_inside_another_is_charged_once():
    clock = search_parts.PartClock()
    inner = clock.wrap("inner", lambda: spin(0.02))

    def outer_work():
        spin(0.01)
        inner()

    clock.wrap("outer", outer_work)()
    spent = clock.take()
    assert 0.02 <= spent["inner"] < 0.03
    assert 0.01 <= spent["outer"] < 0.02  # its own 10 ms, not the inner 20
    assert clock.take() == {}


def test_the_instrumented_search_answers_as_before_and_every_part_is_timed(monkeypatch):
    monkeypatch.setattr(hybrid, "session_neighbours", hybrid.session_neighbours)  # restored afterwards
    mind = Mind.open(":memory:", embedder=HashingEmbedder())
    mind.sessions.ensure("chat")
    frames = [
        mind.frames.create_i_frame("chat", text)
        for text in ("we painted the fence in June", "the lake was cold", "Melanie paints landscapes")
    ]
    mind.search.index_frames_batch(frames)
    before = [r.frame.id for r in mind.search.search("what did we paint in June 2023?", limit=3)]
    clock = search_parts.PartClock()
    search_parts.instrument(mind.search, clock)
    after = [r.frame.id for r in mind.search.search("what did we paint in June 2023?", limit=3)]
    assert after == before
    assert {"embedding", "keyword lane", "vector lane", "session neighbours", "time"} <= set(clock.take())
