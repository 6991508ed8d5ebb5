"""One ``mind harvest`` of a source (a generated ChatGPT export, the shared mail...), measured from
outside as a user runs it: a new process (``mind sources add``, then ``mind harvest``), with the
mock embedder for the pipeline's own cost or the real model. Reported: wall and CPU time per stage, messages/s, the process's peak
RSS (the kernel's ``ru_maxrss`` of the harvest process, from ``wait4``), the peak of its memory
other than file-backed pages (sampled), and the mind's size on disk.

Per-stage wall times are the harvest report's (``stage_seconds``); per-stage CPU is the process's
CPU time sampled every half second, cut where the progress lines on stderr say a stage began (the
first progress line of a stage comes with its first batch, so a stage's CPU may include up to one
batch of its predecessor's).

The export is written one conversation at a time, so generating a million messages does not hold
them all in this process (``write_streamed_chatgpt_export``).
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import threading
import time
from bisect import bisect_right
from pathlib import Path

import psutil

from mind_core.store.home import MindHome
from mind_core.testing.exports import START_EPOCH, WORDS, chatgpt_conversation, generated_texts

PER_CONVERSATION = 50
STAGE_LINE = re.compile(r"^\[[^\]]+\] ([^:]+):")


def write_streamed_chatgpt_export(path: Path, messages: int, per_conversation: int = PER_CONVERSATION) -> Path:
    """A ChatGPT ``conversations.json`` of ``messages`` unique messages in conversations of
    ``per_conversation`` (the shape of ``mind_core.testing.exports.write_chatgpt_export``, each
    conversation a day after the one before), written one conversation at a time."""
    rng = random.Random(7)
    path.parent.mkdir(parents=True, exist_ok=True)
    conversations = max(1, messages // per_conversation)
    with path.open("w", encoding="utf-8") as out:
        out.write("[")
        for c in range(conversations):
            conversation = chatgpt_conversation(
                f"conv-{c}", f"Conversation {c} about {rng.choice(WORDS)}",
                generated_texts(rng, per_conversation), START_EPOCH + 86_400 * c,
            )
            out.write(("," if c else "") + json.dumps(conversation))
        out.write("]")
    return path


def folder_bytes(path: Path) -> int:
    """Bytes of a mind: its file with its WAL and the ANN graph beside it, if any."""
    files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
    graphs = Path(f"{path}.ann")
    if graphs.is_dir():
        files += [p for p in graphs.iterdir() if p.is_file()]
    return sum(p.stat().st_size for p in files if p.exists())


def measured_harvest(
    home: Path,
    export: Path,
    messages: int | None,
    workspace: str = "archive",
    kind: str = "chatgpt",
    embedder: str = "mock",
    allowed_exits: tuple[int, ...] = (0,),
) -> dict:
    """Register ``export`` (a source of ``kind``) in a fresh home and harvest it with ``mind
    harvest`` and ``embedder`` (``inprocess``: the real model); ``messages`` None: the count the
    harvest read. ``allowed_exits``: 1 too for a source that ends ``partial`` (files it could not read)."""
    env = {**os.environ, "MIND_HOME": str(home), "MIND_HARVEST_EMBEDDER": embedder, "PYTHONUNBUFFERED": "1"}
    mind = [sys.executable, "-m", "mind_core.cli"]
    subprocess.run([*mind, "sources", "add", kind, str(export), "--name", "generated", "--workspace", workspace],
                   env=env, check=True, capture_output=True)
    began = time.perf_counter()
    process = subprocess.Popen([*mind, "harvest", "--workspace", workspace, "--json"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watched = psutil.Process(process.pid)
    samples: list[tuple[float, float, int]] = []  # (seconds since start, CPU seconds, anonymous RSS bytes)
    stage_starts: dict[str, float] = {}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                cpu = watched.cpu_times()
                memory = watched.memory_full_info()  # rss less file-backed pages (libraries, mapped files)
                samples.append((time.perf_counter() - began, cpu.user + cpu.system, memory.rss - memory.shared))
            except psutil.Error:
                return
            done.wait(0.5)

    def read_stages() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            found = STAGE_LINE.match(line)
            if found and found.group(1) not in stage_starts:
                stage_starts[found.group(1)] = time.perf_counter() - began

    threads = [threading.Thread(target=sample, daemon=True), threading.Thread(target=read_stages, daemon=True)]
    for thread in threads:
        thread.start()
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - began
    process.returncode = os.waitstatus_to_exitcode(status)
    done.set()
    for thread in threads:
        thread.join(timeout=5)
    if process.returncode not in allowed_exits:
        raise RuntimeError(f"mind harvest exited {process.returncode}: {output[-2000:]}")
    report = json.loads(output)[0]
    imported = report.get("imported") or {}
    messages = imported.get("messages_seen", 0) if messages is None else messages
    cpu_total = usage.ru_utime + usage.ru_stime
    return {
        "messages": messages,
        "items": imported.get("items_seen"),
        "status": report.get("status"),
        "frames": imported.get("frames_new"),
        "wall_s": wall,
        "cpu_s": cpu_total,
        "messages_per_s": messages / wall,
        "peak_rss_mb": usage.ru_maxrss / 1024,  # kilobytes on Linux
        # file-backed pages (shared libraries; a mind read through a memory map, which a harvest no
        # longer does: pipeline.HARVEST_MMAP_BYTES) count in the RSS, though the kernel can drop
        # them; without them:
        "peak_private_mb": max((s[2] for s in samples), default=0) / 2**20,
        "stage_wall_s": report.get("stage_seconds", {}),
        "stage_cpu_s": stage_cpu(samples, stage_starts, wall, cpu_total),
        "mind_mb": folder_bytes(MindHome(home).mind_path(workspace)) / 2**20,
        "export_mb": export.stat().st_size / 2**20,
    }


def stage_cpu(samples: list[tuple[float, float, int]], starts: dict[str, float], wall: float, total: float) -> dict:
    """CPU seconds between one stage's first progress line and the next's (the last stage's up to
    the process's end, the time before the first stage as "start-up")."""
    if not samples:
        return {}
    times = [s[0] for s in samples]

    def cpu_at(moment: float) -> float:
        return samples[max(0, bisect_right(times, moment) - 1)][1]

    ordered = sorted(starts.items(), key=lambda item: item[1])
    cuts = [("start-up", 0.0), *ordered]
    out = {}
    for i, (stage, start) in enumerate(cuts):
        end_cpu = cpu_at(cuts[i + 1][1]) if i + 1 < len(cuts) else total
        out[stage] = max(0.0, end_cpu - (0.0 if stage == "start-up" else cpu_at(start)))
    return out
