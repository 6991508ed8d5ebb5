"""The long reliability run (issues #11, #14): crash trials, hostile corpus, bad bytes, silent
zeros (sources that give nothing), hostile sizes, property tests, concurrency, resource faults and the query service under load, with the
figures for the README.

    .venv/bin/python benchmarks/reliability.py            # the full run (about 15 minutes on 2 cores)
    .venv/bin/python benchmarks/reliability.py --quick    # a smoke run of every part
    .venv/bin/python benchmarks/reliability.py --only compare   # this service against --baseline's

The same harnesses as tests/reliability (which runs each part small in CI); here every part runs
big and failures are counted instead of stopping the run. Writes benchmarks/results/reliability.json.
"""

from __future__ import annotations

import argparse
import io
import random
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import ROOT, SHARED_DATA, write_results

from mind_core.embeddings.mock import MockEmbedder
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.store.home import MindHome
from mind_core.testing import faults
from mind_core.testing.concurrency import harvest_while_recalling
from mind_core.testing.crash import crash_trials
from mind_core.testing.fakes import HashingEmbedder
from mind_core.testing.hostile import (
    BAD_BYTE_EXPORTS,
    _has_marker,
    build_corpus,
    export_with_bad_bytes,
    harvest_corpus,
    tree_state,
)
from mind_core.testing.load import (
    LoadResult,
    Server,
    build_home,
    cpu_alone,
    kinds_alone,
    request_mix,
    run_load,
    serve_under_load,
)
from mind_core.testing.properties import (
    build_query_fixture,
    check_parser_on_mutations,
    check_queries,
    parser_samples,
)
from mind_core.testing.sizes import CASES as SIZE_CASES
from mind_core.testing.sizes import measure


def section(title: str) -> float:
    print(f"\n== {title} ==", flush=True)
    return time.perf_counter()


def crash_part(root: Path, trials: int, seed: int) -> dict[str, Any]:
    began = section(f"crash recovery: {trials} SIGKILL trials on a 4,000-message harvest")
    report = crash_trials(root, trials, seed, conversations=40, messages_each=100)
    for t in report.trials:
        status = "ok" if t not in report.failures else "FAILED"
        print(
            f"  trial {t.trial:2d}: kill in {t.stage:<7} (marker {t.occurrence:>2}, +{t.jitter * 1000:5.0f} ms)"
            f" killed={t.killed!s:<5} frames at kill {t.frames_after_kill:>4} -> rerun {t.frames}, "
            f"lost {t.lost}, duplicated {t.duplicates}, doctor exit {t.doctor_exit}: {status}"
        )
    summary = report.summary()
    summary["seconds"] = round(time.perf_counter() - began, 1)
    print(f"  {summary}")
    return summary


def hostile_part(root: Path, truncations: int, big_mb: int, seed: int) -> dict[str, Any]:
    began = section(
        f"hostile corpus: {truncations} random JSON cuts + every other case, {big_mb} MB single lines"
    )
    home = MindHome(root / "home")
    cases = build_corpus(root / "corpus", truncations=truncations, big_bytes=big_mb * 2**20, seed=seed)
    before = tree_state(root)
    with Mind.open(home.workspace_path("hostile"), embedder=MockEmbedder(1024)) as mind:
        outcomes = list(harvest_corpus(mind, cases))
        doctor_ok = mind.doctor().ok
    escaped = tree_state(root, skip=home.root) != before
    failed = [o for o in outcomes if not o.ok]
    for outcome in failed:
        print(f"  FAILED {outcome}")
    summary = {
        "sources": len(cases),
        "bad_inputs": sum(len(c.bad_files) for c in cases) + sum(1 for c in cases if c.refused),
        "good_records": sum(len(c.good) for c in cases),
        "good_records_missing": sum(len(o.good_missing) for o in outcomes),
        "refused_records_imported": sum(len(o.refused_found) for o in outcomes),
        "located_errors": sum(len(o.errors) for o in outcomes),
        "unlocated_errors": sum(len(o.unlocated) for o in outcomes),
        "unhandled_exceptions": sum(o.exception is not None for o in outcomes),
        "failed_sources": len(failed),
        "wrote_outside_home": escaped,
        "doctor_ok": doctor_ok,
        "seconds": round(time.perf_counter() - began, 1),
    }
    print(f"  {summary}")
    return summary


def bad_byte_part(root: Path, records: int, every: int) -> dict[str, Any]:
    began = section(f"bad bytes: {records}-record exports with invalid UTF-8 in every {every}th record")
    results = {}
    for kind in sorted(BAD_BYTE_EXPORTS):
        broken = set(range(every // 2, records, every))
        path, marks = export_with_bad_bytes(root / kind, kind, records, broken)
        with Mind.open(root / f"{kind}.mind", embedder=MockEmbedder(1024)) as mind:
            register_source(mind, kind, path, kind)
            summary = harvest(mind, kind, cognify=False).imported
            lost = sum(not _has_marker(mind, mark) for mark in marks)
        assert summary is not None
        results[kind] = {
            "records": records,
            "records_with_bad_bytes": len(broken),
            "warnings": summary.error_count,
            "messages_lost": lost,
        }
        print(f"  {kind:<8} {results[kind]}")
    summary_out = {
        "exports": results,
        "messages_lost_next_to_a_bad_byte": sum(r["messages_lost"] for r in results.values()),
        "seconds": round(time.perf_counter() - began, 1),
    }
    print(f"  messages lost next to a bad byte: {summary_out['messages_lost_next_to_a_bad_byte']}")
    return summary_out


def _broken_sources(root: Path) -> list[tuple[str, str, Path, str]]:
    """(name, kind, path, what is wrong) of sources that can give nothing."""
    vault = root / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "a.md").write_text("# A note\n\nwith text\n")
    gone = root / "gone"
    gone.mkdir()
    (gone / "b.md").write_text("# B\n")
    empty = root / "empty-vault"
    empty.mkdir()
    emptied = root / "emptied" / "conversations.json"
    emptied.parent.mkdir()
    emptied.write_text("[]")
    unreadable = root / "unreadable" / "conversations.json"
    unreadable.parent.mkdir()
    unreadable.write_text("{ this is not json")
    return [
        ("missing", "markdown", gone, "path deleted after it was added"),
        ("empty", "markdown", empty, "an empty folder (an unmounted drive)"),
        ("emptied", "chatgpt", emptied, "an export that is now []"),
        ("unreadable", "chatgpt", unreadable, "every record broken"),
        ("vault-as-mail", "email", vault, "a vault added as email (--kind-anyway)"),
    ]


def silent_zero_part(root: Path) -> dict[str, Any]:
    """Sources that give nothing, harvested twice by `mind harvest`: a run that exits 0 having
    imported nothing is a silent zero; a second run that skips as unchanged hides the failure."""
    from mind_core.cli import EXIT_OK, main

    began = section("silent zeros: sources that give nothing, harvested by `mind harvest`")
    home = str(root / "home")
    base = ["--home", home, "--workspace", "w", "--embedder", "mock", "-q"]
    cases = _broken_sources(root)
    for name, kind, path, _ in cases:
        assert main(["sources", "add", kind, str(path), "--name", name, "--kind-anyway", *base]) == EXIT_OK
    shutil.rmtree(cases[0][2])
    results = {}
    for name, _, _, what in cases:
        codes = [main(["harvest", name, *base]) for _ in range(2)]
        results[name] = {"what": what, "exit_codes": codes, "silent": EXIT_OK in codes}
        print(f"  {name:<14} {what}: exit codes {codes}")
    with Mind.open(MindHome(home).mind_path("w"), readonly=True) as mind:
        statuses = dict(mind.db.query("SELECT source, last_status FROM harvest_sources"))
    for name, entry in results.items():
        entry["status"] = statuses.get(name)
    out = {
        "sources": results,
        "silent_zero_runs": sum(r["silent"] for r in results.values()),
        "seconds": round(time.perf_counter() - began, 1),
    }
    print(f"  statuses: {statuses}\n  silent-zero runs: {out['silent_zero_runs']}")
    return out


def sizes_part(root: Path, big_mb: int) -> dict[str, Any]:
    began = section(
        f"hostile sizes: {big_mb} MB single records ({3 * big_mb} MB in the zip), each in a fresh process"
    )
    results = []
    for name, make in SIZE_CASES.items():
        case = make(root / name, (3 if name == "zip" else 1) * big_mb * 2**20)
        result = measure(case)
        shutil.rmtree(root / name)
        results.append(result)
        print(
            f"  {result['case']:<38} peak {result.get('peak_mb', '?'):>5} MB, "
            f"{result.get('over_baseline_mb', '?'):>5} MB over baseline, frames {result.get('frames')}, "
            f"next record imported: {result.get('marker_imported')}"
        )
        for warning in result.get("warnings", []) or result.get("error", []):
            print(f"      {warning}")
    over = [r.get("over_baseline_mb", float("inf")) for r in results]
    summary = {
        "cases": results,
        "max_over_baseline_mb": max(over),
        "within_300_mb": all(o < 300 for o in over),
        "next_record_lost": sum(not r.get("marker_imported") for r in results),
        "seconds": round(time.perf_counter() - began, 1),
    }
    print(f"  largest peak over baseline: {summary['max_over_baseline_mb']} MB (target < 300 MB)")
    return summary


def property_part(root: Path, examples: int) -> dict[str, Any]:
    began = section(f"property tests: {examples} examples each")
    results: dict[str, Any] = {}
    samples = parser_samples(SHARED_DATA)
    for kind, kind_samples in samples.items():
        results[f"parser:{kind}"] = _run_property(
            lambda kind=kind, kind_samples=kind_samples: check_parser_on_mutations(
                kind, kind_samples, root / kind, examples, derandomize=False
            )
        )
    fixture = build_query_fixture(root / "queries", HashingEmbedder())
    try:
        results["queries"] = _run_property(lambda: check_queries(fixture, examples, derandomize=False))
    finally:
        fixture.workspace.close()
        fixture.personal.close()
    for name, result in results.items():
        print(
            f"  {name:<16} examples {result['examples']:>5}  failures {result['failures']}  {result.get('error', '')}"
        )
    summary = {
        "properties": results,
        "examples": sum(r["examples"] for r in results.values()),
        "failures": sum(r["failures"] for r in results.values()),
        "seconds": round(time.perf_counter() - began, 1),
    }
    print(f"  total examples {summary['examples']}, failures {summary['failures']}")
    return summary


def _run_property(check: Any) -> dict[str, Any]:
    try:
        return {"examples": check(), "failures": 0}
    except Exception as exc:  # Hypothesis re-raises the shrunk failing example
        return {
            "examples": 0,
            "failures": 1,
            "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}",
        }


def concurrency_part(root: Path) -> dict[str, Any]:
    began = section("concurrency: two harvests of 4,000 messages into one mind while a third process recalls")
    result = harvest_while_recalling(root, conversations=40, messages_each=100)
    summary = {
        "exit_codes": result.exit_codes,
        "locked_failures": result.locked_errors,
        "touches_skipped_while_locked": result.touches_skipped,
        "recalls": result.recalls,
        "frames": result.frames,
        "expected_frames": 2 * result.messages_per_source,
        "exact_counts": result.exact,
        "doctor_ok": result.doctor_ok,
        "seconds": round(time.perf_counter() - began, 1),
    }
    print(f"  {summary}")
    return summary


def faults_part() -> dict[str, Any]:
    began = section("resource faults through the mind command")
    runs = [
        ("read-only file", faults.readonly_file),
        ("read-only folder", faults.readonly_folder),
        ("full disk (tmpfs)", lambda r: faults.full_disk(r, "tmpfs")),
        ("full disk (RLIMIT_FSIZE)", lambda r: faults.full_disk(r, "rlimit")),
        ("missing model package", faults.missing_model),
    ]
    results = {}
    for name, run in runs:
        if name == "full disk (tmpfs)" and not faults.can_mount():
            continue
        with faults.shared_folder() as folder:
            outcome = run(folder)
        results[name] = {
            "ok": outcome.ok,
            "method": outcome.method,
            "exit": outcome.exit_code,
            "integrity": outcome.integrity,
            "intact": outcome.intact,
            "recovered": outcome.recovered,
            "error": outcome.error_line,
        }
        print(
            f"  {name:<25} {'ok' if outcome.ok else 'FAILED'}  exit {outcome.exit_code}  {outcome.error_line[:150]}"
        )
    return {
        "faults": results,
        "failures": sum(not r["ok"] for r in results.values()),
        "seconds": round(time.perf_counter() - began, 1),
    }


def load_part(root: Path, requests: int, clients: int, rounds: int, seed: int) -> dict[str, Any]:
    began = section(f"query service: {rounds} rounds of {requests} mixed requests from {clients} clients")
    results = serve_under_load(root, requests, clients, seed, rounds=rounds)
    rounds_out = []
    for number, result in enumerate(results, 1):
        problems = Counter(p.split(":", 2)[0] + ":" + p.split(":", 2)[1][:60] for p in result.problems)
        out = result.summary()
        rounds_out.append(out)
        print(f"  round {number}: {out}")
        for problem, n in problems.most_common(8):
            print(f"    {n:4d} x {problem}")
    summary = {
        "rounds": rounds_out,
        "requests": sum(r["requests"] for r in rounds_out),
        "server_errors_5xx": sum(r["server_errors_5xx"] for r in rounds_out),
        "problems": sum(r["problems"] for r in rounds_out),
        "rss_mb": [rounds_out[0]["rss_before_mb"], *(r["rss_after_mb"] for r in rounds_out)],
        "seconds": round(time.perf_counter() - began, 1),
    }
    print(f"  server RSS MB before/after each round: {summary['rss_mb']}")
    return summary


BASELINE = "89d217b"  # the last commit with the http.server service, before FastAPI + uvicorn
# Entry-point plugins come from the installed checkout, whose hooks an older tree may not know.
COMPARE_ENV = {"MIND_HARVEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def _checkout(rev: str, folder: Path) -> Path:
    """The files of ``rev`` in ``folder`` (``git archive``: no worktree to register or remove)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True)
    folder.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    return folder


# the figures a comparison round keeps (besides its errors), of which the medians are taken
COMPARED_FIGURES = (
    "requests_per_s",
    "p50_ms",
    "p95_ms",
    "server_cpu_ms_per_request",
    "bytes_per_answer",
    "bytes_per_recall_answer",
)


def _round_figures(result: LoadResult) -> dict[str, Any]:
    out = result.summary()
    return {key: out[key] for key in (*COMPARED_FIGURES, "server_errors_5xx", "problems")}


def _alone_part(
    servers: dict[str, Server], baseline: str, frame_ids: list[int], count: int, rounds: int, seed: int
) -> dict[str, Any]:
    """Each kind of request alone, ``count`` in a row, both servers taking turns (ABBA): the
    server CPU per request of the engine and the HTTP layer together, without the queueing and
    GIL contention of the load rounds. The refusals reach no mind: they are the HTTP layer's
    cost alone; beside them, the in-process engine's cost is the rest of a kind's."""
    names = list(servers)
    rows: dict[str, dict[str, list[float]]] = {}
    for number in range(rounds):
        for name in names if number % 2 == 0 else names[::-1]:
            makers = kinds_alone(random.Random(seed + number), frame_ids)
            for kind, make in makers.items():
                rows.setdefault(kind, {n: [] for n in names})[name].append(
                    cpu_alone(servers[name], make, count)
                )
    out: dict[str, Any] = {}
    print(f"  server CPU ms per request, each kind alone ({count} in a row, median of {rounds} rounds):")
    print(f"    {'kind':<30} {'current':>8} {baseline:>8}  ratio")
    for kind, by_server in rows.items():
        current, old = (statistics.median(by_server[n]) for n in names)
        out[kind] = {"current": round(current, 3), baseline: round(old, 3), "ratio": round(current / old, 3)}
        print(f"    {kind:<30} {current:8.3f} {old:8.3f}  {current / old:5.2f}")
    return out


def compare_part(
    root: Path, baseline: str, requests: int, clients: int, rounds: int, seed: int, alone_count: int
) -> dict[str, Any]:
    """This tree's service and ``baseline``'s over the same home and the same request mix, round
    by round in alternating order (ABBA...), so a change in the machine's load hits both: the
    other jobs on a shared machine move absolute figures far more than the service does, and
    CPU per request is the figure they disturb least. The rounds are a closed loop (each client
    sends again as soon as it has an answer), then half as many at one equal offered rate (3/4
    of the slower server's), where latency compares like with like: in a closed loop the faster
    a server's cheap answers, the more of its clients wait on expensive ones at any moment.
    Last, each kind of request alone (``_alone_part``), which parts the HTTP layer's cost from
    the engine's."""
    began = section(
        f"query service against {baseline}: {rounds} rounds each of {requests} mixed requests from "
        f"{clients} clients, alternating"
    )
    old_tree = _checkout(baseline, root / "baseline-tree")
    home, frame_ids = build_home(root)
    servers = {
        "current": Server(home, env=COMPARE_ENV, label="current"),
        baseline: Server(home, tree=old_tree, env=COMPARE_ENV, label=baseline),
    }
    rng = random.Random(seed)
    figures: dict[str, list[dict[str, Any]]] = {name: [] for name in servers}
    paced_rows: dict[str, list[dict[str, Any]]] = {name: [] for name in servers}
    rate = 0.0
    tracebacks: dict[str, int] = {}
    try:
        warm_up = request_mix(rng, 200, frame_ids)
        for server in servers.values():
            run_load(server, warm_up, clients)
        names = list(servers)
        for number in range(rounds):
            mix = request_mix(rng, requests, frame_ids)
            for name in names if number % 2 == 0 else names[::-1]:
                figures[name].append(_round_figures(run_load(servers[name], mix, clients)))
                print(f"  round {number + 1} {name:<8} {figures[name][-1]}", flush=True)
        # the same offered load for both: 3/4 of what the slower one answered in a closed loop
        rate = 0.75 * min(statistics.median(r["requests_per_s"] for r in rows) for rows in figures.values())
        for number in range(max(rounds // 2, 1)):
            mix = request_mix(rng, requests, frame_ids)
            for name in names if number % 2 == 0 else names[::-1]:
                paced_rows[name].append(_round_figures(run_load(servers[name], mix, clients, rate)))
                print(f"  at {rate:.0f}/s, round {number + 1} {name:<8} {paced_rows[name][-1]}", flush=True)
        alone = _alone_part(servers, baseline, frame_ids, alone_count, 2, seed)
    finally:
        for name, server in servers.items():
            tracebacks[name] = server.stop().count("Traceback")
    summary: dict[str, Any] = {"baseline": baseline, "rounds": rounds, "requests_per_round": requests}
    for name, rows in figures.items():
        summary[name] = _compare_entry(rows, tracebacks[name])
    current, old = summary["current"]["median"], summary[baseline]["median"]
    summary["current_over_baseline"] = {key: round(current[key] / old[key], 3) for key in current}
    for name in servers:
        entry = summary[name]
        print(
            f"  {name:<8} median {entry['median']}, 5xx {entry['server_errors_5xx']}, problems "
            f"{entry['problems']}, log tracebacks {entry['server_log_tracebacks']}"
        )
    print(f"  current / {baseline}: {summary['current_over_baseline']}")
    equal: dict[str, Any] = {"requests_per_s_offered": round(rate, 1)}
    for name, rows in paced_rows.items():
        equal[name] = _compare_entry(rows, tracebacks[name])
        print(f"  at {rate:.0f}/s {name:<8} median {equal[name]['median']}")
    equal["current_over_baseline"] = {
        key: round(equal["current"]["median"][key] / equal[baseline]["median"][key], 3)
        for key in equal["current"]["median"]
    }
    print(f"  at {rate:.0f}/s current / {baseline}: {equal['current_over_baseline']}")
    summary["equal_rate"] = equal
    summary["alone_cpu_ms_per_request"] = alone
    summary["seconds"] = round(time.perf_counter() - began, 1)
    return summary


def _compare_entry(rows: list[dict[str, Any]], tracebacks: int) -> dict[str, Any]:
    return {
        "rounds": rows,
        "median": {
            key: round(statistics.median(row[key] for row in rows), 2) for key in COMPARED_FIGURES
        },
        "server_errors_5xx": sum(row["server_errors_5xx"] for row in rows),
        "problems": sum(row["problems"] for row in rows),
        "server_log_tracebacks": tracebacks,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run of every part")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--baseline",
        default=BASELINE,
        help=f"the commit whose service 'compare' runs against (default {BASELINE})",
    )
    parser.add_argument(
        "--only",
        nargs="*",
        choices=(
            "crash",
            "hostile",
            "badbytes",
            "silent",
            "sizes",
            "properties",
            "concurrency",
            "faults",
            "load",
            "compare",
        ),
        help="the parts to run (default: all but compare)",
    )
    args = parser.parse_args()
    size = {
        "trials": 4 if args.quick else 32,
        "truncations": 10 if args.quick else 300,
        "big_mb": 2 if args.quick else 50,
        "bad_byte_records": 60 if args.quick else 2000,
        "size_mb": 5 if args.quick else 100,
        "examples": 50 if args.quick else 1000,
        "requests": 200 if args.quick else 1000,
        "rounds": 2 if args.quick else 3,
        "compare_rounds": 2 if args.quick else 8,
        "alone_requests": 20 if args.quick else 50,
    }
    parts = set(
        args.only
        or ("crash", "hostile", "badbytes", "silent", "sizes", "properties", "concurrency", "faults", "load")
    )
    results: dict[str, Any] = {"size": size, "seed": args.seed}
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mind-reliability-") as tmp:
        root = Path(tmp)
        if "crash" in parts:
            results["crash"] = crash_part(root / "crash", size["trials"], args.seed)
        if "hostile" in parts:
            results["hostile"] = hostile_part(
                root / "hostile", size["truncations"], size["big_mb"], args.seed
            )
        if "badbytes" in parts:
            results["badbytes"] = bad_byte_part(root / "badbytes", size["bad_byte_records"], 20)
        if "silent" in parts:
            results["silent"] = silent_zero_part(root / "silent")
        if "sizes" in parts:
            results["sizes"] = sizes_part(root / "sizes", size["size_mb"])
        if "properties" in parts:
            results["properties"] = property_part(root / "properties", size["examples"])
        if "concurrency" in parts:
            results["concurrency"] = concurrency_part(root / "concurrency")
        if "faults" in parts:
            results["faults"] = faults_part()
        if "load" in parts:
            results["load"] = load_part(root / "load", size["requests"], 16, size["rounds"], args.seed)
        if "compare" in parts:
            results["compare"] = compare_part(
                root / "compare",
                args.baseline,
                size["requests"],
                16,
                size["compare_rounds"],
                args.seed,
                size["alone_requests"],
            )
    results["seconds"] = round(time.perf_counter() - began, 1)
    print(f"\nfinished in {results['seconds']} s")
    write_results("reliability" + ("-quick" if args.quick else ""), results)


if __name__ == "__main__":
    main()
