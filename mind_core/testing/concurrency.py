"""Two processes harvest different sources into one mind while a third recalls in a loop.

Every process is a real interpreter with its own connection, as when two scheduled syncs and a
person's ``mind recall`` meet. The recaller records access (a write) on every recall, so all
three compete for the write lock. Nothing may fail with "database is locked", and the final
counts must be exact.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mind_core.embeddings.mock import MockEmbedder
from mind_core.mind import Mind
from mind_core.testing.crash import REPO, child_env
from mind_core.testing.exports import write_chatgpt_export

# record_access waits only briefly for the lock and skips the touch when a harvest holds it: a
# logged warning by design (the recall itself is answered), not a failure.
TOUCH_SKIPPED = "recall could not record access"

HARVESTER = """
import json, sys
from mind_core.embeddings.mock import MockEmbedder
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
with Mind.open(sys.argv[1], embedder=MockEmbedder(1024)) as mind:
    register_source(mind, "chatgpt", sys.argv[2], sys.argv[3])
    print("ready", flush=True)
    sys.stdin.readline()
    report = harvest(mind, sys.argv[3])
print(json.dumps(report.to_dict()), flush=True)
"""

RECALLER = """
import json, sys, time
from pathlib import Path
from mind_core.embeddings.mock import MockEmbedder
from mind_core.mind import Mind
from mind_core.retrieval import CombinedRetrieval
words = sys.argv[3].split()
stop, deadline = Path(sys.argv[2]), time.monotonic() + float(sys.argv[4])
recalls = hits = 0
with Mind.open(sys.argv[1], embedder=MockEmbedder(1024)) as mind:
    retrieval = CombinedRetrieval(mind, None, record_access_on_recall=True)
    print("ready", flush=True)
    sys.stdin.readline()
    while not stop.exists() and time.monotonic() < deadline:
        result = retrieval.search(" ".join(words[recalls % len(words) : recalls % len(words) + 3]), limit=10)
        recalls += 1
        hits += len(result.workspace_results)
print(json.dumps({"recalls": recalls, "hits": hits}), flush=True)
"""


@dataclass
class ConcurrencyResult:
    messages_per_source: int
    seconds: float
    exit_codes: list[int]
    locked_errors: int  # failures: "database is locked" anywhere but the designed skip below
    touches_skipped: int  # recalls whose access count was not written because a harvest held the lock
    stderr_tail: list[str]
    recalls: int
    recall_hits: int
    frames: int
    ledger: dict[str, int]
    vectors: int
    doctor_ok: bool
    reports: list[dict[str, Any]]

    @property
    def exact(self) -> bool:
        expected = 2 * self.messages_per_source
        return (
            self.frames == expected
            and self.vectors == expected
            and self.ledger == {"a": self.messages_per_source, "b": self.messages_per_source}
            and all(r["imported"]["frames_new"] == self.messages_per_source for r in self.reports)
        )


def _spawn(script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=REPO,
        env=child_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def harvest_while_recalling(root: Path, conversations: int, messages_each: int) -> ConcurrencyResult:
    exports = {
        name: write_chatgpt_export(
            root / name / "conversations.json", conversations, messages_each, seed=seed
        )
        for name, seed in (("a", 101), ("b", 202))
    }
    mind_path = root / "home" / "workspaces" / "shared.mind"
    with Mind.open(mind_path, embedder=MockEmbedder(1024)):
        pass  # created once, so the three openers do not race on the schema
    stop = root / "stop"
    procs = [_spawn(HARVESTER, str(mind_path), str(exports[name]), name) for name in exports]
    procs.append(
        _spawn(RECALLER, str(mind_path), str(stop), "falcon budget latency cache alice sprint", "600")
    )
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    began = time.perf_counter()
    for proc in procs:  # all three start at once
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outputs = []
    for proc in procs[:2]:
        outputs.append(proc.communicate(timeout=900))
    seconds = time.perf_counter() - began
    stop.touch()
    outputs.append(procs[2].communicate(timeout=120))
    stderr = "".join(err for _, err in outputs)
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs[:2] if out.strip()]
    recall = json.loads(outputs[2][0].strip().splitlines()[-1]) if outputs[2][0].strip() else {}
    with Mind.open(mind_path, embedder=MockEmbedder(1024)) as mind:
        ledger = {
            r[0]: r[1] for r in mind.db.query("SELECT source, COUNT(*) FROM harvest_ledger GROUP BY source")
        }
        result = ConcurrencyResult(
            messages_per_source=conversations * messages_each,
            seconds=seconds,
            exit_codes=[p.returncode for p in procs],
            locked_errors=sum(
                "database is locked" in line and TOUCH_SKIPPED not in line for line in stderr.splitlines()
            ),
            touches_skipped=stderr.count(TOUCH_SKIPPED),
            stderr_tail=[line for line in stderr.splitlines() if TOUCH_SKIPPED not in line][-5:],
            recalls=recall.get("recalls", 0),
            recall_hits=recall.get("hits", 0),
            frames=mind.db.scalar("SELECT COUNT(*) FROM memory_frames"),
            ledger=ledger,
            vectors=mind.db.scalar("SELECT COUNT(*) FROM memory_frames_vec"),
            doctor_ok=mind.doctor().ok,
            reports=reports,
        )
    return result
