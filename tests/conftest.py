"""Shared fixtures: the real third-party data folder, a fresh mind, and the embedders."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO_ROOT / ".." / "shared" / "data").resolve()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the repo; tests that need it skip (only) when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder not present at {SHARED_DATA} (clone without ../shared)")
    return SHARED_DATA


@pytest.fixture
def fake_embedder():
    """A fresh deterministic bag-of-words embedder (1024-d) that records what it embedded."""
    from tests.fakes import HashingEmbedder

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
