"""What a lost worker costs a harvest on the local cluster of ``deploy/``, with the real model.

One generated ChatGPT export (``--messages``, default 3,000) is harvested by ``harvest_job`` runs on
a fresh cluster (PostgreSQL, Redis, a "home" and an "any" Celery worker, the daemon; the real code
location and in-process model, onnx-int8 unless $MIND_HARVEST_EMBED_BACKEND says otherwise), in
embedding chunks of ``--chunk-texts``, each run into a mind of its own, one after another:

- ``clean``: nothing killed (the baseline run time);
- ``pool process``: the "any" worker's pool process is killed (SIGKILL, as the OOM killer) while
  it embeds a chunk: Celery puts the task back in its queue at once;
- ``whole worker``: the whole "any" worker is killed (main process and pool, as a machine lost)
  while it embeds a chunk: its task comes back after the visibility timeout (``--visibility-timeout``,
  default 60 s; deploy/celery.yaml ships 3600), and the worker is started again as ``make cluster``
  does.

Printed per run: its status and the runs it took, its time and the time lost against the clean
run, the time from the kill until the killed chunk succeeded again, the chunks embedded more than
once; and each mind against the same export harvested on one machine (in this process, same
chunks): frames and everything else compared exactly, vectors by count and cosine (the int8
model quantizes per batch; the chunks are cut the same way, so the batches match).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import dagster as dg
from _common import machine, write_results
from mind_harvest.pipelines.partitions import harvest_sources, mind_workspaces

from deploy.local_cluster import ClusterSettings, LocalCluster, environment
from deploy.lost_worker_trial import (
    POOL,
    WORKER,
    await_recovery,
    harvest_runs,
    kill_mid_chunk,
    launch_harvest,
)
from deploy.mind_comparison import compare_minds, mind_dump
from mind_core.harvest.pipeline import register_source
from mind_core.mind import Mind
from mind_core.store.home import MindHome
from mind_core.testing.exports import write_chatgpt_export

MESSAGES_PER_CONVERSATION = 20
TIMEOUT_S = 3600


def _register(home: MindHome, workspace: str, export: Path) -> str:
    with Mind.open(home.mind_path(workspace)) as mind:
        register_source(mind, "chatgpt", export, "chats")
    return f"{workspace}/chats"


def _one_machine(root: Path, export: Path, run_config: dict) -> dict:
    from mind_harvest.pipelines.definitions import defs

    home = MindHome(root)
    key = _register(home, "reference", export)
    with environment({"MIND_HOME": str(root)}), dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions(harvest_sources.name, [key])
        instance.add_dynamic_partitions(mind_workspaces.name, ["reference"])
        began = time.perf_counter()
        result = defs.resolve_job_def("harvest_job").execute_in_process(
            {**run_config, "loggers": {"console": {"config": {"log_level": "WARNING"}}}},
            instance=instance, partition_key=key, raise_on_error=False,
        )
        print(f"one machine (in-process): {'success' if result.success else 'FAILED'} in {time.perf_counter() - began:.1f} s")
    return mind_dump(home.mind_path("reference"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--chunk-texts", type=int, default=500)
    parser.add_argument("--visibility-timeout", type=int, default=60)
    args = parser.parse_args()
    run_config = {"ops": {"staged_vectors": {"ops": {"plan_vector_chunks": {"config": {"chunk_texts": args.chunk_texts}}}}}}
    backend = os.environ.get("MIND_HARVEST_EMBED_BACKEND") or "onnx-int8 (default)"
    with tempfile.TemporaryDirectory(prefix="mind-harvest-lost-workers-") as tmp:
        folder = Path(tmp)
        export = write_chatgpt_export(
            folder / "export" / "conversations.json", args.messages // MESSAGES_PER_CONVERSATION,
            MESSAGES_PER_CONVERSATION, seed=7,
        )
        reference = _one_machine(folder / "reference", export, run_config)
        settings = ClusterSettings(
            folder=folder / "cluster", minds=folder / "cluster" / "minds", webserver=False, ephemeral=True,
            visibility_timeout_s=args.visibility_timeout, restore_interval_s=5,
        )
        rows = []
        with LocalCluster(settings) as cluster, environment(cluster.instance_env), dg.DagsterInstance.get() as instance:
            minds = MindHome(settings.minds)
            for kind in ("clean", POOL, WORKER):
                workspace = kind.replace(" ", "-")
                key = _register(minds, workspace, export)
                instance.add_dynamic_partitions(harvest_sources.name, [key])
                instance.add_dynamic_partitions(mind_workspaces.name, [workspace])
                load_before = os.getloadavg()
                launch_harvest(cluster, key, run_config)
                if kind == "clean":
                    cluster.wait_for_runs(instance, [key], TIMEOUT_S, job="harvest_job")
                    (run,) = harvest_runs(instance, key)
                    stats = instance.get_run_stats(run.run_id)
                    row = {"kind": kind, "status": run.status.value, "runs": 1,
                           "run_s": (stats.end_time or 0) - (stats.start_time or 0)}
                else:
                    killed = kill_mid_chunk(cluster, instance, [key], kind, "any", TIMEOUT_S)
                    recovery = await_recovery(cluster, instance, kind, killed, TIMEOUT_S)
                    print(recovery.describe(), flush=True)
                    row = {"kind": kind, "status": recovery.status.value, "runs": recovery.runs,
                           "run_s": recovery.run_seconds, "recovery_s": recovery.recovery_seconds,
                           "killed_step": recovery.killed_step, "ran_again_on": recovery.ran_again_on,
                           "chunks": recovery.chunks, "chunks_redone": recovery.chunks_redone}
                comparison = compare_minds(mind_dump(minds.mind_path(workspace)), reference)
                row.update(load_before=load_before, load_after=os.getloadavg(),
                           same_content=comparison.same_content, vectors=comparison.vectors,
                           reference_vectors=comparison.reference_vectors, min_cosine=comparison.min_cosine,
                           mind=comparison.describe())
                rows.append(row)
    clean = rows[0]["run_s"]
    print(f"\n{args.messages:,} messages, chunks of {args.chunk_texts} texts, visibility timeout "
          f"{args.visibility_timeout} s; embedding backend {backend}; {machine()}")
    print(f"{'run':<14} {'status':<8} {'runs':>4} {'run s':>7} {'lost s':>7} {'kill to chunk done s':>21} "
          f"{'chunks redone':>14}  load before / after")
    for row in rows:
        recovered = f"{row['recovery_s']:.1f}" if "recovery_s" in row else "-"
        redone = f"{row['chunks_redone']} of {row['chunks']}" if "chunks" in row else "-"
        loads = " / ".join(" ".join(f"{x:.1f}" for x in row[k]) for k in ("load_before", "load_after"))
        print(f"{row['kind']:<14} {row['status']:<8} {row['runs']:>4} {row['run_s']:>7.1f} "
              f"{row['run_s'] - clean:>7.1f} {recovered:>21} {redone:>14}  {loads}")
    for row in rows:
        print(f"{row['kind']}: the mind against one machine's: {row['mind']}")
    write_results("lost_workers", {"messages": args.messages, "chunk_texts": args.chunk_texts,
                                   "visibility_timeout_s": args.visibility_timeout,
                                   "embedding_backend": backend, "runs": rows})


if __name__ == "__main__":
    main()
