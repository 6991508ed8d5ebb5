"""Eight partitions of two minds, harvested by eight concurrent runs with the multiprocess
executor: every write to a mind holds that mind's pool slot, so writes to one mind never overlap
and nothing ever meets "database is locked".

Each run is its own process, as with Dagster's run launcher (a DagsterInstance is not meant to be
shared by concurrent runs in threads of one process), forked from a forkserver that has Dagster and
the job preloaded: cheap to start, and never a fork of the test process and its threads.
"""

import multiprocessing
from collections import defaultdict

import dagster as dg

from mind_core.mind import Mind
from pipelines.pools import mind_pool
from tests.exports import write_chatgpt_export
from tests.pipelines.harness import add_partitions, register
from tests.pipelines.multiprocess_job import run_partition

SOURCES_PER_MIND = 4
RUN_TIMEOUT_S = 240


def slot_windows(instance, run_ids):
    """(workspace -> [(start, end)]) of the writer-slot holds logged by the runs' steps."""
    windows = defaultdict(list)
    for run_id in run_ids:
        opened = {}
        for record in instance.all_logs(run_id):
            message = record.user_message or ""
            for verb in ("holding", "releasing"):
                if message.startswith(f"{verb} the writer slot of mind "):
                    workspace = message.split("'")[1]
                    if verb == "holding":
                        opened[(record.step_key, workspace)] = record.timestamp
                    else:
                        windows[workspace].append(
                            (opened.pop((record.step_key, workspace)), record.timestamp)
                        )
    return windows


def test_eight_partitions_multiprocess_one_writer_per_mind(tmp_path, home):
    keys = []
    for workspace in ("alpha", "beta"):
        for n in range(SOURCES_PER_MIND):
            name = f"s{n}"
            export = write_chatgpt_export(
                tmp_path / workspace / name / "c.json", 4, 6, seed=n + (10 if workspace == "beta" else 0)
            )
            keys.append(register(home, workspace, "chatgpt", export, name))
    with dg.instance_for_test() as instance:
        add_partitions(instance, *keys)
        assert instance.get_runs() == []  # storage initialized here, not raced by the eight runs
        # never a plain fork of this process: after hundreds of tests it carries threads (torch, HTTP
        # servers, Dagster) whose locks a fork can copy held, and the child then hangs forever.
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["tests.pipelines.multiprocess_job"])
        runs = [
            context.Process(target=run_partition, args=(instance.get_ref(), key, str(home.root)))
            for key in keys
        ]
        for process in runs:
            process.start()
        for process in runs:
            process.join(RUN_TIMEOUT_S)
        hung = [p.pid for p in runs if p.exitcode is None]
        for process in runs:
            if process.exitcode is None:
                process.kill()
        assert not hung, f"runs still going after {RUN_TIMEOUT_S} s: {hung}"
        assert [p.exitcode for p in runs] == [0] * len(runs)
        records = instance.get_runs()
        assert sorted(r.tags["dagster/partition"] for r in records) == sorted(keys)
        assert {r.status for r in records} == {dg.DagsterRunStatus.SUCCESS}
        run_ids = [r.run_id for r in records]
        messages = [r.user_message or "" for run_id in run_ids for r in instance.all_logs(run_id)]
        assert not [m for m in messages if "database is locked" in m]
        windows = slot_windows(instance, run_ids)
        for workspace in ("alpha", "beta"):
            spans = sorted(windows[workspace])
            assert len(spans) == 3 * SOURCES_PER_MIND  # import, cognify, vectors of each source
            assert all(
                end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:], strict=False)
            ), workspace
            assert instance.event_log_storage.get_concurrency_info(mind_pool(workspace)).slot_count == 1
    for workspace in ("alpha", "beta"):
        with Mind.open(home.mind_path(workspace), readonly=True) as mind:
            assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames") == SOURCES_PER_MIND * 24
            assert mind.doctor().ok
