"""An unchanged source harvested again, as a command, against ``mind stats`` (issue #31, item 5).

A home with one harvested ChatGPT export (mock embedder, the history recorded in the home's
Dagster instance as the first ``mind harvest`` records it); then ``mind harvest`` (which finds the
source unchanged and reads nothing) and ``mind stats`` run in turns, each a new process as a person
starts it. Figures: the median CPU seconds (user + system) of each command's process over the
runs, and their ratio (target: harvest at most 1.2x stats); CPU time because the machine is shared.

    nice .venv/bin/python benchmarks/unchanged_harvest.py [--runs 15] [--messages 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import ROOT, machine, write_results

from mind_core.testing.exports import write_chatgpt_export


def cpu_seconds(command: list[str], env: dict[str, str]) -> float:
    """User + system CPU seconds of one command's process (and any children it waits for)."""
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{command} exited with {process.returncode}")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--messages", type=int, default=2_000)
    args = parser.parse_args()
    print(machine(), f"load average {os.getloadavg()[0]:.1f}")
    mind = [sys.executable, "-m", "mind_core.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        export = write_chatgpt_export(Path(tmp) / "export" / "conversations.json", args.messages // 20, 20)
        env = {**os.environ, "MIND_HOME": str(home), "PYTHONPATH": str(ROOT), "DAGSTER_HOME": ""}
        base = ["--embedder", "mock", "-q"]
        subprocess.run([*mind, "sources", "add", str(export), "--name", "gpt", *base], env=env, check=True,
                       capture_output=True)
        subprocess.run([*mind, "harvest", *base], env=env, check=True, capture_output=True)
        commands = {"harvest (unchanged)": [*mind, "harvest", *base], "stats": [*mind, "stats", "-q"]}
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, command in commands.items():
                samples[name].append(cpu_seconds(command, env))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    ratio = medians["harvest (unchanged)"] / medians["stats"]
    for name, value in medians.items():
        print(f"{name:<20} median {value:.3f} CPU s (min {min(samples[name]):.3f}, max {max(samples[name]):.3f})")
    print(f"harvest / stats: {ratio:.2f}x (target <= 1.2x); load average {os.getloadavg()[0]:.1f}")
    write_results("unchanged_harvest", {"runs": args.runs, "messages": args.messages, "cpu_s": samples,
                                        "median_cpu_s": medians, "ratio": ratio})


if __name__ == "__main__":
    main()
