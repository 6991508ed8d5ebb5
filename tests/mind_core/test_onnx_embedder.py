"""The ONNX Runtime embedder, its export cache, and the vector-space fingerprint.

Most tests run a tiny stand-in graph (tests/fakes.write_tiny_bert_onnx) through the real
tokenizer, ONNX Runtime and quantizer, with the exporter replaced; the few ``real_model`` tests
export the packaged MiniLM once per session into a session cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mind_core.embeddings import EmbeddingError, InprocessEmbedder, onnx_export
from mind_core.embeddings import inprocess as inprocess_module
from mind_core.embeddings.inprocess import BACKEND_ENV, bundled_model_path, resolve_backend
from mind_core.embeddings.onnx_runtime import FEW_TEXTS, mean_pool
from mind_core.embeddings.token_quantization import quantize_per_token, quantize_weights
from mind_core.errors import FingerprintMismatchError, InvalidInputError
from mind_core.mind import Mind
from mind_core.testing.fakes import HashingEmbedder, write_tiny_bert_onnx
from tests.conftest import REPO_ROOT

TEXTS = ["short", "a somewhat longer sentence about databases and indexes", "", "Ünïcödé 🐝 text", "third"]


@pytest.fixture
def tiny_model_dir(tmp_path: Path) -> Path:
    """A model folder with the packaged tokenizer and configs, and stand-in weights."""
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("tokenizer.json", "config.json", "sentence_bert_config.json"):
        shutil.copy(bundled_model_path() / name, folder / name)
    (folder / onnx_export.WEIGHTS_FILE).write_bytes(b"stand-in weights")
    return folder


@pytest.fixture
def exports(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Replace the torch export with the tiny graph; the list records every export made."""
    made: list[Path] = []

    def fake_export(model_dir: Path, out_path: Path) -> None:
        write_tiny_bert_onnx(out_path)
        made.append(out_path)

    monkeypatch.setattr(onnx_export, "export_fp32", fake_export)
    return made


def tiny_embedder(model_dir: Path, cache: Path, backend: str = "onnx", **kwargs) -> InprocessEmbedder:
    return InprocessEmbedder(16, model_path=model_dir, backend=backend, onnx_cache=cache, **kwargs)


# -- backend selection -----------------------------------------------------------------------------


def test_backend_comes_from_argument_then_environment_then_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    assert resolve_backend() == inprocess_module.DEFAULT_BACKEND
    monkeypatch.setenv(BACKEND_ENV, "torch")
    assert resolve_backend() == "torch"
    assert resolve_backend("onnx") == "onnx"
    embedder = InprocessEmbedder()
    assert (embedder.backend, embedder.runtime, embedder.quantization) == ("torch", "torch", "none")
    monkeypatch.setenv(BACKEND_ENV, "tensorflow")
    with pytest.raises(InvalidInputError, match="onnx-int8, onnx, torch"):
        InprocessEmbedder()


# -- pooling and the runtime ---------------------------------------------------------------------


def test_mean_pool_ignores_padding_and_normalizes() -> None:
    hidden = np.array([[[1.0, 0.0], [3.0, 4.0], [100.0, 100.0]]], dtype=np.float32)
    mask = np.array([[1, 1, 0]])
    pooled = mean_pool(hidden, mask)
    np.testing.assert_allclose(pooled, [[2.0 / np.hypot(2, 2), 2.0 / np.hypot(2, 2)]], rtol=1e-6)


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_onnx_vectors_are_unit_padded_and_independent_of_batching(
    tiny_model_dir: Path, tmp_path: Path, exports: list[Path], backend: str
) -> None:
    """int8 too: activations are quantized per token, so neither pass-mates nor padding move a
    vector (the real model's case, where per-pass scales failed, is
    test_int8_vectors_do_not_depend_on_their_pass)."""
    one_per_pass = tiny_embedder(tiny_model_dir, tmp_path / "cache", backend, batch_size=1)
    two_per_pass = tiny_embedder(tiny_model_dir, tmp_path / "cache", backend, batch_size=2)
    batch = two_per_pass.embed_batch(TEXTS)
    assert batch.shape == (5, 16) and batch.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(batch[:, :8], axis=1), 1.0, atol=1e-5)
    assert not batch[:, 8:].any()
    # Sorting by length and padding per pass must not change any text's vector or its row.
    np.testing.assert_allclose(batch, one_per_pass.embed_batch(TEXTS), atol=1e-5)
    for row, text in zip(batch, TEXTS, strict=True):
        np.testing.assert_allclose(row, two_per_pass.embed(text), atol=1e-5)
    assert two_per_pass.embed_batch([]).shape == (0, 16)
    assert two_per_pass.count_tokens("hello world") == 2
    assert two_per_pass.count_tokens("word " * 600) == 600  # counted past the 256-piece window
    assert len(exports) == 1


def test_a_question_runs_on_one_thread_and_a_batch_on_the_default_pool(
    tiny_model_dir: Path, tmp_path: Path, exports: list[Path]
) -> None:
    """A call of a few texts (a question) runs on a one-thread session, a larger one on ONNX
    Runtime's default; the vectors are the same either way, and a small call never loads a second
    session (each holds the weights) in a process that already has the default one."""
    asking = tiny_embedder(tiny_model_dir, tmp_path / "cache", "onnx-int8")
    question = asking.embed(TEXTS[1])
    model = asking._model()
    assert sorted(model._sessions) == [1]  # a process that only asks loads one session
    batch = asking.embed_batch(TEXTS)
    assert sorted(model._sessions) == [0, 1]
    assert np.array_equal(question, batch[1])
    assert np.array_equal(asking.embed_batch(TEXTS[:FEW_TEXTS]), batch[:FEW_TEXTS])

    harvesting = tiny_embedder(tiny_model_dir, tmp_path / "other-cache", "onnx-int8")
    harvested = harvesting.embed_batch(TEXTS)  # loaded for a large call: the default session
    harvesting.embed(TEXTS[0])
    assert sorted(harvesting._model()._sessions) == [0]
    assert np.array_equal(harvested, batch)


def test_int8_is_its_own_file_and_close_to_fp32(tiny_model_dir: Path, tmp_path: Path, exports: list[Path]) -> None:
    fp32 = tiny_embedder(tiny_model_dir, tmp_path / "cache", "onnx").embed_batch(TEXTS)
    int8 = tiny_embedder(tiny_model_dir, tmp_path / "cache", "onnx-int8").embed_batch(TEXTS)
    cosines = (fp32[:, :8] * int8[:, :8]).sum(axis=1)
    assert not np.array_equal(fp32, int8)
    assert cosines.min() > 0.9
    assert len(exports) == 1  # both variants come from one export


def test_the_int8_graph_quantizes_each_weight_matmul_per_token(tmp_path: Path) -> None:
    import onnx

    write_tiny_bert_onnx(tmp_path / "fp32.onnx")
    assert quantize_per_token(tmp_path / "fp32.onnx", tmp_path / "int8.onnx") == 1
    ops = [node.op_type for node in onnx.load(str(tmp_path / "int8.onnx")).graph.node]
    assert ops.count("MatMulInteger") == 1 and "MatMul" not in ops
    assert "ReduceMax" in ops and "DynamicQuantizeLinear" not in ops  # a scale per row, not per pass

    weights = np.array([[1.0, -0.5, 0.0], [-2.0, 0.25, 0.0]], dtype=np.float32)
    quantized, scales = quantize_weights(weights)
    assert quantized.dtype == np.int8 and np.abs(quantized).max(axis=0).tolist() == [127, 127, 0]
    np.testing.assert_allclose(quantized * scales, weights, atol=scales.max() / 2)


# -- the cache -------------------------------------------------------------------------------------


def test_cache_is_keyed_by_the_weights_and_reused(tiny_model_dir: Path, tmp_path: Path, exports: list[Path]) -> None:
    root = tmp_path / "cache"
    first = onnx_export.ensure_cache(tiny_model_dir, root)
    assert onnx_export.ensure_cache(tiny_model_dir, root) == first and len(exports) == 1
    manifest = first.manifest()
    assert manifest["settings"] == onnx_export.EXPORT_SETTINGS
    assert set(manifest["files"]) == {onnx_export.FP32_FILE, onnx_export.INT8_FILE}
    assert first.status(verify_hashes=True)["state"] == "ok"

    (tiny_model_dir / onnx_export.WEIGHTS_FILE).write_bytes(b"other weights, other vectors")
    second = onnx_export.ensure_cache(tiny_model_dir, root)
    assert second.folder != first.folder and len(exports) == 2


def test_a_damaged_cache_is_found_and_rebuilt_with_a_message(
    tiny_model_dir: Path, tmp_path: Path, exports: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "cache"
    cache = onnx_export.ensure_cache(tiny_model_dir, root)
    expected = tiny_embedder(tiny_model_dir, root, "onnx-int8").embed("a memory")
    capsys.readouterr()

    int8 = cache.path("int8")
    int8.write_bytes(b"\0" * int8.stat().st_size)  # same size: only the hashes can tell
    assert cache.problem() is None
    assert "SHA-256" in cache.status(verify_hashes=True)["state"]
    # A new process (no loaded session) finds that ONNX Runtime cannot read it, and rebuilds.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inprocess_module, "_models", {})
        vector = tiny_embedder(tiny_model_dir, root, "onnx-int8").embed("a memory")
    np.testing.assert_allclose(vector, expected, atol=1e-6)
    assert "could not load it" in capsys.readouterr().err and len(exports) == 2

    cache.path("none").write_bytes(b"truncated")
    assert "bytes" in cache.problem()
    onnx_export.ensure_cache(tiny_model_dir, root)
    assert "exporting it from the packaged weights" in capsys.readouterr().err
    assert cache.problem(verify_hashes=True) is None and len(exports) == 3


def test_a_failed_export_leaves_no_usable_looking_cache(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(model_dir: Path, out_path: Path) -> None:
        out_path.write_bytes(b"half a model")
        raise RuntimeError("killed mid-export")

    monkeypatch.setattr(onnx_export, "export_fp32", crash)
    with pytest.raises(RuntimeError):
        onnx_export.ensure_cache(tiny_model_dir, tmp_path / "cache")
    cache = onnx_export.cache_for(tiny_model_dir, tmp_path / "cache")
    assert cache.problem() is not None
    assert not cache.path("none").exists() and not cache.path("int8").exists()


def test_without_torch_a_missing_cache_says_what_to_run(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(EmbeddingError, match="python -m mind_core.embeddings.onnx_export"):
        tiny_embedder(tiny_model_dir, tmp_path / "cache").embed("x")


_EXPORTER = """
import sys, time
from pathlib import Path
from mind_core.embeddings import onnx_export
from mind_core.testing.fakes import write_tiny_bert_onnx
model_dir, root, log, hold = (Path(a) for a in sys.argv[1:5])

def export(model_dir, out_path):
    with log.open("a") as handle:
        handle.write(f"export {out_path.name}\\n")
    if hold.name != "-":
        hold.with_suffix(".exporting").touch()
        while not hold.exists():  # the test releases this exporter once the other one waits
            time.sleep(0.01)
    write_tiny_bert_onnx(out_path)

onnx_export.export_fp32 = export
print(onnx_export.ensure_cache(model_dir, root).folder)
"""


def _blocked_on_flock(pid: int) -> bool:
    """Whether ``pid`` waits for an flock (a ``->`` line of /proc/locks)."""
    return any(
        "->" in line and f" {pid} " in line for line in Path("/proc/locks").read_text().splitlines()
    )


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux /proc/locks to see a waiting process")
def test_two_processes_exporting_at_once_make_one_whole_cache(tiny_model_dir: Path, tmp_path: Path) -> None:
    root, log, hold = tmp_path / "cache", tmp_path / "exports.log", tmp_path / "release"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}

    def start(hold_path: Path | str) -> subprocess.Popen[str]:
        argv = [sys.executable, "-c", _EXPORTER, str(tiny_model_dir), str(root), str(log), str(hold_path)]
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    first = start(hold)
    deadline = time.monotonic() + 60
    while not hold.with_suffix(".exporting").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    second = start("-")
    while not _blocked_on_flock(second.pid) and time.monotonic() < deadline:
        assert second.poll() is None, second.communicate()
        time.sleep(0.02)
    assert _blocked_on_flock(second.pid), "the second exporter never waited for the first"
    hold.touch()
    outputs = [process.communicate(timeout=60) for process in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], outputs
    assert outputs[0][0] == outputs[1][0]  # the same folder
    assert log.read_text().splitlines() == ["export model.onnx"]  # exported once
    cache = onnx_export.cache_for(tiny_model_dir, root)
    assert cache.problem(verify_hashes=True) is None
    assert not [p for p in cache.folder.iterdir() if p.name.startswith(".")]  # no temp files left


# -- the fingerprint -------------------------------------------------------------------------------


class InprocessLike(HashingEmbedder):
    """A fake with the fingerprint of the in-process model on a given backend."""

    provider = "inprocess"
    model_name = inprocess_module.MODEL_NAME

    def __init__(self, backend: str) -> None:
        super().__init__(1024)
        self.runtime, self.quantization = inprocess_module.BACKENDS[backend]


def _write_a_frame(path: Path, embedder) -> None:
    with Mind.open(path, embedder=embedder) as mind:
        mind.sessions.ensure("s1")
        frame_id = mind.frames.create_i_frame("s1", "the quick brown fox").id
        mind.search.vectors.index_frames([(frame_id, "the quick brown fox")])


def test_int8_and_fp32_vectors_never_share_a_mind(tmp_path: Path) -> None:
    path = tmp_path / "mind.db"
    _write_a_frame(path, InprocessLike("onnx-int8"))
    with Mind.open(path, embedder=InprocessLike("onnx-int8")) as mind:
        stored = mind.search.vectors.stored_fingerprint()
    assert stored["embedding_backend"] == "onnx" and stored["embedding_quantization"] == "int8-per-token"
    for other in ("onnx", "torch"):
        with pytest.raises(FingerprintMismatchError, match="int8-per-token weights.*fp32 weights.*mind reindex"):
            Mind.open(path, embedder=InprocessLike(other))
    # `mind reindex` adopts the new space; the old one is then the one refused.
    with Mind.open(path, embedder=InprocessLike("onnx"), rebuild_vectors=True) as mind:
        assert mind.search.vectors.stored_fingerprint()["embedding_quantization"] == "none"
    with pytest.raises(FingerprintMismatchError):
        Mind.open(path, embedder=InprocessLike("onnx-int8"))


def test_a_mind_of_the_earlier_int8_graph_is_refused_until_reindexed(tmp_path: Path) -> None:
    """Minds embedded before per-token quantization recorded "int8" (scales per pass): their
    vectors are another space, found by the fingerprint, and `mind reindex` moves them."""
    path = tmp_path / "mind.db"
    _write_a_frame(path, InprocessLike("onnx-int8"))
    with Mind.open(path) as mind:
        mind.db.execute("UPDATE meta SET value = 'int8' WHERE key = 'embedding_quantization'")
    with pytest.raises(FingerprintMismatchError, match=r"int8 weights\).*int8-per-token weights.*mind reindex"):
        Mind.open(path, embedder=InprocessLike("onnx-int8"))
    with Mind.open(path, embedder=InprocessLike("onnx-int8"), rebuild_vectors=True) as mind:
        assert mind.search.vectors.stored_fingerprint()["embedding_quantization"] == "int8-per-token"


def test_fp32_onnx_and_torch_share_a_space_and_old_minds_are_fp32(tmp_path: Path) -> None:
    path = tmp_path / "mind.db"
    _write_a_frame(path, InprocessLike("torch"))
    Mind.open(path, embedder=InprocessLike("onnx")).close()
    legacy = tmp_path / "legacy.db"
    _write_a_frame(legacy, InprocessLike("torch"))
    with Mind.open(legacy) as mind:  # a mind written before the space rows existed
        mind.db.execute("DELETE FROM meta WHERE key IN ('embedding_backend', 'embedding_quantization')")
    Mind.open(legacy, embedder=InprocessLike("onnx")).close()
    with pytest.raises(FingerprintMismatchError):
        Mind.open(legacy, embedder=InprocessLike("onnx-int8"))


def test_reindex_to_a_provider_without_a_runtime_drops_the_space_rows(tmp_path: Path) -> None:
    path = tmp_path / "mind.db"
    _write_a_frame(path, InprocessLike("onnx-int8"))
    with Mind.open(path, embedder=HashingEmbedder(1024), rebuild_vectors=True) as mind:
        assert mind.search.vectors.stored_fingerprint() == {
            "embedding_provider": "fake", "embedding_model": "hashing", "embedding_dim": "1024",
        }
