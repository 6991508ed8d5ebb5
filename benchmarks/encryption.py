"""What encryption at rest costs (issue #33): search, opening a mind, harvest and snapshot, each
on a plain and an encrypted mind side by side in one run.

- Search: a mind of --frames chat turns (benchmarks/_corpus.py, written and cognified as
  benchmarks/search.py does) is built plain, copied, and the copy encrypted with ``mind encrypt``'s
  own code (``encrypt_mind``, a passphrase key). Both are opened read-only, as ``mind recall``
  opens them, and the LoCoMo/REALTALK questions are asked of each in turn (plain, encrypted,
  plain, ...), each a whole ``search(limit=10)``; the figure is the process's CPU time per search
  (the machine is shared: wall time grows with its load, CPU time much less), p50 and p95. The
  embedder is the deterministic mock: the real model's query embedding (benchmarks/search.py)
  costs both minds the same few milliseconds, and would only dilute the difference.
- Opening: CPU time of opening each mind read-only (best of 5): an encrypted mind pays
  SQLCipher's key derivation (PBKDF2, 256,000 rounds) once per process for a passphrase, nothing
  for a raw 64-hex-digit key.
- Harvest: the same ChatGPT export of --messages messages harvested into a fresh plain mind and
  a fresh encrypted one (the key in $MIND_HARVEST_KEY, as a user sets it), --rounds times taking
  turns, mock embedder (the model would be the same on both sides); the best CPU time of each.
- Snapshot: ``mind snapshot`` of the search minds (with embeddings): Parquet plain vs encrypted.
- Driver: every mind now goes through SQLCipher's SQLite (``sqlcipher3``, mind_core/store/db.py).
  The plain mind's searches are asked again in a child process on the driver used before
  (``pysqlite3``), for the cost of that change to plain minds (two processes: not side by side,
  so a difference of a few percent is load, not the driver).

    .venv/bin/python benchmarks/encryption.py [--frames 10000] [--queries 300] [--messages 5000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import percentile, write_results
from search import questions, write_frames

from mind_core.analytics.snapshot import snapshot_mind
from mind_core.embeddings import MockEmbedder
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.store.cipher import KEY_ENV, MindKey
from mind_core.store.cipher_migration import encrypt_mind
from mind_core.testing.exports import write_chatgpt_export

PASSPHRASE = "benchmark passphrase, stretched by SQLCipher's PBKDF2"
RAW_KEY = "be" * 32
OPENS = 5


def build_minds(folder: Path, frames: int) -> tuple[Path, Path, float]:
    """A plain mind of ``frames`` turns and its encrypted copy; the seconds encrypting took."""
    plain = folder / "plain.mind"
    with Mind.open(plain, embedder=MockEmbedder()) as mind:
        written = write_frames(mind, frames)
        mind.search.vectors.index_frames(written)
        mind.cognify.cognify_batch([frame_id for frame_id, _ in written])
    encrypted = folder / "encrypted.mind"
    shutil.copy(plain, encrypted)
    began = time.perf_counter()
    encrypt_mind(encrypted, MindKey(PASSPHRASE, "the benchmark"))
    return plain, encrypted, time.perf_counter() - began


def search_cpu(minds: dict[str, Mind], asked: list[str]) -> dict[str, dict[str, float]]:
    """CPU ms per ``search(limit=10)``, the minds taking turns query by query."""
    for mind in minds.values():  # warm: the first search loads what every later one reuses
        mind.search.search(asked[0], limit=10)
    times: dict[str, list[float]] = {name: [] for name in minds}
    for query in asked:
        for name, mind in minds.items():
            began = time.process_time()
            mind.search.search(query, limit=10)
            times[name].append((time.process_time() - began) * 1000)
    return {name: {"p50_ms": percentile(v, 50), "p95_ms": percentile(v, 95)} for name, v in times.items()}


def open_cpu(path: Path, key: MindKey | None) -> float:
    """Best CPU ms of opening ``path`` read-only and reading one row, each in a fresh state (the
    stretched-key cache emptied, as in a new process)."""
    from mind_core.store import cipher

    best = float("inf")
    for _ in range(OPENS):
        cipher._stretched.cache_clear()
        began = time.process_time()
        with Mind.open(path, embedder=MockEmbedder(), readonly=True, key=key) as mind:
            mind.db.scalar("SELECT COUNT(*) FROM memory_frames")
        best = min(best, (time.process_time() - began) * 1000)
    return best


def harvest_cpu(folder: Path, messages: int, rounds: int) -> dict[str, float]:
    """Best CPU seconds of harvesting the same export into a fresh plain and encrypted mind."""
    export = write_chatgpt_export(folder / "export" / "conversations.json", messages // 50, 50)
    best = {"plain": float("inf"), "encrypted": float("inf")}
    for round_ in range(rounds):
        for name in best:
            if name == "encrypted":
                os.environ[KEY_ENV] = PASSPHRASE
            try:
                with Mind.open(folder / f"harvest-{name}-{round_}.mind", embedder=MockEmbedder()) as mind:
                    assert mind.db.encrypted == (name == "encrypted")
                    register_source(mind, "chatgpt", export, "bench")
                    began = time.process_time()
                    harvest(mind, "bench")
                    best[name] = min(best[name], time.process_time() - began)
            finally:
                os.environ.pop(KEY_ENV, None)
    return best


def snapshot_cpu(folder: Path, minds: dict[str, Path]) -> dict[str, float]:
    seconds = {}
    for name, path in minds.items():
        if name == "encrypted":
            os.environ[KEY_ENV] = PASSPHRASE
        try:
            began = time.process_time()
            snapshot_mind(path, folder / "snapshots", name, include_embeddings=True)
            seconds[name] = time.process_time() - began
        finally:
            os.environ.pop(KEY_ENV, None)
    return seconds


def former_driver_search(path: Path, queries: int) -> dict[str, float]:
    """The plain mind's search CPU ms on the driver before ``sqlcipher3`` (a child process: two
    SQLite libraries with sqlite-vec cannot share one)."""
    out = subprocess.run(
        [sys.executable, __file__, "--former-driver", str(path), "--queries", str(queries)],
        check=True, capture_output=True, text=True,
    ).stdout
    return dict(json.loads(out.splitlines()[-1]))


def _search_on_former_driver(path: Path, queries: int) -> None:
    import pysqlite3.dbapi2

    from mind_core.store import db

    db.sqlite = pysqlite3.dbapi2
    with Mind.open(path, embedder=MockEmbedder(), readonly=True) as mind:
        print(json.dumps(search_cpu({"former": mind}, questions(queries))["former"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--messages", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--former-driver", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.former_driver:
        _search_on_former_driver(args.former_driver, args.queries)
        return
    os.environ.pop(KEY_ENV, None)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        plain_path, encrypted_path, encrypt_s = build_minds(folder, args.frames)
        sizes = {"plain": plain_path.stat().st_size, "encrypted": encrypted_path.stat().st_size}
        key = MindKey(PASSPHRASE, "the benchmark")
        opened = {
            "plain": Mind.open(plain_path, embedder=MockEmbedder(), readonly=True),
            "encrypted": Mind.open(encrypted_path, embedder=MockEmbedder(), readonly=True, key=key),
        }
        frames = opened["plain"].db.scalar("SELECT COUNT(*) FROM memory_frames")
        search = search_cpu(opened, questions(args.queries))
        for mind in opened.values():
            mind.close()
        former = former_driver_search(plain_path, args.queries)
        raw_path = folder / "raw.mind"
        shutil.copy(plain_path, raw_path)
        encrypt_mind(raw_path, MindKey(RAW_KEY, "the benchmark"))
        opening = {
            "plain": open_cpu(plain_path, None),
            "encrypted (passphrase)": open_cpu(encrypted_path, key),
            "encrypted (raw key)": open_cpu(raw_path, MindKey(RAW_KEY, "the benchmark")),
        }
        snapshot = snapshot_cpu(folder, {"plain": plain_path, "encrypted": encrypted_path})
        harvested = harvest_cpu(folder, args.messages, args.rounds)

    ratio = {q: search["encrypted"][q] / search["plain"][q] for q in ("p50_ms", "p95_ms")}
    print(f"search(limit=10), {frames:,} frames, {args.queries} questions, CPU ms per search (mock embedder):")
    for name, figures in search.items():
        print(f"  {name:<10} p50 {figures['p50_ms']:6.2f}  p95 {figures['p95_ms']:6.2f}")
    print(f"  encrypted / plain: p50 {ratio['p50_ms']:.2f}x, p95 {ratio['p95_ms']:.2f}x")
    print(f"  plain on the former driver (pysqlite3, another process): p50 {former['p50_ms']:.2f}  "
          f"p95 {former['p95_ms']:.2f}")
    print("open read-only + one read, best CPU ms: " + ", ".join(f"{k} {v:.1f}" for k, v in opening.items()))
    print(f"harvest of {args.messages:,} messages, best CPU s of {args.rounds}: plain {harvested['plain']:.2f}, "
          f"encrypted {harvested['encrypted']:.2f} ({harvested['encrypted'] / harvested['plain']:.2f}x)")
    print(f"snapshot with embeddings, CPU s: plain {snapshot['plain']:.2f}, encrypted {snapshot['encrypted']:.2f} "
          f"({snapshot['encrypted'] / snapshot['plain']:.2f}x)")
    print(f"mind encrypt of the {sizes['plain'] / 2**20:.0f} MiB mind: {encrypt_s:.1f} s wall; "
          f"encrypted file {sizes['encrypted'] / 2**20:.0f} MiB")
    write_results("encryption", {
        "frames": frames, "queries": args.queries, "search_cpu_ms": search, "search_ratio": ratio,
        "former_driver_search_cpu_ms": former,
        "open_cpu_ms": opening, "harvest_messages": args.messages, "harvest_cpu_s": harvested,
        "snapshot_cpu_s": snapshot, "encrypt_s": encrypt_s, "file_bytes": sizes,
    })


if __name__ == "__main__":
    main()
