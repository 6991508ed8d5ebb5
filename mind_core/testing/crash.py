"""SIGKILL crash trials: kill a harvest at a chosen moment, rerun it, compare with a clean run.

A harvest runs in a child process that prints a marker line each time it enters a stage batch
(``import`` after each committed import batch, ``cognify`` when a knowledge transaction starts,
``vectors`` when an embedding batch starts). A trial picks a stage and one of its batches at
random, waits for that marker, sleeps a random few milliseconds and kills the child; the
``random`` stage kills after a random delay instead, wherever the harvest is. The rerun must give
exactly the canonical dump of a clean run, and ``mind doctor`` (the real command) must find
nothing to repair. Shared by tests/reliability (3 trials) and benchmarks/reliability.py (30+).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mind_core.embeddings.mock import MockEmbedder
from mind_core.harvest.pipeline import pending_cognify_ids
from mind_core.harvest.stores import HarvestRunStore
from mind_core.mind import Mind
from mind_core.store.home import MindHome
from mind_core.testing.dump import canonical_dump
from mind_core.testing.exports import write_chatgpt_export

REPO = Path(__file__).resolve().parents[2]  # the repository root: the children run from there
WORKSPACE = "crash"
STAGES = ("import", "cognify", "vectors", "random")
# The child uses the deterministic mock so the real `mind doctor --embedder mock` can check the
# same vector space afterwards without loading a model.
CHILD_SCRIPT = """
import sys
from mind_core.knowledge.cognify import CognifyPipeline
from mind_core.embeddings.mock import MockEmbedder
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.search.vector_index import VectorIndex

def announce(stage):
    print(stage, flush=True)

def marked(stage, method):
    def wrapper(*args, **kwargs):
        announce(stage)
        return method(*args, **kwargs)
    return wrapper

CognifyPipeline._resolve_entities = marked("cognify", CognifyPipeline._resolve_entities)
VectorIndex.index_frames = marked("vectors", VectorIndex.index_frames)
mind = Mind.open(sys.argv[1], embedder=MockEmbedder(1024))
register_source(mind, "chatgpt", sys.argv[2], "gpt")
announce("ready")
harvest(mind, "gpt", progress=lambda stage, done, total: announce(stage))
mind.close()
announce("done")
"""


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}


@dataclass
class KillPlan:
    """Where to kill: after the ``occurrence``-th marker of ``stage`` plus ``jitter`` seconds
    (for the ``random`` stage: ``jitter`` seconds after the harvest started)."""

    stage: str
    occurrence: int
    jitter: float


@dataclass
class HarvestRun:
    markers: Counter[str] = field(default_factory=Counter)
    killed: bool = False
    seconds: float = 0.0


def run_harvest_process(mind_path: Path, export: Path, plan: KillPlan | None = None) -> HarvestRun:
    """Harvest ``export`` into ``mind_path`` in a child; with a plan, SIGKILL it as planned."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD_SCRIPT, str(mind_path), str(export)],
        cwd=REPO,
        env=child_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    run = HarvestRun()
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "ready", "the harvest child did not start"
        began = time.perf_counter()
        if plan is not None and plan.stage == "random":
            time.sleep(plan.jitter)
            run.killed = _kill(proc)
        else:
            for line in proc.stdout:
                stage = line.strip()
                run.markers[stage] += 1
                if plan is not None and stage == plan.stage and run.markers[stage] == plan.occurrence:
                    time.sleep(plan.jitter)
                    run.killed = _kill(proc)
                    break
        if plan is None:
            assert proc.wait(timeout=600) == 0, "the clean harvest failed"
        run.seconds = time.perf_counter() - began
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=60)
        proc.stdout.close()
    return run


def _kill(proc: subprocess.Popen) -> bool:
    alive = proc.poll() is None
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    return alive


def cli_doctor(home: Path, workspace: str = WORKSPACE) -> tuple[int, dict[str, Any]]:
    """`mind doctor` as a person runs it (a separate process, the mock embedder)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mind_core.cli",
            "doctor",
            "--home",
            str(home),
            "--workspace",
            workspace,
            "--embedder",
            "mock",
            "--json",
        ],
        cwd=REPO,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(done.stdout) if done.stdout.strip() else {"stderr": done.stderr}
    return done.returncode, report


@dataclass
class TrialResult:
    trial: int
    stage: str
    occurrence: int
    jitter: float
    killed: bool
    frames_after_kill: int
    identical: bool
    doctor_exit: int
    doctor_ok: bool
    frames: int
    duplicates: int
    lost: int


@dataclass
class CrashReport:
    messages: int
    clean_seconds: float
    trials: list[TrialResult]

    @property
    def failures(self) -> list[TrialResult]:
        return [
            t
            for t in self.trials
            if not (t.identical and t.doctor_ok and t.doctor_exit == 0) or t.lost or t.duplicates
        ]

    def summary(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "trials": len(self.trials),
            "killed_mid_run": sum(t.killed for t in self.trials),
            "by_stage": dict(Counter(t.stage for t in self.trials if t.killed)),
            "failures": len(self.failures),
            "lost_items": sum(t.lost for t in self.trials),
            "duplicated_items": sum(t.duplicates for t in self.trials),
            "clean_seconds": round(self.clean_seconds, 2),
        }


def crash_trials(
    root: Path, trials: int, seed: int, conversations: int = 40, messages_each: int = 100
) -> CrashReport:
    """Run ``trials`` kill-and-rerun trials (stages in turn) against one clean run."""
    export = write_chatgpt_export(root / "export" / "conversations.json", conversations, messages_each)
    clean_home = MindHome(root / "clean-home")
    clean = run_harvest_process(clean_home.workspace_path(WORKSPACE), export)
    with Mind.open(clean_home.workspace_path(WORKSPACE), embedder=MockEmbedder(1024)) as mind:
        expected = canonical_dump(mind)
    messages = conversations * messages_each
    assert len(expected["frames"]) == messages and len(expected["ledger"]) == messages
    expected_keys = Counter(row[1] for row in expected["ledger"])
    rng = random.Random(seed)
    results = []
    for trial in range(trials):
        stage = STAGES[trial % len(STAGES)]
        if stage == "random":
            plan = KillPlan(stage, 0, rng.uniform(0.05, max(0.1, clean.seconds)))
        else:
            plan = KillPlan(stage, rng.randint(1, clean.markers[stage]), rng.uniform(0.0, 0.03))
        home = MindHome(root / f"home-{trial}")
        path = home.workspace_path(WORKSPACE)
        killed = run_harvest_process(path, export, plan).killed
        with Mind.open(path, readonly=True) as interrupted:
            frames_after_kill = interrupted.db.scalar("SELECT COUNT(*) FROM memory_frames")
        run_harvest_process(path, export)  # the rerun finishes the job
        with Mind.open(path, embedder=MockEmbedder(1024)) as mind:
            dump = canonical_dump(mind)
            finished = not pending_cognify_ids(mind) and all(
                r["status"] != "running" for r in HarvestRunStore(mind.db).get_all()
            )
        keys = Counter(row[1] for row in dump["ledger"])
        contents = Counter(row[4] for row in dump["frames"])
        doctor_exit, report = cli_doctor(home.root)
        results.append(
            TrialResult(
                trial=trial,
                stage=plan.stage,
                occurrence=plan.occurrence,
                jitter=round(plan.jitter, 4),
                killed=killed,
                frames_after_kill=frames_after_kill,
                identical=dump == expected and finished,
                doctor_exit=doctor_exit,
                doctor_ok=bool(report.get("ok")),
                frames=len(dump["frames"]),
                duplicates=sum(n - 1 for n in contents.values() if n > 1)
                + sum(n - 1 for n in keys.values() if n > 1),
                lost=len(set(expected_keys) - set(keys)),
            )
        )
    return CrashReport(messages=messages, clean_seconds=clean.seconds, trials=results)
