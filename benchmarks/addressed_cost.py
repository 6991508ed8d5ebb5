"""What names that stand for a role cost a one-shot question (issue #35): CPU time of reading them.

A `mind recall` process starts with an empty cache, so it reads the names of its question
afresh; a server (HTTP, MCP) reads each once per change of the mind. For every question of LoCoMo
(the one-mind ChatGPT mind) and REALTALK (a ChatGPT mind per chat), kept by ``select_constants.py
--minds DIR``, the names the lanes leave out are read with a fresh cache (the best of 3), as the
round before "auto" did (per source, no role left without a name) and with the defaults ("auto",
the role left without a name). No model is loaded: this is the reading alone.

    .venv/bin/python benchmarks/addressed_cost.py --locomo-minds DIR --realtalk-minds DIR [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import locomo
import realtalk
from _common import write_results

from mind_core.search.config import SearchConfig
from mind_core.search.speakers import Speakers
from mind_core.search.until_changed import UntilChanged
from mind_core.store.db import Database

SETTINGS = {
    "before auto (per source)": SearchConfig(addressed_scope="source", addressed_unnamed=False),
    "defaults (auto, unnamed role)": SearchConfig(),
}


def cold_ms(db: Database, question: str, config: SearchConfig, repeats: int) -> float:
    """The least CPU ms of ``repeats`` cold readings of the question's names."""
    best = float("inf")
    for _ in range(repeats):
        speakers = Speakers(db, UntilChanged(db))
        speakers.unnamed_roles = config.addressed_unnamed
        speakers.kept.get("speakers", speakers._all)  # read by every search, names or not
        began = time.process_time()
        speakers.spoken(question, True, config.addressed_scope)
        best = min(best, time.process_time() - began)
    return 1000 * best


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": statistics.median(values),
        "p95": statistics.quantiles(values, n=20)[18],
        "max": max(values),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo-minds", type=Path, required=True, help="select_constants --minds, one-mind")
    parser.add_argument("--realtalk-minds", type=Path, required=True, help="select_constants --minds, realtalk")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--name", default="addressed_cost")
    args = parser.parse_args()
    groups = [
        (
            "LoCoMo, one mind",
            args.locomo_minds / "all-chatgpt.mind",
            [q.question for c in locomo.load_locomo(locomo.DEFAULT_DATA) for q in c.scored_questions()],
        )
    ]
    for chat in realtalk.load_realtalk([realtalk.DEFAULT_DATA]):
        questions = [q.question for q in chat.scored_questions()]
        groups.append((f"REALTALK {chat.name}", args.realtalk_minds / f"{chat.name}-chatgpt.mind", questions))
    results: dict[str, dict] = {}
    for label, path, questions in groups:
        db = Database(path)
        results[label] = {}
        for setting, config in SETTINGS.items():
            figures = summary([cold_ms(db, question, config, args.repeats) for question in questions])
            results[label][setting] = figures
            print(
                f"{label:30} {setting:30} {len(questions)} questions, CPU ms p50 {figures['p50']:.2f}"
                f" p95 {figures['p95']:.2f} max {figures['max']:.1f}",
                flush=True,
            )
    write_results(args.name, {"benchmark": "addressed_cost", "results": results})


if __name__ == "__main__":
    main()
