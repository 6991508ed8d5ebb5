"""Parse throughput and peak memory of the ChatGPT source on a generated ~200 MB export.

    .venv/bin/python benchmarks/parse.py [--size-mb 200] [--output benchmarks/results/chatgpt-export.json]

The export is generated deterministically (fixed seed) in the shape of a real ``conversations.json``:
one line, a list of conversations whose ``mapping`` trees hold text, code, execution output and
regenerated branches. The scan's resident memory is sampled every 5 ms in a thread; the figure that
matters is the peak above the baseline taken just before the scan (targets: < 300 MB above the
baseline, >= 20,000 messages/s). Wall-clock throughput depends on what else the machine runs, so
CPU time and the load average are printed too.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
from pathlib import Path

import psutil
from _common import RESULTS, PeakRSS
from mind_harvest.plugins.chatgpt import ChatGPTSource

from mind_core.harvest.items import HarvestError, HarvestItem

WORDS = (
    "the team migrated PostgreSQL to version 16 after Alice Johnson reviewed the query plans for Project Falcon "
    "while Bob tuned the Kafka consumers and the dashboard latency dropped below two hundred milliseconds so we "
    "agreed to ship the release on Friday and document the rollback steps in the runbook for the on call rotation"
).split()


def _sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))).capitalize() + "."


def _node(
    node_id: str, parent: str | None, role: str, content: dict, created: float, rng: random.Random
) -> dict:
    return {
        "id": node_id,
        "parent": parent,
        "children": [],
        "message": {
            "id": node_id,
            "author": {"role": role, "name": "python" if role == "tool" else None, "metadata": {}},
            "create_time": created,
            "update_time": None,
            "content": content,
            "status": "finished_successfully",
            "end_turn": role == "assistant",
            "weight": 1.0,
            "metadata": {
                "model_slug": "gpt-4o",
                "request_id": f"req-{rng.getrandbits(48):012x}",
                "timestamp_": "absolute",
            },
            "recipient": "all",
        },
    }


def generate_conversation(rng: random.Random, index: int) -> dict:
    """One conversation: 10-40 visible messages plus a regenerated (abandoned) answer now and then."""
    start = 1_700_000_000 + index * 3_600.0
    mapping: dict[str, dict] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    turns = rng.randint(5, 20)
    moment = start
    for turn in range(turns):
        for role in ("user", "assistant"):
            moment += rng.uniform(5, 120)
            node_id = f"c{index}-t{turn}-{role}"
            if role == "assistant" and rng.random() < 0.15:
                content = {
                    "content_type": "code",
                    "language": "python",
                    "text": "\n".join(f"value_{i} = compute({i})" for i in range(rng.randint(2, 12))),
                }
            else:
                text = " ".join(_sentence(rng, 8, 30) for _ in range(rng.randint(1, 6)))
                content = {"content_type": "text", "parts": [text]}
            node = _node(node_id, parent, role, content, moment, rng)
            mapping[parent]["children"].append(node_id)
            mapping[node_id] = node
            if role == "assistant" and rng.random() < 0.1:
                abandoned = f"{node_id}-old"
                mapping[abandoned] = _node(
                    abandoned,
                    parent,
                    role,
                    {"content_type": "text", "parts": ["Superseded."]},
                    moment - 1,
                    rng,
                )
                mapping[parent]["children"].insert(0, abandoned)
            parent = node_id
    return {
        "title": _sentence(rng, 2, 6),
        "create_time": start,
        "update_time": moment,
        "mapping": mapping,
        "moderation_results": [],
        "current_node": parent,
        "plugin_ids": None,
        "conversation_id": f"conv-{index:06d}",
        "id": f"conv-{index:06d}",
        "default_model_slug": "gpt-4o",
    }


def generate_export(target: Path, size_mb: int, seed: int = 20240601) -> tuple[int, int]:
    """Write the export conversation by conversation (never whole in memory); returns (conversations, visible)."""
    rng = random.Random(seed)
    limit = size_mb * 1024 * 1024
    written = conversations = visible = 0
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", encoding="utf-8") as out:
        out.write("[")
        while written < limit:
            conversation = generate_conversation(rng, conversations)
            chunk = ("," if conversations else "") + json.dumps(conversation, separators=(",", ":"))
            out.write(chunk)
            written += len(chunk)
            conversations += 1
            visible += sum(
                1 for k, n in conversation["mapping"].items() if n["message"] and not k.endswith("-old")
            )
        out.write("]")
    return conversations, visible


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument("--output", type=Path, default=RESULTS / "chatgpt-export.json")
    args = parser.parse_args()

    expected: tuple[int, int] | None = None
    marker = args.output.with_suffix(".counts.json")
    if args.output.exists() and marker.exists() and json.loads(marker.read_text())["size_mb"] == args.size_mb:
        expected = tuple(json.loads(marker.read_text())["counts"])
    if expected is None:
        started = time.perf_counter()
        expected = generate_export(args.output, args.size_mb)
        marker.write_text(json.dumps({"size_mb": args.size_mb, "counts": expected}))
        print(f"generated {args.output} in {time.perf_counter() - started:.1f} s")
    size = args.output.stat().st_size

    source = ChatGPTSource()
    gc.collect()
    items = messages = errors = 0
    with PeakRSS(interval=0.005) as sampler:
        started = time.perf_counter()
        cpu_started = time.process_time()
        for event in source.scan(args.output):
            if isinstance(event, HarvestItem):
                items += 1
                messages += len(event.messages)
            elif isinstance(event, HarvestError):
                errors += 1
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
    mb = 1024 * 1024
    figures = {
        "file_mb": round(size / mb, 1),
        "conversations": items,
        "messages": messages,
        "expected_conversations": expected[0],
        "expected_messages": expected[1],
        "errors": errors,
        "seconds": round(elapsed, 2),
        "messages_per_s": round(messages / elapsed),
        "cpu_seconds": round(cpu, 2),
        "messages_per_cpu_s": round(messages / cpu),
        "load_average_1m": round(psutil.getloadavg()[0], 2),
        "mb_per_s": round(size / mb / elapsed, 1),
        "baseline_rss_mb": round(sampler.baseline / mb, 1),
        "peak_rss_mb": round(sampler.peak / mb, 1),
        "peak_above_baseline_mb": round((sampler.peak - sampler.baseline) / mb, 1),
        "python": sys.version.split()[0],
    }
    for name, value in figures.items():
        print(f"{name:>24}: {value}")
    ok = figures["peak_above_baseline_mb"] < 300 and figures["messages_per_s"] >= 20_000
    ok = ok and (items, messages) == expected and errors == 0
    print(
        "targets (peak < 300 MB above baseline, >= 20,000 messages/s, counts as generated):",
        "met" if ok else "MISSED",
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "parse.json").write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
