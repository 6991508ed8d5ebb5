"""Vector indexing throughput (batched vs one frame at a time) and search latency (p50/p95) at
10,000 and 100,000 frames (issue #3), for the default search and the original RRF side by side.

Frames are chat turns (benchmarks/_corpus.py: the shared LoCoMo/REALTALK turns recombined into
sessions of 25), written with FrameStore.create_i_frames; queries are the 711 LoCoMo and REALTALK
questions, asked in turn in every mode so load on a shared machine hits all modes alike.

- 10,000 frames: indexed with the real model (all-MiniLM-L6-v2, 1024 dims zero-padded); the
  one-frame-at-a-time rate is measured on the first --single frames, the batched one on the rest.
  Latencies include embedding the query with the real model. The same frames are also indexed
  with the mock embedder, batched and one at a time: the index's own write path, without the
  model's compute (which batching cannot shrink, only the per-call overhead around it).
- 100,000 frames: the real model would take about an hour to index them on this machine, so
  vectors (and the query vectors) come from the mock provider: the vector lane's cost is a
  brute-force scan of 1024-float rows whatever model made them. The real model's query-embedding
  time is measured on the same queries and added to give the estimate with the real model.

The frames are cognified after indexing (entities, relations and entity-frame links, as a
harvest does), so the entity lane of issue #18 (`hybrid_entity`) walks a real graph;
`hybrid_feedback` is the keyword lane with RM3 feedback terms.

    .venv/bin/python benchmarks/search.py [--sizes 10000 100000] [--queries 300] [--single 300]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import machine, percentile, write_results
from _corpus import recombined_corpus
from locomo import DEFAULT_DATA as LOCOMO_DATA
from locomo import load_locomo
from realtalk import DEFAULT_DATA as REALTALK_DATA
from realtalk import load_realtalk

from mind_core.cognify import CognifyPipeline
from mind_core.embeddings import InprocessEmbedder, MockEmbedder
from mind_core.embeddings.base import Embedder
from mind_core.frames import NewFrame
from mind_core.mind import Mind
from mind_core.search import SearchConfig
from mind_core.timestamps import epoch_to_iso

REAL_MODEL_MAX_FRAMES = 20_000
WRITE_BATCH = 5_000
TARGET_SPEEDUP = 5.0
MOCK_SINGLE = 3_000  # frames indexed one at a time with the mock embedder (fast: a larger sample)
ENTITY = SearchConfig(entity_weight=0.2)
FEEDBACK = SearchConfig(feedback_weight=0.2)


def questions(count: int) -> list[str]:
    asked: list[str] = []
    if LOCOMO_DATA.is_file():
        asked += [q.question for c in load_locomo(LOCOMO_DATA) for q in c.questions]
    if REALTALK_DATA.is_dir():
        asked += [q.question for c in load_realtalk([REALTALK_DATA]) for q in c.questions]
    if not asked:
        asked = ["what did we decide about the budget", "where did you travel last summer"]
    return [asked[i % len(asked)] for i in range(count)]


def write_frames(mind: Mind, count: int) -> list[tuple[int, str]]:
    corpus, _ = recombined_corpus(count)
    written: list[tuple[int, str]] = []
    pending: list[NewFrame] = []
    for session in corpus.sessions:
        gop_id = f"bench:{session.key}"
        mind.sessions.ensure(gop_id)
        for turn in session.turns:
            content = f"[{session.title}] {turn.speaker}: {turn.text}"
            pending.append(NewFrame(gop_id, content, "normal", "import", epoch_to_iso(turn.epoch)))
        if len(pending) >= WRITE_BATCH:
            written += [(f.id, f.content) for f in mind.frames.create_i_frames(pending)]
            pending = []
    if pending:
        written += [(f.id, f.content) for f in mind.frames.create_i_frames(pending)]
    return list(dict(written).items())  # a turn repeated verbatim is one frame (dedup)


def index_rates(mind: Mind, frames: list[tuple[int, str]], single: int) -> dict[str, float]:
    """Index the first ``single`` frames one at a time, then the rest batched: every frame once,
    none of them re-indexed, so neither side pays for replacing vectors."""
    began = time.perf_counter()
    for frame_id, content in frames[:single]:
        mind.search.index_frame(frame_id, content)
    one_by_one = single / (time.perf_counter() - began)
    began = time.perf_counter()
    mind.search.vectors.index_frames(frames[single:])
    batched = (len(frames) - single) / (time.perf_counter() - began)
    return {
        "batched_frames_per_s": batched,
        "single_frames_per_s": one_by_one,
        "speedup": batched / one_by_one,
    }


def latencies(mind: Mind, asked: list[str]) -> dict[str, dict[str, float]]:
    default, original = SearchConfig(), SearchConfig(fusion="rrf")
    search = mind.search

    def hybrid(config: SearchConfig) -> Callable[[str], object]:
        def run(query: str) -> object:
            search.config = config
            return search.search(query, limit=10)

        return run

    modes: dict[str, Callable[[str], object]] = {
        "hybrid": hybrid(default),
        "hybrid_rrf": hybrid(original),
        "hybrid_entity": hybrid(ENTITY),
        "hybrid_feedback": hybrid(FEEDBACK),
        "keyword": lambda q: search.keyword_search(q, 20),
        "vector": lambda q: search.vector_search(q, 20),
    }
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    for query in asked:
        for mode, run in modes.items():
            began = time.perf_counter()
            run(query)
            times[mode].append((time.perf_counter() - began) * 1000)
    search.config = default
    return {mode: {"p50_ms": percentile(v, 50), "p95_ms": percentile(v, 95)} for mode, v in times.items()}


def embedding_latency(embedder: Embedder, asked: list[str]) -> dict[str, float]:
    times = []
    for query in asked:
        began = time.perf_counter()
        embedder.embed(query)
        times.append((time.perf_counter() - began) * 1000)
    return {"p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95)}


def write_path_rates(size: int) -> dict[str, float]:
    """Batched vs single indexing with the mock embedder: the index's own cost, no model compute."""
    with tempfile.TemporaryDirectory() as tmp:
        mind = Mind.open(Path(tmp) / "write-path.mind", embedder=MockEmbedder())
        rates = index_rates(mind, write_frames(mind, size), MOCK_SINGLE)
        mind.close()
    return rates


def run_size(size: int, asked: list[str], single: int, real: InprocessEmbedder) -> dict:
    use_real = size <= REAL_MODEL_MAX_FRAMES
    embedder: Embedder = real if use_real else MockEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        mind = Mind.open(Path(tmp) / "bench.mind", embedder=embedder)
        began = time.perf_counter()
        frames = write_frames(mind, size)
        write_s = time.perf_counter() - began
        rates = index_rates(mind, frames, single if use_real else MOCK_SINGLE)
        began = time.perf_counter()
        CognifyPipeline.from_mind(mind).cognify_batch([frame_id for frame_id, _ in frames])
        cognify_s = time.perf_counter() - began
        lat = latencies(mind, asked)
        mind.close()
    result = {
        "frames": len(frames),
        "embedder": f"{embedder.provider}/{embedder.model_name}",
        "write_frames_s": write_s,
        "cognify_s": cognify_s,
        **rates,
        "latency": lat,
    }
    if use_real:
        result["write_path"] = write_path_rates(size)
    if not use_real:
        query_embedding = embedding_latency(real, asked)
        result["real_query_embedding"] = query_embedding
        result["estimated_real_latency"] = {
            mode: {q: v[q] + query_embedding[q] for q in ("p50_ms", "p95_ms")}
            for mode, v in lat.items()
            if mode != "keyword"
        }
    return result


def rates_line(rates: dict[str, float]) -> str:
    return (
        f"batched {rates['batched_frames_per_s']:,.0f} frames/s, one at a time "
        f"{rates['single_frames_per_s']:,.0f} frames/s -> {rates['speedup']:.1f}x (target >= {TARGET_SPEEDUP:g}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--single", type=int, default=300, help="frames indexed one at a time for that rate")
    parser.add_argument("--name", default="search", help="results file name under benchmarks/results/")
    args = parser.parse_args()
    real = InprocessEmbedder()
    real.embed("warm up the model")
    asked = questions(args.queries)
    results = {}
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}")
    for size in args.sizes:
        r = run_size(size, asked, args.single, real)
        results[str(size)] = r
        print(f"{r['frames']:,} frames ({r['embedder']}), cognified in {r['cognify_s']:.1f} s:")
        print(f"  vector indexing, {r['embedder']}: {rates_line(r)}")
        if "write_path" in r:
            print(f"  index write path (mock embedder, no model compute): {rates_line(r['write_path'])}")
        for mode, v in r["latency"].items():
            line = f"  {mode:15} p50 {v['p50_ms']:7.1f} ms  p95 {v['p95_ms']:7.1f} ms"
            estimate = r.get("estimated_real_latency", {}).get(mode)
            if estimate:
                line += f"   (with the real model's query embedding: p50 {estimate['p50_ms']:.1f}, p95 {estimate['p95_ms']:.1f})"
            print(line)
        if "real_query_embedding" in r:
            e = r["real_query_embedding"]
            print(f"  real-model query embedding alone: p50 {e['p50_ms']:.1f} ms, p95 {e['p95_ms']:.1f} ms")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    write_results(args.name, {"queries": len(asked), "sizes": results, "load_after": os.getloadavg()})


if __name__ == "__main__":
    main()
