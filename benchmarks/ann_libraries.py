"""Choose the vector lane's ANN library by measurement: usearch, hnswlib and faiss (HNSW) side by
side in one run on the same vectors, against an exact numpy scan.

The vectors are clustered unit vectors of 384 values (the MiniLM width a mind indexes): a few
thousand random centres with noise around each, so neighbourhoods are as uneven as real text's
rather than the uniform sphere on which every ANN looks bad. Queries are perturbed stored vectors.
Reported per library: build time, query p50/p95 (CPU time, one query at a time, one thread),
recall@10 against the exact scan, and the resident memory the built index added.

    python benchmarks/ann_libraries.py [--size 100000] [--queries 300]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import time

import numpy as np
import psutil
from _common import write_results

M, EF_CONSTRUCTION, EF_SEARCH = 16, 128, 64  # the same graph parameters for every library


def clustered(count: int, dims: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(1, count // 50), dims)).astype(np.float32)
    vectors = centres[rng.integers(0, len(centres), count)] + 0.6 * rng.standard_normal((count, dims)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def exact_top(data: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    scores = queries @ data.T
    return np.argsort(-scores, axis=1)[:, :k]


def _usearch(data: np.ndarray, dtype: str):
    from usearch.index import Index

    index = Index(ndim=data.shape[1], metric="l2sq", dtype=dtype, connectivity=M,
                  expansion_add=EF_CONSTRUCTION, expansion_search=EF_SEARCH)
    index.add(np.arange(len(data), dtype=np.uint64), data, threads=1)
    return lambda q, k: np.asarray(index.search(q, k, threads=1).keys, dtype=np.int64)


def _hnswlib(data: np.ndarray, dtype: str):
    import hnswlib

    index = hnswlib.Index(space="l2", dim=data.shape[1])
    index.init_index(max_elements=len(data), ef_construction=EF_CONSTRUCTION, M=M)
    index.set_num_threads(1)
    index.add_items(data, np.arange(len(data)))
    index.set_ef(EF_SEARCH)
    return lambda q, k: index.knn_query(q.reshape(1, -1), k)[0][0].astype(np.int64)


def _faiss(data: np.ndarray, dtype: str):
    import faiss

    faiss.omp_set_num_threads(1)
    index = faiss.IndexHNSWFlat(data.shape[1], M)
    index.hnsw.efConstruction = EF_CONSTRUCTION
    index.add(data)
    index.hnsw.efSearch = EF_SEARCH
    return lambda q, k: index.search(q.reshape(1, -1), k)[1][0].astype(np.int64)


CANDIDATES = (
    ("usearch", "usearch", _usearch, "f32"),
    ("usearch f16", "usearch", _usearch, "f16"),
    ("usearch i8", "usearch", _usearch, "i8"),
    ("hnswlib", "hnswlib", _hnswlib, "f32"),
    ("faiss HNSWFlat", "faiss", _faiss, "f32"),
)


def measure(name, build, dtype, data, queries, truth, k=10) -> dict:
    gc.collect()
    process = psutil.Process()
    rss = process.memory_info().rss
    started = time.perf_counter()
    search = build(data, dtype)
    built = time.perf_counter() - started
    added = (process.memory_info().rss - rss) / 2**20
    times, hits = [], 0
    for query, expected in zip(queries, truth, strict=True):
        cpu = time.process_time_ns()
        found = search(query, k)
        times.append((time.process_time_ns() - cpu) / 1e6)
        hits += len(set(found.tolist()) & set(expected.tolist()))
    return {"library": name, "build_s": round(built, 1), "p50_ms": round(float(np.percentile(times, 50)), 3),
            "p95_ms": round(float(np.percentile(times, 95)), 3), "recall_at_10": round(hits / (k * len(queries)), 4),
            "memory_mb": round(added, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--dims", type=int, default=384)
    args = parser.parse_args()
    data = clustered(args.size, args.dims, seed=1)
    rng = np.random.default_rng(2)
    picks = data[rng.integers(0, len(data), args.queries)]
    queries = picks + 0.3 * rng.standard_normal(picks.shape).astype(np.float32) / np.sqrt(args.dims)
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    truth = exact_top(data, queries, 10)
    exact_times = []
    for query in queries[:50]:
        cpu = time.process_time_ns()
        np.argpartition(-(data @ query), 10)[:10]
        exact_times.append((time.process_time_ns() - cpu) / 1e6)
    rows = [{"library": "exact numpy scan", "build_s": 0.0, "p50_ms": round(float(np.percentile(exact_times, 50)), 3),
             "p95_ms": round(float(np.percentile(exact_times, 95)), 3), "recall_at_10": 1.0, "memory_mb": 0.0}]
    for name, module, build, dtype in CANDIDATES:
        try:
            importlib.import_module(module)
        except ImportError:
            print(f"{name}: not installed, skipped")
            continue
        rows.append(measure(name, build, dtype, data, queries, truth))
        print(rows[-1], flush=True)
    print(f"\n{args.size:,} vectors of {args.dims} values, M={M} efConstruction={EF_CONSTRUCTION} ef={EF_SEARCH}, "
          f"load average {psutil.getloadavg()[0]:.1f}")
    print(f"{'library':18} {'build s':>8} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>10} {'memory MB':>10}")
    for row in rows:
        print(f"{row['library']:18} {row['build_s']:8.1f} {row['p50_ms']:8.3f} {row['p95_ms']:8.3f} "
              f"{row['recall_at_10']:10.4f} {row['memory_mb']:10.1f}")
    write_results("ann_libraries", {"size": args.size, "dims": args.dims, "rows": rows})


if __name__ == "__main__":
    main()
