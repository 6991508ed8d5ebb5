"""Embedding servers reached over HTTP: Ollama, Voyage AI, OpenAI and a LiteLLM proxy.

Request and response shapes follow the original engine (reference-behaviour §8). Each client
keeps one ``httpx.Client`` for connection reuse; the connect timeout is short and separate from
the read timeout, so probing a server that is not running fails within a second or two while a
server that is loading its model still gets the full read timeout.

A rate limit (429) or a server error (5xx) is retried with exponential backoff and full jitter
(tenacity), waiting at least what ``Retry-After`` asks: one busy reply must not end a harvest of
50,000 messages. A server that cannot be reached is not retried, so a probe of a stopped Ollama
still fails fast and the provider chain moves on.

httpx and tenacity are imported by the methods that use them: every command builds its embedder
through this module's provider chain, and most (a recall with the in-process model, ``mind mcp``,
``stats``) never send an HTTP request, so they should not pay for loading either.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mind_core.embeddings.base import (
    EmbeddingError,
    check_text,
    check_texts,
    fit_rows,
)
from mind_core.http_retry import (
    DEFAULT_RETRY,
    RetryableReply,
    RetryPolicy,
    is_retryable,
    retry_after_seconds,
    with_retries,
)

DEFAULT_OLLAMA_URL = "http://localhost:11434"
DEFAULT_OLLAMA_MODEL = "nomic-embed-text"
VOYAGE_URL = "https://api.voyageai.com/v1/embeddings"
VOYAGE_MODEL = "voyage-3-lite"
OPENAI_URL = "https://api.openai.com/v1/embeddings"
OPENAI_MODEL = "text-embedding-3-small"
LITELLM_MODEL = "text-embedding"

OLLAMA_TIMEOUT_S = 30.0
API_TIMEOUT_S = 15.0
LOCAL_CONNECT_TIMEOUT_S = 1.5
REMOTE_CONNECT_TIMEOUT_S = 5.0
DEFAULT_HTTP_BATCH = 64
WIDTH_PROBE_TEXT = "mind-harvest embedding probe"
_BODY_EXCERPT = 300

if TYPE_CHECKING:
    import httpx


class HttpEmbedder:
    """Shared plumbing: batching, POST with JSON, error wrapping, response validation.

    ``dimensions=None`` keeps the server's own width, learned from its first reply: nothing
    here knows every model a server may run.
    """

    provider = "http"
    model_name = ""
    degraded = False
    max_seq_length: int | None = None

    def __init__(
        self,
        url: str,
        *,
        model: str,
        dimensions: int | None,
        timeout: float,
        connect_timeout: float,
        api_key: str | None = None,
        batch_size: int = DEFAULT_HTTP_BATCH,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.retry = retry
        self.url = url
        self.model_name = model
        self._width = None if dimensions is None else int(dimensions)
        self.batch_size = int(batch_size)
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        import httpx

        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(connect_timeout, timeout)),
            headers=headers,
            trust_env=False,
        )

    # -- subclass hooks --------------------------------------------------------------------
    def _body(self, payload: str | list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def _vectors(self, data: Any) -> Any:
        raise NotImplementedError

    def _fit(self, rows: list[list[float]]) -> np.ndarray:
        return fit_rows(rows, self._learn_width(rows))

    def _learn_width(self, rows: list[list[float]]) -> int:
        """The width asked for, else the first reply's (which must be one width)."""
        if self._width is None:
            widths = sorted({len(row) for row in rows})
            if len(widths) != 1:
                raise EmbeddingError(f"{self.provider} at {self.url} returned vectors of widths {widths}")
            self._width = widths[0]
        return self._width

    # -- Embedder ---------------------------------------------------------------------------
    @property
    def dimensions(self) -> int:
        """The width of the vectors returned; the server's own is asked for with one probe text
        when it is read before anything was embedded."""
        if self._width is None:
            self._request(WIDTH_PROBE_TEXT, 1)
        return self._width  # type: ignore[return-value]  # set by the reply

    @property
    def known_dimensions(self) -> int | None:
        """The width if already known (asked for, or seen in a reply), without a request."""
        return self._width

    def at_width(self, width: int) -> HttpEmbedder:
        """The same server and model, vectors fitted to ``width`` (the connection is shared)."""
        if width == self._width:
            return self
        resized = copy.copy(self)
        resized._width = int(width)
        return resized

    def embed(self, text: str) -> np.ndarray:
        return self._request(check_text(text), 1)[0]

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        parts = []
        for start in range(0, len(items), self.batch_size):
            chunk = items[start : start + self.batch_size]
            parts.append(self._request(chunk, len(chunk)))
        return np.concatenate(parts)

    def close(self) -> None:
        self._client.close()

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        """POST, retrying 429/5xx replies by ``self.retry``; the last such reply is returned."""

        def once() -> httpx.Response:
            response = self._client.post(self.url, json=body)
            if is_retryable(response.status_code):
                asked = retry_after_seconds(response.headers.get("Retry-After"))
                raise RetryableReply(response.status_code, asked, response)
            return response

        try:
            return with_retries(self.retry, once)
        except RetryableReply as exc:
            return exc.response

    def _request(self, payload: str | list[str], expected: int) -> np.ndarray:
        import httpx

        try:
            response = self._post(self._body(payload))
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"{self.provider} at {self.url}: {type(exc).__name__}: {exc}") from exc
        if is_retryable(response.status_code) and self.retry.attempts > 1:
            excerpt = response.text[:_BODY_EXCERPT]
            raise EmbeddingError(
                f"{self.provider} at {self.url}: HTTP {response.status_code}, still after "
                f"{self.retry.attempts} attempts: {excerpt}"
            )
        if response.status_code >= 400:
            excerpt = response.text[:_BODY_EXCERPT]
            raise EmbeddingError(f"{self.provider} at {self.url}: HTTP {response.status_code}: {excerpt}")
        try:
            data = response.json()
        except ValueError as exc:
            raise EmbeddingError(f"{self.provider} at {self.url}: response is not JSON") from exc
        rows = _validated_rows(self._vectors(data), expected, f"{self.provider} at {self.url}")
        return self._fit(rows)


def _validated_rows(rows: Any, expected: int, where: str) -> list[list[float]]:
    """The response's vectors, or an EmbeddingError saying what is wrong with them."""
    if not isinstance(rows, list) or len(rows) != expected:
        got = len(rows) if isinstance(rows, list) else type(rows).__name__
        raise EmbeddingError(f"{where}: expected {expected} embeddings, got {got}")
    for i, row in enumerate(rows):
        if not isinstance(row, list) or not row:
            raise EmbeddingError(f"{where}: embedding #{i} is not a non-empty list of numbers")
        for value in row:
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise EmbeddingError(f"{where}: embedding #{i} contains {value!r}")
    return rows


def _openai_style_rows(data: Any) -> Any:
    """``data[].embedding`` ordered by ``index`` when the server supplies it."""
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        return None
    if all(isinstance(item.get("index"), int) for item in items):
        items = sorted(items, key=lambda item: item["index"])
    return [item.get("embedding") for item in items]


class OllamaEmbedder(HttpEmbedder):
    """POST {base}/api/embed {model, input} → {embeddings} (nomic-embed-text: 768 values)."""

    provider = "ollama"

    def __init__(
        self,
        base_url: str | None = None,
        *,
        model: str = DEFAULT_OLLAMA_MODEL,
        dimensions: int | None = None,
        timeout: float = OLLAMA_TIMEOUT_S,
        connect_timeout: float = LOCAL_CONNECT_TIMEOUT_S,
        batch_size: int = DEFAULT_HTTP_BATCH,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        self.base_url = (base_url or DEFAULT_OLLAMA_URL).rstrip("/")
        super().__init__(
            f"{self.base_url}/api/embed",
            model=model,
            dimensions=dimensions,
            timeout=timeout,
            connect_timeout=connect_timeout,
            batch_size=batch_size,
            retry=retry,
        )

    def _body(self, payload: str | list[str]) -> dict[str, Any]:
        return {"model": self.model_name, "input": payload}

    def _vectors(self, data: Any) -> Any:
        return data.get("embeddings") if isinstance(data, dict) else None


class OpenAIEmbedder(HttpEmbedder):
    """OpenAI embeddings (text-embedding-3-small: 1536 values, truncated when a width is asked for)."""

    provider = "openai"
    default_url = OPENAI_URL
    default_model = OPENAI_MODEL

    def __init__(
        self,
        api_key: str,
        *,
        url: str | None = None,
        model: str | None = None,
        dimensions: int | None = None,
        timeout: float = API_TIMEOUT_S,
        connect_timeout: float = REMOTE_CONNECT_TIMEOUT_S,
        batch_size: int = DEFAULT_HTTP_BATCH,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        if not api_key:
            raise EmbeddingError(f"{self.provider} needs an API key")
        super().__init__(
            url or self.default_url,
            model=model or self.default_model,
            dimensions=dimensions,
            timeout=timeout,
            connect_timeout=connect_timeout,
            api_key=api_key,
            batch_size=batch_size,
            retry=retry,
        )

    def _body(self, payload: str | list[str]) -> dict[str, Any]:
        return {"model": self.model_name, "input": payload}

    def _vectors(self, data: Any) -> Any:
        return _openai_style_rows(data)


class VoyageEmbedder(OpenAIEmbedder):
    """Voyage AI embeddings for documents (``input_type: 'document'``); OpenAI's response shape."""

    provider = "voyage"
    default_url = VOYAGE_URL
    default_model = VOYAGE_MODEL

    def _body(self, payload: str | list[str]) -> dict[str, Any]:
        return {"model": self.model_name, "input": payload, "input_type": "document"}


def litellm_endpoint(url: str) -> str:
    """``{url minus trailing /v1}/v1/embeddings``, so both proxy-root and /v1 URLs work."""
    base = url.rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return f"{base}/v1/embeddings"


class LiteLLMEmbedder(HttpEmbedder):
    """A LiteLLM proxy. Like the original, vectors are not padded: the model must emit the width
    asked for (or, with none asked for, keeps its own)."""

    provider = "litellm"

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        model: str = LITELLM_MODEL,
        dimensions: int | None = None,
        timeout: float = API_TIMEOUT_S,
        connect_timeout: float = REMOTE_CONNECT_TIMEOUT_S,
        batch_size: int = DEFAULT_HTTP_BATCH,
        retry: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        if not url:
            raise EmbeddingError("litellm needs a proxy URL")
        super().__init__(
            litellm_endpoint(url),
            model=model,
            dimensions=dimensions,
            timeout=timeout,
            connect_timeout=connect_timeout,
            api_key=api_key,
            batch_size=batch_size,
            retry=retry,
        )

    def _body(self, payload: str | list[str]) -> dict[str, Any]:
        return {"model": self.model_name, "input": payload}

    def _vectors(self, data: Any) -> Any:
        return _openai_style_rows(data)

    def _fit(self, rows: list[list[float]]) -> np.ndarray:
        width = self._learn_width(rows)
        for row in rows:
            if len(row) != width:
                raise EmbeddingError(
                    f"litellm at {self.url} returned {len(row)}-d vectors but {width} are "
                    "required (LiteLLM vectors are not padded; configure a model of that width)"
                )
        return np.asarray(rows, dtype=np.float32)
