"""How the harvest scales with workers: a backfill on the local cluster of ``deploy/`` with 1 and 2
Celery workers, and Amdahl's projection for more.

Sources: every shared-data source (chats, notes, mail: ../shared/data) and a generated ChatGPT
export of N messages (default 20,000), each mind its own workspace (chats, notes, mail, bulk).
Each worker count gets a fresh cluster (PostgreSQL, Redis, daemon; 1 worker: the home worker
alone; 2: the home worker and an "any" worker) and fresh minds, the real in-process model
(onnx-int8 unless $MIND_HARVEST_EMBED_BACKEND says otherwise), and one job backfill over all
sources' partitions. Measured from the runs' event logs: the wall time (first run start to last
run end), every step's time and queue. Writing steps (the home queue) are the serial part: they
run on the home node only, one mind after another in this model; stateless steps (the shared
queue) are the parallel part.

Projection (Amdahl, from the 1-worker run): T(n) = O + W + S/n, with W the writing steps' total,
S the stateless steps' total (each from the worker taking it to its end) and O the rest of the
1-worker wall time (run launches, the executor's polling, queue hand-offs), held constant; floored
at O + W + the longest stateless step (a step is not split further than the chunks it was cut
into). Assumptions printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import dagster as dg
from _common import SHARED_DATA, write_results

from deploy.local_cluster import ClusterSettings, LocalCluster
from deploy.step_events import step_records
from mind_core.harvest.pipeline import register_source
from mind_core.home import MindHome
from mind_core.mind import Mind
from pipelines.partitions import harvest_sources, mind_workspaces, source_partition_key
from tests.exports import write_chatgpt_export

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
PROJECTED = (4, 16, 64)
RUNS_TIMEOUT_S = 3 * 3600


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


def backfill(folder: Path, workers: int, found: list[tuple[str, str, Path, str]]) -> dict:
    """One backfill of every source on a fresh cluster of ``workers`` workers."""
    minds = MindHome(folder / f"minds-{workers}")
    keys = []
    for workspace, kind, path, name in found:
        with Mind.open(minds.mind_path(workspace)) as mind:
            register_source(mind, kind, path, name)
        keys.append(source_partition_key(workspace, name))
    settings = ClusterSettings(
        folder=folder / f"cluster-{workers}", minds=minds.root, webserver=False, ephemeral=True,
        any_worker=workers == 2,
    )
    with LocalCluster(settings) as cluster:
        os.environ.update(cluster.instance_env)
        with dg.DagsterInstance.get() as instance:
            instance.add_dynamic_partitions(harvest_sources.name, keys)
            instance.add_dynamic_partitions(mind_workspaces.name, sorted({w for w, *_ in found}))
            began = time.time()
            cluster.launch_backfill("harvest_job", keys)
            records = cluster.wait_for_runs(instance, keys, RUNS_TIMEOUT_S)
            steps = [s for r in records for s in step_records(instance, r.dagster_run.run_id).values()]
    failed = [r.dagster_run.tags.get("dagster/partition") for r in records
              if r.dagster_run.status != dg.DagsterRunStatus.SUCCESS]
    wall = max(r.end_time for r in records) - min(r.start_time for r in records)
    stateless = [s for s in steps if s.queue == settings.queues.shared]
    writing = [s for s in steps if s.queue != settings.queues.shared]  # home queue, or untagged (home too)
    with_frames = 0
    for workspace in sorted({w for w, *_ in found}):
        with Mind.open(minds.mind_path(workspace), readonly=True) as mind:
            with_frames += mind.db.scalar("SELECT COUNT(*) FROM memory_frames")
    return {
        "workers": workers,
        "runs": len(records),
        "failed_runs": failed,
        "frames": with_frames,
        "wall_s": wall,
        "backfill_submitted_to_end_s": max(r.end_time for r in records) - began,
        "writing_s": sum(s.seconds for s in writing),
        "stateless_s": sum(s.seconds for s in stateless),
        "longest_stateless_s": max((s.seconds for s in stateless), default=0.0),
        "steps": {"writing": len(writing), "stateless": len(stateless)},
        "stateless_by_worker": {w: sum(1 for s in stateless if w in s.workers)
                                for w in sorted({w for s in stateless for w in s.workers})},
    }


def overhead(measured: dict) -> float:
    return max(measured["wall_s"] - measured["writing_s"] - measured["stateless_s"], 0.0)


def project(measured: dict) -> dict[int, float]:
    serial, parallel = overhead(measured) + measured["writing_s"], measured["stateless_s"]
    floor = serial + measured["longest_stateless_s"]
    return {n: max(serial + parallel / n, floor) for n in PROJECTED}


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
    projection = project(one)
    print(f"sources: {len(found)} ({'shared data + ' if shared else ''}{args.messages:,} generated messages), "
          f"{one['frames']:,} frames")
    print(f"{'workers':>8} {'wall s':>9} {'writing s':>10} {'stateless s':>12} {'speed-up':>9}  stateless steps by worker")
    for r in results:
        print(f"{r['workers']:>8} {r['wall_s']:>9.1f} {r['writing_s']:>10.1f} {r['stateless_s']:>12.1f} "
              f"{one['wall_s'] / r['wall_s']:>9.2f}  {r['stateless_by_worker']}")
    print(f"serial share, 1 worker: writing steps {serial_share:.1%} of all step time; with the orchestration"
          f" time O = {overhead(one):.1f} s, {serial_with_overhead:.1%} of the wall time")
    print("projection (Amdahl from the 1-worker run): T(n) = O + W + S/n, at least O + W + the longest stateless step")
    for n, seconds in projection.items():
        print(f"{n:>8} workers {seconds:>9.1f} s  speed-up {one['wall_s'] / seconds:.2f}x"
              f"  (limit as n grows: {1 / max(serial_with_overhead, 1e-9):.1f}x)")
    print("assumptions: writing steps are serial on the home node (one mind after another; different minds"
          " could overlap there, so this is pessimistic); stateless steps spread evenly over n workers with"
          " no slowdown from sharing the staging store; O (run launches, the executor's 1 s polling, queue"
          " hand-offs) stays what it was with 1 worker; step times include the worker's per-step overhead"
          " (loading the job, resources, event writes); the 2 cores of this machine are shared with other"
          " work, so the 2-worker run also measures contention.")
    if one["failed_runs"] or two["failed_runs"]:
        print(f"FAILED runs: 1 worker {one['failed_runs']}, 2 workers {two['failed_runs']}")
    write_results("scale", {"messages": args.messages, "shared": shared, "runs": results,
                            "serial_share": serial_share, "serial_share_of_wall": serial_with_overhead,
                            "orchestration_s": overhead(one), "projection_s": projection})


if __name__ == "__main__":
    main()
