"""Staging and step outputs on an S3-compatible object store: moto's server on loopback, reached
through fsspec (s3fs) exactly as a Kubernetes pod reaches a bucket: the endpoint and credentials
from the environment, the store from ``s3://`` URLs."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import s3fs
from mind_harvest.pipelines.definitions import STEP_OUTPUTS_URL_ENV, default_resources
from mind_harvest.pipelines.resources import MindHomeResource

from mind_core.harvest.pipeline import harvest as engine_harvest
from mind_core.harvest.pipeline import register_source
from mind_core.mind import Mind
from mind_core.testing.dump import canonical_dump
from mind_core.testing.exports import write_chatgpt_export
from mind_core.testing.fakes import HashingEmbedder
from tests.pipelines.harness import add_partitions, harvest, materialized, register

BUCKET = "mind-harvest-test"
SMALL_CHUNKS = {"ops": {"staged_vectors": {"ops": {"plan_vector_chunks": {"config": {"chunk_texts": 4}}}}}}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def s3_server() -> Iterator[str]:
    """moto's S3 server in a process of its own on a free loopback port; stopped afterwards."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert server.poll() is None, "moto's server exited at start"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def bucket(s3_server, monkeypatch) -> Iterator[s3fs.S3FileSystem]:
    """A fresh bucket; the pod's environment: endpoint and credentials, nothing in the URLs."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    s3fs.S3FileSystem.clear_instance_cache()
    fs = s3fs.S3FileSystem(endpoint_url=s3_server)
    if fs.exists(BUCKET):
        fs.rm(BUCKET, recursive=True)
    fs.mkdir(BUCKET)
    yield fs
    fs.rm(BUCKET, recursive=True)
    s3fs.S3FileSystem.clear_instance_cache()


def test_a_harvest_staged_on_s3_writes_the_same_mind_as_the_engine(tmp_path, home, instance, resources, bucket,
                                                                   monkeypatch):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 3, 5)
    key = register(home, "alpha", "chatgpt", export, "gpt")
    add_partitions(instance, key)
    monkeypatch.setenv(STEP_OUTPUTS_URL_ENV, f"s3://{BUCKET}/step-outputs")
    on_s3 = {
        **resources,
        "mind_home": MindHomeResource(root=str(home.root), staging_url=f"s3://{BUCKET}/staging"),
        "io_manager": default_resources()["io_manager"],
    }
    result = harvest(instance, on_s3, key, run_config=SMALL_CHUNKS)
    assert result.success
    meta = materialized(result)
    assert meta["staged_vectors"]["chunks"] == 4 and meta["vector_index"]["vectors_loaded"] == 15

    staged = bucket.find(f"{BUCKET}/staging")
    assert any(path.endswith(".parquet") for path in staged), staged
    outputs = bucket.find(f"{BUCKET}/step-outputs/{result.run_id}")
    assert any("embed_vector_chunk[chunk_3]" in path for path in outputs), outputs
    assert not (home.root / "staging").exists()  # nothing staged on the home node's disk

    with Mind.open(tmp_path / "engine.mind", embedder=HashingEmbedder()) as engine:
        register_source(engine, "chatgpt", export, "gpt")
        engine_harvest(engine, "gpt")
        expected = canonical_dump(engine)
    with Mind.open(home.mind_path("alpha"), readonly=True) as mind:
        assert canonical_dump(mind) == expected


def test_an_object_store_that_is_down_fails_the_run_with_the_url_and_keeps_the_mind(tmp_path, home, instance,
                                                                                  resources, monkeypatch):
    key = register(home, "alpha", "chatgpt", write_chatgpt_export(tmp_path / "e" / "c.json", 1, 2), "gpt")
    add_partitions(instance, key)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    s3fs.S3FileSystem.clear_instance_cache()
    url = f"s3://{BUCKET}/staging"
    mind_home = MindHomeResource(root=str(home.root), staging_url=url)
    result = harvest(instance, {**resources, "mind_home": mind_home}, key, raise_on_error=False)
    s3fs.S3FileSystem.clear_instance_cache()
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_failure_data.user_failure_data.description.startswith(f"staging store {url} is unreachable: ")
    with Mind.open(home.mind_path("alpha"), readonly=True) as mind:
        assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames") == 0
