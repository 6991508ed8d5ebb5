"""Embedders: the contract, the in-process model, HTTP providers, the mock, and the provider chain."""

from mind_core.embeddings.base import (
    DEFAULT_DIMENSIONS,
    Embedder,
    EmbeddingError,
    fingerprint_of,
    fit_rows,
    normalize_dimensions,
    to_blob,
)
from mind_core.embeddings.inprocess import InprocessEmbedder, load_model
from mind_core.embeddings.mock import MockEmbedder, mock_embed

__all__ = [
    "DEFAULT_DIMENSIONS",
    "Embedder",
    "EmbeddingError",
    "InprocessEmbedder",
    "MockEmbedder",
    "fingerprint_of",
    "fit_rows",
    "load_model",
    "mock_embed",
    "normalize_dimensions",
    "to_blob",
]
