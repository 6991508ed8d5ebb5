"""End-to-end harvest cost vs the embedding model alone, the re-harvest of an unchanged source, and
the same small source harvested by the command line and by a Dagster run.

Generates a ChatGPT export of N messages (default 20,000) deterministically, harvests it into a
fresh mind with the real model (scan, import, cognify, vectors, reconcile), then embeds the same
frame texts with the model alone at the same batch size in the same run, and re-harvests.
Targets (issue #6): harvest time <= 1.3x the model-only time; re-harvest < 3% of the first.
Command line vs Dagster (issue #20): each a new process, as a user starts them (`mind harvest`;
`dagster job execute` of `harvest_job` for the source's partition), with the real model, on fresh
homes; target: Dagster at most 2x the command line with the default (in-process) executor. The
multiprocess executor (a process per step, each loading the model) is measured beside it.
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

from _common import ROOT, PeakRSS, write_results

from mind_core.embeddings import InprocessEmbedder
from mind_core.embeddings.inprocess import DEFAULT_BATCH_SIZE
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.testing.exports import write_chatgpt_export

assert ROOT


def run(messages: int, per_conversation: int = 50, batch_size: int = DEFAULT_BATCH_SIZE) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        export = write_chatgpt_export(Path(tmp) / "export" / "conversations.json",
                                      messages // per_conversation, per_conversation)
        return measure_harvest(export, "chatgpt", messages, batch_size)


def measure_harvest(export: Path, kind: str, messages: int, batch_size: int = DEFAULT_BATCH_SIZE) -> dict:
    """Harvest ``export`` (a source of ``kind``) into a fresh mind with the real model, time the
    model alone on the frame texts, then re-harvest unchanged and forced (benchmarks/ingest.py
    reuses this on its own export)."""
    embedder = InprocessEmbedder(batch_size=batch_size)
    embedder.embed("warm up the model")
    with tempfile.TemporaryDirectory() as tmp:
        mind = Mind.open(Path(tmp) / "bench.mind", embedder=embedder)
        register_source(mind, kind, export, "bench")
        with PeakRSS() as memory:
            began, began_cpu = time.perf_counter(), time.process_time()
            report = harvest(mind, "bench")
            total, total_cpu = time.perf_counter() - began, time.process_time() - began_cpu
        texts = [r[0] for r in mind.db.query("SELECT content FROM memory_frames ORDER BY id")]
        began, began_cpu = time.perf_counter(), time.process_time()
        for start in range(0, len(texts), 256):
            embedder.embed_batch(texts[start : start + 256])
        model_only, model_only_cpu = time.perf_counter() - began, time.process_time() - began_cpu
        began = time.perf_counter()
        again = harvest(mind, "bench")
        reharvest = time.perf_counter() - began
        began = time.perf_counter()
        forced = harvest(mind, "bench", force=True)
        forced_seconds = time.perf_counter() - began
        mind.close()
    assert again.skipped and forced.imported.frames_new == 0
    return {
        "messages": messages,
        "frames": len(texts),
        "batch_size": batch_size,
        "harvest_s": total,
        "stage_s": report.stage_seconds,
        "model_only_s": model_only,
        "ratio": total / model_only,
        "harvest_cpu_s": total_cpu,
        "model_only_cpu_s": model_only_cpu,
        "cpu_ratio": total_cpu / model_only_cpu,
        "messages_per_s": messages / total,
        "reharvest_s": reharvest,
        "reharvest_share": reharvest / total,
        "forced_rescan_s": forced_seconds,
        "forced_rescan_share": forced_seconds / total,
        "peak_rss_mb": memory.peak / 2**20,
        "rss_growth_mb": (memory.peak - memory.baseline) / 2**20,
    }


def _timed(command: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True, timeout=1800)
    return time.perf_counter() - began


def command_line_vs_dagster(messages: int) -> dict:
    """Wall time of one harvest of a fresh ``messages``-message source through each path."""
    binaries = Path(sys.executable).parent
    seconds = {}
    with tempfile.TemporaryDirectory() as tmp:
        export = write_chatgpt_export(Path(tmp) / "export" / "conversations.json", messages // 20, 20)
        for path in ("command line", "dagster in_process", "dagster multiprocess"):
            home = Path(tmp) / path.replace(" ", "_")
            env = {**os.environ, "MIND_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
                   "PYTHONPATH": str(ROOT), "MIND_HARVEST_DAGSTER_EXECUTOR": path.split()[-1]}
            mind = [sys.executable, "-m", "mind_core.cli"]
            subprocess.run([*mind, "sources", "add", "chatgpt", str(export), "--name", "src", "--workspace", "bench"],
                           env=env, check=True, capture_output=True)
            if path == "command line":
                seconds[path] = _timed([*mind, "harvest", "--workspace", "bench", "--quiet"], env)
                continue
            (home / "dagster").mkdir(parents=True)
            (home / "dagster" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
            subprocess.run([sys.executable, "-c", "import sys; from mind_harvest.pipelines.run_examples import add_partitions;"
                            "from mind_core.store.home import MindHome; import dagster as dg;"
                            "add_partitions(dg.DagsterInstance.get(), MindHome())"], env=env, check=True)
            seconds[path] = _timed(
                [str(binaries / "dagster"), "job", "execute", "-m", "mind_harvest.pipelines.definitions", "-a", "defs",
                 "-j", "harvest_job", "--tags", json.dumps({"dagster/partition": "bench/src"})], env)
    return {"messages": messages, "seconds": seconds,
            "dagster_vs_command_line": seconds["dagster in_process"] / seconds["command line"],
            "multiprocess_vs_command_line": seconds["dagster multiprocess"] / seconds["command line"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--paths-messages", type=int, default=200,
                        help="size of the source harvested by the command line and by Dagster")
    args = parser.parse_args()
    paths = command_line_vs_dagster(args.paths_messages)
    print(f"one source of {paths['messages']} messages, new process to done: " + ", ".join(
        f"{name} {value:.1f} s" for name, value in paths["seconds"].items()))
    print(f"Dagster (in-process steps) / command line = {paths['dagster_vs_command_line']:.2f}x (target <= 2x); "
          f"multiprocess steps / command line = {paths['multiprocess_vs_command_line']:.2f}x")
    r = run(args.messages)
    stages = ", ".join(f"{k} {v:.1f}s" for k, v in r["stage_s"].items())
    print(f"harvest of {r['messages']:,} messages ({r['frames']:,} frames): {r['harvest_s']:.1f} s "
          f"({r['messages_per_s']:,.0f} messages/s); stages: {stages}")
    print(f"embedding model alone on the same texts: {r['model_only_s']:.1f} s -> harvest/model = {r['ratio']:.2f}x "
          "(target <= 1.3x)")
    print(f"re-harvest of the unchanged source: {r['reharvest_s'] * 1000:.0f} ms = {r['reharvest_share']:.2%} of the "
          f"first (target < 3%); forced full rescan: {r['forced_rescan_s']:.2f} s = {r['forced_rescan_share']:.1%}")
    print(f"peak RSS {r['peak_rss_mb']:.0f} MB ({r['rss_growth_mb']:.0f} MB above the start)")
    write_results("harvest", {**r, "paths": paths})


if __name__ == "__main__":
    main()
