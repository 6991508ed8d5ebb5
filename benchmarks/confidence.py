"""Whether ``confident`` can be trusted (issue #18): the share of real LoCoMo/REALTALK questions
whose results count as a confident match, and that no nonsense query does, in the conversations'
minds and in a mind of kernel patch mails (where nonsense reaches the old single cosine cut).

Each row gives the old rule (best similarity >= CONFIDENT_SIMILARITY, or every keyword in a
frame) beside the current one (``SearchResult.confident``).

Date-only questions ("what happened in May 2023", "what did I talk about in May 2023"), asked of
every mind for up to ``DATE_MONTHS`` months that hold its memories and for one month long before
any: how often the first answer lies in the asked month, and how often the answer (any of its ten
results, as the response's ``confident`` says) and its first result count as confident: they
should when the first answer is from the asked month, never for the empty month. ``--mind`` adds
existing minds to the date questions only (a home harvested from the shared exports as a new user
would, where a month's memories are not the nearest in meaning among many others). Run it with
two checkouts of mind_core on PYTHONPATH to compare rules.

    .venv/bin/python benchmarks/confidence.py [--data locomo realtalk] [--minds DIR]
        [--mail PATH] [--mind PATH ...] [--embed-backend onnx-int8|onnx|torch]
"""

from __future__ import annotations

import argparse
import calendar
import statistics
import tempfile
from pathlib import Path
from typing import Any

import locomo
import realtalk
from _common import SHARED_DATA, write_results
from _memory_eval import harvested

from mind_core.embeddings import InprocessEmbedder
from mind_core.embeddings.inprocess import BACKENDS
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.search.config import SearchConfig
from mind_core.search.hybrid import HybridSearch
from mind_core.search.results import CONFIDENT_SIMILARITY

NONSENSE = [
    "zxqv blorft quuxle",
    "lorem ipsum dolor",
    "kjhsd fjkhsdf 8723",
    "zzzqqq xxvvyy",
    "asdf qwer zxcv",
    "flibbertigibbet wobblesnark",
    "qqq www eee rrr",
    "xkcd plorg vintrable snerp",
]
DATA_SETS = {
    "locomo": lambda: locomo.load_locomo(locomo.DEFAULT_DATA),
    "realtalk": lambda: realtalk.load_realtalk([realtalk.DEFAULT_DATA]),
}
MAIL = SHARED_DATA / "email" / "notmuch-corpus" / "lkml"
DATE_MONTHS = 4
EMPTY_MONTH = "what happened in June 1870"


def judged(search: HybridSearch, query: str) -> dict[str, Any]:
    results = search.search(query, limit=10)
    best = max((r.similarity or 0.0 for r in results), default=0.0)
    old = best >= CONFIDENT_SIMILARITY or any(r.keyword_share >= 1.0 for r in results)
    return {"best_similarity": best, "old": old, "new": any(r.confident for r in results)}


def share(rows: list[dict[str, Any]], rule: str) -> float:
    return 100 * statistics.fmean(row[rule] for row in rows) if rows else float("nan")


def nonsense_rows(search: HybridSearch, mind_name: str) -> list[dict[str, Any]]:
    rows = [{"mind": mind_name, "query": q, **judged(search, q)} for q in NONSENSE]
    for row in rows:
        print(
            f"  nonsense {row['query']!r}: best {row['best_similarity']:.3f}, "
            f"old {'confident' if row['old'] else '-'}, new {'confident' if row['new'] else '-'}"
        )
    return rows


def date_rows(search: HybridSearch, mind_name: str) -> list[dict[str, Any]]:
    """Date-only questions: months holding memories (spread over the mind's span), and one empty."""
    months = [row[0] for row in search.db.query("SELECT DISTINCT substr(created_at, 1, 7) FROM memory_frames ORDER BY 1")]
    picked = months[:: max(1, len(months) // DATE_MONTHS)][:DATE_MONTHS]
    asked = [
        (f"{phrasing} {calendar.month_name[int(m[5:])]} {m[:4]}", m)
        for m in picked
        for phrasing in ("what happened in", "what did I talk about in")
    ]
    rows = []
    for query, month in [*asked, (EMPTY_MONTH, None)]:
        results = search.search(query, limit=10)
        first_inside = bool(results) and month is not None and results[0].frame.created_at.startswith(month)
        rows.append(
            {
                "mind": mind_name,
                "query": query,
                "month_holds_memories": month is not None,
                "first_inside": first_inside,
                "confident": any(r.confident for r in results),
                "first_confident": bool(results) and results[0].confident,
            }
        )
    return rows


def date_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    held = [row for row in rows if row["month_holds_memories"]]
    empty = [row for row in rows if not row["month_holds_memories"]]
    summary = {
        "questions": len(held),
        "first_inside": sum(row["first_inside"] for row in held),
        "confident": sum(row["confident"] for row in held),
        "first_confident": sum(row["first_confident"] for row in held),
        "empty_month_questions": len(empty),
        "empty_month_confident": sum(row["confident"] for row in empty),
    }
    print(
        f"date-only questions: {summary['questions']} about months holding memories, first answer inside "
        f"{summary['first_inside']}, confident {summary['confident']} (the first answer itself "
        f"{summary['first_confident']}); about an empty month: confident "
        f"{summary['empty_month_confident']} / {summary['empty_month_questions']}"
    )
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", choices=sorted(DATA_SETS), default=["locomo", "realtalk"])
    parser.add_argument("--minds", type=Path, help="the conversations' minds kept by select_constants.py --minds")
    parser.add_argument("--mail", type=Path, default=MAIL, help="a mail folder harvested as the code mind")
    parser.add_argument("--mind", type=Path, nargs="*", default=[], help="existing minds asked the date questions too")
    parser.add_argument("--embed-backend", choices=tuple(BACKENDS), help="in-process model backend")
    parser.add_argument("--name", default="confidence", help="results file name under benchmarks/results/")
    args = parser.parse_args()
    embedder = InprocessEmbedder(backend=args.embed_backend)
    results: dict[str, Any] = {"embedding_backend": embedder.backend, "nonsense": [], "dates": []}
    with tempfile.TemporaryDirectory() as tmp:
        for data in args.data:
            rows: list[dict[str, Any]] = []
            for conversation in DATA_SETS[data]():
                reuse = args.minds is not None
                with harvested(conversation, embedder, args.minds or Path(tmp), SearchConfig(), reuse=reuse) as run:
                    asked = [judged(run.mind.search, q.question) for q in conversation.scored_questions()]
                    rows += asked
                    print(
                        f"{conversation.name}: {len(asked)} questions, confident old {share(asked, 'old'):.1f}% "
                        f"new {share(asked, 'new'):.1f}%",
                        flush=True,
                    )
                    results["nonsense"] += nonsense_rows(run.mind.search, conversation.name)
                    results["dates"] += date_rows(run.mind.search, conversation.name)
            below = sorted(row["best_similarity"] for row in rows)[:5]
            results[data] = {"questions": len(rows), "old": share(rows, "old"), "new": share(rows, "new")}
            print(
                f"{data}: {len(rows)} questions confident, old {share(rows, 'old'):.1f}% "
                f"new {share(rows, 'new'):.1f}%; lowest best similarities {[round(b, 3) for b in below]}"
            )
        if args.mail.is_dir():
            mind = Mind.open(Path(tmp) / "mail.mind", embedder=embedder)
            try:
                register_source(mind, None, args.mail, "mail")
                report = harvest(mind, "mail")
                frames = mind.db.scalar("SELECT COUNT(*) FROM memory_frames")
                print(f"mail mind {args.mail.name}: {frames} frames ({report.imported and report.imported.error_count} errors)")
                results["nonsense"] += nonsense_rows(mind.search, f"mail:{args.mail.name}")
                results["dates"] += date_rows(mind.search, f"mail:{args.mail.name}")
            finally:
                mind.close()
    for path in args.mind:
        with Mind.open(path, embedder=embedder, readonly=True) as mind:
            results["dates"] += date_rows(mind.search, f"mind:{path.name}")
    nonsense = results["nonsense"]
    results["nonsense_confident"] = {"old": sum(r["old"] for r in nonsense), "new": sum(r["new"] for r in nonsense)}
    print(
        f"nonsense queries confident: old {results['nonsense_confident']['old']} / {len(nonsense)}, "
        f"new {results['nonsense_confident']['new']} / {len(nonsense)}"
    )
    results["dates_summary"] = date_summary(results["dates"])
    write_results(args.name, results)


if __name__ == "__main__":
    main()
