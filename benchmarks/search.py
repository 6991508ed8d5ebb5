"""Vector indexing throughput and search latency (p50/p95): 10,000 frames indexed with the real
model (issue #3), and 100,000 / 1,000,000 frames with the exhaustive lanes of before issue #19 and
today's pre-scans side by side (issue #19).

Frames are chat turns (benchmarks/_corpus.py: the shared LoCoMo/REALTALK turns recombined into
sessions of 25), written with FrameStore.create_i_frames; queries are the 711 LoCoMo and REALTALK
questions, asked in turn in every mode so load on a shared machine hits all modes alike.

- --sizes (default 10,000): indexed with the real model; the one-frame-at-a-time rate is
  measured on the first --single frames, the batched one on the rest; default search and the
  original RRF, keyword and vector lanes. The same frames are also indexed with the mock
  embedder: the index's own write path without the model's compute.
- --scale-sizes (default 100,000 and 1,000,000): indexing that many frames with the model would
  take hours here, so the stored vectors are synthetic: real embeddings (default backend) of a
  pool of --pool distinct shared turns, each frame's vector one pool vector plus Gaussian noise
  (cosine about 0.9 to it), re-normalized; frame vectors only (chat turns are short: no chunk
  vectors), with their quantized companions. Every query is a whole ``search(limit=10)`` on a
  mind opened read-only with the real default-backend embedder, so the figure includes embedding
  the query, in two modes taking turns query by query on the same mind (SCAN_MODES): ``exact``,
  the lanes before issue #19 (every vector scanned, every frame holding a query word ranked), and
  ``prescan``, today's default (sign bits, int8 codes, then floats; common words left out of the
  keyword lane's frames). The candidate recall is the share of the exact vector lane's top 10 and
  top 100 that the pre-scan returns too. ``--widths 384 1024`` repeats it on a zero-padded 1024
  mind (the original engine's width). Beside the wall time, the CPU time the process spent per
  search (all its threads): on a machine shared with other jobs the wall time grows with the
  load, the CPU time much less.

The frames are cognified after indexing (entities, relations and entity-frame links, as a
harvest does), so relevance's graph nearness walks a real graph; `hybrid_before_blend` the defaults
before the question's topic blend and speaker names out of the lanes (one query embedding, not two);
`hybrid_no_time` is the default without the time boost (the dates of a question are parsed only in the default `hybrid`),
`hybrid_no_addressed` the default without names that stand for a role (issue #35; it reads
something only with ``--roles``: the frames as a ChatGPT harvest stores them, authors
``user``/``assistant``), `hybrid_addressed_source` with such names as the round before "auto"
held them (``addressed_scope="source"``, no role left without a name: ``addressed_unnamed=False``),
`hybrid_role_names_in_graph` the default with such names seeding graph nearness (``role_names_out_of_graph=False``). Beside the wall time of every mode, the CPU time of the process.

    .venv/bin/python benchmarks/search.py [--sizes 10000] [--scale-sizes 100000 1000000] [--queries 300] [--single 300]
        [--widths 384 1024] [--recall-queries 100] [--roles]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _common import machine, percentile, write_results
from _corpus import benchmark_turns, recombined_corpus
from locomo import DEFAULT_DATA as LOCOMO_DATA
from locomo import load_locomo
from realtalk import DEFAULT_DATA as REALTALK_DATA
from realtalk import load_realtalk

from mind_core.embeddings import ORIGINAL_DIMENSIONS, InprocessEmbedder, MockEmbedder
from mind_core.embeddings.base import Embedder, to_blob
from mind_core.mind import Mind
from mind_core.search import vector_codes
from mind_core.search.config import SearchConfig
from mind_core.search.time_window import may_name_a_time
from mind_core.store.frames import NewFrame
from mind_core.timestamps import epoch_to_iso

REAL_MODEL_MAX_FRAMES = 20_000
WRITE_BATCH = 5_000
TARGET_SPEEDUP = 5.0
MOCK_SINGLE = 3_000  # frames indexed one at a time with the mock embedder (fast: a larger sample)
NOISE_COSINE = 0.9  # a synthetic frame vector's cosine to the pool vector it was made from
VECTOR_BATCH = 20_000
# before issue #19: both lanes exhaustive (every vector scanned, every frame with a query word ranked)
SCAN_MODES = {
    "exact": SearchConfig(keyword_split_frames=10**12, prescan_min_vectors=10**12),
    "prescan": SearchConfig(),
}
NO_TIME = SearchConfig(time_weight=0.0)
NO_ADDRESSED = SearchConfig(addressed_names=False)  # before issue #35's names that stand for a role
# such names held per source, and no name standing for a role left without one (before "auto")
ADDRESSED_SOURCE = SearchConfig(addressed_scope="source", addressed_unnamed=False)
# a name that stands for a role still seeding graph nearness (before "Multi-hop, seventh round")
ROLE_NAMES_IN_GRAPH = SearchConfig(role_names_out_of_graph=False)
# the defaults before the speaker names left the lanes and the topic blend (one embedding per query)
BEFORE_NAMES_AND_BLEND = SearchConfig(
    context_weight=0.6, vector_weight=0.4, speaker_weight=0.2, drop_speaker_names=False, topic_blend=False
)


def questions(count: int) -> list[str]:
    asked: list[str] = []
    if LOCOMO_DATA.is_file():
        asked += [q.question for c in load_locomo(LOCOMO_DATA) for q in c.questions]
    if REALTALK_DATA.is_dir():
        asked += [q.question for c in load_realtalk([REALTALK_DATA]) for q in c.questions]
    if not asked:
        asked = ["what did we decide about the budget", "where did you travel last summer"]
    return [asked[i % len(asked)] for i in range(count)]


def write_frames(mind: Mind, count: int, roles: bool = False) -> list[tuple[int, str]]:
    """The corpus's turns as frames; ``roles``: as a ChatGPT harvest stores them, the author a role
    (a session's first speaker ``user``, the other ``assistant``) in the content and the provenance."""
    corpus, _ = recombined_corpus(count)
    written: list[tuple[int, str]] = []
    pending: list[NewFrame] = []
    for session in corpus.sessions:
        gop_id = f"bench:{session.key}"
        mind.sessions.ensure(gop_id)
        for turn in session.turns:
            metadata = None
            speaker = turn.speaker
            if roles:
                speaker = "user" if turn.speaker == session.turns[0].speaker else "assistant"
                metadata = {"provenance": {"source": "bench", "role": speaker}}
                speaker = speaker.capitalize()
            content = f"[{session.title}] {speaker}: {turn.text}"
            pending.append(NewFrame(gop_id, content, "normal", "import", epoch_to_iso(turn.epoch), metadata))
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
        "hybrid_no_time": hybrid(NO_TIME),
        "hybrid_no_addressed": hybrid(NO_ADDRESSED),
        "hybrid_addressed_source": hybrid(ADDRESSED_SOURCE),
        "hybrid_role_names_in_graph": hybrid(ROLE_NAMES_IN_GRAPH),
        "hybrid_before_blend": hybrid(BEFORE_NAMES_AND_BLEND),
        "keyword": lambda q: search.keyword_search(q, 20),
        "vector": lambda q: search.vector_search(q, 20),
    }
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    cpu: dict[str, list[float]] = {mode: [] for mode in modes}
    for query in asked:
        for mode, run in modes.items():
            began, began_cpu = time.perf_counter(), time.process_time()
            run(query)
            times[mode].append((time.perf_counter() - began) * 1000)
            cpu[mode].append((time.process_time() - began_cpu) * 1000)
    search.config = default
    return {
        mode: {
            "p50_ms": percentile(v, 50),
            "p95_ms": percentile(v, 95),
            "cpu_p50_ms": percentile(cpu[mode], 50),
            "cpu_p95_ms": percentile(cpu[mode], 95),
        }
        for mode, v in times.items()
    }


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


def run_size(size: int, asked: list[str], single: int, real: InprocessEmbedder, roles: bool = False) -> dict:
    use_real = size <= REAL_MODEL_MAX_FRAMES
    embedder: Embedder = real if use_real else MockEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        mind = Mind.open(Path(tmp) / "bench.mind", embedder=embedder)
        began = time.perf_counter()
        frames = write_frames(mind, size, roles)
        write_s = time.perf_counter() - began
        rates = index_rates(mind, frames, single if use_real else MOCK_SINGLE)
        began = time.perf_counter()
        mind.cognify.cognify_batch([frame_id for frame_id, _ in frames])
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


def pool_vectors(real: InprocessEmbedder, pool: int) -> np.ndarray:
    """Real vectors of ``pool`` distinct shared turns (at the model's own width)."""
    texts = sorted({text for _, text in benchmark_turns()[0]})[:pool]
    return np.asarray(real.embed_batch(texts), dtype=np.float32)


def synthetic_vectors(pool: np.ndarray, start: int, count: int, seed: int) -> np.ndarray:
    """``count`` unit vectors, each a pool vector plus noise, NOISE_COSINE from it on average."""
    rng = np.random.default_rng(seed + start)
    width = pool.shape[1]
    base = pool[rng.integers(0, len(pool), count)]
    sigma = np.sqrt((1 / NOISE_COSINE**2 - 1) / width)
    vectors = base + rng.normal(0.0, sigma, (count, width)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def store_vectors(mind: Mind, ids: list[int], pool: np.ndarray, width: int) -> float:
    """Write the synthetic vectors of ``ids`` at ``width`` values (zero-padded) with their
    quantized companions, as the vector index writes them; seconds taken."""
    began = time.perf_counter()
    for start in range(0, len(ids), VECTOR_BATCH):
        chunk = ids[start : start + VECTOR_BATCH]
        vectors = synthetic_vectors(pool, start, len(chunk), seed=len(ids))
        padded = np.zeros((len(chunk), width), dtype=np.float32)
        padded[:, : vectors.shape[1]] = vectors
        rows = [(frame_id, to_blob(vector)) for frame_id, vector in zip(chunk, padded, strict=True)]
        with mind.db.transaction():
            mind.db.executemany("INSERT INTO memory_frames_vec (rowid, embedding) VALUES (?, ?)", rows)
            vector_codes.put(mind.db, "memory_frames_vec", rows)
            mind.search.vectors.record_fingerprint()
    return time.perf_counter() - began


def candidate_recall(mind: Mind, asked: list[str], depth: int) -> dict[str, float]:
    """How many of the exact scan's nearest frames the pre-scan returns too: of the top 10 and of
    the lane's ``depth`` (what the fusion reads), mean and worst over the queries."""
    vectors = mind.search.vectors
    at_10, at_depth = [], []
    for query in asked:
        blob = to_blob(vectors.embed_query(query))
        exact = [fid for fid, _ in vectors.nearest("memory_frames_vec", blob, depth, prescan=False)]
        quick = [fid for fid, _ in vectors.nearest("memory_frames_vec", blob, depth, prescan=True)]
        at_10.append(len(set(exact[:10]) & set(quick[:10])) / max(1, len(exact[:10])))
        at_depth.append(len(set(exact) & set(quick)) / max(1, len(exact)))
    return {
        "recall_at_10": float(np.mean(at_10)),
        "worst_at_10": float(min(at_10)),
        f"recall_at_{depth}": float(np.mean(at_depth)),
        f"worst_at_{depth}": float(min(at_depth)),
    }


def scale_run(
    size: int, asked: list[str], real: InprocessEmbedder, pool: np.ndarray, widths: list[int], recall_queries: int
) -> dict:
    """Whole-search latency at ``size`` frames: the exact scans of before issue #19 and the
    pre-scans of today (SCAN_MODES) on the same mind, taking turns query by query, at each width."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = {width: Path(tmp) / f"{width}.mind" for width in widths}
        began = time.perf_counter()
        with Mind.open(paths[widths[0]], embedder=real) as mind:
            ids = [frame_id for frame_id, _ in write_frames(mind, size)]
        write_s = time.perf_counter() - began
        for width in widths[1:]:
            shutil.copy(paths[widths[0]], paths[width])
        vector_s = {}
        for width, path in paths.items():
            with Mind.open(path, embedder=real, dimensions=width, rebuild_vectors=True) as mind:
                vector_s[width] = store_vectors(mind, ids, pool, width)
        minds = {width: Mind.open(path, embedder=real, readonly=True) for width, path in paths.items()}
        sizes_mb = {width: path.stat().st_size / 2**20 for width, path in paths.items()}
        runs = [(width, mode) for width in minds for mode in SCAN_MODES]
        try:
            for mind in minds.values():
                mind.search.search(asked[0], limit=10)  # first touch of the file's pages
            times: dict[tuple[int, str], list[float]] = {run: [] for run in runs}
            cpu: dict[tuple[int, str], list[float]] = {run: [] for run in runs}
            for i, query in enumerate(asked):
                for width, mode in runs if i % 2 == 0 else list(reversed(runs)):
                    search = minds[width].search
                    search.config = SCAN_MODES[mode]
                    began, began_cpu = time.perf_counter(), time.process_time()
                    search.search(query, limit=10)
                    times[(width, mode)].append((time.perf_counter() - began) * 1000)
                    cpu[(width, mode)].append((time.process_time() - began_cpu) * 1000)
            depth = SearchConfig().lane_depth
            recall = {width: candidate_recall(mind, asked[:recall_queries], depth) for width, mind in minds.items()}
        finally:
            for mind in minds.values():
                mind.close()
    return {
        "frames": len(ids),
        "write_frames_s": write_s,
        "widths": {
            str(width): {
                "modes": {
                    mode: {
                        "p50_ms": percentile(times[(width, mode)], 50),
                        "p95_ms": percentile(times[(width, mode)], 95),
                        "cpu_p50_ms": percentile(cpu[(width, mode)], 50),
                        "cpu_p95_ms": percentile(cpu[(width, mode)], 95),
                    }
                    for mode in SCAN_MODES
                },
                "candidate_recall": recall[width],
                "store_vectors_s": vector_s[width],
                "mind_mb": sizes_mb[width],
            }
            for width in minds
        },
    }


def rates_line(rates: dict[str, float]) -> str:
    return (
        f"batched {rates['batched_frames_per_s']:,.0f} frames/s, one at a time "
        f"{rates['single_frames_per_s']:,.0f} frames/s -> {rates['speedup']:.1f}x (target >= {TARGET_SPEEDUP:g}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000], help="frames indexed with the real model")
    parser.add_argument("--scale-sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--single", type=int, default=300, help="frames indexed one at a time for that rate")
    parser.add_argument("--pool", type=int, default=2_000, help="real vectors the synthetic ones are made from")
    parser.add_argument(
        "--widths", type=int, nargs="+", help="vector widths of the scale minds (default: the model's own)"
    )
    parser.add_argument(
        "--recall-queries", type=int, default=100, help="queries the pre-scan's candidate recall is measured on"
    )
    parser.add_argument(
        "--roles",
        action="store_true",
        help="--sizes frames as a ChatGPT harvest stores them: authors user/assistant, not names",
    )
    parser.add_argument("--name", default="search", help="results file name under benchmarks/results/")
    args = parser.parse_args()
    real = InprocessEmbedder()
    real.embed("warm up the model")
    asked = questions(args.queries)
    results = {}
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}; query embedder {real.backend}")
    print(f"{sum(may_name_a_time(q) for q in asked)} of {len(asked)} queries may name a time (their dates are parsed)")
    for size in args.sizes:
        r = run_size(size, asked, args.single, real.at_width(ORIGINAL_DIMENSIONS), args.roles)
        results[str(size)] = r
        print(f"{r['frames']:,} frames ({r['embedder']}, 1024 dims), cognified in {r['cognify_s']:.1f} s:")
        print(f"  vector indexing, {r['embedder']}: {rates_line(r)}")
        if "write_path" in r:
            print(f"  index write path (mock embedder, no model compute): {rates_line(r['write_path'])}")
        for mode, v in r["latency"].items():
            line = (
                f"  {mode:19} p50 {v['p50_ms']:7.1f} ms  p95 {v['p95_ms']:7.1f} ms"
                f"  (CPU p50 {v['cpu_p50_ms']:.1f}, p95 {v['cpu_p95_ms']:.1f} ms)"
            )
            estimate = r.get("estimated_real_latency", {}).get(mode)
            if estimate:
                line += f"   (with the real model's query embedding: p50 {estimate['p50_ms']:.1f}, p95 {estimate['p95_ms']:.1f})"
            print(line)
        if "real_query_embedding" in r:
            e = r["real_query_embedding"]
            print(f"  real-model query embedding alone: p50 {e['p50_ms']:.1f} ms, p95 {e['p95_ms']:.1f} ms")
    scale = {}
    if args.scale_sizes:
        pool = pool_vectors(real, args.pool)
        print(
            f"synthetic vectors: {len(pool):,} real {real.backend} vectors of distinct shared turns, each frame's "
            f"one of them plus Gaussian noise (cosine ~{NOISE_COSINE}), frame vectors only"
        )
        query_embedding = embedding_latency(real, asked)
        print(
            f"query embedding alone ({real.backend}): p50 {query_embedding['p50_ms']:.1f} ms, "
            f"p95 {query_embedding['p95_ms']:.1f} ms"
        )
        for size in args.scale_sizes:
            load_before = os.getloadavg()[0]
            r = scale_run(size, asked, real, pool, args.widths or [real.dimensions], args.recall_queries)
            r["load"] = [load_before, os.getloadavg()[0]]
            scale[str(size)] = r
            print(
                f"{r['frames']:,} frames, whole search(limit=10) with the query embedding, "
                f"load {load_before:.1f} before, {os.getloadavg()[0]:.1f} after:"
            )
            for width, v in r["widths"].items():
                for mode, m in v["modes"].items():
                    print(
                        f"  float[{width:>4}] {mode:8} p50 {m['p50_ms']:7.1f} ms  p95 {m['p95_ms']:7.1f} ms   "
                        f"(CPU time of the process: p50 {m['cpu_p50_ms']:.1f}, p95 {m['cpu_p95_ms']:.1f} ms)"
                    )
                c = v["candidate_recall"]
                figures = ", ".join(f"{key} {value:.3f}" for key, value in c.items())
                print(
                    f"  float[{width:>4}] pre-scan vs exact vector lane: {figures}; vectors written in "
                    f"{v['store_vectors_s']:.0f} s, mind {v['mind_mb']:,.0f} MiB"
                )
        scale["query_embedding"] = query_embedding
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    write_results(
        args.name, {"queries": len(asked), "sizes": results, "scale": scale, "load_after": os.getloadavg()}
    )


if __name__ == "__main__":
    main()
