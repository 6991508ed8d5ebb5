"""In-process all-MiniLM-L6-v2 throughput (texts/s) by batch size, on ~50-word real texts.

Texts are consecutive 50-word windows of the Obsidian help vault
(../shared/data/markdown/obsidian-help-en); without that folder, a fixed synthetic vocabulary.
Prints texts/s for one-text-at-a-time ``embed`` and for ``embed_batch`` at each batch size.
Each figure is the best of --rounds interleaved rounds (the median is in the JSON), because a
shared 2-core machine makes single runs swing by 2x or more; texts per CPU-second (all threads)
is printed alongside, since it compares batch sizes even when other processes take the cores.

    .venv/bin/python benchmarks/embed_model.py [--texts 512] [--rounds 3] [--batch-sizes 16 64 256]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

from _common import SHARED_DATA, machine, write_results

from mind_core.embeddings import InprocessEmbedder

WORDS_PER_TEXT = 50


def sample_texts(count: int) -> tuple[list[str], str]:
    vault = SHARED_DATA / "markdown" / "obsidian-help-en"
    words: list[str] = []
    if vault.is_dir():
        for path in sorted(vault.rglob("*.md")):
            words.extend(path.read_text(encoding="utf-8", errors="replace").split())
        source = "obsidian-help-en, 50-word windows"
    if len(words) < WORDS_PER_TEXT * count:
        rng = random.Random(7)
        vocab = [f"{a}{b}" for a in ("data", "mind", "note", "link", "query", "graph") for b in ("s", "ing", "ed", "")]
        words.extend(rng.choice(vocab) for _ in range(WORDS_PER_TEXT * count))
        source = "synthetic vocabulary" if not vault.is_dir() else source + " (topped up with synthetic words)"
    return [" ".join(words[i * WORDS_PER_TEXT : (i + 1) * WORDS_PER_TEXT]) for i in range(count)], source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--single", type=int, default=64, help="texts for the one-at-a-time figure")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 64, 256])
    args = parser.parse_args()

    texts, source = sample_texts(args.texts)
    started = time.perf_counter()
    embedder = InprocessEmbedder(batch_size=args.batch_sizes[0])
    embedder.embed("warm up")
    load_s = time.perf_counter() - started
    tokens = sum(embedder.count_tokens(t) for t in texts) / len(texts)
    print(f"{machine()}")
    print(f"model load {load_s:.1f} s; {len(texts)} texts from {source}; mean {tokens:.0f} word pieces/text")

    single = texts[: args.single]
    for batch_size in args.batch_sizes:
        embedder.batch_size = batch_size
        embedder.embed_batch(texts[:batch_size])  # warm the allocator for this shape

    keys = ["single", *(str(b) for b in args.batch_sizes)]
    samples: dict[str, list[float]] = {key: [] for key in keys}
    cpu_samples: dict[str, list[float]] = {key: [] for key in keys}

    def measure(key: str, count: int, run) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        samples[key].append(count / (time.perf_counter() - wall))
        cpu_samples[key].append(count / max(time.process_time() - cpu, 1e-9))

    for _ in range(args.rounds):
        measure("single", len(single), lambda: [embedder.embed(text) for text in single])
        for batch_size in args.batch_sizes:
            embedder.batch_size = batch_size
            measure(str(batch_size), len(texts), lambda: embedder.embed_batch(texts))

    best = {key: max(values) for key, values in samples.items()}
    best_cpu = {key: max(values) for key, values in cpu_samples.items()}
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    for key in keys:
        label = "one at a time  " if key == "single" else f"batch_size {key:<4}"
        print(
            f"  {label} {best[key]:8.1f} texts/s  {best_cpu[key]:7.1f} texts/CPU-s"
            f"  ({best[key] / best['single']:.1f}x one at a time)"
        )

    write_results(
        "embed_model",
        {
            "texts": len(texts),
            "source": source,
            "mean_word_pieces": round(tokens, 1),
            "model_load_s": round(load_s, 2),
            "rounds": args.rounds,
            "load_average_end": round(os.getloadavg()[0], 2),
            "best_texts_per_s": {key: round(value, 1) for key, value in best.items()},
            "best_texts_per_cpu_s": {key: round(value, 1) for key, value in best_cpu.items()},
            "median_texts_per_s": {key: round(statistics.median(v), 1) for key, v in samples.items()},
        },
    )


if __name__ == "__main__":
    main()
