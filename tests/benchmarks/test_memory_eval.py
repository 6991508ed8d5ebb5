"""The memory benchmarks' plumbing: evidence normalization, the chat-export conversion through the
real harvest path, mapping frames back to dialog ids, recall@k, and the loaders on the real data."""

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import _memory_eval as ev  # noqa: E402
from locomo import load_locomo  # noqa: E402
from realtalk import load_realtalk  # noqa: E402

from mind_core.harvest.pipeline import harvest, register_source  # noqa: E402
from mind_core.mind import Mind  # noqa: E402
from mind_core.search import SearchConfig  # noqa: E402
from tests.fakes import HashingEmbedder  # noqa: E402

KNOWN = {"D1:1", "D1:2", "D4:4", "D4:6", "D8:6", "D9:1", "D9:17"}


def test_evidence_is_split_and_unresolvable_ids_dropped():
    kept, dropped = ev.normalize_evidence(
        ["D8:6; D9:17", "D9:1 D4:4 D4:6", "D:11:26", "D30:05", "D", "D1:1", "D1:1"], KNOWN
    )
    assert kept == ["D8:6", "D9:17", "D9:1", "D4:4", "D4:6", "D1:1"]
    assert dropped == ["D:11:26", "D30:05", "D"]
    assert ev.normalize_evidence([], KNOWN) == ([], [])


def test_recall_is_the_found_fraction_and_one_without_evidence():
    dia = {1: {"D1:1"}, 2: {"D1:2", "D4:4"}, 3: {"D9:1"}}
    assert ev.recall(["D1:1", "D4:4", "D8:6"], [2, 1], dia) == pytest.approx(2 / 3)
    assert ev.recall(["D9:1"], [1, 2], dia) == 0.0
    assert ev.recall([], [], dia) == 1.0


def test_grep_ranks_by_distinct_query_words_found():
    contents = {1: "we baked a lemon cake", 2: "lemon trees", 3: "cake and lemon and cake", 4: "nothing"}
    assert ev.grep_search(contents, "Who baked the lemon cake?", 10) == [1, 3, 2]
    assert ev.grep_search(contents, "the of and", 10) == []


def conversation() -> ev.Conversation:
    one = ev.Session(
        "session_1",
        "conv-x session 1",
        [
            ev.Turn("D1:1", "Caroline", "I went to the pottery class yesterday", 1_683_554_160.0),
            ev.Turn(
                "D1:2", "Melanie", ev.image_text("Look at this!", "a photo of a clay bowl"), 1_683_554_160.0
            ),
            ev.Turn("D1:3", "Caroline", "Bye!", 1_683_554_160.0),
        ],
    )
    two = ev.Session(
        "session_2",
        "conv-x session 2",
        [
            ev.Turn("D2:1", "Melanie", "My kids love camping by the lake", 1_685_000_000.0),
            ev.Turn("D2:2", "Caroline", "Bye!", 1_685_000_000.0),
            ev.Turn("D2:3", "Caroline", "Bye!", 1_685_000_000.0),  # same frame content: deduplicated
        ],
    )
    conv = ev.Conversation("conv-x", [one, two])
    conv.questions = ev.make_questions(
        [
            {"question": "What did Caroline make at pottery?", "evidence": ["D1:1; D1:2"], "category": 4},
            {"question": "Where do the kids camp?", "evidence": ["D2:1", "D7:7"], "category": 1},
            {"question": "Unanswerable?", "evidence": [], "category": 5},
        ],
        conv.dia_ids(),
    )
    return conv


def test_conversation_harvests_one_frame_per_turn_with_speaker_and_dialog_id(tmp_path):
    conv = conversation()
    export = ev.write_export(conv, tmp_path / "export" / "conversations.json")
    with Mind.open(tmp_path / "m.mind", embedder=HashingEmbedder()) as mind:
        register_source(mind, "chatgpt", export, "bench")
        report = harvest(mind, "bench")
        assert report.imported.error_count == 0
        rows = mind.db.query("SELECT id, content, created_at FROM memory_frames ORDER BY gop_id, t")
        contents = [row["content"] for row in rows]
        assert contents[0] == "[conv-x session 1] Caroline: I went to the pottery class yesterday"
        assert contents[1] == "[conv-x session 1] Melanie: Look at this! [image: a photo of a clay bowl]"
        assert rows[0]["created_at"].startswith("2023-05-08T13:56:00")
        assert len(rows) == 5  # six turns, the repeated "Bye!" is one frame
        dia = ev.frame_dia_ids(mind)
        assert sorted(d for ids in dia.values() for d in ids) == [
            "D1:1",
            "D1:2",
            "D1:3",
            "D2:1",
            "D2:2",
            "D2:3",
        ]
        assert {"D2:2", "D2:3"} in dia.values()
    assert conv.questions[1].evidence == ["D2:1"] and conv.questions[1].dropped == ["D7:7"]


def test_run_conversation_scores_every_mode_and_k(tmp_path):
    conv = conversation()
    run = ev.run_conversation(conv, HashingEmbedder(), ev.MODES, [1, 5], tmp_path, SearchConfig())
    assert run.frames == 5 and len(run.per_question) == 3
    first = run.per_question[0]
    assert set(first["recall"]) == set(ev.MODES)
    assert first["recall"]["keyword"][5] == 0.5  # the image turn shares no word with the question
    assert first["recall"]["hybrid"][5] == 1.0
    assert run.per_question[2]["recall"]["hybrid"][1] == 1.0  # no evidence counts as 1
    summary = ev.summarize(run.per_question, ev.MODES, [1, 5])
    assert set(summary["by_category"]) == {"1", "4", "5"}
    for mode in ev.MODES:
        assert summary["overall"][mode]["1"] <= summary["overall"][mode]["5"]


def test_dates_parse_in_both_benchmark_formats():
    assert ev.parse_epoch("1:56 pm on 8 May, 2023", ("%I:%M %p on %d %B, %Y",)) == 1_683_554_160.0
    assert ev.parse_epoch("29.12.2023, 22:42:04", ("%d.%m.%Y, %H:%M:%S",)) == 1_703_889_724.0
    with pytest.raises(ValueError, match="unrecognized date"):
        ev.parse_epoch("yesterday", ("%d.%m.%Y",))


def test_loaders_on_the_shared_benchmarks(shared_data):
    locomo = load_locomo(shared_data / "benchmarks" / "locomo" / "locomo10_conv1-3.json")
    assert [c.name for c in locomo] == ["conv-26", "conv-30", "conv-41"]
    assert sum(c.turn_count for c in locomo) == 1451
    assert sum(len(s.turns) > 0 for c in locomo for s in c.sessions) == 70
    assert sum(len(c.questions) for c in locomo) == 497
    image_turn = next(t for s in locomo[0].sessions for t in s.turns if t.dia_id == "D1:5")
    assert image_turn.text.endswith(
        "[image: a photo of a dog walking past a wall with a painting of a woman]"
    )
    realtalk = load_realtalk([shared_data / "benchmarks" / "realtalk"])
    assert sum(c.turn_count for c in realtalk) == 1351
    assert sum(len(c.questions) for c in realtalk) == 214
    # the data README: 29, 3 and 2 evidence ids of the shared chats do not resolve
    assert [sum(len(q.dropped) for q in c.questions) for c in realtalk] == [29, 3, 2]
