"""How the harvest scales with workers: a backfill on the local cluster of ``deploy/`` with 1 and 2
Celery workers, and Amdahl's projection for more.

Sources: every shared-data source (chats, notes, mail: ../shared/data) and a generated ChatGPT
export of N messages (default 20,000), each mind its own workspace (chats, notes, mail, bulk).
Each worker count gets a fresh cluster (PostgreSQL, Redis, daemon; 1 worker: the home worker
alone; 2: the home worker and an "any" worker, each with Celery concurrency 1, which is what
scales: any-queue workers are added, the home worker stays one), fresh minds, the real
in-process model (onnx-int8 unless $MIND_HARVEST_EMBED_BACKEND says otherwise), one job backfill
of ``harvest_job`` over all sources' partitions, then one of ``mind_upkeep_job`` (reconcile,
compaction) over the minds. Measured from the runs' event logs: the wall time (first run start to
last run end, per backfill, summed), every step's time, stage and queue. Writing steps (the home
queue: import, cognify, staging the texts to embed, vector load, reconcile, compaction, the asset
checks) are the serial part: they run on the home node only, one at a time with its concurrency
of 1; stateless steps (the shared queue: scan, the embedding chunks, collecting them) are the
parallel part.

Projection (Amdahl, from the 1-worker run): T(n) = O + W + P(n), with W the writing steps' total,
O the rest of the 1-worker wall time (run launches, the executor's polling, queue hand-offs),
held constant, and P(n) the measured stateless step times (each chunk as it was measured) packed
onto n workers longest first: S/n while there are enough chunks, never less than the longest
one (a step is not split further than the chunks it was cut into). The projection for 2 workers
is printed next to the 2-worker measurement, so the model can be judged; its limit as workers
grow is T = O + W + the longest step (the chunk cap), not 1 / serial share. Assumptions printed
with the figures.
"""

from __future__ import annotations

import argparse
import heapq
import os
import tempfile
from pathlib import Path

import dagster as dg
from _common import SHARED_DATA, machine, write_results
from mind_harvest.pipelines.partitions import harvest_sources, mind_workspaces, source_partition_key

from deploy.local_cluster import ClusterSettings, LocalCluster
from deploy.step_events import step_records
from mind_core.harvest.pipeline import register_source
from mind_core.harvest.staged_vectors import DEFAULT_CHUNK_TEXTS
from mind_core.mind import Mind
from mind_core.store.home import MindHome
from mind_core.testing.exports import write_chatgpt_export

SHARED_SOURCES = [
    ("chats", "chatgpt", "chat-exports/chatgpt/chatgpt2graph-2023/conversations.json"),
    ("chats", "chatgpt", "chat-exports/chatgpt/polylogue-fixtures/native-conversation-v1.json"),
    ("chats", "chatgpt", "chat-exports/chatgpt/polylogue-fixtures/origin-chatgpt-export.json"),
    ("chats", "claude", "chat-exports/claude/anthropic-data-2025"),
    ("chats", "claude", "chat-exports/claude/polylogue-fixtures/origin-claude-ai-export.json"),
    ("chats", "gemini", "chat-exports/gemini/polylogue-aistudio"),
    ("notes", "markdown", "markdown/obsidian-help-en"),
    ("notes", "markdown", "markdown/kepano-obsidian"),
    ("mail", "email", "email/cpython-test_email"),
    ("mail", "email", "email/mail-parser"),
    ("mail", "email", "email/notmuch-corpus"),
    ("mail", "email", "email/mimekit-mbox"),
]
PROJECTED = (2, 4, 16, 64)
RUNS_TIMEOUT_S = 3 * 3600
# A step's stage: its op name, without the graph asset's prefix and a dynamic step's mapping key;
# any other step is an asset check (they read the mind or the staged scan, on the home node).
STAGE_NAMES = {
    "harvest_items": "scan",
    "embed_vector_chunk": "embedding chunks",
    "collect_vector_chunks": "collect chunks",
    "iframe_imports": "import",
    "cognified_frames": "cognify",
    "plan_vector_chunks": "stage texts to embed",
    "vector_index": "vector load",
    "reconciled_indexes": "reconcile",
    "compacted_frames": "compaction",
}


def stage_of(step_key: str) -> str:
    op = step_key.split("[", 1)[0].rsplit(".", 1)[-1]
    return STAGE_NAMES.get(op, "asset checks")


def sources(folder: Path, messages: int, shared: bool) -> list[tuple[str, str, Path, str]]:
    """(workspace, kind, path, name) of every source of the backfill."""
    found = []
    if shared:
        found += [(w, kind, SHARED_DATA / rel, f"{kind}-{i}") for i, (w, kind, rel) in enumerate(SHARED_SOURCES)]
    if messages:
        per_conversation = 50
        export = write_chatgpt_export(folder / "bulk" / "conversations.json", max(1, messages // per_conversation),
                                      per_conversation)
        found.append(("bulk", "chatgpt", export, "generated"))
    return found


def backfill_and_wait(cluster: LocalCluster, instance: dg.DagsterInstance, job: str, keys: list[str]) -> list:
    cluster.launch_backfill(job, keys)
    return cluster.wait_for_runs(instance, keys, RUNS_TIMEOUT_S)


def wall_of(records: list) -> float:
    return max(r.end_time for r in records) - min(r.start_time for r in records)


def backfill(folder: Path, workers: int, found: list[tuple[str, str, Path, str]]) -> dict:
    """The harvest backfill of every source, then the upkeep of every mind, on a fresh cluster of
    ``workers`` workers."""
    minds = MindHome(folder / f"minds-{workers}")
    keys = []
    for workspace, kind, path, name in found:
        with Mind.open(minds.mind_path(workspace)) as mind:
            register_source(mind, kind, path, name)
        keys.append(source_partition_key(workspace, name))
    workspaces = sorted({w for w, *_ in found})
    settings = ClusterSettings(
        folder=folder / f"cluster-{workers}", minds=minds.root, webserver=False, ephemeral=True,
        any_worker=workers == 2,
    )
    load_before = os.getloadavg()
    with LocalCluster(settings) as cluster:
        os.environ.update(cluster.instance_env)
        with dg.DagsterInstance.get() as instance:
            instance.add_dynamic_partitions(harvest_sources.name, keys)
            instance.add_dynamic_partitions(mind_workspaces.name, workspaces)
            harvested = backfill_and_wait(cluster, instance, "harvest_job", keys)
            upkept = backfill_and_wait(cluster, instance, "mind_upkeep_job", workspaces)
            records = harvested + upkept
            steps = [s for r in records for s in step_records(instance, r.dagster_run.run_id).values()]
    load_after = os.getloadavg()
    failed = [r.dagster_run.tags.get("dagster/partition") for r in records
              if r.dagster_run.status != dg.DagsterRunStatus.SUCCESS]
    stateless = [s for s in steps if s.queue == settings.queues.shared]
    writing = [s for s in steps if s.queue != settings.queues.shared]  # home queue, or untagged (home too)
    frames = 0
    for workspace in workspaces:
        with Mind.open(minds.mind_path(workspace), readonly=True) as mind:
            frames += mind.db.scalar("SELECT COUNT(*) FROM memory_frames")
    by_stage: dict[str, dict[str, float]] = {}
    for kind, group in (("writing", writing), ("stateless", stateless)):
        for step in group:
            entry = by_stage.setdefault(stage_of(step.step), {"kind": kind, "steps": 0, "seconds": 0.0})
            entry["steps"] += 1
            entry["seconds"] += step.seconds
    return {
        "workers": workers,
        "runs": len(records),
        "failed_runs": failed,
        "frames": frames,
        "wall_s": wall_of(harvested) + wall_of(upkept),
        "harvest_wall_s": wall_of(harvested),
        "upkeep_wall_s": wall_of(upkept),
        "writing_s": sum(s.seconds for s in writing),
        "stateless_s": sum(s.seconds for s in stateless),
        "stateless_step_s": sorted((s.seconds for s in stateless), reverse=True),
        "by_stage": by_stage,
        "steps": {"writing": len(writing), "stateless": len(stateless)},
        "stateless_by_worker": {w: sum(1 for s in stateless if w in s.workers)
                                for w in sorted({w for s in stateless for w in s.workers})},
        "load_average_before": load_before,
        "load_average_after": load_after,
    }


def overhead(measured: dict) -> float:
    return max(measured["wall_s"] - measured["writing_s"] - measured["stateless_s"], 0.0)


def packed(step_seconds: list[float], workers: int) -> float:
    """The time ``workers`` workers take for these steps, each given to the least loaded worker,
    longest first."""
    loads = [0.0] * workers
    for seconds in sorted(step_seconds, reverse=True):
        heapq.heapreplace(loads, loads[0] + seconds)
    return max(loads)


def project(measured: dict, workers: tuple[int, ...] = PROJECTED) -> dict[int, float]:
    serial = overhead(measured) + measured["writing_s"]
    return {n: serial + packed(measured["stateless_step_s"], n) for n in workers}


def limit_seconds(measured: dict) -> float:
    """T as workers grow without bound: the serial part and the longest stateless step (no step
    is split further than the chunks it was cut into)."""
    return overhead(measured) + measured["writing_s"] + max(measured["stateless_step_s"], default=0.0)


def compared(results: list[dict], projection: dict[int, float]) -> list[dict]:
    """One row per worker count, measured and projected side by side (None where not run)."""
    one = results[0]["wall_s"]
    measured = {r["workers"]: r["wall_s"] for r in results}
    rows = []
    for n in sorted({*measured, *projection}):
        wall, model = measured.get(n), projection.get(n)
        rows.append({
            "workers": n,
            "measured_s": wall,
            "projected_s": model,
            "measured_speedup": one / wall if wall else None,
            "projected_speedup": one / model if model else None,
        })
    return rows


def _cell(value: float | None, width: int, decimals: int) -> str:
    return f"{value:>{width}.{decimals}f}" if value is not None else "-".rjust(width)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000, help="generated source size (0: none)")
    parser.add_argument("--no-shared", action="store_true", help="leave out the shared-data sources")
    args = parser.parse_args()
    shared = not args.no_shared and SHARED_DATA.is_dir()
    with tempfile.TemporaryDirectory(prefix="mind-harvest-scale-") as tmp:
        found = sources(Path(tmp), args.messages, shared)
        results = [backfill(Path(tmp), workers, found) for workers in (1, 2)]
    one, two = results
    serial_share = one["writing_s"] / max(one["writing_s"] + one["stateless_s"], 1e-9)
    serial_with_overhead = (one["writing_s"] + overhead(one)) / one["wall_s"]
    projection = project(one, (1, *PROJECTED))  # T(1) is the 1-worker wall time by construction
    backend = os.environ.get("MIND_HARVEST_EMBED_BACKEND") or "onnx-int8 (default)"
    print(f"sources: {len(found)} ({'shared data + ' if shared else ''}{args.messages:,} generated messages) in "
          f"{len({w for w, *_ in found})} minds, {one['frames']:,} frames; embedding backend {backend}; {machine()}")
    print(f"{'workers':>8} {'wall s':>9} {'writing s':>10} {'stateless s':>12} {'speed-up':>9}  "
          "load average before / after (1, 5, 15 min)  stateless steps by worker")
    for r in results:
        loads = " / ".join(" ".join(f"{x:.2f}" for x in r[key]) for key in ("load_average_before", "load_average_after"))
        print(f"{r['workers']:>8} {r['wall_s']:>9.1f} {r['writing_s']:>10.1f} {r['stateless_s']:>12.1f} "
              f"{one['wall_s'] / r['wall_s']:>9.2f}  {loads:<42}  {r['stateless_by_worker']}")
    print("step time by stage, 1 worker:")
    for stage, entry in sorted(one["by_stage"].items(), key=lambda item: (item[1]["kind"], -item[1]["seconds"])):
        print(f"  {entry['kind']:>9}  {stage:<22} {entry['steps']:>4} steps {entry['seconds']:>9.1f} s")
    chunks = one["by_stage"].get("embedding chunks", {"steps": 0, "seconds": 0.0})
    print(f"serial share, 1 worker: writing steps {serial_share:.1%} of all step time; with the orchestration"
          f" time O = {overhead(one):.1f} s, {serial_with_overhead:.1%} of the wall time")
    print(f"projection (Amdahl from the 1-worker run): T(n) = O + W + P(n), P(n) = the {one['steps']['stateless']}"
          f" stateless steps ({chunks['steps']} embedding chunks, {chunks['seconds']:.1f} s) packed onto n workers,"
          f" longest first (the longest: {one['stateless_step_s'][0] if one['stateless_step_s'] else 0.0:.1f} s)")
    print(f"{'workers':>8} {'measured s':>11} {'projected s':>12} {'measured x':>11} {'projected x':>12}")
    rows = compared(results, projection)
    for row in rows:
        print(f"{row['workers']:>8} {_cell(row['measured_s'], 11, 1)} {_cell(row['projected_s'], 12, 1)} "
              f"{_cell(row['measured_speedup'], 11, 2)} {_cell(row['projected_speedup'], 12, 2)}")
    print(f"limit as workers grow, chunks of {DEFAULT_CHUNK_TEXTS:,} texts: T = O + W + the longest stateless step"
          f" = {limit_seconds(one):.1f} s, {one['wall_s'] / limit_seconds(one):.2f}x")
    print("assumptions: writing steps are serial on the home node (one worker of concurrency 1; different minds"
          " could overlap there with a higher concurrency, so this is pessimistic); stateless steps take the"
          " time they took with 1 worker, with no slowdown from sharing the staging store or the network; O (run"
          " launches, the executor's 1 s polling, queue hand-offs) stays what it was with 1 worker; step times"
          " include the worker's per-step overhead (loading the job, resources, event writes); chunks are"
          f" as cut here ({DEFAULT_CHUNK_TEXTS:,} texts each): more workers need smaller chunks; the 2 cores of this machine are"
          " shared with other work (load averages above), so the 2-worker run measures contention, not a"
          " second machine.")
    if one["failed_runs"] or two["failed_runs"]:
        print(f"FAILED runs: 1 worker {one['failed_runs']}, 2 workers {two['failed_runs']}")
    write_results("scale", {"messages": args.messages, "shared": shared, "embedding_backend": backend,
                            "runs": results, "serial_share": serial_share,
                            "serial_share_of_wall": serial_with_overhead,
                            "orchestration_s": overhead(one), "projection_s": projection,
                            "measured_vs_projected": rows, "limit_s": limit_seconds(one)})


if __name__ == "__main__":
    main()
