"""I-frame insert throughput (with FTS, batched transactions) and dedup lookup time vs mind size.

Targets (issue #2): >= 25,000 frames/s for 100,000 short frames; the dedup lookup at 100,000
frames at most 2x its time at 1,000 frames.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import percentile, write_results

from mind_core.mind import Mind
from mind_core.store.frames import NewFrame

BATCH = 1000


def content(i: int) -> str:
    return f"short frame {i}: note about item {i % 977} and topic {i % 31}"


def insert_frames(mind: Mind, start: int, count: int) -> float:
    """The bulk path: create_i_frames, one transaction per batch."""
    began = time.perf_counter()
    for offset in range(start, start + count, BATCH):
        end = min(offset + BATCH, start + count)
        mind.frames.create_i_frames([NewFrame("bench", content(i)) for i in range(offset, end)])
    return time.perf_counter() - began


def insert_frames_one_by_one(mind: Mind, start: int, count: int) -> float:
    """create_i_frame per frame, still one transaction per batch."""
    began = time.perf_counter()
    for offset in range(start, start + count, BATCH):
        with mind.db.transaction():
            for i in range(offset, min(offset + BATCH, start + count)):
                mind.frames.create_i_frame("bench", content(i))
    return time.perf_counter() - began


def dedup_lookup_us(mind: Mind, existing: int, probes: int = 5000, rounds: int = 5) -> float:
    """Mean time of a dedup lookup (hash + indexed probe) on stored content; best of several rounds."""
    texts = [content((n * 7919) % existing) for n in range(probes)]
    best = []
    for _ in range(rounds):
        began = time.perf_counter()
        for text in texts:
            assert mind.frames.find_duplicate(text) is not None
        best.append((time.perf_counter() - began) / probes)
    return percentile(best, 0) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        mind = Mind.open(Path(tmp) / "bench.mind")
        mind.sessions.ensure("bench")
        insert_frames(mind, 0, 1000)
        small = dedup_lookup_us(mind, 1000)
        seconds = insert_frames(mind, 1000, args.frames - 1000)
        rate = (args.frames - 1000) / seconds
        large = dedup_lookup_us(mind, args.frames)
        mind.close()
        single = Mind.open(Path(tmp) / "single.mind")
        single.sessions.ensure("bench")
        single_rate = args.frames / insert_frames_one_by_one(single, 0, args.frames)
        single.close()
    print(f"I-frame insert with FTS, create_i_frames in batches of {BATCH}: {args.frames - 1000:,} frames in {seconds:.2f} s = {rate:,.0f} frames/s (target >= 25,000)")
    print(f"  same with one create_i_frame call per frame: {single_rate:,.0f} frames/s")
    print(f"dedup lookup (mean, best of 5 rounds): {small:.1f} us at 1,000 frames, {large:.1f} us at {args.frames:,} frames, ratio {large / small:.2f}x (target <= 2x)")
    write_results("frames", {"insert_frames_per_s": rate, "single_call_frames_per_s": single_rate, "dedup_us_1k": small, "dedup_us_large": large,
                             "frames": args.frames, "dedup_ratio": large / small})


if __name__ == "__main__":
    main()
