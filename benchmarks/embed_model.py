"""In-process all-MiniLM-L6-v2 throughput (texts/s) by batch size, on ~50-word real texts.

Texts are consecutive 50-word windows of the Obsidian help vault
(../shared/data/markdown/obsidian-help-en); without that folder, a fixed synthetic vocabulary.
Prints texts/s for one-text-at-a-time ``embed`` and for ``embed_batch`` at each batch size.
Each figure is the best of --rounds interleaved rounds (the median is in the JSON), because a
shared 2-core machine makes single runs swing by 2x or more.

    .venv/bin/python benchmarks/embed_model.py [--texts 512] [--rounds 3] [--batch-sizes 16 64 256]
"""

from __future__ import annotations

import argparse
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

    samples: dict[str, list[float]] = {"single": [], **{str(b): [] for b in args.batch_sizes}}
    for _ in range(args.rounds):
        started = time.perf_counter()
        for text in single:
            embedder.embed(text)
        samples["single"].append(len(single) / (time.perf_counter() - started))
        for batch_size in args.batch_sizes:
            embedder.batch_size = batch_size
            started = time.perf_counter()
            embedder.embed_batch(texts)
            samples[str(batch_size)].append(len(texts) / (time.perf_counter() - started))

    best = {key: max(values) for key, values in samples.items()}
    print(f"  one at a time   {best['single']:8.1f} texts/s")
    for batch_size in args.batch_sizes:
        rate = best[str(batch_size)]
        print(f"  batch_size {batch_size:<4} {rate:8.1f} texts/s  ({rate / best['single']:.1f}x one at a time)")

    write_results(
        "embed_model",
        {
            "texts": len(texts),
            "source": source,
            "mean_word_pieces": round(tokens, 1),
            "model_load_s": round(load_s, 2),
            "rounds": args.rounds,
            "best_texts_per_s": {key: round(value, 1) for key, value in best.items()},
            "median_texts_per_s": {key: round(statistics.median(v), 1) for key, v in samples.items()},
        },
    )


if __name__ == "__main__":
    main()
