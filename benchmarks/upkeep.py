"""The daily upkeep at archive size (issue #31, item 3): reconcile, doctor and the analytics
snapshot after a day that adds 1% new frames, incremental (what the daily jobs run) against a full
pass, side by side in one run.

A mind of N chat-turn frames (default 100,000; benchmarks/search.py's ``write_frames``) is
embedded with the mock embedder, reconciled, checked and snapshotted once, as the previous day's
jobs left it. Then a day's harvest adds 1% new frames (written and embedded as the harvest does)
and the mind file and its snapshot folder are copied: one copy gets the incremental passes
(``mind.reconcile()``, ``mind.doctor()``, ``snapshot_mind``), the other the full ones (``full=True``,
what ``mind doctor --full`` / ``mind snapshot --full`` run). CPU seconds of this process per pass
(the machine is shared), and what each pass examined: frames checked, frames rows encoded.
Both copies must end equal (the same repairs, the same frames in the snapshot). The ANN graph
is left out of both (``ann_min_vectors``): it keeps itself in step through its own change log.

Compaction has no incremental form (old temporary and deprecated frames are found through an
index, long P-frame chains through another): its CPU seconds are printed for both copies.
It also prices the change log itself: CPU seconds to write 10,000 frames, then to edit each
once, with its triggers and without them (dropped), best of 3.

    nice .venv/bin/python benchmarks/upkeep.py [--frames 100000] [--day-share 0.01]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from _common import machine, write_results
from search import write_frames

from mind_core.analytics.snapshot import snapshot_mind
from mind_core.analytics.snapshot_tables import partition_dir
from mind_core.embeddings.mock import MockEmbedder
from mind_core.mind import Mind
from mind_core.store.frames import NewFrame
from mind_core.store.reconcile import doctor, reconcile_indexes

EMBED_BATCH = 2_000
# The ANN graph (mind_core/search/ann.py) has its own change log and is folded incrementally
# already; building it for the setup would take most of the run, so these passes leave it out.
NO_ANN = 10**12
DAY1, DAY2 = "2026-01-01", "2026-01-02"


def cpu(call: Callable[[], Any]) -> tuple[float, Any]:
    began = time.process_time()
    result = call()
    return time.process_time() - began, result


def embed(mind: Mind, frames: list[tuple[int, str]]) -> None:
    for start in range(0, len(frames), EMBED_BATCH):
        mind.search.vectors.index_frames(frames[start : start + EMBED_BATCH])


def previous_day(path: Path, root: Path, count: int) -> int:
    """The mind as yesterday's jobs left it: frames, vectors, reconciled, checked, snapshotted."""
    with Mind.open(path, embedder=MockEmbedder()) as mind:
        frames = write_frames(mind, count)
        embed(mind, frames)
        reconcile_indexes(mind.db, mind.embedder, NO_ANN)
        reconcile_indexes(mind.db, mind.embedder, NO_ANN)  # settles the first pass's own writes
        assert doctor(mind.db, mind.embedder, ann_min_vectors=NO_ANN).ok
    snapshot_mind(path, root, "bench", DAY1)
    return len(frames)


def a_day(path: Path, added: int) -> None:
    """A day's harvest: ``added`` new frames in a new session, embedded as the harvest does."""
    with Mind.open(path, embedder=MockEmbedder()) as mind:
        mind.sessions.ensure("bench:today")
        new = mind.frames.create_i_frames(
            [NewFrame("bench:today", f"today's note {i}: the kite festival moved to the beach") for i in range(added)]
        )
        embed(mind, [(f.id, f.content) for f in new])


def passes(path: Path, root: Path, full: bool) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    with Mind.open(path, embedder=MockEmbedder()) as mind:
        figures["reconcile_cpu_s"], repaired = cpu(lambda: reconcile_indexes(mind.db, mind.embedder, NO_ANN, full))
        figures["doctor_cpu_s"], report = cpu(lambda: doctor(mind.db, mind.embedder, False, NO_ANN, full))
        figures["compact_cpu_s"], _ = cpu(lambda: mind.frames.compact())  # one kind of pass: indexed lookups
    figures["snapshot_cpu_s"], taken = cpu(lambda: snapshot_mind(path, root, "bench", DAY2, full=full))
    figures["reconcile_frames_examined"] = repaired.frames_examined
    figures["reconcile_repairs"] = [repaired.fts_fixed, repaired.vectors_fixed, repaired.orphans_removed]
    figures["doctor_frames_examined"] = report.frames_examined
    figures["doctor_ok"] = report.ok
    figures["snapshot_frames_written"] = taken.rows_written["frames"]
    figures["snapshot_frames"] = taken.rows["frames"]
    figures["snapshot_wall_s"] = taken.seconds
    return figures


def trigger_cost(folder: Path, frames: int = 10_000, rounds: int = 3) -> dict[str, float]:
    """CPU seconds to write ``frames`` frames, then to edit each once (the triggers fire on edits
    and deletions only), with the change log's triggers and without them; best of ``rounds``."""
    seconds: dict[str, float] = {}
    for round_ in range(rounds):
        for label in ("with change log", "without"):
            with Mind.open(folder / f"{label}-{round_}.mind", embedder=MockEmbedder()) as mind:
                if label == "without":
                    for (name,) in mind.db.query(
                        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'frame_changes%'"
                    ):
                        mind.db.execute(f"DROP TRIGGER {name}")
                mind.sessions.ensure("g")
                batch = [NewFrame("g", f"frame {i} of the trigger cost") for i in range(frames)]
                insert, _ = cpu(lambda batch=batch, mind=mind: mind.frames.create_i_frames(batch))
                edits = [(i,) for i in range(1, frames + 1)]
                update, _ = cpu(
                    lambda edits=edits, mind=mind: mind.db.executemany(
                        "UPDATE memory_frames SET access_count = access_count + 1 WHERE id = ?", edits
                    )
                )
            for kind, value in (("insert", insert), ("edit", update)):
                key = f"{kind} {label}"
                seconds[key] = min(seconds.get(key, value), value)
    return seconds


def frames_of(root: Path) -> Any:
    return pq.read_table(partition_dir(root, "frames", "bench", DAY2)).sort_by("id").drop_columns(["last_accessed"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--day-share", type=float, default=0.01, help="new frames in a day, as a share of the mind")
    args = parser.parse_args()
    print(machine(), f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path, root = folder / "day.mind", folder / "snapshots"
        began = time.perf_counter()
        frames = previous_day(path, root, args.frames)
        added = int(frames * args.day_share)
        a_day(path, added)
        print(f"{frames:,} frames built, embedded, reconciled and snapshotted in {time.perf_counter() - began:.0f} s; "
              f"a day adds {added:,}")
        shutil.copy(path, folder / "full.mind")
        shutil.copytree(root, folder / "full-snapshots")
        results = {
            "incremental": passes(path, root, full=False),
            "full": passes(folder / "full.mind", folder / "full-snapshots", full=True),
        }
        same = frames_of(root).equals(frames_of(folder / "full-snapshots"))
        triggers = trigger_cost(folder)
    inc, full = results["incremental"], results["full"]
    print(f"{'pass':<10} {'incremental CPU s':>18} {'full CPU s':>11} {'ratio':>7}   examined incremental / full")
    for name, examined in (
        ("reconcile", "reconcile_frames_examined"),
        ("doctor", "doctor_frames_examined"),
        ("snapshot", "snapshot_frames_written"),
    ):
        a, b = inc[f"{name}_cpu_s"], full[f"{name}_cpu_s"]
        print(f"{name:<10} {a:>18.3f} {b:>11.3f} {b / max(a, 1e-9):>6.1f}x   {inc[examined]:,} / {full[examined]:,}")
    print(f"compaction (the same pass on both): {inc['compact_cpu_s']:.3f} / {full['compact_cpu_s']:.3f} CPU s")
    print(f"same repairs: {inc['reconcile_repairs'] == full['reconcile_repairs']}; same frames in the snapshot: {same}; "
          f"doctor ok: {inc['doctor_ok']} / {full['doctor_ok']}")
    print(f"change log cost, {10_000:,} frames (best of 3): written {triggers['insert with change log']:.3f} CPU s "
          f"with it, {triggers['insert without']:.3f} without; each edited once {triggers['edit with change log']:.3f} "
          f"vs {triggers['edit without']:.3f}")
    print(f"load average {os.getloadavg()[0]:.1f}")
    write_results("upkeep", {"frames": frames, "added": added, "passes": results, "same_snapshot": same,
                             "trigger_cpu_s": triggers})


if __name__ == "__main__":
    main()
