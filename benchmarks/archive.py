"""Search at archive size (issue #31, item 4): the vector lane and the whole ``HybridSearch.search``
at 10k and 100k frames (1M with ``--sizes``), the exact scan, the pre-scan and the ANN index side
by side on the same mind, with recall@10 against exact search, plus the keyword lane.

Frames are chat turns (benchmarks/_corpus.py, as benchmarks/search.py writes them). Embedding
100k frames with the real model would take hours on this machine, so the stored vectors are
synthetic with a real model's distribution: real embeddings (the in-process MiniLM, default
backend) of the 3,000 distinct shared turns, each frame's vector a random blend of two of them
plus Gaussian noise (cosine about 0.9 to the blend). benchmarks/search.py's scale run uses one
pool vector plus noise; at a million frames that makes 333 near-copies of each turn, all about
equally near a query, so "the exact top 10" is decided by the noise and recall measures nothing. Queries are the LoCoMo and
REALTALK questions embedded by the same real model, so a whole search includes embedding the
query. The modes take turns query by query on one mind opened read-only:

- ``exact``: every vector scanned (sqlite-vec's KNN);
- ``prescan``: without the ANN index (sign bits, int8 codes, then floats), today's default below
  ``ANN_MIN_VECTORS``;
- ``ann``: with the ANN index (mind_core/search/ann.py), built by ``reconcile``.

The keyword lane is the default's in all three, so the whole search's recall@10 against
``exact`` measures only what the vector lane's shortcut loses.

Figures are CPU time per call of this process (all its threads): on a machine shared with other
jobs the wall time grows with the load, the CPU time much less; the load average is printed.

    nice .venv/bin/python benchmarks/archive.py [--sizes 10000 100000] [--queries 200] [--pool 2000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import psutil
from _common import machine, percentile, write_results
from search import NOISE_COSINE, VECTOR_BATCH, pool_vectors, questions, write_frames

from mind_core.embeddings import InprocessEmbedder
from mind_core.embeddings.base import to_blob
from mind_core.mind import Mind
from mind_core.search import ann, vector_codes
from mind_core.search.hybrid import SearchConfig
from mind_core.store.reconcile import refresh_ann_index

MODES = ("exact", "prescan", "ann")
DEFAULT = SearchConfig()
EXACT = SearchConfig(prescan_min_vectors=10**12)
LIMIT = 10


def blended_vectors(pool: np.ndarray, count: int, seed: int) -> np.ndarray:
    """``count`` unit vectors, each a random blend of two pool vectors plus noise."""
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.25, 0.75, (count, 1)).astype(np.float32)
    blend = weights * pool[rng.integers(0, len(pool), count)] + (1 - weights) * pool[rng.integers(0, len(pool), count)]
    blend /= np.linalg.norm(blend, axis=1, keepdims=True)
    sigma = np.sqrt((1 / NOISE_COSINE**2 - 1) / pool.shape[1])
    vectors = blend + rng.normal(0.0, sigma, blend.shape).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def store_vectors(mind: Mind, ids: list[int], pool: np.ndarray) -> float:
    """Write the synthetic vectors of ``ids`` with their quantized companions, as the vector
    index writes them; seconds taken."""
    began = time.perf_counter()
    for start in range(0, len(ids), VECTOR_BATCH):
        chunk = ids[start : start + VECTOR_BATCH]
        rows = [(i, to_blob(v)) for i, v in zip(chunk, blended_vectors(pool, len(chunk), start), strict=True)]
        with mind.db.transaction():
            mind.db.executemany("INSERT INTO memory_frames_vec (rowid, embedding) VALUES (?, ?)", rows)
            vector_codes.put(mind.db, "memory_frames_vec", rows)
            mind.search.vectors.record_fingerprint()
    return time.perf_counter() - began


def use_mode(mind: Mind, mode: str) -> None:
    """Only the vector lane differs between the modes (the keyword lane is the default's), so a
    whole search's recall against ``exact`` measures what the vector lane's shortcut loses."""
    mind.search.config = EXACT if mode == "exact" else DEFAULT
    mind.search.vectors.ann_min_vectors = 0 if mode == "ann" else 10**12


def cpu_ms(call, *args, **kwargs) -> tuple[float, object]:
    began = time.process_time()
    result = call(*args, **kwargs)
    return (time.process_time() - began) * 1000, result


def lane(mind: Mind, mode: str, blob: bytes, depth: int) -> list[tuple[int, float]]:
    vectors = mind.search.vectors
    if mode == "exact":
        return vectors.nearest("memory_frames_vec", blob, depth, prescan=False)
    return vectors.nearest("memory_frames_vec", blob, depth)


def overlap(found: list[int], truth: list[int]) -> float:
    return len(set(found[:LIMIT]) & set(truth[:LIMIT])) / max(1, len(truth[:LIMIT]))


def run_size(size: int, asked: list[str], real: InprocessEmbedder, pool: np.ndarray, folder: Path) -> dict:
    path = folder / f"archive-{size}.mind"
    began = time.perf_counter()
    with Mind.open(path, embedder=real) as mind:
        ids = [frame_id for frame_id, _ in write_frames(mind, size)]
    write_s = time.perf_counter() - began
    with Mind.open(path, embedder=real) as mind:
        vector_s = store_vectors(mind, ids, pool)
        rss = psutil.Process().memory_info().rss
        began = time.perf_counter()
        built = refresh_ann_index(mind.db, min_vectors=0)
        build_s = time.perf_counter() - began
        build_rss_mb = (psutil.Process().memory_info().rss - rss) / 2**20
    ann_mb = sum(p.stat().st_size for p in Path(str(path) + ".ann").iterdir()) / 2**20
    with Mind.open(path, embedder=real, readonly=True) as mind:
        rss = psutil.Process().memory_info().rss
        use_mode(mind, "ann")
        load_s, graphs = cpu_ms(mind.search.vectors.ann_index)
        assert graphs is not None, "the ANN index was refused"
        ann_rss_mb = (psutil.Process().memory_info().rss - rss) / 2**20
        manifest = ann.read_manifest(mind.db)
        depth = mind.search.config.lane_depth
        for mode in MODES:
            use_mode(mind, mode)
            mind.search.search(asked[0], limit=LIMIT)  # first touch of the file's pages
        lane_ms = {mode: [] for mode in MODES}
        search_ms = {mode: [] for mode in MODES}
        keyword_ms: list[float] = []
        lane_recall = {mode: [] for mode in MODES}
        depth_recall = {mode: [] for mode in MODES}  # of the lane's whole depth, what the fusion reads
        search_recall = {mode: [] for mode in MODES}
        for i, query in enumerate(asked):
            blob = to_blob(mind.search.vectors.embed_query(query))
            order = MODES if i % 2 == 0 else tuple(reversed(MODES))
            lane_hits, search_hits = {}, {}
            for mode in order:
                use_mode(mind, mode)
                took, hits = cpu_ms(lane, mind, mode, blob, depth)
                lane_ms[mode].append(took)
                lane_hits[mode] = [frame_id for frame_id, _ in hits]
                took, results = cpu_ms(mind.search.search, query, limit=LIMIT)
                search_ms[mode].append(took)
                search_hits[mode] = [r.frame.id for r in results]
            use_mode(mind, "prescan")
            took, _ = cpu_ms(mind.search.keyword_hits, query, depth)
            keyword_ms.append(took)
            for mode in MODES:
                lane_recall[mode].append(overlap(lane_hits[mode], lane_hits["exact"]))
                depth_recall[mode].append(len(set(lane_hits[mode]) & set(lane_hits["exact"])) / max(1, depth))
                search_recall[mode].append(overlap(search_hits[mode], search_hits["exact"]))

        searched_rss_mb = (psutil.Process().memory_info().rss - rss) / 2**20

    def figures(times: list[float], recall: list[float] | None = None) -> dict[str, float]:
        out = {"cpu_p50_ms": percentile(times, 50), "cpu_p95_ms": percentile(times, 95)}
        if recall is not None:
            out["recall_at_10"] = float(np.mean(recall))
            out["worst_at_10"] = float(min(recall))
        return out

    return {
        "frames": len(ids),
        "lane_depth": depth,
        "write_frames_s": write_s,
        "store_vectors_s": vector_s,
        "ann": {
            "built_vectors": built,
            "build_s": build_s,
            "build_rss_mb": build_rss_mb,
            "load_cpu_ms": load_s,
            "resident_mb": ann_rss_mb,
            "resident_after_queries_mb": searched_rss_mb,  # the mind's pages and the mapped graph's
            "files_mb": ann_mb,
            "manifest": manifest,
        },
        "mind_mb": path.stat().st_size / 2**20,
        "vector_lane": {
            mode: {**figures(lane_ms[mode], lane_recall[mode]), "recall_at_depth": float(np.mean(depth_recall[mode]))}
            for mode in MODES
        },
        "search": {mode: figures(search_ms[mode], search_recall[mode]) for mode in MODES},
        "keyword_lane": figures(keyword_ms),
    }


def table(results: dict[str, dict]) -> str:
    lines = [
        f"{'frames':>9} {'what':14} {'mode':8} {'CPU p50 ms':>11} {'CPU p95 ms':>11} {'recall@10':>10} {'worst':>6}"
        f" {'recall@depth':>9}"
    ]
    for size, result in results.items():
        for what in ("vector_lane", "search"):
            for mode in MODES:
                row = result[what][mode]
                lines.append(
                    f"{int(size):>9,} {what:14} {mode:8} {row['cpu_p50_ms']:11.2f} {row['cpu_p95_ms']:11.2f} "
                    f"{row['recall_at_10']:10.3f} {row['worst_at_10']:6.2f}"
                    + (f" {row['recall_at_depth']:9.3f}" if "recall_at_depth" in row else "")
                )
        row = result["keyword_lane"]
        lines.append(f"{int(size):>9,} {'keyword_lane':14} {'':8} {row['cpu_p50_ms']:11.2f} {row['cpu_p95_ms']:11.2f}")
        built = result["ann"]
        lines.append(
            f"{int(size):>9,} ANN index: built in {built['build_s']:.1f} s, {built['files_mb']:.0f} MB on disk, "
            f"{built['resident_mb']:.0f} MB resident when loaded ({built['resident_after_queries_mb']:.0f} MB "
            f"more after the queries, the mind's pages included), loaded in {built['load_cpu_ms']:.0f} ms CPU; "
            f"mind {result['mind_mb']:.0f} MB; lane depth {result['lane_depth']}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pool", type=int, default=3_000, help="distinct real vectors the synthetic ones blend")
    args = parser.parse_args()
    real = InprocessEmbedder()
    pool = pool_vectors(real, args.pool)
    asked = questions(args.queries)
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            results[str(size)] = run_size(size, asked, real, pool, Path(tmp))
            print(table({str(size): results[str(size)]}), flush=True)
    load = os.getloadavg()
    print(f"\n{machine()}; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; parameters {ann.PARAMETERS}")
    print(table(results))
    write_results(
        "archive",
        {
            "sizes": args.sizes,
            "queries": args.queries,
            "vectors": "synthetic: blends of two real MiniLM vectors of shared turns plus noise (cosine 0.9)",
            "ann_parameters": asdict(ann.PARAMETERS),
            "load_average": load,
            "results": results,
        },
    )


if __name__ == "__main__":
    main()
