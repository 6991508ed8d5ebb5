"""One text, one vector? Each ONNX graph's vectors alone and in mixed passes, side by side.

For a few hundred texts (shared LoCoMo and REALTALK turns, or synthetic sentences without them;
plus very short texts and texts past the model's 256-piece window), each text is embedded alone
(a pass of 1) and in shuffled passes of ``--pass-size`` texts of mixed lengths (each padded to its
longest), through the embedder's own ONNX code. Per graph it prints the cosine of a text alone to
the same text in a mixed pass (min / mean), the cosine to the fp32 graph's vectors (min / mean) and
texts/s of the mixed passes (best of the rounds, wall and CPU). The graphs: fp32, the shipped
int8 (per-token activation scales, mind_core/embeddings/token_quantization.py) and, made here for
the comparison, the int8 graph shipped before it (``quantize_dynamic``: activation scales per pass).

    .venv/bin/python benchmarks/embed_batching.py [--texts 300] [--pass-size 16] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import machine, write_results
from embed_model import chat_turns

from mind_core.embeddings.inprocess import bundled_model_path
from mind_core.embeddings.onnx_export import ensure_cache
from mind_core.embeddings.onnx_runtime import OnnxSentenceModel

SHORT_TEXTS = ["ok", "hi", "yes!", "no", "Lisbon", "🐝", "a", "", "thanks", "42", "why?", "sure, at 9"]


def varied_texts(count: int) -> tuple[list[str], str]:
    """``count`` chat turns, plus the short texts and one long text per 20 turns (12 turns joined)."""
    turns, source = chat_turns(count)
    rng = random.Random(11)
    long_texts = [" ".join(rng.sample(turns, 12)) for _ in range(max(1, count // 20))]
    texts = turns + SHORT_TEXTS + long_texts
    rng.shuffle(texts)
    return texts, f"{source}, {len(SHORT_TEXTS)} short, {len(long_texts)} long"


def per_pass_int8(fp32_path: Path, folder: Path) -> Path:
    """The int8 graph as exported before per-token scales: ``quantize_dynamic``, int8 weights per channel."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    out = folder / "model-int8-per-pass.onnx"
    logging.disable(logging.WARNING)
    try:
        quantize_dynamic(str(fp32_path), str(out), weight_type=QuantType.QInt8, per_channel=True)
    finally:
        logging.disable(logging.NOTSET)
    return out


def mixed_passes(model: OnnxSentenceModel, texts: list[str], size: int, seed: int) -> tuple[np.ndarray, float, float]:
    """Vectors of ``texts`` embedded in shuffled passes of ``size``; (vectors, wall s, CPU s)."""
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    vectors = None
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(order), size):
        chosen = order[start : start + size]
        out = model.encode([texts[i] for i in chosen], size)
        if vectors is None:
            vectors = np.zeros((len(texts), out.shape[1]), dtype=np.float32)
        vectors[chosen] = out
    return vectors, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=300, help="chat turns (short and long texts come on top)")
    parser.add_argument("--pass-size", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    texts, source = varied_texts(args.texts)
    print(machine())
    print(f"{len(texts)} texts ({source}); load average at start {os.getloadavg()[0]:.1f}")
    model_dir = bundled_model_path()
    cache = ensure_cache(model_dir)
    with tempfile.TemporaryDirectory() as folder:
        graphs = {
            "fp32": cache.path("none"),
            "int8 per-token (now)": cache.path("int8"),
            "int8 per-pass (before)": per_pass_int8(cache.path("none"), Path(folder)),
        }
        models = {name: OnnxSentenceModel(path, model_dir) for name, path in graphs.items()}
        alone = {name: np.concatenate([m.encode([t], 1) for t in texts]) for name, m in models.items()}
        mixed: dict[str, list[np.ndarray]] = {name: [] for name in models}
        speed: dict[str, list[tuple[float, float]]] = {name: [] for name in models}
        for round_number in range(args.rounds):
            for name, model in models.items():  # the graphs take turns: same minutes, same load
                vectors, wall, cpu = mixed_passes(model, texts, args.pass_size, seed=round_number)
                mixed[name].append(vectors)
                speed[name].append((len(texts) / wall, len(texts) / cpu))
                print(f"  {name} round {round_number + 1}: {len(texts) / wall:.1f} texts/s", flush=True)
    load_end = os.getloadavg()[0]

    print(f"\nload average at the end {load_end:.1f}; passes of {args.pass_size}, shuffled (mixed lengths)")
    print(f"{'graph':<24}{'alone vs pass min':>19}{'mean':>10}{'to fp32 min':>13}{'mean':>9}{'texts/s':>9}{'per CPU s':>11}")
    rows = {}
    for name in models:
        together = (alone[name][None] * np.stack(mixed[name])).sum(axis=2)  # (rounds, texts)
        to_fp32 = (alone[name] * alone["fp32"]).sum(axis=1)
        best_wall = max(s[0] for s in speed[name])
        best_cpu = max(s[1] for s in speed[name])
        rows[name] = {
            "alone_vs_pass": {"min": float(together.min()), "mean": float(together.mean())},
            "to_fp32": {"min": float(to_fp32.min()), "mean": float(to_fp32.mean())},
            "texts_per_s": round(best_wall, 1),
            "texts_per_cpu_s": round(best_cpu, 1),
        }
        print(
            f"{name:<24}{together.min():>19.7f}{together.mean():>10.7f}{to_fp32.min():>13.4f}"
            f"{to_fp32.mean():>9.4f}{best_wall:>9.1f}{best_cpu:>11.1f}"
        )
    write_results(
        "embed_batching",
        {"texts": len(texts), "source": source, "pass_size": args.pass_size, "rounds": args.rounds,
         "load_average_end": round(load_end, 2), "graphs": rows},
    )


if __name__ == "__main__":
    main()
