"""A real archive on one machine (issue #31, item 6): search and harvest at 10k, 100k and 1M.

Search (``--sizes``): the vector lane and the whole ``HybridSearch.search`` (the call ``mind
recall`` makes) with the exact scan, the pre-scan and the ANN index side by side on the same
mind, with recall@10 against exact search, plus the keyword lane and the ANN library alone.

Frames are chat turns (benchmarks/_corpus.py, as benchmarks/search.py writes them). Embedding
100k frames with the real model would take hours on this machine, so the stored vectors are
synthetic with a real model's distribution: real embeddings (the in-process MiniLM, default
backend) of the 3,000 distinct shared turns, each frame's vector a random blend of two of them
plus Gaussian noise (cosine about 0.9 to the blend). benchmarks/search.py's scale run uses one
pool vector plus noise; at a million frames that makes 333 near-copies of each turn, all about
equally near a query, so "the exact top 10" is decided by the noise and recall measures nothing.
Queries are the LoCoMo and REALTALK questions embedded by the same real model, so a whole search
includes embedding the query. The modes take turns query by query on one mind opened read-only:

- ``exact``: every vector scanned (sqlite-vec's KNN);
- ``prescan``: without the ANN index (sign bits, int8 codes, then floats), the default below
  ``ANN_MIN_VECTORS``;
- ``ann``: with the ANN index (mind_core/search/ann.py), built by ``reconcile``: the default above;
- ``library`` (vector lane only): usearch alone on the mind's own graph file, the floor under it;
- ``ann_fts`` (whole search only): the ANN index with the keyword lane asking FTS5 for every
  question, as before the keyword lane's top-k index (mind_core/search/keyword_index.py).

``exact`` is exact in both lanes (every vector scanned, the keyword lane's FTS5 ``bm25()``); the
other modes use the keyword lane's top-k index (built by ``reconcile``; built here into a mind
that has none, its build time and size printed), except ``ann_fts``. The keyword lane alone is
measured both ways on the same questions (``keyword_lane``: the index, ``keyword_lane_fts``:
FTS5), with the index's recall of the FTS5 lane's top 10 and of its whole depth.

Generated minds (and the pool's real vectors) are kept in ``--minds`` (default
benchmarks/results/archive/): building the 1M mind and its graph takes hours on a loaded 2-core
machine, so a later run measures the same minds again; delete a mind's files to rebuild it.

Harvest (``--harvest-sizes``): a generated ChatGPT export of N messages harvested by ``mind
harvest`` in a new process with the mock embedder (benchmarks/_harvest_run.py): wall and CPU time
per stage, messages/s, peak RSS, mind size on disk.

Last, the 10M projection from the two largest sizes measured (``projection``).

Figures are wall and CPU time per call of this process (all its threads): on a machine shared with
other jobs the wall time grows with the load, the CPU time much less; the load average is printed.

    .venv/bin/python benchmarks/archive.py [--sizes 10000 100000 1000000] [--harvest-sizes 10000 100000 1000000]
        [--queries 200] [--pool 3000] [--minds DIR] [--wait-for-build]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import psutil
from _common import RESULTS, machine, percentile, write_results
from _harvest_run import measured_harvest, write_streamed_chatgpt_export
from search import NOISE_COSINE, VECTOR_BATCH, pool_vectors, questions, write_frames

from mind_core.embeddings import InprocessEmbedder
from mind_core.embeddings.base import to_blob
from mind_core.mind import Mind
from mind_core.search import ann, keyword_index, vector_codes
from mind_core.search.hybrid import SearchConfig
from mind_core.search.lanes import Scope
from mind_core.store.reconcile import refresh_ann_index

MODES = ("exact", "prescan", "ann")
SEARCH_MODES = (*MODES, "ann_fts")
DEFAULT = SearchConfig()
EXACT = SearchConfig(prescan_min_vectors=10**12, keyword_index=None)
FTS_KEYWORDS = SearchConfig(keyword_index=None)
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
    mind.search.config = EXACT if mode == "exact" else FTS_KEYWORDS if mode == "ann_fts" else DEFAULT
    mind.search.vectors.ann_min_vectors = 0 if mode in ("ann", "ann_fts") else 10**12


def timed_ms(call, *args, **kwargs) -> tuple[float, float, object]:
    """(wall ms, CPU ms of this process, the call's result)."""
    began, began_cpu = time.perf_counter(), time.process_time()
    result = call(*args, **kwargs)
    return (time.perf_counter() - began) * 1000, (time.process_time() - began_cpu) * 1000, result


def lane(mind: Mind, mode: str, blob: bytes, depth: int) -> list[tuple[int, float]]:
    vectors = mind.search.vectors
    if mode == "exact":
        return vectors.nearest("memory_frames_vec", blob, depth, prescan=False)
    return vectors.nearest("memory_frames_vec", blob, depth)


def overlap(found: list[int], truth: list[int]) -> float:
    return len(set(found[:LIMIT]) & set(truth[:LIMIT])) / max(1, len(truth[:LIMIT]))


def kept_pool(real: InprocessEmbedder, count: int, folder: Path) -> np.ndarray:
    """``pool_vectors``, embedded once and kept beside the generated minds (they are made from it)."""
    path = folder / f"pool-{count}.npy"
    if path.is_file():
        return np.load(path)
    pool = pool_vectors(real, count)
    folder.mkdir(parents=True, exist_ok=True)
    np.save(path, pool)
    return pool


def built_mind(
    size: int, real: InprocessEmbedder, pool: np.ndarray, folder: Path, wait: bool = False
) -> tuple[Path, dict]:
    """The generated mind of ``size`` frames with its ANN graph, and what building it took: made
    once and kept in ``folder`` (a later run with the same folder measures the same mind again;
    the vectors are synthetic and seeded, so a rebuild makes the same one). A mind without its
    record is rebuilt, unless ``wait``: then another run is building it, and this one waits for
    its record (measuring minds another run is still making)."""
    path = folder / f"archive-{size}.mind"
    record = folder / f"archive-{size}.json"
    if wait and path.is_file() and not record.is_file():
        print(f"waiting for {record.name}: another run is building {path.name}", flush=True)
        while not record.is_file():
            time.sleep(30)
    if path.is_file() and record.is_file():
        with Mind.open(path, embedder=real):  # brings an older mind's schema up to date
            pass
        return path, json.loads(record.read_text())
    for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        stale.unlink(missing_ok=True)
    shutil.rmtree(Path(f"{path}.ann"), ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
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
    figures = {"frames": len(ids), "write_frames_s": write_s, "store_vectors_s": vector_s,
               "built_vectors": built, "build_s": build_s, "build_rss_mb": build_rss_mb}
    record.write_text(json.dumps(figures, indent=2))
    return path, figures


def built_keyword_index(path: Path) -> dict:
    """The keyword lane's top-k index of the mind at ``path``, built as a reconcile (``mind doctor --repair``) builds
    it when the mind has none usable: its size, and what building it took (when built now)."""
    figures: dict = {}
    with Mind.open(path) as mind:
        if keyword_index.problem(mind.db) is not None:
            began, began_cpu = time.perf_counter(), time.process_time()
            rss = psutil.Process().memory_info().rss
            keyword_index.refresh(mind.db)
            figures = {"build_wall_s": time.perf_counter() - began, "build_cpu_s": time.process_time() - began_cpu,
                       "build_rss_growth_mb": (psutil.Process().memory_info().rss - rss) / 2**20}
        manifest = keyword_index.read_manifest(mind.db) or {}
        size = mind.db.scalar(
            f"SELECT (SELECT sum(length(word) + length(ids) + length(counts) + 8) FROM {keyword_index.TABLE})"
            f" + (SELECT length(lengths) FROM {keyword_index.LENGTHS_TABLE})"
        )
    return {**figures, "words": manifest.get("words", 0), "mb": (size or 0) / 2**20, "parameters": manifest.get("parameters")}


def library_search(path: Path) -> tuple[object, int]:
    """The ANN library alone on the mind's own graph file (usearch, memory-mapped, one thread):
    the floor under the vector lane, measured on the same queries."""
    Index = ann.usearch_index()  # noqa: N806
    manifest = json.loads((Path(f"{path}.ann") / ann.MANIFEST).read_text())
    graph = Index.restore(str(Path(f"{path}.ann") / "memory_frames_vec.usearch"), view=True)
    graph.expansion_search = max(manifest["parameters"]["expansion_search"], ann.SEARCH_WIDTH * LIMIT)
    return graph, int(manifest["indexed_dims"])


def run_size(
    size: int, asked: list[str], real: InprocessEmbedder, pool: np.ndarray, folder: Path, wait: bool = False
) -> dict:
    path, build = built_mind(size, real, pool, folder, wait)
    keywords = built_keyword_index(path)
    ann_mb = sum(p.stat().st_size for p in Path(str(path) + ".ann").iterdir()) / 2**20
    graph, dims = library_search(path)
    with Mind.open(path, embedder=real, readonly=True) as mind:
        rss = psutil.Process().memory_info().rss
        use_mode(mind, "ann")
        _, load_ms, graphs = timed_ms(mind.search.vectors.ann_index)
        assert graphs is not None, "the ANN index was refused"
        ann_rss_mb = (psutil.Process().memory_info().rss - rss) / 2**20
        manifest = ann.read_manifest(mind.db)
        depth = mind.search.config.lane_depth
        assert keyword_index.usable(mind.db) is not None, "the keyword index was refused"
        for mode in SEARCH_MODES:
            use_mode(mind, mode)
            mind.search.search(asked[0], limit=LIMIT)  # first touch of the file's pages
        measured = {what: {mode: {"wall": [], "cpu": [], "recall": []} for mode in modes}
                    for what, modes in (("vector_lane", MODES), ("search", SEARCH_MODES))}
        library = {"wall": [], "cpu": [], "recall": []}
        keyword = {"wall": [], "cpu": [], "recall": []}
        keyword_fts = {"wall": [], "cpu": []}
        keyword_depth_recall = []
        depth_recall = {mode: [] for mode in MODES}  # of the lane's whole depth, what the fusion reads
        for i, query in enumerate(asked):
            vector = mind.search.vectors.embed_query(query)
            blob = to_blob(vector)
            order = SEARCH_MODES if i % 2 == 0 else tuple(reversed(SEARCH_MODES))
            lane_hits, search_hits = {}, {}
            for mode in order:
                use_mode(mind, mode)
                if mode in MODES:
                    wall, cpu, hits = timed_ms(lane, mind, mode, blob, depth)
                    measured["vector_lane"][mode]["wall"].append(wall)
                    measured["vector_lane"][mode]["cpu"].append(cpu)
                    lane_hits[mode] = [frame_id for frame_id, _ in hits]
                wall, cpu, results = timed_ms(mind.search.search, query, limit=LIMIT)
                measured["search"][mode]["wall"].append(wall)
                measured["search"][mode]["cpu"].append(cpu)
                search_hits[mode] = [r.frame.id for r in results]
            wall, cpu, found = timed_ms(graph.search, np.ascontiguousarray(vector[:dims]), LIMIT, threads=1)
            library["wall"].append(wall)
            library["cpu"].append(cpu)
            library["recall"].append(overlap([int(key) for key in found.keys], lane_hits["exact"]))
            found = {}
            for mode, times in ((("prescan", keyword), ("ann_fts", keyword_fts)) if i % 2 == 0
                                else (("ann_fts", keyword_fts), ("prescan", keyword))):
                use_mode(mind, mode)
                wall, cpu, found[mode] = timed_ms(mind.search.keyword_lane.hits, query, depth, Scope())
                times["wall"].append(wall)
                times["cpu"].append(cpu)
            by_index, by_fts = ([hit.frame_id for hit in found[mode]] for mode in ("prescan", "ann_fts"))
            keyword["recall"].append(overlap(by_index, by_fts))
            keyword_depth_recall.append(len(set(by_index) & set(by_fts)) / max(1, len(by_fts)))
            for mode in MODES:
                measured["vector_lane"][mode]["recall"].append(overlap(lane_hits[mode], lane_hits["exact"]))
                depth_recall[mode].append(len(set(lane_hits[mode]) & set(lane_hits["exact"])) / max(1, depth))
            for mode in SEARCH_MODES:
                measured["search"][mode]["recall"].append(overlap(search_hits[mode], search_hits["exact"]))

        searched_rss_mb = (psutil.Process().memory_info().rss - rss) / 2**20

    def figures(times: dict[str, list[float]]) -> dict[str, float]:
        out = {f"{clock}_{q}_ms": percentile(times[clock], q) for clock in ("wall", "cpu") for q in (50, 95)}
        if times.get("recall"):
            out["recall_at_10"] = float(np.mean(times["recall"]))
            out["worst_at_10"] = float(min(times["recall"]))
        return out

    lanes = {mode: {**figures(measured["vector_lane"][mode]), "recall_at_depth": float(np.mean(depth_recall[mode]))}
             for mode in MODES}
    lanes["library"] = figures(library)
    return {
        **build,
        "lane_depth": depth,
        "ann": {
            "load_cpu_ms": load_ms,
            "resident_mb": ann_rss_mb,
            "resident_after_queries_mb": searched_rss_mb,  # the mind's pages and the mapped graph's
            "files_mb": ann_mb,
            "manifest": manifest,
        },
        "mind_mb": path.stat().st_size / 2**20,
        "vector_lane": lanes,
        "search": {mode: figures(measured["search"][mode]) for mode in SEARCH_MODES},
        "keyword_lane": {**figures(keyword), "recall_at_depth": float(np.mean(keyword_depth_recall))},
        "keyword_lane_fts": figures(keyword_fts),
        "keyword_index": keywords,
    }


def table(results: dict[str, dict]) -> str:
    lines = [
        f"{'frames':>9} {'what':14} {'mode':8} {'wall p50':>9} {'wall p95':>9} {'CPU p50':>8} {'CPU p95':>8}"
        f" {'recall@10':>10} {'worst':>6} {'recall@depth':>9}"
    ]
    for size, result in results.items():
        for what in ("vector_lane", "search"):
            for mode, row in result[what].items():
                lines.append(
                    f"{int(size):>9,} {what:14} {mode:8} {row['wall_50_ms']:9.2f} {row['wall_95_ms']:9.2f} "
                    f"{row['cpu_50_ms']:8.2f} {row['cpu_95_ms']:8.2f} {row['recall_at_10']:10.3f} {row['worst_at_10']:6.2f}"
                    + (f" {row['recall_at_depth']:9.3f}" if "recall_at_depth" in row else "")
                )
        for what in ("keyword_lane", "keyword_lane_fts"):
            row = result[what]
            lines.append(f"{int(size):>9,} {what:16} {'':6} {row['wall_50_ms']:9.2f} {row['wall_95_ms']:9.2f} "
                         f"{row['cpu_50_ms']:8.2f} {row['cpu_95_ms']:8.2f}"
                         + (f" {row['recall_at_10']:10.3f} {row['worst_at_10']:6.2f} {row['recall_at_depth']:9.3f}"
                            if "recall_at_10" in row else ""))
        built = result["keyword_index"]
        lines.append(f"{int(size):>9,} keyword index: {built['words']:,} word lists, {built['mb']:.0f} MB in the mind, "
                     + (f"built in {built['build_wall_s']:.1f} s ({built['build_cpu_s']:.1f} s CPU, RSS grew "
                        f"{built['build_rss_growth_mb']:.0f} MB)" if "build_wall_s" in built else "built before this run")
                     + f"; parameters {built['parameters']}")
        built = result["ann"]
        lines.append(
            f"{int(size):>9,} ANN index: built in {result['build_s']:.1f} s, {built['files_mb']:.0f} MB on disk, "
            f"{built['resident_mb']:.0f} MB resident when loaded ({built['resident_after_queries_mb']:.0f} MB "
            f"more after the queries, the mind's pages included), loaded in {built['load_cpu_ms']:.0f} ms CPU; "
            f"mind {result['mind_mb']:.0f} MB; lane depth {result['lane_depth']}"
        )
    return "\n".join(lines)


def harvest_table(harvests: dict[str, dict]) -> str:
    lines = [f"{'messages':>9} {'wall s':>8} {'CPU s':>8} {'msg/s':>7} {'peak RSS MB':>11} {'unmapped':>8} {'mind MB':>8}"
             "  stages wall/CPU s"]
    for size, r in harvests.items():
        stages = ", ".join(f"{stage} {seconds:.1f}" for stage, seconds in r["stage_wall_s"].items())
        cpu = ", ".join(f"{stage} {seconds:.1f}" for stage, seconds in r["stage_cpu_s"].items())
        lines.append(f"{int(size):>9,} {r['wall_s']:8.1f} {r['cpu_s']:8.1f} {r['messages_per_s']:7.0f} "
                     f"{r['peak_rss_mb']:11.0f} {r['peak_private_mb']:8.0f} {r['mind_mb']:8.0f}  wall: {stages}; CPU: {cpu}")
    return "\n".join(lines)


def projection(results: dict[str, dict], harvests: dict[str, dict], target: int = 10_000_000) -> list[str]:
    """Ten million from the two largest sizes measured: a figure that grew by a factor g over the
    last tenfold grows by g again (ANN and keyword lanes: sub-linear; the exact scan, the mind's
    size, the harvest's time: about linear); peak RSS is carried over (bounded by the batches)."""
    lines = []
    sizes = sorted(int(size) for size in results)
    if len(sizes) >= 2:
        small, large = str(sizes[-2]), str(sizes[-1])
        steps = np.log(target / int(large)) / np.log(int(large) / int(small))
        for mode in SEARCH_MODES:
            a, b = results[small]["search"][mode]["cpu_95_ms"], results[large]["search"][mode]["cpu_95_ms"]
            lines.append(f"search {mode}: CPU p95 {b:.0f} ms at {int(large):,} -> about {b * (b / a) ** steps:.0f} ms at {target:,}")
        a, b = results[small]["mind_mb"], results[large]["mind_mb"]
        lines.append(f"mind on disk (generated frames): {b / 1024:.1f} GiB -> about {b * (b / a) ** steps / 1024:.0f} GiB")
        a, b = results[small]["ann"]["files_mb"], results[large]["ann"]["files_mb"]
        lines.append(f"ANN graph: {b / 1024:.1f} GiB -> about {b * (b / a) ** steps / 1024:.0f} GiB "
                     "(memory-mapped: the pages a search touches are resident)")
    sizes = sorted(int(size) for size in harvests)
    if sizes:
        largest = harvests[str(sizes[-1])]
        factor = target / sizes[-1]
        lines.append(f"harvest (mock embedder): {largest['wall_s'] / 3600:.1f} h wall at {sizes[-1]:,} -> about "
                     f"{largest['wall_s'] * factor / 3600:.0f} h at {target:,} if linear; peak RSS "
                     f"{largest['peak_rss_mb']:.0f} MB if the batches bound it; mind {largest['mind_mb'] * factor / 1024:.0f} GiB")
    return lines


def harvest_size(messages: int, folder: Path) -> dict:
    """One ``mind harvest`` of a generated export of ``messages`` (mock embedder), in a fresh home;
    the export is kept in ``folder`` for the next run."""
    export = folder / f"export-{messages}" / "conversations.json"
    if not export.is_file():
        write_streamed_chatgpt_export(export, messages)
    home = folder / f"home-{messages}"
    shutil.rmtree(home, ignore_errors=True)
    return measured_harvest(home, export, messages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000], help="search: frames per mind")
    parser.add_argument("--harvest-sizes", type=int, nargs="*", default=[], help="harvest: messages per source")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pool", type=int, default=3_000, help="distinct real vectors the synthetic ones blend")
    parser.add_argument("--minds", type=Path, default=RESULTS / "archive", help="where generated minds are kept")
    parser.add_argument("--wait-for-build", action="store_true",
                        help="a mind without its record is being built by another run: wait for it")
    args = parser.parse_args()
    harvests: dict[str, dict] = {}
    for messages in args.harvest_sizes:
        harvests[str(messages)] = harvest_size(messages, args.minds)
        print(harvest_table({str(messages): harvests[str(messages)]}), flush=True)
    results: dict[str, dict] = {}
    if args.sizes:
        real = InprocessEmbedder()
        pool = kept_pool(real, args.pool, args.minds)
        asked = questions(args.queries)
        for size in args.sizes:
            results[str(size)] = run_size(size, asked, real, pool, args.minds, args.wait_for_build)
            print(table({str(size): results[str(size)]}), flush=True)
    load = os.getloadavg()
    print(f"\n{machine()}; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; parameters {ann.PARAMETERS}")
    if results:
        print(table(results))
    if harvests:
        print(harvest_table(harvests))
    print("\n".join(projection(results, harvests)))
    write_results(
        "archive" if results else "archive_harvest",
        {
            "sizes": args.sizes,
            "harvest_sizes": args.harvest_sizes,
            "queries": args.queries,
            "vectors": "synthetic: blends of two real MiniLM vectors of shared turns plus noise (cosine 0.9)",
            "ann_parameters": asdict(ann.PARAMETERS),
            "load_average": load,
            "results": results,
            "harvests": harvests,
        },
    )


if __name__ == "__main__":
    main()
