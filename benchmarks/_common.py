"""Helpers shared by the benchmark scripts: results folder, timing, memory, JSON output."""

from __future__ import annotations

import json
import os
import platform
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
# ../shared/data beside the checkout; a worktree elsewhere names it in $MIND_BENCH_SHARED_DATA
SHARED_DATA = Path(os.environ.get("MIND_BENCH_SHARED_DATA") or ROOT / ".." / "shared" / "data").resolve()
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def machine() -> str:
    return f"{platform.machine()}, {psutil.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, Python {platform.python_version()}"


def write_results(name: str, data: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    data = {"benchmark": name, "machine": machine(), "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **data}
    path.write_text(json.dumps(data, indent=2))
    print(f"results written to {path.relative_to(ROOT)}")
    return path


class PeakRSS:
    """Samples this process's resident memory in a thread; ``peak`` in bytes."""

    def __init__(self, interval: float = 0.02) -> None:
        self.process = psutil.Process()
        self.interval = interval
        self.baseline = self.process.memory_info().rss
        self.peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(self.interval)

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]
