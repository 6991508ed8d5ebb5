"""Shared fixtures: the real third-party data folder, a fresh mind, the embedders, query servers."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mind_core.timestamps import use_clock

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO_ROOT / ".." / "shared" / "data").resolve()


# The instant every test runs at: no test reads the machine's clock, so none depends on the date
# (or the weekday: "on Saturday" in a question) it runs on. A test that needs another instant
# moves ``now`` itself; tests/test_clock.py runs the date-sensitive searches over a whole week.
FIXED_NOW = datetime(2027, 1, 15, 10, 0, tzinfo=UTC)


class SettableClock:
    """The clock the engine reads during a test: it starts at a fixed instant and each reading
    advances it by one millisecond (the stored resolution), so "later" stays later, as on a real
    clock, while every instant is the same on every run. A test may set ``instant`` itself."""

    def __init__(self, instant: datetime) -> None:
        self.instant = instant

    def __call__(self) -> datetime:
        self.instant += timedelta(milliseconds=1)
        return self.instant


@pytest.fixture(autouse=True)
def now():
    """Pin the engine's clock (``mind_core.timestamps.utc_now``) for the test; returns the clock."""
    clock = SettableClock(FIXED_NOW)
    with use_clock(clock):
        yield clock


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the repo; tests that need it skip (only) when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder not present at {SHARED_DATA} (clone without ../shared)")
    return SHARED_DATA


@pytest.fixture
def fake_embedder():
    """A fresh deterministic bag-of-words embedder (1024-d) that records what it embedded."""
    from mind_core.testing.fakes import HashingEmbedder

    return HashingEmbedder()


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory):
    """A session folder for the exported ONNX files ($MIND_HARVEST_ONNX_CACHE while it lives), so
    tests never read or write the user's cache; the real export happens once per session."""
    from mind_core.embeddings.onnx_export import CACHE_ENV

    folder = tmp_path_factory.mktemp("onnx-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_ENV, str(folder))
        yield folder


@pytest.fixture(scope="session")
def real_embedder(onnx_cache):
    """The in-process all-MiniLM-L6-v2 provider (default backend) at 1024 dimensions, loaded
    once per test session."""
    from mind_core.embeddings import InprocessEmbedder

    embedder = InprocessEmbedder(dimensions=1024)
    embedder.embed("warm up")
    return embedder


@contextmanager
def query_servers(home):
    """``start(**config)``: a query server on a free loopback port over ``home`` (workspace
    ``team``, the fake embedder), its URL; every server started is stopped when the block ends."""
    from mind_core.query.http_server import QueryServer
    from mind_core.query.service import ServiceConfig
    from mind_core.testing.fakes import HashingEmbedder

    servers = []

    def start(**overrides) -> str:
        config = ServiceConfig(home=home, default_workspace="team", embedder=HashingEmbedder(), **overrides)
        server = QueryServer(config, "127.0.0.1", 0)
        thread = threading.Thread(target=server.serve, daemon=True)
        thread.start()
        servers.append((server, thread))
        return server.url

    try:
        yield start
    finally:
        for server, thread in servers:
            server.stop()
            thread.join(timeout=10)
            server.close()


@pytest.fixture
def running(home):
    """``query_servers`` over the test module's ``home``: the servers a test starts stop after it."""
    with query_servers(home) as start:
        yield start
