"""The in-process model on each backend (torch, onnx fp32, onnx int8), side by side in one run.

On the same chat turns (shared LoCoMo and REALTALK; without them, synthetic sentences) it prints,
per backend: texts/s at passes of 1, 16 and 64 texts, the ratio to torch, the cosine of its
vectors to torch fp32 (mean / min), the session load time (imports done), and the cold start of
a new process to its first query vector. Then a cold `mind recall` (a new process to printed
results) on a small mind, per backend. Rounds interleave the backends, and each figure is the
best of its rounds, because a shared 2-core machine makes single runs swing; compare the ratios,
which come from the same minutes, and read them with the load average printed beside them.

    .venv/bin/python benchmarks/embed_model.py [--texts 1500] [--rounds 2] [--passes 1 16 64]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, SHARED_DATA, machine, write_results

from mind_core.embeddings import InprocessEmbedder
from mind_core.embeddings.inprocess import BACKEND_ENV, BACKENDS, bundled_model_path
from mind_core.embeddings.onnx_export import ensure_cache

REFERENCE = "torch"
COLD_QUERY = "what did we say about the trip to Lisbon"
FIRST_VECTOR = (
    "import sys, time; from mind_core.embeddings import InprocessEmbedder; "
    "InprocessEmbedder(backend=sys.argv[1]).embed(sys.argv[2])"
)


def chat_turns(count: int) -> tuple[list[str], str]:
    """``count`` turns drawn evenly from LoCoMo and REALTALK (fixed seed), or synthetic ones."""
    texts: list[str] = []
    sources = []
    locomo = SHARED_DATA / "benchmarks" / "locomo" / "locomo10_conv1-3.json"
    realtalk = SHARED_DATA / "benchmarks" / "realtalk"
    if locomo.is_file():
        from locomo import load_locomo

        texts += [t.text for c in load_locomo(locomo) for s in c.sessions for t in s.turns]
        sources.append("LoCoMo")
    if realtalk.is_dir():
        from realtalk import load_realtalk

        texts += [t.text for c in load_realtalk([realtalk]) for s in c.sessions for t in s.turns]
        sources.append("REALTALK")
    texts = [t for t in texts if t.strip()]
    rng = random.Random(7)
    if len(texts) < count:
        words = "plan trip meeting notes database index query memory graph lisbon dinner".split()
        texts += [" ".join(rng.choice(words) for _ in range(rng.randint(4, 40))) for _ in range(count)]
        sources.append("synthetic")
    return rng.sample(texts, count), " + ".join(sources)


def cosines(vectors, reference) -> tuple[float, float]:
    values = (vectors * reference).sum(axis=1)
    return float(values.mean()), float(values.min())


def timed_process(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def child_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def small_mind_home(folder: Path, backend: str, texts: list[str]) -> Path:
    """A home with one mind of ``texts`` (one session), its vectors made by ``backend``."""
    from mind_core.mind import Mind
    from mind_core.store.home import DEFAULT_WORKSPACE, MindHome

    home = folder / f"home-{backend}"
    with Mind.open(MindHome(home).mind_path(DEFAULT_WORKSPACE), embedder=InprocessEmbedder(backend=backend)) as mind:
        mind.sessions.ensure("chat")
        frames = [mind.frames.create_i_frame("chat", text) for text in texts]
        mind.search.vectors.index_frames([(frame.id, frame.content) for frame in frames])
    return home


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--passes", type=int, nargs="+", default=[1, 16, 64], help="texts per model pass")
    parser.add_argument("--cold", type=int, default=3, help="cold starts per backend (best counts)")
    parser.add_argument("--mind-texts", type=int, default=300, help="frames of the cold-recall mind")
    args = parser.parse_args()

    texts, source = chat_turns(args.texts)
    backends = list(BACKENDS)
    print(machine())
    print(f"{len(texts)} texts from {source}; load average at start {os.getloadavg()[0]:.1f}")
    ensure_cache(bundled_model_path())  # export once up front: it is set-up, not a measured load

    imports_started = time.perf_counter()
    import onnxruntime  # noqa: F401
    import tokenizers  # noqa: F401

    onnx_import_s = time.perf_counter() - imports_started
    imports_started = time.perf_counter()
    import sentence_transformers  # noqa: F401

    torch_import_s = time.perf_counter() - imports_started
    embedders, load_s = {}, {}
    for backend in backends:
        started = time.perf_counter()
        embedder = InprocessEmbedder(384, backend=backend)
        embedder.max_seq_length  # noqa: B018 - reading it loads the model: the session load alone
        load_s[backend] = time.perf_counter() - started
        embedder.embed("warm up")
        embedders[backend] = embedder

    speed: dict[str, dict[int, list[float]]] = {b: {p: [] for p in args.passes} for b in backends}
    vectors = {}
    for _ in range(args.rounds):
        for size in args.passes:
            for backend in backends:
                embedder = embedders[backend]
                embedder.batch_size = size
                started = time.perf_counter()
                out = embedder.embed_batch(texts)
                speed[backend][size].append(len(texts) / (time.perf_counter() - started))
                vectors[(backend, size)] = out
                print(f"  {backend} pass {size}: {speed[backend][size][-1]:.1f} texts/s", flush=True)
    load_after = os.getloadavg()[0]

    reference_size = 16 if 16 in args.passes else args.passes[0]
    reference = vectors[(REFERENCE, reference_size)]
    cold = {}
    for backend in backends:
        argv = [sys.executable, "-c", FIRST_VECTOR, backend, COLD_QUERY]
        cold[backend] = [timed_process(argv, child_env()) for _ in range(args.cold)]

    with tempfile.TemporaryDirectory() as folder:
        homes = {
            backend: small_mind_home(Path(folder), backend, texts[: args.mind_texts])
            for backend in ("torch", "onnx-int8")
        }
        homes["onnx"] = homes["torch"]  # one fp32 space: torch and ONNX fp32 read the same mind
        recall = {}
        for backend in backends:
            argv = [sys.executable, "-m", "mind_core.cli", "recall", COLD_QUERY, "-q",
                    "--home", str(homes[backend])]
            recall[backend] = [
                timed_process(argv, child_env(**{BACKEND_ENV: backend})) for _ in range(args.cold)
            ]
    load_end = os.getloadavg()[0]

    best = {b: {p: max(v) for p, v in per.items()} for b, per in speed.items()}
    print(
        f"\nimports: onnxruntime + tokenizers {onnx_import_s:.2f} s, sentence-transformers + torch "
        f"{torch_import_s:.2f} s; load average {load_after:.1f} after the throughput rounds, "
        f"{load_end:.1f} at the end"
    )
    header = "backend     " + "".join(f"{f'pass {p} texts/s':>17}" for p in args.passes)
    print(header + f"{'cos mean':>10}{'cos min':>10}{'load s':>8}{'cold s':>8}{'recall s':>10}")
    rows = {}
    for backend in backends:
        cells = "".join(
            f"{best[backend][p]:>8.1f} ({best[backend][p] / best[REFERENCE][p]:.2f}x)" for p in args.passes
        )
        mean, low = cosines(vectors[(backend, reference_size)], reference)
        rows[backend] = {
            "texts_per_s": {str(p): round(best[backend][p], 1) for p in args.passes},
            "ratio_to_torch": {str(p): round(best[backend][p] / best[REFERENCE][p], 2) for p in args.passes},
            "median_texts_per_s": {str(p): round(statistics.median(speed[backend][p]), 1) for p in args.passes},
            "cosine_to_torch": {"mean": round(mean, 6), "min": round(low, 6)},
            "cosine_to_torch_by_pass": {
                str(p): [round(x, 6) for x in cosines(vectors[(backend, p)], reference)] for p in args.passes
            },
            "session_load_s": round(load_s[backend], 3),
            "cold_first_vector_s": round(min(cold[backend]), 2),
            "cold_recall_s": round(min(recall[backend]), 2),
        }
        print(
            f"{backend:<12}{cells}{mean:>10.4f}{low:>10.4f}{load_s[backend]:>8.2f}"
            f"{min(cold[backend]):>8.2f}{min(recall[backend]):>10.2f}"
        )
    print(
        f"(cosines at passes of {reference_size} against torch at passes of {reference_size}; "
        "cold = new process to the first query vector; recall = new process to printed results, "
        f"{args.mind_texts}-frame mind)"
    )
    write_results(
        "embed_model",
        {
            "texts": len(texts),
            "source": source,
            "rounds": args.rounds,
            "passes": args.passes,
            "imports_s": {"onnxruntime+tokenizers": round(onnx_import_s, 2), "sentence_transformers+torch": round(torch_import_s, 2)},
            "load_average": {"start_to_throughput_end": round(load_after, 2), "end": round(load_end, 2)},
            "backends": rows,
        },
    )


if __name__ == "__main__":
    main()
