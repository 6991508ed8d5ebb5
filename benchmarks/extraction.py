"""Extraction quality on a labelled sample, and throughput on real conversation turns.

Quality (``--quality``): precision and recall of person / organization / project on two
labelled samples of texts from ../shared/data in the form cognify sees them:

- in sample, ``benchmarks/data/extraction_labels.json``: 141 texts (mails, Obsidian vaults,
  LoCoMo chats), 226 mentions; the context rules were written with these texts in view;
- out of sample, ``benchmarks/data/extraction_labels_out_of_sample.json``: 181 texts from parts
  the first sample does not use (other mail threads and notes, the ChatGPT and Claude exports,
  REALTALK chats), 213 mentions, labelled before the extractor was run on them.

A prediction counts when ``extract`` gives the labelled name with the labelled type
(case-insensitive, whitespace collapsed); per text, each distinct name counts once.

Throughput (default): messages are LoCoMo dialogue turns (image turns contribute their caption),
repeated to --messages. Prints messages/s for ``extract`` and for upserting the extracted
entities and co-occurrence relations into an in-memory KnowledgeGraph, and the time of
``find_entities_in_text`` against the resulting graph.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

from _common import SHARED_DATA, percentile, write_results

from mind_core.knowledge.extraction import extract
from mind_core.knowledge.graph import KnowledgeGraph
from mind_core.knowledge.model import CO_OCCURS_WITH
from mind_core.store.db import Database
from mind_core.store.schema import ensure_schema


def locomo_turns(path: Path) -> list[str]:
    turns: list[str] = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        for key, session in conversation.items():
            if not key.startswith("session_") or not isinstance(session, list):
                continue
            for turn in session:
                text = turn.get("text", "")
                if turn.get("blip_caption"):
                    text = f"{text} [image: {turn['blip_caption']}]"
                turns.append(f"{turn['speaker']}: {text}")
    return turns


LABELS = Path(__file__).resolve().parent / "data" / "extraction_labels.json"
OUT_OF_SAMPLE_LABELS = Path(__file__).resolve().parent / "data" / "extraction_labels_out_of_sample.json"
SAMPLES = {"in sample": LABELS, "out of sample": OUT_OF_SAMPLE_LABELS}
LABELLED_TYPES = ("person", "organization", "project")


def _folded(name: str) -> str:
    return " ".join(name.lower().split())


def labelled_scores(path: Path = LABELS) -> dict[str, dict[str, float]]:
    """Per type: labelled, predicted, correct, precision, recall (see the module docstring)."""
    counts = {t: {"labelled": 0, "predicted": 0, "correct": 0} for t in LABELLED_TYPES}
    for sample in json.loads(path.read_text(encoding="utf-8"))["texts"]:
        found = extract(sample["text"]).entities
        for entity_type in LABELLED_TYPES:
            gold = {_folded(name) for name in sample[entity_type]}
            predicted = {_folded(e.name) for e in found if e.type == entity_type}
            counts[entity_type]["labelled"] += len(gold)
            counts[entity_type]["predicted"] += len(predicted)
            counts[entity_type]["correct"] += len(gold & predicted)
    for figures in counts.values():
        figures["precision"] = round(figures["correct"] / figures["predicted"], 3) if figures["predicted"] else 0.0
        figures["recall"] = round(figures["correct"] / figures["labelled"], 3) if figures["labelled"] else 0.0
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--quality", action="store_true", help="precision/recall on the labelled sample")
    args = parser.parse_args()
    if args.quality:
        scores = {name: labelled_scores(path) for name, path in SAMPLES.items()}
        print(
            f"{'sample':14s} {'type':14s} {'labelled':>8s} {'predicted':>9s} {'correct':>7s} "
            f"{'precision':>9s} {'recall':>6s}"
        )
        for name, by_type in scores.items():
            for entity_type, f in by_type.items():
                print(
                    f"{name:14s} {entity_type:14s} {f['labelled']:8d} {f['predicted']:9d} {f['correct']:7d} "
                    f"{f['precision']:9.3f} {f['recall']:6.3f}"
                )
        write_results("extraction_quality", scores)
        return

    source = SHARED_DATA / "benchmarks" / "locomo" / "locomo10_conv1-3.json"
    if not source.is_file():
        raise SystemExit(f"LoCoMo data not found at {source}")
    turns = locomo_turns(source)
    messages = list(itertools.islice(itertools.cycle(turns), args.messages))
    chars = sum(len(m) for m in messages)

    extract(messages[0])  # warm-up outside the timing
    began = time.perf_counter()
    extractions = [extract(m) for m in messages]
    extract_seconds = time.perf_counter() - began
    entity_total = sum(len(e.entities) for e in extractions)
    relation_total = sum(len(e.relations) for e in extractions)

    db = Database(":memory:")
    ensure_schema(db, 8)
    kg = KnowledgeGraph(db)
    began = time.perf_counter()
    with db.transaction():
        for extraction in extractions:
            ids = [kg.upsert_entity(e.type, e.name, {"source": "cognify"})[0] for e in extraction.entities]
            for i, first in enumerate(ids):
                for second in ids[i + 1 :]:
                    kg.upsert_relation(first, second, CO_OCCURS_WITH, 0.8, {"source": "cognify"})
    kg_seconds = time.perf_counter() - began

    lookups: list[float] = []
    for message in messages[:1000]:
        started = time.perf_counter()
        kg.find_entities_in_text(message)
        lookups.append((time.perf_counter() - started) * 1000)

    figures = {
        "messages": len(messages),
        "distinct_turns": len(turns),
        "mean_chars": round(chars / len(messages), 1),
        "extract_messages_per_s": round(len(messages) / extract_seconds),
        "extract_chars_per_s": round(chars / extract_seconds),
        "entities_extracted": entity_total,
        "relations_extracted": relation_total,
        "kg_upsert_messages_per_s": round(len(messages) / kg_seconds),
        "graph_entities": kg.get_entity_count(),
        "find_entities_in_text_ms_p50": round(percentile(lookups, 50), 3),
        "find_entities_in_text_ms_p95": round(percentile(lookups, 95), 3),
    }
    for key, value in figures.items():
        print(f"{key:32s} {value}")
    write_results("extraction", figures)


if __name__ == "__main__":
    main()
