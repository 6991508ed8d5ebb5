"""Parquet snapshot time and peak memory for minds of 100,000 and 1,000,000 frames.

Target (issue #8): peak memory for 1,000,000 frames within 1.5x of that for 100,000, i.e. the
snapshot streams instead of loading tables. Each size is measured in its own subprocess so the
peaks are independent; RSS is sampled in a thread (``PeakRSS``). The generated minds are cached
under benchmarks/results/snapshot-minds/ and reused (building the 1,000,000-frame mind takes
about a minute).

    python benchmarks/snapshot.py                      # 100k and 1M, without embeddings
    python benchmarks/snapshot.py --embeddings         # also export the (32-d) vectors
    python benchmarks/snapshot.py --sizes 20000        # a quick run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import RESULTS, ROOT, PeakRSS, machine, write_results

MINDS = RESULTS / "snapshot-minds"
GENERATOR_VERSION = "1"
BATCH = 5000
FRAMES_PER_CONVERSATION = 50
VECTOR_EVERY = 4  # one frame in four has a vector
LINK_EVERY = 10  # one frame in ten is linked to an entity
DIMENSIONS = 32
WORDS = (
    "project falcon database migration postgres sqlite release budget meeting alice bob carol dashboard "
    "latency cache index query vector embedding harvest mailbox vault note deadline review design api "
    "customer invoice report sprint roadmap hiring onboarding laptop travel berlin lisbon kubernetes docker "
    "the a of to and in for with on about next week after before because while during quarterly"
).split()
SOURCES = (
    ("chatgpt-main", "chatgpt", "conversation"),
    ("vault", "markdown", "note"),
    ("inbox", "email", "email"),
)


def message(i: int) -> str:
    """About 200-400 characters of word salad, unique per frame."""
    length = 30 + (i * 7919) % 35
    words = [WORDS[(i * 31 + k * k * 17 + k) % len(WORDS)] for k in range(length)]
    return f"message {i}: " + " ".join(words)


def build_mind(path: Path, frames: int) -> None:
    from mind_core.mind import Mind
    from mind_core.store.frames import NewFrame
    from mind_core.store.schema import set_meta

    path.parent.mkdir(parents=True, exist_ok=True)
    for leftover in path.parent.glob(path.name + "*"):
        leftover.unlink()
    began = time.perf_counter()
    rng = np.random.default_rng(8)
    with Mind.open(path, dimensions=DIMENSIONS) as mind:
        kg = mind.knowledge
        entities = [kg.upsert_entity("concept", f"Topic {n}")[0] for n in range(200)]
        for n in range(400):
            kg.create_relation(entities[n % 200], entities[(n * 7 + 1) % 200], "co_occurs_with")
        for start in range(0, frames, BATCH):
            specs = []
            for i in range(start, min(start + BATCH, frames)):
                conversation = i // FRAMES_PER_CONVERSATION
                source, plugin, kind = SOURCES[conversation % len(SOURCES)]
                gop = f"{source}:{conversation}"
                if i % FRAMES_PER_CONVERSATION == 0:
                    mind.sessions.ensure(gop)
                moment = 1_600_000_000 + i * 97
                provenance = {
                    "source": source,
                    "plugin": plugin,
                    "item_key": f"{source}:{conversation}:{i}",
                    "item_kind": kind,
                    "container": str(conversation),
                    "title": f"conversation {conversation}",
                    "message_key": str(i),
                    "role": "user" if i % 2 else "assistant",
                    "author": None,
                    "timestamp": str(moment),
                    "path": f"/exports/{source}",
                }
                created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))
                specs.append(
                    NewFrame(
                        gop,
                        message(i),
                        source="import",
                        created_at=created,
                        metadata={"provenance": provenance},
                    )
                )
            written = mind.frames.create_i_frames(specs)
            with mind.db.transaction():
                mind.db.executemany(
                    "INSERT INTO memory_frames_vec (rowid, embedding) VALUES (?, ?)",
                    [
                        (f.id, rng.random(DIMENSIONS, dtype=np.float32).tobytes())
                        for f in written
                        if f.id % VECTOR_EVERY == 0
                    ],
                )
                mind.db.executemany(
                    "INSERT INTO kg_entity_frames (entity_id, frame_id) VALUES (?, ?)",
                    [(entities[f.id % len(entities)], f.id) for f in written if f.id % LINK_EVERY == 0],
                )
        set_meta(mind.db, "bench_snapshot_generator", f"{GENERATOR_VERSION}:{frames}")
    print(
        f"  built {frames:,}-frame mind in {time.perf_counter() - began:.1f} s ({path.stat().st_size / 2**20:,.0f} MiB)"
    )


def cached_mind(frames: int, rebuild: bool) -> Path:
    from mind_core.store.db import Database
    from mind_core.store.schema import get_meta

    path = MINDS / f"frames-{frames}.mind"
    if path.is_file() and not rebuild:
        db = Database(path, readonly=True)
        try:
            marker = get_meta(db, "bench_snapshot_generator") if db.table_exists("meta") else None
        finally:
            db.close()
        if marker == f"{GENERATOR_VERSION}:{frames}":
            return path
    print(f"building a {frames:,}-frame mind (cached in {path.relative_to(ROOT)})")
    build_mind(path, frames)
    return path


def measure(path: Path, embeddings: bool) -> dict:
    """One snapshot in this (fresh) process: time, peak RSS and the file sizes."""
    import pyarrow  # noqa: F401  (imported before the baseline, as a running service would have it)

    from mind_core.analytics.snapshot import snapshot_mind

    with tempfile.TemporaryDirectory() as tmp:
        with PeakRSS() as rss:
            began = time.perf_counter()
            summary = snapshot_mind(path, tmp, "bench", "2025-01-01", include_embeddings=embeddings)
            seconds = time.perf_counter() - began
        parquet_bytes = sum(p.stat().st_size for p in Path(tmp).rglob("*.parquet"))
    return {
        "frames": summary.rows["frames"],
        "rows": summary.rows,
        "seconds": seconds,
        "frames_per_s": summary.rows["frames"] / seconds,
        "baseline_rss_mib": rss.baseline / 2**20,
        "peak_rss_mib": rss.peak / 2**20,
        "peak_above_baseline_mib": (rss.peak - rss.baseline) / 2**20,
        "parquet_mib": parquet_bytes / 2**20,
        "mind_mib": path.stat().st_size / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated frame counts")
    parser.add_argument("--embeddings", action="store_true", help="include the vectors in the snapshot")
    parser.add_argument("--rebuild", action="store_true", help="regenerate the cached minds")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the per-size subprocess
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.embeddings)))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    for frames in sizes:
        path = cached_mind(frames, args.rebuild)
        command = [sys.executable, str(Path(__file__).resolve()), "--measure", str(path)]
        if args.embeddings:
            command.append("--embeddings")
        output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        result = json.loads(output.strip().splitlines()[-1])
        results.append(result)
        print(
            f"{result['frames']:>9,} frames: snapshot {result['seconds']:6.1f} s ({result['frames_per_s']:,.0f} frames/s), "
            f"peak RSS {result['peak_rss_mib']:6.0f} MiB (baseline {result['baseline_rss_mib']:.0f} MiB, "
            f"+{result['peak_above_baseline_mib']:.0f} MiB), Parquet {result['parquet_mib']:.0f} MiB "
            f"from a {result['mind_mib']:.0f} MiB mind"
        )
    ratio = None
    if len(results) >= 2:
        small, large = results[0], results[-1]
        ratio = large["peak_rss_mib"] / small["peak_rss_mib"]
        above = large["peak_above_baseline_mib"] / max(small["peak_above_baseline_mib"], 1e-9)
        print(
            f"peak memory {large['frames']:,} vs {small['frames']:,} frames: {ratio:.2f}x "
            f"(target <= 1.5x); above the import baseline: {above:.2f}x"
        )
    load = os.getloadavg()[0]
    print(
        f"machine: {machine()}; load average {load:.1f} (times are wall-clock, memory is not load-sensitive)"
    )
    write_results(
        "snapshot-embeddings" if args.embeddings else "snapshot",
        {"embeddings": args.embeddings, "results": results, "peak_ratio": ratio, "load_average": load},
    )


if __name__ == "__main__":
    main()
