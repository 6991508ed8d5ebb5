"""Where a whole search's time goes, by part, on one mind (issue #31: search at archive size).

Runs ``HybridSearch.search`` (the call ``mind recall`` makes) for the benchmark questions on a mind
opened read-only (``benchmarks/archive.py`` builds and keeps them) and charges each call's CPU
time to the part that spent it: the question's embedding, the keyword lane, the vector lane, the
session neighbours, the speakers, the time parts, relevance, reading the frames shown, the
keyword share and the question's similarity; what no part claims is the fusion and the rest.
Parts are exclusive (a part called inside another is charged to itself only). ``--top FILE``
writes each question's top 10 frame ids, ``--same-as FILE`` checks them against such a file
(a change that should not move results), ``--profile N`` prints cProfile's N costliest functions.

    .venv/bin/python benchmarks/search_parts.py MIND [--queries 100] [--top FILE] [--same-as FILE] [--profile 30]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import time
from collections import defaultdict
from pathlib import Path

from _common import percentile
from search import questions

from mind_core.embeddings import InprocessEmbedder
from mind_core.mind import Mind
from mind_core.search import hybrid

LIMIT = 10


class PartClock:
    """CPU time per part, exclusive: a part's call made inside another part is taken off that one."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self._inner: list[float] = []

    def wrap(self, part: str, call):
        def timed(*args, **kwargs):
            self._inner.append(0.0)
            began = time.process_time()
            try:
                return call(*args, **kwargs)
            finally:
                elapsed = time.process_time() - began
                inner = self._inner.pop()
                self.spent[part] += elapsed - inner
                if self._inner:
                    self._inner[-1] += elapsed

        return timed

    def take(self) -> dict[str, float]:
        spent, self.spent = dict(self.spent), defaultdict(float)
        return spent


PARTS = {  # part: the (attribute of HybridSearch, or "search" itself; method) it is spent in
    "embedding": [("vector_lane", "query_vectors"), ("vectors", "embed_query")],
    "keyword lane": [("keyword_lane", "hits")],
    "vector lane": [("vector_lane", "hits")],
    "speakers": [("speakers", "spoken"), ("speakers", "scores")],
    "time": [("search", "_window_used"), ("time_lane", "time_scores")],
    "relevance": [("search", "_by_relevance")],
    "reading frames": [("frames", "get_many")],
    "keyword share": [("keyword_lane", "held")],
    "question similarity": [("vectors", "similarities")],
    "session neighbours": [],
}


def instrument(search: hybrid.HybridSearch, clock: PartClock) -> None:
    """Wrap the parts of one ``HybridSearch`` (its attributes' methods; the module's session query)."""
    for part, targets in PARTS.items():
        for owner_name, name in targets:
            owner = search if owner_name == "search" else getattr(search, owner_name)
            setattr(owner, name, clock.wrap(part, getattr(owner, name)))
    hybrid.session_neighbours = clock.wrap("session neighbours", hybrid.session_neighbours)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mind", type=Path)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--top", type=Path, help="write each question's top 10 frame ids here")
    parser.add_argument("--same-as", type=Path, help="check each question's top 10 against this file")
    parser.add_argument("--profile", type=int, default=0, help="print cProfile's N costliest functions")
    args = parser.parse_args()
    asked = questions(args.queries)
    with Mind.open(args.mind, embedder=InprocessEmbedder(), readonly=True) as mind:
        search = mind.search
        search.search(asked[0], limit=LIMIT)  # the model loaded, the graph opened, the pages touched
        clock = PartClock()
        instrument(search, clock)
        per_part: dict[str, list[float]] = defaultdict(list)
        tops: list[list[int]] = []
        profiler = cProfile.Profile() if args.profile else None
        for query in asked:
            if profiler is not None:
                profiler.enable()
            began = time.process_time()
            results = search.search(query, limit=LIMIT)
            total = time.process_time() - began
            if profiler is not None:
                profiler.disable()
            spent = {part: 0.0 for part in PARTS} | clock.take()
            spent["fusion and the rest"] = total - sum(spent.values())
            spent["whole search"] = total
            for part, seconds in spent.items():
                per_part[part].append(seconds * 1000)
            tops.append([result.frame.id for result in results])
    load = os.getloadavg()
    print(f"{args.mind.name}: {len(asked)} questions, CPU ms per search (load average {load[0]:.1f})")
    whole = per_part["whole search"]
    slowest = sorted(range(len(whole)), key=lambda i: whole[i])[-max(1, len(whole) // 10):]
    print(f"{'part':22} {'mean':>7} {'p50':>7} {'p95':>7} {'max':>7} {'slowest 10%':>12}")
    for part in sorted(per_part, key=lambda p: (p == "whole search", -sum(per_part[p]))):
        times = per_part[part]
        tail = sum(times[i] for i in slowest) / len(slowest)
        print(f"{part:22} {sum(times) / len(times):7.2f} {percentile(times, 50):7.2f} "
              f"{percentile(times, 95):7.2f} {max(times):7.2f} {tail:12.2f}")
    if args.top:
        args.top.write_text(json.dumps({"questions": asked, "top": tops}))
    if args.same_as:
        before = json.loads(args.same_as.read_text())
        moved = [q for q, old, new in zip(asked, before["top"], tops, strict=False) if old != new]
        print(f"top 10 unchanged for {len(asked) - len(moved)} of {len(asked)} questions")
        for query in moved[:10]:
            print(f"  moved: {query}")
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.profile)


if __name__ == "__main__":
    main()
