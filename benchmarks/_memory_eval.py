"""Evidence recall@k of a mind's search on conversational memory benchmarks (LoCoMo, REALTALK).

Shared by benchmarks/locomo.py and benchmarks/realtalk.py: each loader turns its data set into
``Conversation`` objects; everything after that is the same and is the path a user runs. The
conversations are written as a real export (``_chat_exports``: a ChatGPT export with the roles
``user`` and ``assistant``, or a Telegram export with the speakers' names), registered and
harvested as ``mind harvest`` does (scan, import, cognify, vectors, reconcile) into one mind per
conversation or one for all, and every question is asked of every mode; ``hybrid`` is the call
``mind recall`` makes (``recall_ids``).

Scoring is LoCoMo's Table 3 evidence recall@k: per question, the fraction of its evidence
dialog ids found among the top-k frames (a frame maps back to its turns through the harvest
provenance ``message_key``, the export's message id, and the ledger, which also lists turns whose text was
deduplicated into an existing frame). Beside it, session recall@k, the figure other memory
systems publish: 1 when a frame of one of the question's evidence sessions is in the top k.
Evidence is normalized by ``normalize_evidence`` (lists, ranges, glued ids, stray punctuation);
ids that name no turn are dropped and counted, and a question left without any evidence is
excluded from every figure and counted (it has nothing to recall; scoring it 1 would be free).
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _chat_exports import FORMATS, ExportKeys, write_export
from _common import PeakRSS, machine, write_results

from mind_core.embeddings.base import Embedder
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.recall import RecallParameters
from mind_core.retrieval import CombinedRetrieval
from mind_core.search.config import FUSIONS, SearchConfig
from mind_core.search.keywords import keyword_tokens

MODES = ("hybrid", "keyword", "vector", "grep")
SETTINGS = ("per-conversation", "one-mind")  # a mind per conversation, or all of them in one
BENCH_WORKSPACE = "bench"
DEFAULT_KS = (5, 10, 25, 50)
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_RANGE_DASH = re.compile(r"\s*[-\u2013]\s*")
_DIA_ID = r"D(\d+):(\d+)"
_ONE_ID = re.compile(_DIA_ID)
_RANGE = re.compile(rf"{_DIA_ID}-{_DIA_ID}")
_GLUED = re.compile(rf"{_DIA_ID}(?::?{_DIA_ID})*")
_TRAILING = ".,;:"


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

    def session_of(self) -> dict[str, str]:
        """Dialog id -> the key of the session that holds the turn (REALTALK's id prefixes do not
        always name the session, so this is read from the data, never from the id)."""
        return {t.dia_id: s.key for s in self.sessions for t in s.turns}

    def scored_questions(self) -> list[Question]:
        """The questions with evidence: the others have nothing to recall and are excluded."""
        return [q for q in self.questions if q.evidence]


def dia_position(dia_id: str) -> tuple[int, int] | None:
    """``"D12:3"`` -> (12, 3), the order ranges are expanded in; None for anything else."""
    match = _ONE_ID.fullmatch(dia_id)
    return (int(match.group(1)), int(match.group(2))) if match else None


def normalize_evidence(raw: Iterable[Any], known: set[str]) -> tuple[list[str], list[str]]:
    """(resolved ids in order without repeats, dropped pieces).

    The forms met in LoCoMo and REALTALK: several ids in one string (``"D8:6; D9:17"``,
    ``"D9:1 D4:4"``), a range (``"D12:3-D12:5"``: every known turn from the first to the last, in
    dialog-id order), ids run together (``"D13:45:D20:19"``), trailing punctuation
    (``"D13:4."``) and zero padding (``"D30:05"`` is ``D30:5``). A piece that names no known turn
    (``"D:11:26"``, ``"D"``, a turn the data set does not have) is dropped."""
    kept: list[str] = []
    dropped: list[str] = []
    positions: dict[tuple[int, int], str] | None = None

    def keep(dia_id: str) -> None:
        if dia_id not in kept:
            kept.append(dia_id)

    def resolve(dia_id: str) -> str | None:
        if dia_id in known:
            return dia_id
        position = dia_position(dia_id)
        canonical = f"D{position[0]}:{position[1]}" if position else None
        return canonical if canonical in known else None

    for value in raw or ():
        text = _RANGE_DASH.sub("-", str(value).strip())
        for piece in _EVIDENCE_SPLIT.split(text):
            piece = piece.strip(_TRAILING)
            if not piece:
                continue
            if span_ends := _RANGE.fullmatch(piece):
                if positions is None:
                    positions = {pos: k for k in known if (pos := dia_position(k))}
                a, b, c, d = (int(n) for n in span_ends.groups())
                first, last = (a, b), (c, d)
                span = [positions[pos] for pos in sorted(positions) if first <= pos <= last]
                for dia_id in span:
                    keep(dia_id)
                if not span:
                    dropped.append(piece)
            elif _GLUED.fullmatch(piece):
                for found in _ONE_ID.finditer(piece):
                    resolved = resolve(found.group(0))
                    if resolved:
                        keep(resolved)
                    else:
                        dropped.append(found.group(0))
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


# -- harvest and search ---------------------------------------------------------------------------
# a turn as scoring knows it in any mind: (conversation name, dialog id); several conversations
# share dialog ids ("D1:3"), so a mind holding all of them needs both
TurnKey = tuple[str, str]


def frame_turns(mind: Mind, keys: ExportKeys) -> dict[int, set[TurnKey]]:
    """Frame id -> the turns it stands for: its provenance message key (the export's message id),
    plus the turns the ledger lists as deduplicated into it."""
    mapping: dict[int, set[TurnKey]] = defaultdict(set)
    for row in mind.db.query(
        "SELECT id, json_extract(metadata, '$.provenance.message_key') FROM memory_frames"
    ):
        if row[1] in keys:
            mapping[row[0]].add(keys[row[1]])
    for row in mind.db.query("SELECT frame_id, item_key FROM harvest_ledger WHERE frame_id IS NOT NULL"):
        key = row[1].rsplit("/", 1)[-1]
        if key in keys:
            mapping[row[0]].add(keys[key])
    return mapping


def recall_ids(mind: Mind, question: str, limit: int) -> list[int]:
    """The frame ids ``mind recall QUESTION --limit N`` answers with, in its order: the same
    engine call (``CombinedRetrieval.recall``) with the CLI's defaults (profile balanced, scope
    all, no filter), the benchmark's mind as the workspace and no personal mind."""
    retrieval = CombinedRetrieval(mind, None, [], workspace_name=BENCH_WORKSPACE)
    result = retrieval.recall(RecallParameters(question, limit=limit))
    return [r.metadata["frame_id"] for r in result.merged()]


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


def recall(evidence: Sequence[Hashable], retrieved: Iterable[int], turns: dict[int, set[Any]]) -> float:
    """The fraction of the evidence turns among the retrieved frames' turns."""
    if not evidence:
        raise ValueError("a question without evidence has no recall; exclude it")
    found: set[Any] = set()
    for frame_id in retrieved:
        found |= turns.get(frame_id, set())
    return sum(1 for e in evidence if e in found) / len(evidence)


def session_recall(
    evidence: Sequence[Hashable],
    retrieved: Iterable[int],
    turns: dict[int, set[Any]],
    session_of: dict[Any, Any],
) -> float:
    """1.0 when a retrieved frame stands for a turn of one of the evidence sessions, else 0.0."""
    if not evidence:
        raise ValueError("a question without evidence has no recall; exclude it")
    wanted = {session_of[e] for e in evidence if e in session_of}
    for frame_id in retrieved:
        if any(session_of.get(d) in wanted for d in turns.get(frame_id, ())):
            return 1.0
    return 0.0


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
class HarvestedMind:
    """Conversations harvested into one open mind (one, or all of a data set), with what scoring
    needs. The search configuration can be swapped between questions: only the harvest is
    expensive. Turns are ``TurnKey`` (conversation, dialog id); sessions (conversation, key)."""

    conversations: list[Conversation]
    kind: str
    mind: Mind
    harvest_s: float
    stage_s: dict[str, float]
    dia_ids: dict[int, set[TurnKey]]
    session_of: dict[TurnKey, tuple[str, str]]
    contents: dict[int, str]

    @property
    def frames(self) -> int:
        return len(self.contents)

    def retrieve(self, mode: str, question: str, k: int) -> list[int]:
        search = self.mind.search
        if mode == "hybrid":
            return recall_ids(self.mind, question, k)
        if mode == "keyword":
            return search.keyword_search(question, k)
        if mode == "vector":
            return search.vector_search(question, k)
        if mode == "grep":
            return grep_search(self.contents, question, k)
        raise ValueError(f"unknown mode {mode!r}")

    @staticmethod
    def evidence(conversation: Conversation, question: Question) -> list[TurnKey]:
        return [(conversation.name, dia_id) for dia_id in question.evidence]

    def score(
        self, conversation: Conversation, question: Question, mode: str, ks: Sequence[int]
    ) -> dict[str, dict[int, float]]:
        """Evidence and session recall at each k for one question in one mode. Hybrid recalls
        once per k (its relevance pool depends on the limit); a lane searches once at the deepest k."""
        ranked: dict[int, list[int]]
        if mode == "hybrid":
            ranked = {k: self.retrieve(mode, question.question, k) for k in ks}
        else:
            deepest = self.retrieve(mode, question.question, max(ks))
            ranked = {k: deepest[:k] for k in ks}
        evidence = self.evidence(conversation, question)
        return {
            "recall": {k: recall(evidence, ids, self.dia_ids) for k, ids in ranked.items()},
            "session_recall": {
                k: session_recall(evidence, ids, self.dia_ids, self.session_of) for k, ids in ranked.items()
            },
        }


@contextmanager
def harvested(
    conversations: Conversation | Sequence[Conversation],
    embedder: Embedder,
    workdir: Path,
    config: SearchConfig,
    reuse: bool = False,
    kind: str = "chatgpt",
    name: str | None = None,
) -> Iterator[HarvestedMind]:
    """Write the conversations as one export of ``kind`` (``_chat_exports``), register it and
    harvest it into a fresh mind as ``mind harvest`` does (``register_source`` then ``harvest``:
    scan, import, cognify, vectors, reconcile), and keep the mind open. ``reuse``: a mind this
    function harvested into ``workdir`` before (same name, format and model) is opened as it is."""
    if isinstance(conversations, Conversation):
        conversations = [conversations]
    conversations = list(conversations)
    name = name or (conversations[0].name if len(conversations) == 1 else "all")
    path = workdir / f"{name}-{kind}.mind"
    done = workdir / f"{name}-{kind}.harvested"
    model = f"{embedder.model_name} {getattr(embedder, 'backend', embedder.provider)}"
    if not reuse or not done.is_file() or done.read_text(encoding="utf-8") != model:
        for stale in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), done):
            stale.unlink(missing_ok=True)
    export, keys = write_export(conversations, kind, workdir / f"{name}-{kind}")
    mind = Mind.open(path, embedder=embedder)
    try:
        stage_seconds: dict[str, float] = {}
        harvest_s = 0.0
        if not done.is_file():
            register_source(mind, kind, export, "bench")
            began = time.perf_counter()
            report = harvest(mind, "bench")
            harvest_s = time.perf_counter() - began
            if report.imported is None or report.imported.error_count:
                errors = report.imported.errors if report.imported else "nothing imported"
                raise RuntimeError(f"{name}: harvest reported errors: {errors}")
            stage_seconds = dict(report.stage_seconds)
            if reuse:
                done.write_text(model, encoding="utf-8")
        mind.search.config = config
        mind.search.vectors.embedder = QueryVectorCache(embedder)
        yield HarvestedMind(
            conversations,
            kind,
            mind,
            harvest_s,
            stage_seconds,
            frame_turns(mind, keys),
            {
                (c.name, dia_id): (c.name, session)
                for c in conversations
                for dia_id, session in c.session_of().items()
            },
            {r[0]: r[1].lower() for r in mind.db.query("SELECT id, content FROM memory_frames")},
        )
    finally:
        mind.close()


@dataclass
class ConversationRun:
    name: str
    turns: int
    frames: int
    harvest_s: float
    stage_s: dict[str, float]
    per_question: list[dict[str, Any]]
    excluded: list[dict[str, Any]]


def run_mind(
    conversations: Sequence[Conversation],
    embedder: Embedder,
    modes: Sequence[str],
    ks: Sequence[int],
    workdir: Path,
    config: SearchConfig,
    kind: str = "chatgpt",
    reuse: bool = False,
) -> ConversationRun:
    """Harvest the conversations into one fresh mind (``reuse``: see ``harvested``) and ask every
    question with evidence in every mode; the questions without evidence are listed, not asked."""
    with harvested(conversations, embedder, workdir, config, reuse, kind) as run:
        per_question = []
        excluded = []
        for conversation in conversations:
            for number, question in enumerate(conversation.questions):
                row = {
                    "conversation": conversation.name,
                    "index": number,
                    "question": question.question,
                    "category": question.category,
                    "evidence": question.evidence,
                    "raw_evidence": question.raw_evidence,
                    "dropped": question.dropped,
                }
                if not question.evidence:
                    excluded.append(row)
                    continue
                scores = {mode: run.score(conversation, question, mode, ks) for mode in modes}
                row["recall"] = {mode: scores[mode]["recall"] for mode in modes}
                row["session_recall"] = {mode: scores[mode]["session_recall"] for mode in modes}
                per_question.append(row)
        return ConversationRun(
            "all" if len(conversations) > 1 else conversations[0].name,
            sum(c.turn_count for c in conversations),
            run.frames,
            run.harvest_s,
            run.stage_s,
            per_question,
            excluded,
        )


# -- aggregation and report -----------------------------------------------------------------------
def summarize(per_question: list[dict[str, Any]], modes: Sequence[str], ks: Sequence[int]) -> dict[str, Any]:
    """Mean evidence and session recall (in percent) per mode and k, overall and per category,
    over the scored questions (those with evidence)."""

    def mean_table(rows: list[dict[str, Any]], figure: str) -> dict[str, dict[str, float]]:
        return {
            mode: {str(k): 100 * statistics.fmean(r[figure][mode][k] for r in rows) for k in ks}
            for mode in modes
        }

    by_category: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in per_question:
        by_category[row["category"]].append(row)
    return {
        "questions": len(per_question),
        "overall": mean_table(per_question, "recall"),
        "overall_session": mean_table(per_question, "session_recall"),
        "by_category": {
            category: {
                "questions": len(rows),
                **mean_table(rows, "recall"),
                "session": mean_table(rows, "session_recall"),
            }
            for category, rows in sorted(by_category.items())
        },
    }


def format_table(
    summary: dict[str, Any], modes: Sequence[str], ks: Sequence[int], categories: dict[str, str]
) -> str:
    def row(label: str, table: dict[str, float]) -> str:
        return f"  {label:22}" + "".join(f"{table[str(k)]:8.1f}" for k in ks)

    lines = []
    header = f"{'':24}" + "".join(f"{f'R@{k}':>8}" for k in ks)
    lines.append(f"evidence recall, overall ({summary['questions']} questions)")
    lines.append(header)
    lines.extend(row(mode, summary["overall"][mode]) for mode in modes)
    for category, table in summary["by_category"].items():
        label = categories.get(category, category)
        lines.append(f"category {category} {label} ({table['questions']} questions)")
        lines.extend(row(mode, table[mode]) for mode in modes)
    lines.append("session recall (a frame of an evidence session in the top k), overall")
    lines.append(header)
    lines.extend(row(mode, summary["overall_session"][mode]) for mode in modes)
    for category, table in summary["by_category"].items():
        label = f"{categories.get(category, category)}, {modes[0]}"
        lines.append(row(label[:22], table["session"][modes[0]]))
    return "\n".join(lines)


def hybrid_wins(summary: dict[str, Any], modes: Sequence[str], ks: Sequence[int]) -> dict[str, bool]:
    """Per k: does hybrid beat every single lane that was run (strictly)?"""
    overall = summary["overall"]
    if "hybrid" not in overall:
        return {}
    others = [m for m in modes if m != "hybrid"]
    return {str(k): all(overall["hybrid"][str(k)] > overall[m][str(k)] for m in others) for k in ks}


def run_from_args(
    args: argparse.Namespace,
    data_label: str,
    conversations: list[Conversation],
    embedder: Embedder,
    categories: dict[str, str],
) -> dict[str, Any]:
    """``run_benchmark`` with the options every memory benchmark's command line shares (name,
    modes, k, search constants, export format, setting, minds), the model warmed up first."""
    embedder.embed("warm up the model")
    return run_benchmark(
        args.name,
        data_label,
        conversations,
        embedder,
        args.mode,
        args.k,
        categories,
        search_config(args),
        args.format,
        args.setting,
        minds=args.minds,
    )


def run_benchmark(
    name: str,
    data_label: str,
    conversations: list[Conversation],
    embedder: Embedder,
    modes: Sequence[str],
    ks: Sequence[int],
    categories: dict[str, str],
    config: SearchConfig,
    kind: str = "chatgpt",
    setting: str = "per-conversation",
    extra: dict[str, Any] | None = None,
    minds: Path | None = None,
) -> dict[str, Any]:
    """Run every conversation (each in its own mind, or all in one: ``setting``), exported as
    ``kind``; print the table, write benchmarks/results/<name>.json. ``minds``: keep the minds
    there and reuse them (``select_constants.py --minds`` keeps the same ones)."""
    ks = sorted(set(ks))
    runs: list[ConversationRun] = []
    groups = [[c] for c in conversations] if setting == "per-conversation" else [conversations]
    with tempfile.TemporaryDirectory() as tmp, PeakRSS() as memory:
        for group in groups:
            run = run_mind(group, embedder, modes, ks, minds or Path(tmp), config, kind, minds is not None)
            print(
                f"{run.name}: {run.turns} turns -> {run.frames} frames harvested from a {kind} export "
                f"in {run.harvest_s:.1f} s, {sum(len(c.questions) for c in group)} questions",
                flush=True,
            )
            runs.append(run)
    per_question = [row for run in runs for row in run.per_question]
    excluded = [row for run in runs for row in run.excluded]
    summary = summarize(per_question, modes, ks)
    dropped = sum(len(q.dropped) for c in conversations for q in c.questions)
    evidence_total = sum(len(q.evidence) + len(q.dropped) for c in conversations for q in c.questions)
    print()
    print(f"{name}: evidence and session recall@k (%) on {data_label}, {machine()}")
    print(f"path: {kind} export, `mind harvest`, `mind recall` ({setting}: {describe_setting(setting)})")
    print(f"search: {describe_config(config)}")
    print(format_table(summary, modes, ks, categories))
    wins = hybrid_wins(summary, modes, ks)
    if wins:
        print(
            "hybrid beats every single lane: "
            + ", ".join(f"k={k} {'yes' if ok else 'NO'}" for k, ok in wins.items())
        )
    print(f"evidence: {evidence_total} ids and pieces after parsing, {dropped} dropped (no such turn)")
    print(f"excluded: {len(excluded)} questions without resolvable evidence")
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
        "export_format": kind,
        "setting": setting,
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
        "questions_excluded": len(excluded),
        "excluded": excluded,
        "peak_rss_mb": memory.peak / 2**20,
        "per_question": per_question,
        **(extra or {}),
    }
    write_results(name, result)
    return result


def describe_setting(setting: str) -> str:
    return "a mind per conversation" if setting == "per-conversation" else "all conversations in one mind"


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


def add_path_arguments(parser: argparse.ArgumentParser) -> None:
    """The export format the conversations are written in and how they are split into minds."""
    parser.add_argument(
        "--format", choices=FORMATS, default="chatgpt", help="the export the data is written as"
    )
    parser.add_argument("--setting", choices=SETTINGS, default="per-conversation")
    parser.add_argument(
        "--minds",
        type=Path,
        help="keep the harvested minds in this folder and reuse them on the next run (same data and model)",
    )


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    """Options that change the search configuration from the product default (for ablations)."""
    add_path_arguments(parser)
    default = SearchConfig()
    parser.add_argument("--fusion", choices=FUSIONS, default=default.fusion)
    parser.add_argument("--vector-weight", type=float, default=default.vector_weight)
    parser.add_argument("--lane-depth", type=int, default=default.lane_depth)
    parser.add_argument("--context-window", type=int, default=default.context_window)
    parser.add_argument("--context-weight", type=float, default=default.context_weight)
    parser.add_argument(
        "--keyword-split-frames",
        type=int,
        default=default.keyword_split_frames,
        help="frames from which the keyword lane leaves out frames holding only common words (0: always)",
    )
    parser.add_argument(
        "--prescan-min-vectors",
        type=int,
        default=default.prescan_min_vectors,
        help="vectors from which the vector lane pre-scans quantized vectors (0: always)",
    )


def search_config(args: argparse.Namespace) -> SearchConfig:
    return SearchConfig(
        fusion=args.fusion,
        vector_weight=args.vector_weight,
        lane_depth=args.lane_depth,
        context_window=args.context_window,
        context_weight=args.context_weight,
        keyword_split_frames=args.keyword_split_frames,
        prescan_min_vectors=args.prescan_min_vectors,
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
