"""The embedder contract shared by every provider, and the vector plumbing around it.

Every embedder returns float32 vectors of one fixed width (``dimensions``). By default that is
the model's own width (384 for the in-process MiniLM), so a new mind scans no zero padding; the
original engine's contract of 1024 values (``ORIGINAL_DIMENSIONS``: narrower outputs zero-padded,
wider ones truncated, docs/deviations.md) stays available by asking for that width. Padding
leaves cosine and L2 distances unchanged, so one model at two widths is one vector space:
``at_width`` gives the embedder that a mind of another width needs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from mind_core.errors import InvalidInputError, MindError

ORIGINAL_DIMENSIONS = 1024
DEFAULT_DIMENSIONS = ORIGINAL_DIMENSIONS  # the width of a mock vector, and of a mind told nothing else
DIMENSIONS_ENV = "MIND_HARVEST_EMBED_DIMENSIONS"
NO_QUANTIZATION = "none"


class EmbeddingError(MindError):
    """No vector could be produced: model missing, server unreachable, malformed response, ..."""


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns text into fixed-width float32 vectors.

    ``dimensions`` is the width of the vectors it returns (the model's own, or padded/truncated
    to a width asked for); a mind stores them at its own width (see ``at_width``). ``provider`` and ``model_name`` identify the vector space, so a mind can
    refuse to mix vectors from two different models.
    """

    dimensions: int
    provider: str
    model_name: str

    def embed(self, text: str) -> np.ndarray:
        """One text → float32 array of shape (dimensions,)."""
        ...

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """n texts → float32 array of shape (n, dimensions); [] → shape (0, dimensions)."""
        ...


def normalize_dimensions(vec: Any, target: int) -> np.ndarray:
    """Fit a vector to ``target`` values as the original does: zero-pad or truncate, never rescale.

    Re-normalizing after truncation would be "more correct" for a truncated model output, but
    it would change distances relative to vectors already stored by the original engine.
    """
    arr = np.asarray(vec, dtype=np.float32).reshape(-1)
    if arr.shape[0] == target:
        return arr.copy()
    out = np.zeros(target, dtype=np.float32)
    n = min(arr.shape[0], target)
    out[:n] = arr[:n]
    return out


def fit_rows(rows: Sequence[Any], target: int) -> np.ndarray:
    """normalize_dimensions applied row-wise; always returns shape (len(rows), target)."""
    out = np.zeros((len(rows), target), dtype=np.float32)
    for i, row in enumerate(rows):
        out[i] = normalize_dimensions(row, target)
    return out


def at_width(embedder: Embedder, width: int) -> Embedder:
    """The same embedder making vectors of ``width`` values, for a mind that stores that width.

    Embedders whose vectors are the model's own padded or truncated (every real provider and the
    mock) offer ``at_width``: their vectors at any width are the same space, as the original
    engine fits them. Any other embedder is returned as it is, and a width that does not match is
    refused by the mind's fingerprint check.
    """
    resize = getattr(embedder, "at_width", None)
    return resize(int(width)) if callable(resize) else embedder


def requested_dimensions(value: int | str | None, env: Mapping[str, str] | None = None) -> int | None:
    """The width asked for (argument, else ``$MIND_HARVEST_EMBED_DIMENSIONS``), None for the
    model's own; ``native`` also means the model's own."""
    raw = value if value is not None else (os.environ if env is None else env).get(DIMENSIONS_ENV)
    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "native")):
        return None
    try:
        width = int(raw)
    except (TypeError, ValueError):
        width = 0
    if isinstance(raw, bool) or width < 1:
        raise InvalidInputError(
            f"embedding dimensions must be a positive integer or 'native', got {raw!r} (${DIMENSIONS_ENV})"
        )
    return width


def to_blob(vec: Any) -> bytes:
    """The byte layout sqlite-vec expects for a float[N] column: little-endian float32."""
    arr = np.asarray(vec, dtype="<f4").reshape(-1)
    return arr.tobytes()


def check_texts(texts: Sequence[str]) -> list[str]:
    """Reject a non-sequence or non-string item up front, naming its position."""
    if isinstance(texts, str | bytes):
        raise InvalidInputError("embed_batch expects a sequence of strings, not a single string")
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise InvalidInputError(f"text #{i} to embed is {type(text).__name__}, not str")
    return items


def check_text(text: str) -> str:
    if not isinstance(text, str):
        raise InvalidInputError(f"text to embed is {type(text).__name__}, not str")
    return text


def fingerprint_of(embedder: Embedder) -> dict[str, Any]:
    """What a mind records about the vector space of its index (compare before mixing vectors).

    An embedder that runs a model itself also says on which runtime (``backend``: onnx, torch)
    and with which weights (``quantization``: none, int8), because int8 weights move vectors.
    """
    fingerprint: dict[str, Any] = {
        "provider": embedder.provider,
        "model": embedder.model_name,
        "dimensions": int(embedder.dimensions),
    }
    runtime = getattr(embedder, "runtime", None)
    if runtime:
        fingerprint["backend"] = runtime
        fingerprint["quantization"] = getattr(embedder, "quantization", None) or NO_QUANTIZATION
    return fingerprint
