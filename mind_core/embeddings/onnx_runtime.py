"""Sentence vectors from an ONNX graph: the ``tokenizers`` tokenizer, ONNX Runtime, and the
pooling sentence-transformers does, written out (mean over real tokens, then L2 normalization).

Nothing here imports torch or transformers: this is what the query path loads, and importing
torch alone costs seconds on a cold start.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mind_core.embeddings.base import EmbeddingError

DEFAULT_MAX_SEQ_LENGTH = 256
# A call of at most this many texts (a question, its topic words and the question without names)
# runs on one thread: see ``OnnxSentenceModel.session_for``.
FEW_TEXTS = 3


def max_seq_length_of(model_dir: Path) -> int:
    """Word pieces the model reads per text, from sentence-transformers' own config file."""
    try:
        config = json.loads((model_dir / "sentence_bert_config.json").read_text())
        return int(config["max_seq_length"])
    except (OSError, ValueError, KeyError, TypeError):
        return DEFAULT_MAX_SEQ_LENGTH


class OnnxSentenceModel:
    """ONNX Runtime sessions of one graph (``session_for``) and its tokenizer; ``encode`` gives
    unit-length vectors."""

    def __init__(self, onnx_path: Path, model_dir: Path, first_call_texts: int | None = None) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(
                f"the ONNX embedder needs onnxruntime and tokenizers: `pip install onnxruntime tokenizers` ({exc})"
            ) from exc
        self.max_seq_length = max_seq_length_of(model_dir)
        try:
            self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        except Exception as exc:  # tokenizers raises its own Exception type for unreadable files
            raise EmbeddingError(f"could not read the tokenizer in {model_dir}: {exc}") from exc
        # A copy that counts whole texts (measuring over-long text is what counting is for).
        self.counter = Tokenizer.from_str(self.tokenizer.to_str())
        self.counter.no_truncation()
        self.counter.no_padding()
        # Truncate like sentence-transformers; padding happens per pass, to that pass's longest text.
        self.tokenizer.enable_truncation(max_length=self.max_seq_length)
        self.tokenizer.no_padding()
        self._onnxruntime = onnxruntime
        self.onnx_path = onnx_path
        self._sessions: dict[int, Any] = {}
        self._sessions_lock = threading.Lock()
        # the session the first call needs is made now: a file ONNX Runtime cannot load fails here
        first = self.session_for(FEW_TEXTS + 1 if first_call_texts is None else first_call_texts)
        self.input_names = {i.name for i in first.get_inputs()}

    def session_for(self, texts: int) -> Any:
        """The session for a call of ``texts`` texts: one intra-op thread for a call of at most
        ``FEW_TEXTS`` (a question: splitting a pass of a dozen tokens over threads cost a fifth
        more CPU, with the same vectors), ONNX Runtime's default (a thread per core) for larger
        calls. A session is made on first use, and a small call never makes a second one (each
        holds its own copy of the weights, about 60 MB): a process that only asks questions
        loads the one-thread session, a harvest the default one (its last, small call included)."""
        small = texts <= FEW_TEXTS and (1 in self._sessions or 0 not in self._sessions)
        threads = 1 if small else 0
        session = self._sessions.get(threads)
        if session is None:
            with self._sessions_lock:
                session = self._sessions.get(threads)
                if session is None:
                    session = self._sessions[threads] = self._new_session(threads)
        return session

    def _new_session(self, threads: int) -> Any:
        options = self._onnxruntime.SessionOptions()
        options.log_severity_level = 3  # errors only: ORT's warnings are about graph fusions
        options.intra_op_num_threads = threads  # 0: ONNX Runtime's default, a thread per core
        # ORT's pool threads busy-wait for work between operators by default: for a question's
        # one short text that spinning was half the CPU of embedding it (10 ms of 10; 5 without,
        # benchmarks/archive.py), and on a machine running other jobs it takes their cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        return self._onnxruntime.InferenceSession(str(self.onnx_path), options, providers=["CPUExecutionProvider"])

    def count_tokens(self, text: str) -> int:
        """Word pieces ``text`` becomes, without [CLS]/[SEP] and without truncation."""
        return len(self.counter.encode(text, add_special_tokens=False).ids)

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """(n, hidden) float32 unit vectors; texts run in passes of ``batch_size`` sorted by length,
        so a pass pads its texts to a similar length instead of to the call's longest one."""
        encodings = self.tokenizer.encode_batch(list(texts))
        session = self.session_for(len(encodings))
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
        out: np.ndarray | None = None
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            width = len(encodings[chosen[0]].ids)
            ids = np.zeros((len(chosen), width), dtype=np.int64)
            mask = np.zeros((len(chosen), width), dtype=np.int64)
            for row, index in enumerate(chosen):
                tokens = encodings[index].ids
                ids[row, : len(tokens)] = tokens
                mask[row, : len(tokens)] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.input_names:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feed)[0]
            pooled = mean_pool(hidden, mask)
            if out is None:
                out = np.zeros((len(encodings), pooled.shape[1]), dtype=np.float32)
            out[chosen] = pooled
        return out if out is not None else np.zeros((0, 0), dtype=np.float32)


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the token vectors a text really has (padding excluded), scaled to unit length."""
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    pooled = summed / counts
    norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
    return (pooled / norms).astype(np.float32)
