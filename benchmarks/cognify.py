"""Cognify throughput with the real model: cognify_batch vs cognify_frame one frame at a time.

Messages are LoCoMo dialogue turns (../shared/data/benchmarks/locomo, 1,451 turns) cycled to
--frames; each copy gets a "[round N]" marker after the speaker so every frame is unique (no
dedup hit, every frame is extracted and embedded). The frames are stored first
(``create_i_frames``) in an on-disk mind, then cognified. The embedder is the in-process
all-MiniLM-L6-v2; its ``embed_batch`` is timed, so the script reports the share of cognify time
spent in the model and the rest (extraction, graph writes, vector writes, bookkeeping).

LoCoMo chat is entity-sparse for the rule-based extractor (first names alone are not entities),
so the graph side is also measured on entity-dense messages: each LoCoMo turn followed by a
generated sentence naming people, projects and technologies (``dense_*`` figures, with the
hashing test embedder, whose time is excluded the same way; their share is then estimated
against the real model's time per frame from the first run).

Targets (issue #4): cognify_batch >= 5x the frames/s of cognify_frame called per frame, and
non-embedding work < 25% of cognify_batch's time.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import SHARED_DATA, PeakRSS, write_results
from extraction import locomo_turns

from mind_core.embeddings import InprocessEmbedder
from mind_core.knowledge.extraction import PERSON_FIRST_NAMES
from mind_core.mind import Mind
from mind_core.store.frames import NewFrame
from mind_core.testing.fakes import HashingEmbedder

SURNAMES = "Johnson Lopez Novak Petrov Okafor Tanaka Schmidt Rossi Kowalski Silva Dubois Jensen".split()
PROJECTS = "Falcon Kestrel Heron Osprey Plover Swift Tern Wren Merlin Condor Ibis Egret".split()
TECHNOLOGIES = "PostgreSQL SQLite Redis Docker Kubernetes GraphQL TypeScript MongoDB Vite Django".split()
TEMPLATES = (
    "{p1} leads Project {j} and it runs on {t1}.",
    "{p1} reports to {p2} about the {t1} migration.",
    "Project {j} depends on {t1} and {t2}, says {p1}.",
)


class TimedEmbedder:
    """Delegates to an embedder and adds up the seconds spent inside it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.calls = 0
        self.texts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed(self, text: str) -> Any:
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: Sequence[str]) -> Any:
        began = time.perf_counter()
        try:
            return self.inner.embed_batch(texts)
        finally:
            self.seconds += time.perf_counter() - began
            self.calls += 1
            self.texts += len(texts)

    def reset(self) -> None:
        self.seconds, self.calls, self.texts = 0.0, 0, 0


def messages(turns: list[str], count: int) -> list[str]:
    """``count`` unique messages: the turns cycled, each round marked after the speaker."""
    out = []
    for i, turn in enumerate(itertools.islice(itertools.cycle(turns), count)):
        speaker, _, text = turn.partition(": ")
        out.append(f"{speaker} [round {i // len(turns) + 1}]: {text}")
    return out


def dense(texts: list[str]) -> list[str]:
    """The same messages, each followed by a generated sentence naming several entities."""
    firsts = sorted(n.capitalize() for n in PERSON_FIRST_NAMES)
    people = [f"{f} {s}" for f in firsts for s in SURNAMES]
    out = []
    for i, text in enumerate(texts):
        sentence = TEMPLATES[i % len(TEMPLATES)].format(
            p1=people[(i * 7) % len(people)],
            p2=people[(i * 13 + 5) % len(people)],
            j=PROJECTS[i % len(PROJECTS)],
            t1=TECHNOLOGIES[i % len(TECHNOLOGIES)],
            t2=TECHNOLOGIES[(i // 3 + 4) % len(TECHNOLOGIES)],
        )
        out.append(f"{text} {sentence}")
    return out


def graph_size(mind: Mind) -> dict[str, int]:
    return {
        "entities": mind.knowledge.get_entity_count(),
        "relations": mind.db.scalar("SELECT COUNT(*) FROM knowledge_relations"),
        "entity_frame_links": mind.db.scalar("SELECT COUNT(*) FROM kg_entity_frames"),
    }


def stored_mind(path: Path, embedder: TimedEmbedder, texts: list[str]) -> tuple[Mind, list[int]]:
    mind = Mind.open(path, embedder=embedder)
    mind.sessions.ensure("locomo")
    ids: list[int] = []
    for start in range(0, len(texts), 1000):
        frames = mind.frames.create_i_frames([NewFrame("locomo", t) for t in texts[start : start + 1000]])
        ids += [f.id for f in frames]
    return mind, ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=int, default=10_000, help="frames for cognify_batch")
    parser.add_argument("--single", type=int, default=300, help="frames for cognify_frame one at a time")
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args()

    source = SHARED_DATA / "benchmarks" / "locomo" / "locomo10_conv1-3.json"
    if not source.is_file():
        raise SystemExit(f"LoCoMo data not found at {source}")
    turns = locomo_turns(source)
    texts = messages(turns, max(args.frames, args.single))
    embedder = TimedEmbedder(InprocessEmbedder(dimensions=1024))
    embedder.embed("warm up the model")

    with tempfile.TemporaryDirectory() as tmp:
        mind, ids = stored_mind(Path(tmp) / "batch.mind", embedder, texts[: args.frames])
        embedder.reset()
        with PeakRSS() as rss:
            began = time.perf_counter()
            totals = mind.cognify.cognify_batch(ids, batch_size=args.batch_size)
            batch_seconds = time.perf_counter() - began
        batch_embed = embedder.seconds
        batch_calls = embedder.calls
        graph = graph_size(mind)
        began = time.perf_counter()
        rerun = mind.cognify.cognify_batch(ids, batch_size=args.batch_size)
        rerun_seconds = time.perf_counter() - began
        mind.close()

        mind, ids = stored_mind(Path(tmp) / "single.mind", embedder, texts[: args.single])
        embedder.reset()
        began = time.perf_counter()
        for frame_id in ids:
            mind.cognify.cognify_frame(frame_id)
        single_seconds = time.perf_counter() - began
        single_embed = embedder.seconds
        mind.close()

        fake = TimedEmbedder(HashingEmbedder())
        mind, ids = stored_mind(Path(tmp) / "dense.mind", fake, dense(texts[: args.frames]))
        fake.reset()
        began = time.perf_counter()
        dense_totals = mind.cognify.cognify_batch(ids, batch_size=args.batch_size)
        dense_seconds = time.perf_counter() - began
        dense_graph = graph_size(mind)
        mind.close()

    batch_rate = args.frames / batch_seconds
    dense_ms = (dense_seconds - fake.seconds) / args.frames * 1000
    model_ms = batch_embed / args.frames * 1000
    single_rate = args.single / single_seconds
    figures = {
        "frames": args.frames,
        "distinct_turns": len(turns),
        "mean_chars": round(sum(len(t) for t in texts[: args.frames]) / args.frames, 1),
        "batch_size": args.batch_size,
        "batch_seconds": round(batch_seconds, 2),
        "batch_frames_per_s": round(batch_rate, 1),
        "batch_embedder_calls": batch_calls,
        "batch_embedding_share": round(batch_embed / batch_seconds, 3),
        "batch_non_embedding_share": round(1 - batch_embed / batch_seconds, 3),
        "batch_non_embedding_ms_per_frame": round((batch_seconds - batch_embed) / args.frames * 1000, 3),
        "batch_totals": totals,
        "graph": graph,
        "batch_peak_rss_mib": round(rss.peak / 2**20),
        "rerun_seconds": round(rerun_seconds, 2),
        "rerun_totals": rerun,
        "single_frames": args.single,
        "single_seconds": round(single_seconds, 2),
        "single_frames_per_s": round(single_rate, 1),
        "single_embedding_share": round(single_embed / single_seconds, 3),
        "single_non_embedding_ms_per_frame": round((single_seconds - single_embed) / args.single * 1000, 3),
        "single_model_ms_per_frame": round(single_embed / args.single * 1000, 2),
        "batch_model_ms_per_frame": round(model_ms, 2),
        "dense_totals": dense_totals,
        "dense_graph": dense_graph,
        "dense_non_embedding_ms_per_frame": round(dense_ms, 3),
        # the dense graph work set against the real model's time per frame measured above
        "dense_non_embedding_share_with_real_model": round(dense_ms / (dense_ms + model_ms), 3),
        "batch_speedup_vs_single": round(batch_rate / single_rate, 2),
        "target_speedup_met": batch_rate / single_rate >= 5,
        "target_non_embedding_met": 1 - batch_embed / batch_seconds < 0.25,
    }
    for key, value in figures.items():
        print(f"{key:34s} {value}")
    write_results("cognify", figures)


if __name__ == "__main__":
    main()
