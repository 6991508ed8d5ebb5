"""Harvest at archive size (issue #31, item 1): does every stage stream in bounded batches?

For each size (default 10,000 and 100,000 messages) a ChatGPT export is generated
(``write_chatgpt_export``, 50 messages a conversation) and harvested into a fresh mind with the
mock embedder (the pipeline's own cost, not the model's) in a fresh process, the way
``mind harvest`` runs it (``harvest()`` with a progress callback). A sampler thread in that
process reads its resident memory every 20 ms and files the sample under the stage running
(scan and import interleave: the scan is a generator the import drains, so they share a peak;
the harvest builds no ANN graph: the next reconcile does, see docs/performance.md).
Printed per size: messages/s and wall seconds per stage, the process's CPU seconds, peak RSS
overall and per stage, and per stage the peak of its anonymous part (``RssAnon``: the process's
own memory, without the pages of the mind file SQLite reads through its memory map, which the
kernel drops at will and which count in RSS as the file is read). Target: the 100k peak at most 1.3x the 10k one, and under 1 GB.

    nice .venv/bin/python benchmarks/archive_harvest.py [--sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import ROOT, machine, write_results

from mind_core.testing.exports import write_chatgpt_export

PER_CONVERSATION = 50

_CHILD = r"""
import json, resource, sys, threading, time
from pathlib import Path
from mind_core.embeddings.mock import MockEmbedder
from mind_core.harvest import pipeline
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind

export, mind_path = Path(sys.argv[1]), Path(sys.argv[2])
stage = ["open"]
peaks, anon_peaks = {}, {}
stop = threading.Event()

def sample():
    while not stop.is_set():
        with open("/proc/self/status") as status:
            fields = dict(line.split(":", 1) for line in status)
        rss, anon = (int(fields[k].split()[0]) * 1024 for k in ("VmRSS", "RssAnon"))
        peaks[stage[0]] = max(peaks.get(stage[0], 0), rss)
        anon_peaks[stage[0]] = max(anon_peaks.get(stage[0], 0), anon)
        time.sleep(0.02)

def progress(name, done, total):
    stage[0] = "scan+import" if name == "import" else name

def entering(name, function):
    def call(*args, **kwargs):
        stage[0] = name
        return function(*args, **kwargs)
    return call

# the stages without progress reports (or with none when they have nothing to do) announce themselves
pipeline.cognify_frames = entering("cognify", pipeline.cognify_frames)
pipeline.index_vectors = entering("vectors", pipeline.index_vectors)
pipeline.reconcile_after_harvest = entering("reconcile", pipeline.reconcile_after_harvest)

thread = threading.Thread(target=sample, daemon=True)
thread.start()
with Mind.open(mind_path, embedder=MockEmbedder()) as mind:
    register_source(mind, "chatgpt", export, "bench")
    stage[0] = "scan+import"
    began = time.process_time()
    report = harvest(mind, "bench", progress=progress)
    cpu = time.process_time() - began
    frames = report.frames_held  # (a count of its own here would read the file through the search's memory map)
stop.set()
thread.join()
print(json.dumps({
    "stage_seconds": report.stage_seconds,
    "cpu_s": cpu,
    "frames": frames,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "stage_peak_rss_mb": {k: v / 2**20 for k, v in peaks.items()},
    "stage_peak_anon_mb": {k: v / 2**20 for k, v in anon_peaks.items()},
    "mind_mb": mind_path.stat().st_size / 2**20,
}))
"""


def run_size(messages: int, folder: Path) -> dict:
    export = write_chatgpt_export(
        folder / f"export-{messages}" / "conversations.json", messages // PER_CONVERSATION, PER_CONVERSATION
    )
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(export), str(folder / f"bench-{messages}.mind")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    seconds = result["stage_seconds"]
    result["messages"] = messages
    result["wall_s"] = sum(seconds.values())
    result["messages_per_s"] = {stage: messages / s for stage, s in seconds.items() if s > 0}
    result["messages_per_s_total"] = messages / result["wall_s"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    print(machine())
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            r = results[size] = run_size(size, Path(tmp))
            stages = ", ".join(
                f"{stage} {s:.1f} s ({r['messages_per_s'].get(stage, float('inf')):,.0f} msg/s)"
                for stage, s in r["stage_seconds"].items()
            )
            peaks = ", ".join(
                f"{stage} {mb:,.0f} ({r['stage_peak_anon_mb'][stage]:,.0f} anonymous)"
                for stage, mb in r["stage_peak_rss_mb"].items()
            )
            print(
                f"{size:,} messages ({r['frames']:,} frames): {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} CPU s, "
                f"{r['messages_per_s_total']:,.0f} msg/s; {stages}; peak RSS {r['peak_rss_mb']:,.0f} MB "
                f"(per stage MB: {peaks}); mind {r['mind_mb']:,.0f} MB"
            )
    sizes = sorted(results)
    if len(sizes) > 1:
        ratio = results[sizes[-1]]["peak_rss_mb"] / results[sizes[0]]["peak_rss_mb"]
        print(f"peak RSS {sizes[-1]:,} / {sizes[0]:,} messages: {ratio:.2f}x (target <= 1.3x, and < 1 GB)")
    write_results("archive_harvest", {"sizes": {str(k): v for k, v in results.items()}})


if __name__ == "__main__":
    main()
