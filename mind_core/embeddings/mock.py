"""The original's last-resort embedder: deterministic, always available, semantically meaningless.

Its vectors encode raw UTF-8 bytes, so two texts are "close" only when they share a byte
prefix. It exists so a mind can still be written when no model is available; anything using
it reports itself as degraded.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np

from mind_core.embeddings.base import DEFAULT_DIMENSIONS, check_text, check_texts

MOCK_MODEL_NAME = "deterministic-mock"


def mock_embed(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> np.ndarray:
    """First min(len(utf8), dimensions) values are (byte - 128) / 128, the rest 0 (not normalized)."""
    raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)[:dimensions]
    out = np.zeros(dimensions, dtype=np.float32)
    out[: raw.shape[0]] = (raw.astype(np.float32) - 128.0) / 128.0
    return out


class MockEmbedder:
    """Embedder over mock_embed; ``degraded`` tells callers semantic search is not real."""

    provider = "mock"
    model_name = MOCK_MODEL_NAME
    degraded = True
    max_seq_length: int | None = None

    def __init__(self, dimensions: int = DEFAULT_DIMENSIONS) -> None:
        self.dimensions = int(dimensions)

    def at_width(self, width: int) -> MockEmbedder:
        """Mock vectors of another width: a prefix of the same values, padded with zeros."""
        if width == self.dimensions:
            return self
        resized = copy.copy(self)
        resized.dimensions = int(width)
        return resized

    def embed(self, text: str) -> np.ndarray:
        return mock_embed(check_text(text), self.dimensions)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        out = np.zeros((len(items), self.dimensions), dtype=np.float32)
        for i, text in enumerate(items):
            out[i] = mock_embed(text, self.dimensions)
        return out
