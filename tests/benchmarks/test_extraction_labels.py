"""The labelled extraction samples: the out-of-sample one shares no text with the in-sample one,
holds at least 200 mentions, and every label is a name its text contains."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import extraction  # noqa: E402


def texts(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["texts"]


def folded(text: str) -> str:
    return " ".join(text.lower().split())


@pytest.mark.parametrize("path", extraction.SAMPLES.values(), ids=extraction.SAMPLES.keys())
def test_every_label_is_a_name_its_text_contains(path: Path) -> None:
    samples = texts(path)
    mentions = sum(len({folded(n) for n in s[t]}) for s in samples for t in extraction.LABELLED_TYPES)
    assert mentions >= 200
    for sample in samples:
        for entity_type in extraction.LABELLED_TYPES:
            for name in sample[entity_type]:
                assert folded(name) in folded(sample["text"]), (name, sample["text"][:80])


def test_the_out_of_sample_texts_are_not_in_the_first_sample() -> None:
    first = [folded(s["text"]) for s in texts(extraction.LABELS)]
    second = [folded(s["text"]) for s in texts(extraction.OUT_OF_SAMPLE_LABELS)]
    assert len(set(second)) == len(second)
    overlapping = [t for t in second if any(t[:120] in f or f[:120] in t for f in first)]
    assert overlapping == []
    assert {s["source"] for s in texts(extraction.OUT_OF_SAMPLE_LABELS)} >= {"realtalk", "chatgpt", "claude"}
