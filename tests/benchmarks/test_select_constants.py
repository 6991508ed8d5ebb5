"""Leave-one-conversation-out selection: each fold chooses on the other conversations only."""

import argparse
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import select_constants as sc  # noqa: E402

WIDE = sc.Setting(context_weight=0.2)
RRF = sc.Setting(fusion="rrf")
# a grid point of the tests' grids below (context 0.4, vector 0.5), methods off
POINT = {"context_weight": 0.4, "vector_weight": 0.5, "time_weight": 0.0, "speaker_weight": 0.0}


def grid_args(options: str) -> argparse.Namespace:
    """The script's own options: context 0.4, vector 0.5, window 2, every method off, unless given."""
    methods = "--time-weights --speaker-weights"
    return sc.arguments().parse_args(f"--context-weights 0.4 --vector-weights 0.5 {methods} {options}".split())


def rows(conversation: str, recalls: list[float], category: str = "1") -> list[sc.Scored]:
    return [sc.Scored(conversation, category, r, 1.0 if r else 0.0) for r in recalls]


def scores() -> dict[sc.Setting, list[sc.Scored]]:
    # WIDE is best on a and b, RRF only on c; the defaults are never best
    return {
        sc.DEFAULT: rows("a", [0.5, 0.5]) + rows("b", [0.5, 0.5]) + rows("c", [0.5]),
        WIDE: rows("a", [1.0, 1.0]) + rows("b", [1.0, 1.0]) + rows("c", [0.0]),
        RRF: rows("a", [0.0, 0.0]) + rows("b", [0.0, 0.0]) + rows("c", [1.0]),
    }


def test_each_fold_chooses_on_the_others_and_reports_the_held_out_one():
    folds = sc.leave_one_out(scores(), ["a", "b", "c"])
    assert [(f["held_out"], f["chosen"]) for f in folds] == [("a", WIDE), ("b", WIDE), ("c", WIDE)]
    assert [f["recall"] for f in folds] == [100.0, 100.0, 0.0]
    assert [f["default_recall"] for f in folds] == [50.0, 50.0, 50.0]


def test_in_sample_best_pools_every_question_and_ties_keep_the_first():
    assert sc.best(scores(), ["a", "b", "c"]) == WIDE
    assert sc.best(scores(), ["c"]) == RRF
    tied = {sc.DEFAULT: rows("a", [1.0]), WIDE: rows("a", [1.0])}
    assert sc.best(tied, ["a"]) == sc.DEFAULT


def test_means_over_conversations_and_over_questions_differ_when_sizes_do():
    wide = scores()[WIDE]
    assert sc.mean(wide) == 80.0  # 4 of 5 questions
    assert sc.per_conversation_mean(wide, ["a", "b", "c"]) == pytest.approx(200 / 3)
    assert sc.category_table(rows("a", [1.0], "2") + rows("a", [0.0, 1.0], "1")) == {"1": 50.0, "2": 100.0}


def test_the_grid_starts_with_the_defaults_and_holds_both_ablations():
    args = grid_args("--context-weights 0.2 0.4")
    settings = sc.grid(args)
    # the defaults (time boost on), the two context weights without it, the two ablations
    assert settings[0] == sc.DEFAULT and len(settings) == len(set(settings)) == 5
    assert sc.Setting(context_weight=0.0) in settings and RRF in settings


def test_the_methods_are_crossed_with_the_grid_and_ablated_on_and_off():
    args = grid_args("--time-weights 0.3 --speaker-weights 0.2")
    settings = sc.grid(args)
    assert sc.Setting(**{**POINT, "time_weight": 0.3, "speaker_weight": 0.2}) in settings
    assert len(settings) == 7  # the defaults, 2 x 2 method settings, 2 ablations
    boosted = sc.Setting(**{**POINT, "time_weight": 0.3})
    # the time boost wins on every conversation, so with it on the folds do better than off
    table = {sc.Setting(**POINT): rows("a", [0.0]) + rows("b", [0.0]), boosted: rows("a", [1.0]) + rows("b", [1.0])}
    ablation = sc.ablation(table, ["a", "b"])
    assert (ablation["time boost"]["on"], ablation["time boost"]["off"]) == (100.0, 0.0)
    assert "speaker preference" not in ablation  # never on in this table: nothing to compare
    folds = ablation["time boost"]["per_fold"]
    assert [(f["held_out"], f["on"], f["off"]) for f in folds] == [("a", 100.0, 0.0), ("b", 100.0, 0.0)]
    assert folds[0]["by_category_on"] == {"1": 100.0} and folds[0]["by_category_off"] == {"1": 0.0}


def test_the_speaker_preference_is_crossed_labelled_and_ablated():
    args = grid_args("--speaker-weights 0.2")
    settings = sc.grid(args)
    speaker = sc.Setting(**{**POINT, "speaker_weight": 0.2})
    assert speaker in settings and "speaker 0.2" in sc.label(speaker)
    table = {sc.Setting(**POINT): rows("a", [1.0]) + rows("b", [1.0]), speaker: rows("a", [0.0]) + rows("b", [1.0])}
    ablation = sc.ablation(table, ["a", "b"])["speaker preference"]
    assert (ablation["on"], ablation["off"]) == (50.0, 100.0)


def test_the_name_dropping_and_topic_blend_are_crossed_labelled_and_ablated():
    settings = sc.grid(grid_args("--speaker-weights 0.3 --drop-speaker-names 0 1 --topic-blend 0 1"))
    plain = sc.Setting(**{**POINT, "speaker_weight": 0.3}, drop_speaker_names=False, topic_blend=False)
    assert plain in settings and len(settings) == 1 + 2 * 2 * 2 + 2  # speaker off/on x names x blend
    assert sc.label(plain).endswith("speaker 0.3, names in lanes, no topic blend")
    both = sc.Setting(**{**POINT, "speaker_weight": 0.3})
    assert both in settings and "names" not in sc.label(both) and "blend" not in sc.label(both)
    table = {plain: rows("a", [0.0]) + rows("b", [1.0]), both: rows("a", [1.0]) + rows("b", [1.0])}
    ablation = sc.ablation(table, ["a", "b"])
    for method in ("speaker names out of the lanes", "topic blend"):
        assert (ablation[method]["on"], ablation[method]["off"]) == (100.0, 50.0)


def test_the_session_reranks_are_crossed_labelled_and_ablated():
    args = grid_args("--session-caps 2 --session-weights 0.1 --session-aggregates sum max")
    settings = sc.grid(args)
    cap = sc.Setting(**POINT, session_cap=2)
    strength = sc.Setting(**POINT, session_weight=0.1, session_aggregate="max")
    assert cap in settings and strength in settings and sc.Setting(**POINT, session_cap=2, session_weight=0.1) in settings
    assert len(settings) == 1 + 2 * 3 + 2  # the defaults, cap off/on x strength off/sum/max, 2 ablations
    assert "session cap 2" in sc.label(cap) and "session max 0.1" in sc.label(strength)
    assert not sc.Setting(**POINT).reranks and cap.reranks and strength.reranks
    table = {sc.Setting(**POINT): rows("a", [1.0]) + rows("b", [1.0]), cap: rows("a", [0.0]) + rows("b", [1.0])}
    ablation = sc.ablation(table, ["a", "b"])
    assert (ablation["session cap"]["on"], ablation["session cap"]["off"]) == (50.0, 100.0)
    assert "session strength" not in ablation


def test_the_joint_folds_choose_on_the_conversations_of_both_data_sets(capsys):
    narrow = sc.Setting(**POINT)
    x = {WIDE: rows("a", [1.0]) + rows("b", [1.0]), narrow: rows("a", [0.0]) + rows("b", [0.0])}
    y = {WIDE: rows("c", [0.0]) + rows("d", [1.0]), narrow: rows("c", [1.0]) + rows("d", [0.0])}
    summary = sc.joint({"x": x, "y": y}, {"x": ["a", "b"], "y": ["c", "d"]}, 10, {"x": {}, "y": {"1": "multi-hop"}})
    # held out c: on a, b and d WIDE wins (3 of 3) although only narrow finds c's evidence
    assert summary["y"]["chosen"]["c"]["context_weight"] == WIDE.context_weight
    assert (summary["x"]["mean_over_folds"], summary["y"]["mean_over_folds"]) == (100.0, 50.0)
    assert summary["y"]["by_category"] == {"1": 50.0}
    assert "multi-hop 50.0" in capsys.readouterr().out


def test_question_parts_and_the_multi_part_reranks_are_crossed_labelled_and_ablated():
    settings = sc.grid(grid_args("--question-parts 0 1 --session-diversity 0.1 --session-firsts 4"))
    parts = sc.Setting(**POINT)
    whole = sc.Setting(**POINT, question_parts=False)
    diverse = sc.Setting(**POINT, session_diversity=0.1)
    firsts = sc.Setting(**POINT, session_firsts=4)
    assert {parts, whole, diverse, firsts} <= set(settings)
    assert len(settings) == 1 + 2 * 3 + 2  # the defaults, parts off/on x (none, diversity, firsts), 2 ablations
    assert sc.label(whole).endswith("no question parts") and "question parts" not in sc.label(parts)
    assert "session diversity 0.1" in sc.label(diverse) and "sessions first 4" in sc.label(firsts)
    assert diverse.reranks and firsts.reranks and not parts.reranks
    table = {parts: rows("a", [1.0]) + rows("b", [1.0]), whole: rows("a", [0.0]) + rows("b", [1.0])}
    ablation = sc.ablation(table, ["a", "b"])["question parts"]
    assert (ablation["on"], ablation["off"]) == (100.0, 50.0)
