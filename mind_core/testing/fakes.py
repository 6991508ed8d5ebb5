"""Deterministic stand-ins for tests that need vectors but not meaning (or not the real model)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import numpy as np

from mind_core.timestamps import format_utc

_SPREAD = 127
_HITS_PER_WORD = 8


def _js_string_hash(word: str) -> int:
    """Java/JS ``h = ((h << 5) - h + charCode) | 0`` over UTF-16 code units, then abs."""
    units = word.encode("utf-16-le")
    h = 0
    for i in range(0, len(units), 2):
        code = units[i] | (units[i + 1] << 8)
        h = (h * 31 + code) & 0xFFFFFFFF
    if h >= 0x80000000:
        h -= 0x100000000
    return abs(h)


class HashingEmbedder:
    """The original test suite's MockEmbedder: bag of hashed words, L2-normalized.

    Texts sharing words get positive similarity, so search ranking tests are meaningful without
    loading a model. ``calls`` and ``texts_embedded`` let a test assert what was (not) embedded.
    """

    provider = "fake"
    model_name = "hashing"
    degraded = False

    def __init__(self, dimensions: int = 1024, *, max_seq_length: int | None = None) -> None:
        self.dimensions = dimensions
        self.max_seq_length = max_seq_length
        self.calls = 0
        self.texts_embedded: list[str] = []

    def vector(self, text: str) -> np.ndarray:
        out = np.zeros(self.dimensions, dtype=np.float32)
        for word in text.lower().split():
            h = _js_string_hash(word)
            for i in range(_HITS_PER_WORD):
                out[(h + i * _SPREAD) % self.dimensions] += 1.0
        norm = float(np.linalg.norm(out))
        return out / norm if norm > 0 else out

    def embed(self, text: str) -> np.ndarray:
        self.calls += 1
        self.texts_embedded.append(text)
        return self.vector(text)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        items = list(texts)
        self.texts_embedded.extend(items)
        out = np.zeros((len(items), self.dimensions), dtype=np.float32)
        for i, text in enumerate(items):
            out[i] = self.vector(text)
        return out


class SteppingClock:
    """A ``now_iso`` replacement whose every reading is one second after the last.

    Patched over a module's ``now_iso`` (``monkeypatch.setattr(module, "now_iso", clock)``), it
    orders writes in time deterministically, so no test sleeps to make timestamps differ.
    """

    def __init__(self, start: str = "2024-01-01T00:00:00.000Z") -> None:
        self._next = datetime.fromisoformat(start)

    def __call__(self) -> str:
        reading = self._next
        self._next += timedelta(seconds=1)
        return format_utc(reading)


def write_tiny_bert_onnx(path, vocab_size: int = 30522, hidden: int = 8, seed: int = 0) -> None:
    """A stand-in for the exported MiniLM graph: the same inputs and output, two small layers
    (token embedding Gather, then a MatMul), so tokenization, padding, pooling and int8
    quantization run for real in milliseconds and without torch."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    table = numpy_helper.from_array(rng.standard_normal((vocab_size, hidden)).astype(np.float32), "table")
    weight = numpy_helper.from_array(rng.standard_normal((hidden, hidden)).astype(np.float32), "weight")
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", hidden])
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["embedded"]),
        helper.make_node("MatMul", ["embedded", "weight"], ["last_hidden_state"]),
    ]
    graph = helper.make_graph(nodes, "tiny_bert", inputs, [output], [table, weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
