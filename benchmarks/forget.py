"""How long `mind forget` takes on a large mind: a person, and a whole source.

Builds one mind of N frames (default 100,000) the way a user does, with `mind sources add` and
`mind harvest` (the mock embedder: 1,024-d vectors, no model), then `mind doctor --repair` (whose
reconcile builds its ANN graph), from three generated sources:

- ``bulk``: a ChatGPT export holding most of the frames;
- ``old-chats``: a ChatGPT export of ``--source-frames`` messages (default 10 % of N), the source
  forgotten whole;
- ``mail``: an mbox of ``--person-frames`` x 2 mails (default 1 % of N): the person wrote half of
  them and is named in the other half.

Then, each on its own copy of that mind, the commands a user runs, in this process:
`mind forget --person ADDRESS` (the dry run), `mind forget --person ADDRESS --yes`,
`mind forget --source old-chats` and `mind forget --source old-chats --yes`, each timed in wall
and CPU seconds (the machine is shared: CPU seconds are the steadier figure), with the engine's
own ``seconds``; ``--split-vacuum`` times each forget once more with ``--no-vacuum``.

    .venv/bin/python benchmarks/forget.py [--frames 100000] [--keep DIR] [--split-vacuum] [--only person|source]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _common import machine, write_results

from mind_core.cli import EXIT_OK, main
from mind_core.store.home import MindHome
from mind_core.testing.exports import WORDS, SyntheticMail, generated_texts, write_chatgpt_export, write_mbox

PERSON = ("Zephyrine Quarlesworth", "zq@quarles.example")
OTHERS = [("Bob Smith", "bob.smith@example.com"), ("Alice Johnson", "alice.johnson@example.com")]
MESSAGES_PER_CONVERSATION = 10
WORKSPACE = "big"


def run(home: Path, *argv: str) -> tuple[dict, float, float]:
    """One `mind` command in this process: its --json answer, wall and CPU seconds."""
    out = io.StringIO()
    wall, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(out):
        code = main([*argv, "--home", str(home), "-w", WORKSPACE, "--embedder", "mock"])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if code != EXIT_OK:
        raise SystemExit(f"mind {' '.join(argv)} exited {code}: {out.getvalue()[-2000:]}")
    text = out.getvalue().strip()
    return (json.loads(text) if text.startswith("{") else {}), wall, cpu


def person_mails(count: int, seed: int = 11) -> list[SyntheticMail]:
    """``count`` mails the person wrote and ``count`` that name them, in threads of their own."""
    rng = random.Random(seed)
    start = datetime(2022, 1, 3, 9, 0, tzinfo=UTC)
    mails = []
    for n in range(2 * count):
        other = OTHERS[n % 2]
        text = " ".join(generated_texts(rng, 1))
        wrote = n < count
        if not wrote:
            text = f"Ask {PERSON[0]} ({PERSON[1]}) about the {rng.choice(WORDS)} plan. {text}"
        mails.append(
            SyntheticMail(
                message_id=f"m{n}@example.com",
                thread=n,
                sender=PERSON if wrote else other,
                recipient=other if wrote else OTHERS[(n + 1) % 2],
                subject=f"{rng.choice(WORDS).title()} {n}",
                sent=start + timedelta(hours=n),
                text=text,
            )
        )
    return mails


def build(home: Path, sources: Path, frames: int, source_frames: int, person_frames: int) -> dict:
    bulk = frames - source_frames - 2 * person_frames
    made = {
        "bulk": ("chatgpt", write_chatgpt_export(sources / "bulk" / "conversations.json",
                                                 bulk // MESSAGES_PER_CONVERSATION, MESSAGES_PER_CONVERSATION, seed=1)),
        "old-chats": ("chatgpt", write_chatgpt_export(sources / "old" / "conversations.json",
                                                      source_frames // MESSAGES_PER_CONVERSATION,
                                                      MESSAGES_PER_CONVERSATION, seed=2)),
        "mail": ("email", write_mbox(sources / "mail" / "inbox.mbox", person_mails(person_frames))),
    }  # fmt: skip
    for name, (kind, path) in made.items():
        run(home, "sources", "add", kind, str(path), "--name", name, "-q")
    _, wall, cpu = run(home, "harvest", "-q")
    run(home, "doctor", "--repair")  # its reconcile builds the ANN graph a forget makes again (a harvest leaves it)
    mind = MindHome(home).mind_path(WORKSPACE)
    return {"harvest_s": round(wall, 1), "harvest_cpu_s": round(cpu, 1), "mind_mb": round(mind.stat().st_size / 2**20)}


def copy_home(built: Path, into: Path) -> Path:
    if into.exists():
        shutil.rmtree(into)
    shutil.copytree(built, into)
    return into


def measure(built: Path, scratch: Path, selector: list[str], split_vacuum: bool) -> dict:
    """Dry run and forget on a fresh copy of the built home; with ``split_vacuum``, the forget
    once more without VACUUM on another fresh copy."""
    home = copy_home(built, scratch / "home")
    plan, plan_wall, plan_cpu = run(home, "forget", *selector, "--json")
    done, wall, cpu = run(home, "forget", *selector, "--yes", "--json")
    measured = {
        "counts": done["counts"],
        "dry_run_s": round(plan_wall, 2),
        "dry_run_cpu_s": round(plan_cpu, 2),
        "forget_s": round(wall, 2),
        "forget_cpu_s": round(cpu, 2),
        "engine_s": done["seconds"],
        "planned": plan["counts"],
    }
    if split_vacuum:
        home = copy_home(built, scratch / "home")
        _, quick_wall, quick_cpu = run(home, "forget", *selector, "--yes", "--no-vacuum", "--json")
        measured.update(
            without_vacuum_s=round(quick_wall, 2),
            without_vacuum_cpu_s=round(quick_cpu, 2),
            vacuum_cpu_s=round(cpu - quick_cpu, 2),
        )
    return measured


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--source-frames", type=int, help="frames of the source forgotten (default 10%%)")
    parser.add_argument("--person-frames", type=int, help="frames the person wrote (default 0.5%%)")
    parser.add_argument("--keep", type=Path, help="build the mind here once and reuse it on later runs")
    parser.add_argument("--split-vacuum", action="store_true", help="also time each forget without VACUUM")
    parser.add_argument("--only", choices=("person", "source"), help="measure one forget (two processes in parallel)")
    args = parser.parse_args()
    source_frames = args.source_frames or args.frames // 10
    person_frames = args.person_frames or args.frames // 200
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        built = args.keep or scratch / "built"
        marker = built / "built.json"
        if marker.is_file():
            building = json.loads(marker.read_text())
            print(f"reusing the mind in {built}")
        else:
            print(f"building a {args.frames:,}-frame mind with `mind harvest` (mock embedder) ...")
            building = build(built, scratch / "sources", args.frames, source_frames, person_frames)
            marker.write_text(json.dumps(building))
        print(f"  harvest {building['harvest_s']} s ({building['harvest_cpu_s']} CPU s), mind {building['mind_mb']} MiB")
        selectors = {"person": ["--person", PERSON[1]], "source": ["--source", "old-chats"]}
        results = {
            name: measure(built, scratch, selector, args.split_vacuum)
            for name, selector in selectors.items()
            if args.only in (None, name)
        }
    for name, r in results.items():
        counts = r["counts"]
        split = (
            f"; without VACUUM {r['without_vacuum_s']} s, {r['without_vacuum_cpu_s']} CPU s"
            if "without_vacuum_s" in r
            else ""
        )
        print(
            f"{name}: dry run {r['dry_run_s']} s ({r['dry_run_cpu_s']} CPU s); forget {r['forget_s']} s wall, "
            f"{r['forget_cpu_s']} CPU s (engine {r['engine_s']} s{split}); frames deleted "
            f"{counts['frames_deleted']:,}, redacted {counts['frames_redacted']:,}, ANN graph remade of "
            f"{counts.get('ann_vectors', 0):,} vectors"
        )
    load_after = os.getloadavg()
    print(f"load average {load_before[0]:.1f} -> {load_after[0]:.1f}; {machine()}")
    write_results(
        f"forget_{args.only}" if args.only else "forget",
        {"frames": args.frames, "build": building, "results": results, "load": [load_before[0], load_after[0]]},
    )


if __name__ == "__main__":
    main_()
