"""Leave-one-conversation-out choice of the search constants, on LoCoMo and REALTALK (issue #18).

The fusion constants (context weight, vector weight, lane depth, context window, convex or RRF)
were picked after seeing recall on the same conversations they are reported on, so the headline
figure is in-sample. Here every conversation is held out in turn: the setting with the best
hybrid evidence recall@k on the other conversations is chosen and scored on the held-out one.
The honest figure is the mean over the folds; it is printed beside the in-sample best and the
current defaults (``SearchConfig()``), per data set; with both data sets, also chosen on both
together (one default serves both: each fold chooses on the other five conversations).

Each conversation is written as a real export (``--format chatgpt``: roles ``user`` / ``assistant``;
``telegram``: the speakers' names) and harvested once, into its own mind or with all the others
(``--setting per-conversation`` / ``one-mind``; the real harvest path and model, as locomo.py), and
asked as ``mind recall`` asks (``_memory_eval.recall_ids``); the search
constants need no re-harvest, so every setting of the grid is asked of the same mind, and each
question is embedded once. Questions without resolvable evidence are excluded and counted.

    .venv/bin/python benchmarks/select_constants.py [--data locomo realtalk] [--k 10]
        [--format chatgpt|telegram] [--setting per-conversation|one-mind]
        [--context-weights 0.2 0.4 0.6] [--vector-weights 0.3 0.5 0.7] [--lane-depths 100]
        [--context-windows 2] [--time-weights ...] [--speaker-weights ...] [--drop-speaker-names 0 1]
        [--topic-blend 0 1] [--addressed-names 0 1] [--addressed-scopes auto session session-exclusive source]
        [--addressed-unnamed 0 1]
        [--without-off]
        [--relevance-shares ...] [--session-caps ...] [--question-parts 0 1] [--role-names-out-of-graph 0 1]
        [--session-weights ...] [--session-aggregates sum max] [--session-diversity ...] [--session-firsts ...]
        [--turn-context off max instead blend0.3 ...] [--embed-prefix full no-speaker no-title none]
        [--embed-backend onnx-int8|onnx|torch] [--minds DIR]
        [--conversations NAME ...] [--questions N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from itertools import product
from pathlib import Path
from typing import Any

import _embed_prefix
import _turn_context
import locomo
import realtalk
from _common import machine, write_results
from _memory_eval import (
    Conversation,
    HarvestedMind,
    add_path_arguments,
    describe_setting,
    harvested,
    recall,
    session_recall,
)
from _session_rerank import (
    POOL,
    SESSION_AGGREGATES,
    asks_for_several,
    by_session_strength,
    diverse_sessions,
    sessions_then_turns,
    spread_sessions,
)

from mind_core.embeddings import InprocessEmbedder
from mind_core.embeddings.base import Embedder
from mind_core.embeddings.inprocess import BACKENDS
from mind_core.search.config import ADDRESSED_SCOPES, SearchConfig


@dataclass(frozen=True)
class Setting(SearchConfig):
    """A search configuration plus the session re-rankings of the result pool that were measured
    and not adopted (``_session_rerank``): the search runs with the ``SearchConfig`` part, the
    benchmark re-ranks its first ``POOL`` results. 0 = off."""

    session_cap: int = 0
    session_weight: float = 0.0
    session_aggregate: str = "sum"
    session_diversity: float = 0.0
    session_firsts: int = 0
    turn_context_mode: str = "off"
    turn_context_weight: float = 0.0
    turn_context_words: int = _turn_context.CONTEXT_WORDS
    turn_context_short: int = 0
    embed_prefix: str = "full"

    @property
    def turn_context(self) -> float:
        """For the ablation: 1 when the vector lane reads the turns' context vectors (``_turn_context``)."""
        return 0.0 if self.turn_context_mode == "off" else 1.0

    @property
    def prefix_changed(self) -> float:
        """For the ablation: 1 when the vector lane reads frames re-embedded without part of their
        prefix (``_embed_prefix``)."""
        return 0.0 if self.embed_prefix == "full" else 1.0

    @property
    def addressed_per_session(self) -> float:
        """For the ablation: 1 names stand for a role per session (others left alone), 0 per
        source or session-exclusive (the "off" side takes the better of the two), -1 not at all
        (in neither side)."""
        if not self.addressed_names:
            return -1.0
        return 1.0 if self.addressed_scope == "session" else 0.0

    @property
    def reranks(self) -> bool:
        return self.session_cap > 0 or self.session_weight > 0 or self.session_diversity > 0 or self.session_firsts > 0

    def ranked_ids(self, run: HarvestedMind, question: str, k: int) -> list[int]:
        """The frame ids of the top k: the product's search, then the session re-ranking."""
        if not self.reranks:
            return run.retrieve("hybrid", question, k)
        results = run.mind.search.search(question, limit=POOL)
        if (self.session_diversity > 0 or self.session_firsts > 0) and not asks_for_several(question):
            return run.retrieve("hybrid", question, k)
        if self.session_diversity > 0:
            results = diverse_sessions(results, self.session_diversity, k)
        if self.session_firsts > 0:
            results = sessions_then_turns(results, self.session_firsts, k)
        if self.session_weight > 0:
            results = by_session_strength(results, self.session_weight, self.session_aggregate)
        if self.session_cap > 0:
            results = spread_sessions(results, self.session_cap)
        return [result.frame.id for result in results[:k]]


DEFAULT = Setting()


@dataclass(frozen=True)
class Scored:
    """One question's hybrid recall at k under one setting."""

    conversation: str
    category: str
    recall: float
    session_recall: float


def label(config: Setting) -> str:
    if config.fusion == "rrf":
        return "RRF K=60 (original)"
    methods = "".join(
        f", {name} {value:g}"
        for name, value in (
            ("time", config.time_weight),
            ("speaker", config.speaker_weight),
        )
        if value
    )
    if config.time_weight:
        methods += f" (scale {config.time_scale_days:g} d)"
    if not config.drop_speaker_names:
        methods += ", names in lanes"
    if not config.addressed_names:
        methods += ", no addressed names"
    elif config.addressed_scope != DEFAULT.addressed_scope:
        methods += f", addressed per {config.addressed_scope}"
    if config.addressed_unnamed != DEFAULT.addressed_unnamed:
        methods += f", unnamed role {'on' if config.addressed_unnamed else 'off'}"
    if not config.topic_blend:
        methods += ", no topic blend"
    if config.relevance_share != 1.0:
        methods += f", relevance {config.relevance_share:g}"
    if config.session_cap:
        methods += f", session cap {config.session_cap}"
    if not config.question_parts:
        methods += ", no question parts"
    if not config.role_names_out_of_graph:
        methods += ", role names in the graph"
    if config.session_diversity:
        methods += f", session diversity {config.session_diversity:g}"
    if config.session_firsts:
        methods += f", sessions first {config.session_firsts}"
    if config.session_weight:
        methods += f", session {config.session_aggregate} {config.session_weight:g}"
    if config.turn_context_mode != "off":
        weight = f" {config.turn_context_weight:g}" if config.turn_context_mode == "blend" else ""
        methods += f", turn context {config.turn_context_mode}{weight} ({config.turn_context_words} words)"
        if config.turn_context_short:
            methods += f" for turns of <= {config.turn_context_short} words"
    if config.embed_prefix != "full":
        methods += f", embedded prefix {config.embed_prefix}"
    return (
        f"context {config.context_weight:g} x {config.context_window}, vector {config.vector_weight:g}, "
        f"depth {config.lane_depth}{methods}"
    )


def grid(args: argparse.Namespace) -> list[Setting]:
    """The convex grid, crossed with the methods of issue #18 (time boost and speaker preference
    weights, 0 = off), plus the two ablations as candidates (no session context at the default
    vector weight, and the original RRF); the defaults first, so ties keep them."""
    settings = [DEFAULT]
    sessions = [(0.0, DEFAULT.session_aggregate)] + [
        (weight, aggregate) for weight in args.session_weights for aggregate in args.session_aggregates
    ]
    for (
        context_weight,
        vector_weight,
        depth,
        window,
        time,
        speaker,
        scale,
        share,
        cap,
        (session_weight, aggregate),
        drop_names,
        blend,
        addressed,
        addressed_scope,
        parts,
        (spread, spread_value),
        unnamed,
        out_of_graph,
        (turn_mode, turn_weight, turn_words, turn_short),
        embed_prefix,
    ) in product(
        args.context_weights,
        args.vector_weights,
        args.lane_depths,
        args.context_windows,
        args.time_weights if args.without_off else [0.0, *args.time_weights],
        args.speaker_weights if args.without_off else [0.0, *args.speaker_weights],
        args.time_scales,
        args.relevance_shares,
        [0, *args.session_caps],
        sessions,
        args.drop_speaker_names,
        args.topic_blend,
        args.addressed_names,
        args.addressed_scopes,
        args.question_parts,
        [("", 0.0)] + [("diversity", w) for w in args.session_diversity] + [("firsts", n) for n in args.session_firsts],
        args.addressed_unnamed,
        args.role_names_out_of_graph,
        _turn_context.specs(args.turn_context),
        args.embed_prefix,
    ):
        if turn_mode != "off" and embed_prefix != "full":
            continue  # both replace the vector lane's knn: one probe at a time
        settings.append(
            replace(
                DEFAULT,
                context_weight=context_weight,
                vector_weight=vector_weight,
                lane_depth=depth,
                context_window=window,
                time_weight=time,
                speaker_weight=speaker,
                time_scale_days=scale if time else DEFAULT.time_scale_days,
                relevance_share=share,
                session_cap=cap,
                session_weight=session_weight,
                session_aggregate=aggregate,
                drop_speaker_names=bool(drop_names),
                topic_blend=bool(blend),
                addressed_names=bool(addressed),
                addressed_scope=addressed_scope,
                question_parts=bool(parts),
                session_diversity=spread_value if spread == "diversity" else 0.0,
                session_firsts=int(spread_value) if spread == "firsts" else 0,
                addressed_unnamed=bool(unnamed),
                role_names_out_of_graph=bool(out_of_graph),
                turn_context_mode=turn_mode,
                turn_context_weight=turn_weight,
                turn_context_words=turn_words if turn_mode != "off" else _turn_context.CONTEXT_WORDS,
                turn_context_short=turn_short if turn_mode != "off" else 0,
                embed_prefix=embed_prefix,
            )
        )
    settings += [replace(DEFAULT, context_weight=0.0), replace(DEFAULT, fusion="rrf")]
    return list(dict.fromkeys(settings))


METHODS = {
    "time boost": "time_weight",
    "speaker preference": "speaker_weight",
    "speaker names out of the lanes": "drop_speaker_names",
    "topic blend": "topic_blend",
    "addressed names": "addressed_names",
    "addressed per session": "addressed_per_session",
    "unnamed role": "addressed_unnamed",
    "session cap": "session_cap",
    "session strength": "session_weight",
    "question parts": "question_parts",
    "role names out of the graph": "role_names_out_of_graph",
    "session diversity (multi-part questions)": "session_diversity",
    "sessions then turns (multi-part questions)": "session_firsts",
    "turn context (vector lane)": "turn_context",
    "embedded prefix changed (vector lane)": "prefix_changed",
}


def ablation(scores: dict[Setting, list[Scored]], names: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per method, the leave-one-out mean over folds when the folds may choose only settings
    with it on, only settings with it off, and any setting: a method counts when "on" beats "off"."""
    table = {}
    for method, attribute in METHODS.items():
        on = {c: rows for c, rows in scores.items() if getattr(c, attribute) > 0}
        off = {c: rows for c, rows in scores.items() if getattr(c, attribute) == 0}
        if not on or not off:
            continue
        folds = {side: leave_one_out(subset, names) for side, subset in (("on", on), ("off", off))}
        table[method] = {side: statistics.fmean(fold["recall"] for fold in folds[side]) for side in folds}
        table[method]["per_fold"] = [
            {
                "held_out": on_fold["held_out"],
                "chosen_on": label(on_fold["chosen"]),
                "chosen_off": label(off_fold["chosen"]),
                "on": on_fold["recall"],
                "off": off_fold["recall"],
                "by_category_on": category_table(on_fold["rows"]),
                "by_category_off": category_table(off_fold["rows"]),
            }
            for on_fold, off_fold in zip(folds["on"], folds["off"], strict=True)
        ]
        table[method]["by_category_on"] = category_table(
            [row for fold in leave_one_out(on, names) for row in fold["rows"]]
        )
        table[method]["by_category_off"] = category_table(
            [row for fold in leave_one_out(off, names) for row in fold["rows"]]
        )
    return table


def score_grid(
    conversations: Sequence[Conversation],
    settings: Sequence[Setting],
    embedder: Embedder,
    k: int,
    minds: Path | None = None,
    kind: str = "chatgpt",
    setting: str = "per-conversation",
) -> dict[Setting, list[Scored]]:
    """Every scored question of every conversation under every setting, one harvest per mind
    (a mind per conversation, or one for all: ``setting``; none when ``minds`` already holds
    the mind from an earlier run)."""
    scores: dict[Setting, list[Scored]] = defaultdict(list)
    groups = [[c] for c in conversations] if setting == "per-conversation" else [list(conversations)]
    with tempfile.TemporaryDirectory() as tmp:
        for group in groups:
            with harvested(
                group, embedder, minds or Path(tmp), DEFAULT, reuse=minds is not None, kind=kind
            ) as run:
                asked = [(c, q) for c in group for q in c.scored_questions()]
                print(
                    f"{'+'.join(c.name for c in group)}: {run.frames} frames harvested from a {kind} export "
                    f"in {run.harvest_s:.1f} s, {len(asked)} questions x {len(settings)} settings",
                    flush=True,
                )
                for config in settings:
                    run.mind.search.config = config
                    _turn_context.install(
                        run.mind,
                        embedder,
                        config.turn_context_mode,
                        config.turn_context_weight,
                        config.turn_context_words,
                        config.turn_context_short,
                    )
                    if config.turn_context_mode == "off":
                        _embed_prefix.install(run.mind, embedder, config.embed_prefix)
                    for conversation, question in asked:
                        ids = config.ranked_ids(run, question.question, k)
                        evidence = run.evidence(conversation, question)
                        scores[config].append(
                            Scored(
                                conversation.name,
                                question.category,
                                recall(evidence, ids, run.dia_ids),
                                session_recall(evidence, ids, run.dia_ids, run.session_of),
                            )
                        )
    return scores


def mean(rows: Sequence[Scored], figure: str = "recall") -> float:
    return 100 * statistics.fmean(getattr(row, figure) for row in rows) if rows else float("nan")


def of(rows: Sequence[Scored], names: Sequence[str]) -> list[Scored]:
    return [row for row in rows if row.conversation in names]


def per_conversation_mean(rows: Sequence[Scored], names: Sequence[str], figure: str = "recall") -> float:
    return statistics.fmean(mean(of(rows, [name]), figure) for name in names)


def best(scores: dict[Setting, list[Scored]], names: Sequence[str]) -> Setting:
    """The setting with the highest recall over the questions of ``names`` (first on ties)."""
    return max(scores, key=lambda config: mean(of(scores[config], names)))


def leave_one_out(scores: dict[Setting, list[Scored]], names: Sequence[str]) -> list[dict[str, Any]]:
    folds = []
    fallback = DEFAULT if DEFAULT in scores else next(iter(scores))
    for held_out in names:
        others = [name for name in names if name != held_out]
        chosen = best(scores, others)
        rows = of(scores[chosen], [held_out])
        folds.append(
            {
                "held_out": held_out,
                "chosen": chosen,
                "train_recall": mean(of(scores[chosen], others)),
                "recall": mean(rows),
                "session_recall": mean(rows, "session_recall"),
                "default_recall": mean(of(scores[fallback], [held_out])),
                "rows": rows,
            }
        )
    return folds


def category_table(rows: Sequence[Scored]) -> dict[str, float]:
    by_category: dict[str, list[Scored]] = defaultdict(list)
    for row in rows:
        by_category[row.category].append(row)
    return {category: mean(group) for category, group in sorted(by_category.items())}


def report(
    data: str,
    scores: dict[Setting, list[Scored]],
    names: Sequence[str],
    k: int,
    categories: dict[str, str],
) -> dict[str, Any]:
    """Print the grid, the folds and the summary of one data set; return them for the JSON."""
    print(f"\n{data}: hybrid evidence recall@{k} (%) per setting, {machine()}")
    print(f"  {'pooled':>8}" + "".join(f"{name[:14]:>16}" for name in names) + "  setting")
    for config, rows in scores.items():  # the setting last and whole: settings differ at its end
        marks = " (default)" if config == DEFAULT else ""
        print(
            f"  {mean(rows):8.1f}" + "".join(f"{mean(of(rows, [name])):16.1f}" for name in names)
            + f"  {label(config)}{marks}"
        )
    in_sample = best(scores, names)
    summary: dict[str, Any] = {
        "questions": len(scores[DEFAULT]),
        "grid": [
            {
                "setting": asdict(config),
                "pooled": mean(rows),
                "per_conversation": {name: mean(of(rows, [name])) for name in names},
                "by_category": category_table(rows),
            }
            for config, rows in scores.items()
        ],
        "in_sample_best": asdict(in_sample),
        "default": asdict(DEFAULT),
    }
    lines = [
        ("current defaults", DEFAULT, scores[DEFAULT]),
        ("in-sample best", in_sample, scores[in_sample]),
    ]
    if len(names) > 1:
        folds = leave_one_out(scores, names)
        print(f"\nleave one conversation out (choose on the others by recall@{k}, report the held-out one):")
        for fold in folds:
            print(
                f"  held out {fold['held_out']:18} chose {label(fold['chosen'])}: {fold['train_recall']:.1f} on the "
                f"others -> {fold['recall']:.1f} held out (defaults {fold['default_recall']:.1f}), "
                f"session {fold['session_recall']:.1f}"
            )
        held_out_rows = [row for fold in folds for row in fold["rows"]]
        fold_mean = statistics.fmean(fold["recall"] for fold in folds)
        fold_session = statistics.fmean(fold["session_recall"] for fold in folds)
        summary["folds"] = [
            {key: (asdict(v) if key == "chosen" else v) for key, v in fold.items() if key != "rows"}
            for fold in folds
        ]
        summary["leave_one_out"] = {
            "mean_over_folds": fold_mean,
            "session_mean_over_folds": fold_session,
            "pooled": mean(held_out_rows),
            "by_category": category_table(held_out_rows),
        }
        methods = ablation(scores, names)
        summary["ablation"] = methods
        for method, figures in methods.items():
            categories_on, categories_off = figures["by_category_on"], figures["by_category_off"]
            print(
                f"  {method}: leave-one-out {figures['on']:.1f} with it on, {figures['off']:.1f} off; per category on/off: "
                + ", ".join(f"{c} {categories_on[c]:.1f}/{categories_off[c]:.1f}" for c in categories_on)
            )
            for fold in figures["per_fold"]:
                on_table, off_table = fold["by_category_on"], fold["by_category_off"]
                print(
                    f"    held out {fold['held_out']}: on {fold['on']:.1f} ({fold['chosen_on']}), "
                    f"off {fold['off']:.1f} ({fold['chosen_off']}); per category on/off: "
                    + ", ".join(f"{c} {on_table[c]:.1f}/{off_table[c]:.1f}" for c in on_table)
                )
        print(
            f"\n{data} summary, hybrid recall@{k} (%): mean over conversations | pooled over questions | session"
        )
        print(
            f"  {'leave-one-out (mean over folds)':36}{fold_mean:8.1f} | {mean(held_out_rows):6.1f} | {fold_session:6.1f}"
        )
    for name, config, rows in lines:
        print(
            f"  {name:36}{per_conversation_mean(rows, names):8.1f} | {mean(rows):6.1f} | "
            f"{per_conversation_mean(rows, names, 'session_recall'):6.1f}   {label(config)}"
        )
    print(
        f"per category, recall@{k}: "
        + ("leave-one-out / " if len(names) > 1 else "")
        + "defaults / in-sample best"
    )
    tables = [category_table(scores[DEFAULT]), category_table(scores[in_sample])]
    if len(names) > 1:
        tables.insert(0, summary["leave_one_out"]["by_category"])
    for category in tables[0]:
        count = sum(1 for row in scores[DEFAULT] if row.category == category)
        figures = " / ".join(f"{table[category]:.1f}" for table in tables)
        print(f"  {category} {categories.get(category, category):12} ({count:3} q) {figures}")
    summary["by_category"] = {"default": tables[-2], "in_sample_best": tables[-1]}
    return summary


def joint(
    scores_by_data: dict[str, dict[Setting, list[Scored]]],
    names_by_data: dict[str, list[str]],
    k: int,
    categories_by_data: dict[str, dict[str, str]],
) -> dict[str, Any]:
    """One default serves both data sets, so the setting is also chosen on both together: each
    conversation of either set held out in turn, the setting with the best recall over the
    questions of the other five chosen. Per data set, the mean over its folds (and per category)."""
    merged: dict[Setting, list[Scored]] = defaultdict(list)
    for scores in scores_by_data.values():
        for config, rows in scores.items():
            merged[config] += rows
    folds = leave_one_out(dict(merged), [name for names in names_by_data.values() for name in names])
    print(f"\nboth data sets together: leave one conversation out over all of them, recall@{k} (%)")
    summary: dict[str, Any] = {}
    for data, names in names_by_data.items():
        own = [fold for fold in folds if fold["held_out"] in names]
        for fold in own:
            print(f"  held out {fold['held_out']:18} chose {label(fold['chosen'])} -> {fold['recall']:.1f}")
        by_category = category_table([row for fold in own for row in fold["rows"]])
        figure = statistics.fmean(fold["recall"] for fold in own)
        print(
            f"  {data}: mean over folds {figure:.1f}; per category "
            + ", ".join(f"{categories_by_data[data].get(c, c)} {v:.1f}" for c, v in by_category.items())
        )
        summary[data] = {
            "mean_over_folds": figure,
            "by_category": by_category,
            "chosen": {fold["held_out"]: asdict(fold["chosen"]) for fold in own},
        }
    return summary


DATA_SETS = {
    "locomo": (lambda: locomo.load_locomo(locomo.DEFAULT_DATA), locomo.CATEGORIES),
    "realtalk": (lambda: realtalk.load_realtalk([realtalk.DEFAULT_DATA]), realtalk.CATEGORIES),
}


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", choices=sorted(DATA_SETS), default=["locomo", "realtalk"])
    parser.add_argument("--k", type=int, default=10)
    add_path_arguments(parser)
    parser.add_argument("--context-weights", type=float, nargs="+", default=[0.2, 0.4, 0.6])
    parser.add_argument("--vector-weights", type=float, nargs="+", default=[0.3, 0.5, 0.7])
    parser.add_argument("--lane-depths", type=int, nargs="+", default=[DEFAULT.lane_depth])
    parser.add_argument("--context-windows", type=int, nargs="+", default=[DEFAULT.context_window])
    parser.add_argument("--time-weights", type=float, nargs="*", default=[0.2, 0.4])
    parser.add_argument("--speaker-weights", type=float, nargs="*", default=[])
    parser.add_argument(
        "--drop-speaker-names",
        type=int,
        nargs="+",
        choices=(0, 1),
        default=[1],
        help="1: the lanes search the question without the names of the mind's speakers; "
        "0: with them (give both to measure the method)",
    )
    parser.add_argument(
        "--topic-blend",
        type=int,
        nargs="+",
        choices=(0, 1),
        default=[1],
        help="1: the vector lane searches the question's vector blended with its topic words'; 0: the question's alone",
    )
    parser.add_argument(
        "--addressed-names",
        type=int,
        nargs="+",
        choices=(0, 1),
        default=[1],
        help="1: in a chat exported with roles, a name one side keeps addressing stands for the other "
        "side (speaker preference, names out of the lanes); 0: off (give both to measure the method)",
    )
    parser.add_argument(
        "--addressed-unnamed",
        type=int,
        nargs="+",
        choices=(0, 1),
        default=[int(DEFAULT.addressed_unnamed)],
        help="1: a question's name no turn talks about stands for the role a source leaves without a "
        "name (SearchConfig.addressed_unnamed); give both to measure the method",
    )
    parser.add_argument(
        "--without-off",
        action="store_true",
        help="leave out the time boost's and the speaker preference's off side (0): a smaller grid",
    )
    parser.add_argument(
        "--addressed-scopes",
        nargs="+",
        choices=ADDRESSED_SCOPES,
        default=[DEFAULT.addressed_scope],
        help="where a name that stands for a role holds: each conversation (session) where it is "
        "addressed (session-exclusive: the other conversations' frames count as someone else's), or "
        "the whole source (give several to measure the method)",
    )
    parser.add_argument(
        "--relevance-shares",
        type=float,
        nargs="+",
        default=[DEFAULT.relevance_share],
        help="how much of the score relevance may take from the match (1 = all, 0 = ties only)",
    )
    parser.add_argument("--time-scales", type=float, nargs="+", default=[DEFAULT.time_scale_days])
    parser.add_argument(
        "--session-caps",
        type=int,
        nargs="*",
        default=[],
        help="at most N frames of a session before the others'",
    )
    parser.add_argument(
        "--session-weights",
        type=float,
        nargs="*",
        default=[],
        help="share of the score from the session's strength",
    )
    parser.add_argument(
        "--session-aggregates", nargs="+", choices=SESSION_AGGREGATES, default=[DEFAULT.session_aggregate]
    )
    parser.add_argument(
        "--question-parts",
        type=int,
        nargs="+",
        choices=(0, 1),
        default=[DEFAULT.question_parts],
        help="1: a question joining several people it names is also asked of each (give both to measure it)",
    )
    parser.add_argument(
        "--role-names-out-of-graph",
        type=int,
        nargs="+",
        choices=(0, 1),
        default=[DEFAULT.role_names_out_of_graph],
        help="1: a name that stands for a role seeds no graph nearness (give both to measure it)",
    )
    parser.add_argument(
        "--session-diversity",
        type=float,
        nargs="*",
        default=[],
        help="multi-part questions: a frame's score x (1 - w) per frame of its session already taken",
    )
    parser.add_argument(
        "--session-firsts",
        type=int,
        nargs="*",
        default=[],
        help="multi-part questions: the best frame of each of the N best sessions in the top k",
    )
    parser.add_argument(
        "--turn-context",
        nargs="+",
        default=["off"],
        help="the vector lane scores a chat turn by its own vector (off), by its text plus the previous "
        "turn of the other side (instead), the better of the two (max) or a blend (blend0.3: that share "
        "of the cosine from the context text), each optionally with :N, the words kept of the previous "
        "turn (max:15), and with @M, only for turns of at most M words (instead@12); benchmark only "
        "(_turn_context.py)",
    )
    parser.add_argument(
        "--embed-prefix",
        nargs="+",
        choices=_embed_prefix.MODES,
        default=["full"],
        help="the vector lane reads each frame embedded from its stored text (full), without a generic "
        "role word as speaker (no-speaker), without the [title] (no-title) or from the message text "
        "alone (none); benchmark only (_embed_prefix.py)",
    )
    parser.add_argument("--conversations", nargs="+", help="only these (for development)")
    parser.add_argument("--questions", type=int, help="only the first N questions of each (for development)")
    parser.add_argument(
        "--embed-backend", choices=tuple(BACKENDS), help="in-process model backend (default: the product's)"
    )
    parser.add_argument(
        "--name", default="select_constants", help="results file name under benchmarks/results/"
    )
    return parser


def main() -> None:
    args = arguments().parse_args()
    settings = grid(args)
    embedder = InprocessEmbedder(backend=args.embed_backend)
    print(f"embedding backend: {embedder.backend}")
    embedder.embed("warm up the model")
    print(f"path: {args.format} export, `mind harvest`, `mind recall`, {describe_setting(args.setting)}")
    results: dict[str, Any] = {
        "k": args.k,
        "export_format": args.format,
        "setting": args.setting,
        "embedding_backend": embedder.backend,
        "settings": [asdict(s) for s in settings],
    }
    scores_by_data: dict[str, dict[Setting, list[Scored]]] = {}
    names_by_data: dict[str, list[str]] = {}
    for data in args.data:
        load, categories = DATA_SETS[data]
        conversations = [c for c in load() if not args.conversations or c.name in args.conversations]
        excluded = 0
        for conversation in conversations:
            excluded += len(conversation.questions) - len(conversation.scored_questions())
            if args.questions:
                conversation.questions = conversation.questions[: args.questions]
        print(f"{data}: excluded: {excluded} questions without resolvable evidence", flush=True)
        scores = score_grid(conversations, settings, embedder, args.k, args.minds, args.format, args.setting)
        scores_by_data[data], names_by_data[data] = scores, [c.name for c in conversations]
        results[data] = {
            "excluded": excluded,
            **report(data, scores, [c.name for c in conversations], args.k, categories),
        }
    if len(scores_by_data) > 1:
        categories_by_data = {data: DATA_SETS[data][1] for data in scores_by_data}
        results["joint"] = joint(scores_by_data, names_by_data, args.k, categories_by_data)
    write_results(args.name, results)


if __name__ == "__main__":
    main()
