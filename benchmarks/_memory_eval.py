"""Evidence recall@k of a mind's search on conversational memory benchmarks (LoCoMo, REALTALK).

Shared by benchmarks/locomo.py and benchmarks/realtalk.py: each loader turns its data set into
``Conversation`` objects; everything after that is the same. A conversation becomes a ChatGPT
export (one conversation per session, one message per dialog turn, the turn's ``dia_id`` as the
message node id, the speaker's name as the message author role so frames read
``[<title>] <Speaker>: <text>``), is harvested into a fresh mind with the real harvest path
(scan, import, cognify, vectors, reconcile), and every question is asked of every mode.

Scoring is LoCoMo's Table 3 evidence recall@k: per question, the fraction of its evidence
dialog ids found among the top-k frames (a frame maps back to its dialog ids through the
harvest provenance ``message_key`` and the ledger, which also lists turns whose text was
deduplicated into an existing frame); a question with no evidence counts as 1. Evidence ids are
normalized by splitting on ``[;\\s]+``; ids that name no turn are dropped and counted.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import PeakRSS, machine, write_results

from mind_core.embeddings.base import Embedder
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.search import FUSIONS, SearchConfig, keyword_tokens

MODES = ("hybrid", "keyword", "vector", "grep")
DEFAULT_KS = (5, 10, 25, 50)
_EVIDENCE_SPLIT = re.compile(r"[;\s]+")


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str
    epoch: float


@dataclass
class Session:
    key: str
    title: str
    turns: list[Turn]


@dataclass
class Question:
    question: str
    category: str
    evidence: list[str]
    raw_evidence: list[Any]
    dropped: list[str]


@dataclass
class Conversation:
    name: str
    sessions: list[Session]
    questions: list[Question] = field(default_factory=list)

    @property
    def turn_count(self) -> int:
        return sum(len(s.turns) for s in self.sessions)

    def dia_ids(self) -> set[str]:
        return {t.dia_id for s in self.sessions for t in s.turns}


def normalize_evidence(raw: Iterable[Any], known: set[str]) -> tuple[list[str], list[str]]:
    """(resolved ids in order without repeats, dropped pieces): ``"D8:6; D9:17"`` is two ids,
    ``"D:11:26"`` or ``"D10:19"`` (no such turn) is dropped."""
    kept: list[str] = []
    dropped: list[str] = []
    for value in raw or ():
        for piece in _EVIDENCE_SPLIT.split(str(value).strip()):
            if not piece:
                continue
            if piece in known:
                if piece not in kept:
                    kept.append(piece)
            else:
                dropped.append(piece)
    return kept, dropped


def make_questions(qa: Iterable[dict[str, Any]], known: set[str]) -> list[Question]:
    questions = []
    for item in qa:
        raw = item.get("evidence") or []
        evidence, dropped = normalize_evidence(raw, known)
        questions.append(
            Question(str(item["question"]), str(item.get("category", "?")), evidence, list(raw), dropped)
        )
    return questions


def image_text(text: str, caption: Any) -> str:
    """A turn's text with its shared image described by its caption (images are not shipped)."""
    text = (text or "").strip()
    if isinstance(caption, str) and caption.strip():
        return f"{text} [image: {caption.strip()}]".strip()
    return text


# -- the chat export ----------------------------------------------------------------------------
def chatgpt_session(conversation_id: str, session: Session) -> dict[str, Any]:
    """One session as a linear ChatGPT conversation: node id = dia_id, author role = speaker."""
    mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    for turn in session.turns:
        mapping[turn.dia_id] = {
            "id": turn.dia_id,
            "parent": parent,
            "children": [],
            "message": {
                "id": turn.dia_id,
                "author": {"role": turn.speaker, "name": turn.speaker},
                "create_time": turn.epoch,
                "content": {"content_type": "text", "parts": [turn.text]},
                "metadata": {},
            },
        }
        mapping[parent]["children"].append(turn.dia_id)
        parent = turn.dia_id
    return {
        "id": conversation_id,
        "title": session.title,
        "create_time": session.turns[0].epoch if session.turns else None,
        "current_node": parent,
        "mapping": mapping,
    }


def write_export(conversation: Conversation, path: Path) -> Path:
    data = [chatgpt_session(f"{conversation.name}-{s.key}", s) for s in conversation.sessions if s.turns]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


# -- harvest and search ---------------------------------------------------------------------------
def frame_dia_ids(mind: Mind) -> dict[int, set[str]]:
    """Frame id -> the dialog ids it stands for (provenance message_key, plus ledger duplicates)."""
    mapping: dict[int, set[str]] = defaultdict(set)
    for row in mind.db.query(
        "SELECT id, json_extract(metadata, '$.provenance.message_key') FROM memory_frames"
    ):
        if row[1]:
            mapping[row[0]].add(row[1])
    for row in mind.db.query("SELECT frame_id, item_key FROM harvest_ledger WHERE frame_id IS NOT NULL"):
        mapping[row[0]].add(row[1].rsplit("/", 1)[-1])
    return mapping


def grep_search(contents: dict[int, str], query: str, limit: int) -> list[int]:
    """The plain-text baseline: frames containing the query's words as substrings (case folded),
    most distinct words first, then in frame order, as ``grep -i -e w1 -e w2`` plus a count."""
    words = [w.lower() for w in keyword_tokens(query)]
    if not words:
        return []
    scored = []
    for frame_id, text in contents.items():
        hits = sum(1 for w in words if w in text)
        if hits:
            scored.append((-hits, frame_id))
    scored.sort()
    return [frame_id for _, frame_id in scored[:limit]]


def recall(evidence: Sequence[str], retrieved: Iterable[int], dia_ids: dict[int, set[str]]) -> float:
    if not evidence:
        return 1.0
    found: set[str] = set()
    for frame_id in retrieved:
        found |= dia_ids.get(frame_id, set())
    return sum(1 for e in evidence if e in found) / len(evidence)


class QueryVectorCache:
    """The harvest's embedder, remembering query vectors: each question is searched once per
    mode and k, and re-embedding the same string would only multiply the run time."""

    def __init__(self, embedder: Embedder) -> None:
        self.inner = embedder
        self.provider = embedder.provider
        self.model_name = embedder.model_name
        self.dimensions = embedder.dimensions
        self.degraded = getattr(embedder, "degraded", False)
        self.vectors: dict[str, Any] = {}

    def embed(self, text: str) -> Any:
        if text not in self.vectors:
            self.vectors[text] = self.inner.embed(text)
        return self.vectors[text]

    def embed_batch(self, texts: Sequence[str]) -> Any:
        return self.inner.embed_batch(texts)


@dataclass
class ConversationRun:
    name: str
    turns: int
    frames: int
    harvest_s: float
    stage_s: dict[str, float]
    per_question: list[dict[str, Any]]


def run_conversation(
    conversation: Conversation,
    embedder: Embedder,
    modes: Sequence[str],
    ks: Sequence[int],
    workdir: Path,
    config: SearchConfig,
) -> ConversationRun:
    """Harvest one conversation into a fresh mind and ask all its questions in every mode."""
    export = write_export(conversation, workdir / conversation.name / "conversations.json")
    mind = Mind.open(workdir / f"{conversation.name}.mind", embedder=embedder)
    try:
        register_source(mind, "chatgpt", export, "bench")
        began = time.perf_counter()
        report = harvest(mind, "bench")
        harvest_s = time.perf_counter() - began
        if report.imported is None or report.imported.error_count:
            errors = report.imported.errors if report.imported else "nothing imported"
            raise RuntimeError(f"{conversation.name}: harvest reported errors: {errors}")
        search = mind.search
        search.config = config
        search.vectors.embedder = QueryVectorCache(embedder)
        dia_ids = frame_dia_ids(mind)
        contents = {r[0]: r[1].lower() for r in mind.db.query("SELECT id, content FROM memory_frames")}
        deepest = max(ks)
        lanes: dict[str, Callable[[str, int], list[int]]] = {
            "keyword": lambda q, k: search.keyword_search(q, k),
            "vector": lambda q, k: search.vector_search(q, k),
            "grep": lambda q, k: grep_search(contents, q, k),
        }
        per_question = []
        for number, question in enumerate(conversation.questions):
            scores: dict[str, dict[int, float]] = {}
            for mode in modes:
                if mode == "hybrid":  # fusion depth depends on the limit: one search per k
                    scores[mode] = {}
                    for k in ks:
                        ids = [r.frame.id for r in search.search(question.question, limit=k)]
                        scores[mode][k] = recall(question.evidence, ids, dia_ids)
                else:
                    ids = lanes[mode](question.question, deepest)
                    scores[mode] = {k: recall(question.evidence, ids[:k], dia_ids) for k in ks}
            per_question.append(
                {
                    "conversation": conversation.name,
                    "index": number,
                    "question": question.question,
                    "category": question.category,
                    "evidence": question.evidence,
                    "dropped": question.dropped,
                    "recall": scores,
                }
            )
        return ConversationRun(
            conversation.name,
            conversation.turn_count,
            mind.db.scalar("SELECT COUNT(*) FROM memory_frames"),
            harvest_s,
            dict(report.stage_seconds),
            per_question,
        )
    finally:
        mind.close()


# -- aggregation and report -----------------------------------------------------------------------
def summarize(per_question: list[dict[str, Any]], modes: Sequence[str], ks: Sequence[int]) -> dict[str, Any]:
    """Mean recall (in percent) per mode and k, overall and per category."""

    def mean_table(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
        return {
            mode: {str(k): 100 * statistics.fmean(r["recall"][mode][k] for r in rows) for k in ks}
            for mode in modes
        }

    by_category: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in per_question:
        by_category[row["category"]].append(row)
    return {
        "questions": len(per_question),
        "overall": mean_table(per_question),
        "by_category": {
            category: {"questions": len(rows), **mean_table(rows)}
            for category, rows in sorted(by_category.items())
        },
    }


def format_table(
    summary: dict[str, Any], modes: Sequence[str], ks: Sequence[int], categories: dict[str, str]
) -> str:
    lines = []
    header = f"{'':24}" + "".join(f"{f'R@{k}':>8}" for k in ks)
    lines.append(f"overall ({summary['questions']} questions)")
    lines.append(header)
    for mode in modes:
        lines.append(f"  {mode:22}" + "".join(f"{summary['overall'][mode][str(k)]:8.1f}" for k in ks))
    for category, table in summary["by_category"].items():
        label = categories.get(category, category)
        lines.append(f"category {category} {label} ({table['questions']} questions)")
        for mode in modes:
            lines.append(f"  {mode:22}" + "".join(f"{table[mode][str(k)]:8.1f}" for k in ks))
    return "\n".join(lines)


def hybrid_wins(summary: dict[str, Any], modes: Sequence[str], ks: Sequence[int]) -> dict[str, bool]:
    """Per k: does hybrid beat every single lane that was run (strictly)?"""
    overall = summary["overall"]
    if "hybrid" not in overall:
        return {}
    others = [m for m in modes if m != "hybrid"]
    return {str(k): all(overall["hybrid"][str(k)] > overall[m][str(k)] for m in others) for k in ks}


def run_benchmark(
    name: str,
    data_label: str,
    conversations: list[Conversation],
    embedder: Embedder,
    modes: Sequence[str],
    ks: Sequence[int],
    categories: dict[str, str],
    config: SearchConfig,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run every conversation, print the table, write benchmarks/results/<name>.json."""
    ks = sorted(set(ks))
    runs: list[ConversationRun] = []
    with tempfile.TemporaryDirectory() as tmp, PeakRSS() as memory:
        for conversation in conversations:
            run = run_conversation(conversation, embedder, modes, ks, Path(tmp), config)
            print(
                f"{conversation.name}: {run.turns} turns -> {run.frames} frames harvested in {run.harvest_s:.1f} s, "
                f"{len(conversation.questions)} questions",
                flush=True,
            )
            runs.append(run)
    per_question = [row for run in runs for row in run.per_question]
    summary = summarize(per_question, modes, ks)
    dropped = sum(len(q.dropped) for c in conversations for q in c.questions)
    evidence_total = sum(len(q.evidence) + len(q.dropped) for c in conversations for q in c.questions)
    no_evidence = sum(1 for c in conversations for q in c.questions if not q.evidence)
    print()
    print(f"{name}: evidence recall@k (%) on {data_label}, {machine()}")
    print(f"search: {describe_config(config)}")
    print(format_table(summary, modes, ks, categories))
    wins = hybrid_wins(summary, modes, ks)
    if wins:
        print(
            "hybrid beats every single lane: "
            + ", ".join(f"k={k} {'yes' if ok else 'NO'}" for k, ok in wins.items())
        )
    print(
        f"evidence ids: {evidence_total} pieces after splitting, {dropped} dropped (no such turn); "
        f"{no_evidence} questions without resolvable evidence (count as 1)"
    )
    result = {
        "data": data_label,
        "modes": list(modes),
        "ks": list(ks),
        "embedder": {
            "provider": embedder.provider,
            "model": embedder.model_name,
            "dimensions": embedder.dimensions,
        },
        "search_config": asdict(config),
        "conversations": [
            {
                "name": r.name,
                "turns": r.turns,
                "frames": r.frames,
                "harvest_s": r.harvest_s,
                "stage_s": r.stage_s,
            }
            for r in runs
        ],
        "summary": summary,
        "hybrid_beats_every_lane": wins,
        "evidence_pieces": evidence_total,
        "evidence_dropped": dropped,
        "dropped_ids": sorted({d for c in conversations for q in c.questions for d in q.dropped}),
        "questions_without_evidence": no_evidence,
        "peak_rss_mb": memory.peak / 2**20,
        "per_question": per_question,
        **(extra or {}),
    }
    write_results(name, result)
    return result


def describe_config(config: SearchConfig) -> str:
    if config.fusion == "rrf":
        return "RRF (K = 60) over each lane's top 2 x limit (the original)"
    context = (
        f"session context (noisy-OR with {config.context_weight:g} x the best neighbour within "
        f"{config.context_window} turns)"
        if config.context_window and config.context_weight
        else "no session context"
    )
    return f"convex fusion, vector weight {config.vector_weight:g}, {config.lane_depth} candidates per lane, {context}"


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    """Options that change the search configuration from the product default (for ablations)."""
    default = SearchConfig()
    parser.add_argument("--fusion", choices=FUSIONS, default=default.fusion)
    parser.add_argument("--vector-weight", type=float, default=default.vector_weight)
    parser.add_argument("--lane-depth", type=int, default=default.lane_depth)
    parser.add_argument("--context-window", type=int, default=default.context_window)
    parser.add_argument("--context-weight", type=float, default=default.context_weight)


def search_config(args: argparse.Namespace) -> SearchConfig:
    return SearchConfig(
        fusion=args.fusion,
        vector_weight=args.vector_weight,
        lane_depth=args.lane_depth,
        context_window=args.context_window,
        context_weight=args.context_weight,
    )


def parse_epoch(text: str, formats: Sequence[str]) -> float:
    """A naive date string in one of ``formats``, read as UTC, in epoch seconds."""
    cleaned = " ".join(text.split())
    for fmt in formats:
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    raise ValueError(f"unrecognized date {text!r} (expected one of {', '.join(formats)})")
