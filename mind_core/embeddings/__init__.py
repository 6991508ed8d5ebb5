"""Embedders: the contract, the in-process model, HTTP providers, the mock, and the provider chain."""

from mind_core.embeddings.base import (
    DEFAULT_DIMENSIONS,
    ORIGINAL_DIMENSIONS,
    Embedder,
    EmbeddingError,
    at_width,
    fingerprint_of,
    fit_rows,
    normalize_dimensions,
    to_blob,
)
from mind_core.embeddings.http_providers import (
    LiteLLMEmbedder,
    OllamaEmbedder,
    OpenAIEmbedder,
    VoyageEmbedder,
)
from mind_core.embeddings.inprocess import InprocessEmbedder, load_model
from mind_core.embeddings.mock import MockEmbedder, mock_embed
from mind_core.embeddings.provider import (
    DEGRADED_WARNING,
    EmbeddingProvider,
    create_embedding_provider,
)

__all__ = [
    "DEFAULT_DIMENSIONS",
    "DEGRADED_WARNING",
    "Embedder",
    "EmbeddingError",
    "EmbeddingProvider",
    "InprocessEmbedder",
    "LiteLLMEmbedder",
    "MockEmbedder",
    "ORIGINAL_DIMENSIONS",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "VoyageEmbedder",
    "at_width",
    "create_embedding_provider",
    "fingerprint_of",
    "fit_rows",
    "load_model",
    "mock_embed",
    "normalize_dimensions",
    "to_blob",
]
