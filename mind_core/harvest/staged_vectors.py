"""Vectors embedded away from the mind: the texts that need vectors, in chunks, to Parquet.

Embedding is the heavy, stateless part of a harvest: it needs the texts and the model, not the
mind. After the import, the home node stages the texts of the frames that need a vector (new,
changed, or left without one by a crash: what ``reconcile_vec_index`` would embed; none for an
unchanged source) as one Parquet file, one row group per chunk of ``chunk_size`` texts, written
as the frames are read (a page at a time, never all texts at once). Each chunk has a key: the
digest of its texts' content hashes, in the file's footer. Any worker embeds chunk number ``n``
(reading only that row group) the way ``VectorIndex`` does (the frame text, then the windows of
its later text) into ``chunk-<key>.parquet``, keyed by content hash. A chunk file is written
whole or not at all; one that already exists for the same texts and embedder is kept, so a
retried step or a second run never embeds a chunk twice, and the mind is never touched.

The home node then loads the vectors into the mind, a row batch of one chunk file at a time,
for every frame that needs one, matching by content hash; a frame no chunk covers (its text
changed in between) is embedded there, as the engine would. A chunk made by another embedder
(provider, model, width, or quantization) than the mind's is refused: vectors of two spaces in
one index give meaningless distances.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from mind_core.embeddings.base import Embedder, to_blob
from mind_core.errors import FingerprintMismatchError, InvalidInputError
from mind_core.harvest.staging_store import filesystem, reaching
from mind_core.mind import Mind
from mind_core.search.vector_index import (
    EMBED_BATCH,
    FrameVectors,
    TextChunk,
    VectorIndex,
    framed_vectors,
    meta_fingerprint,
    same_space,
    split_chunks,
)
from mind_core.store.db import IN_LIST, in_list
from mind_core.store.reconcile import ids_needing_vectors, pending_vector_batches

DEFAULT_CHUNK_TEXTS = 2000
FOOTER_KEY = b"mind_harvest.staged_vectors"
FORMAT_VERSION = 1

_CHUNK = pa.struct(
    [("index", pa.int32()), ("char_start", pa.int32()), ("char_end", pa.int32()), ("vector", pa.binary())]
)
SCHEMA = pa.schema([("content_hash", pa.string()), ("vector", pa.binary()), ("chunks", pa.list_(_CHUNK))])

Progress = Callable[[int, int | None], None]


TEXTS_SCHEMA = pa.schema([("content_hash", pa.string()), ("content", pa.large_string())])
LOAD_BATCH_ROWS = 1_000  # rows of a chunk file decoded at a time when loading vectors


@dataclass(frozen=True)
class StagedTexts:
    """What ``stage_pending_texts`` wrote: the count of texts and the key of each chunk."""

    texts: int
    chunk_size: int
    chunk_keys: list[str]


def stage_pending_texts(mind: Mind, texts_url: str, chunk_size: int = DEFAULT_CHUNK_TEXTS) -> StagedTexts:
    """Write the texts of the frames that need a vector to ``texts_url``, one row group of
    ``chunk_size`` texts per chunk. A text shared by frames of one page is written once; the
    load matches vectors to frames by content hash, so a text repeated across pages costs only
    a second embedding, never a wrong vector."""
    _check_chunk_size(chunk_size)
    fs, path = filesystem(texts_url)
    keys: list[str] = []
    pending: list[tuple[str, str]] = []
    texts = 0

    def flush(writer: pq.ParquetWriter, rows: list[tuple[str, str]]) -> None:
        digests = [digest for digest, _ in rows]
        writer.write_table(
            pa.table({"content_hash": digests, "content": [content for _, content in rows]}, schema=TEXTS_SCHEMA),
            row_group_size=chunk_size,
        )
        keys.append(chunk_key(digests))

    def write(writer: pq.ParquetWriter) -> None:
        nonlocal pending, texts
        ids = ids_needing_vectors(mind.db)
        for batch in pending_vector_batches(mind.db, ids):
            page = {digest: content for _, content, digest in batch}
            for digest, content in page.items():
                pending.append((digest, content))
                texts += 1
                if len(pending) == chunk_size:
                    flush(writer, pending)
                    pending = []
        if pending:
            flush(writer, pending)

    _write_streamed(
        texts_url,
        fs,
        path,
        write,
        lambda: {"version": FORMAT_VERSION, "texts": texts, "chunk_size": chunk_size, "chunks": keys},
    )
    return StagedTexts(texts, chunk_size, keys)


def chunk_key(content_hashes: list[str]) -> str:
    """The key of a chunk of texts: the same texts in the same order give the same key."""
    return hashlib.sha256("\n".join(content_hashes).encode()).hexdigest()[:24]


def staged_chunks(texts_url: str) -> StagedTexts:
    """The chunk size and keys recorded in a staged texts file's footer."""
    footer = _footer(texts_url)
    return StagedTexts(int(footer.get("texts", 0)), int(footer["chunk_size"]), list(footer["chunks"]))


def _texts_of_chunk(texts_url: str, first: int, last: int) -> Iterator[tuple[str, str]]:
    """Rows ``first`` to ``last`` of the staged texts, decoding only the row groups that hold them."""
    fs, path = filesystem(texts_url)
    with reaching(texts_url), fs.open(path, "rb") as source, pq.ParquetFile(source) as staged:
        position = 0
        for group in range(staged.metadata.num_row_groups):
            rows = staged.metadata.row_group(group).num_rows
            if position + rows > first and position < last:
                table = staged.read_row_group(group)
                begin = max(0, first - position)
                for row in table.slice(begin, min(rows, last - position) - begin).to_pylist():
                    yield row["content_hash"], row["content"]
            position += rows
            if position >= last:
                return


@dataclass
class EmbeddedChunk:
    url: str
    texts: int  # distinct texts embedded (frame vectors)
    chunk_vectors: int  # windows of long texts embedded
    kept: bool = False  # the chunk file was already there, made for the same texts by the same embedder


def _kept_chunk(chunk_url: str, embedder: Embedder) -> EmbeddedChunk | None:
    """The chunk file already at ``chunk_url`` (its name is its texts' key) when it was made by an
    embedder of ``embedder``'s space: a retried step or a second run does not embed it again."""
    fs, path = filesystem(chunk_url)
    with reaching(chunk_url):
        if not fs.exists(path):
            return None
    footer = _footer(chunk_url)
    if footer.get("version") != FORMAT_VERSION or footer.get("fingerprint") != meta_fingerprint(embedder):
        return None
    return EmbeddedChunk(chunk_url, int(footer.get("texts", 0)), int(footer.get("chunk_vectors", 0)), kept=True)


def embed_chunk(
    texts_url: str, chunk: int, chunk_size: int, embedder: Embedder, chunk_url: str
) -> EmbeddedChunk:
    """Embed texts ``chunk * chunk_size`` to ``(chunk + 1) * chunk_size`` of the staged texts into
    ``chunk_url`` (replaced whole; never half-written)."""
    _check_chunk_size(chunk_size)
    if chunk < 0:
        raise InvalidInputError(f"chunk must be >= 0, got {chunk}")
    kept = _kept_chunk(chunk_url, embedder)
    if kept is not None:
        return kept
    items = list(_texts_of_chunk(texts_url, chunk * chunk_size, (chunk + 1) * chunk_size))
    rows: list[dict[str, object]] = []
    windows = 0
    for start in range(0, len(items), EMBED_BATCH):
        batch = items[start : start + EMBED_BATCH]
        chunked = [(index, content, split_chunks(content)) for index, (_, content) in enumerate(batch)]
        batch_texts = [content for _, content, _ in chunked]
        batch_texts += [window.text for _, _, windows_of in chunked for window in windows_of]
        blobs = [to_blob(vector) for vector in embedder.embed_batch(batch_texts)]
        for (digest, _), entry in zip(batch, framed_vectors(chunked, blobs), strict=True):
            windows += len(entry.chunks)
            rows.append(
                {
                    "content_hash": digest,
                    "vector": entry.vector,
                    "chunks": [
                        {"index": c.index, "char_start": c.char_start, "char_end": c.char_end, "vector": blob}
                        for c, blob in entry.chunks
                    ],
                }
            )
    footer = {
        "version": FORMAT_VERSION,
        "fingerprint": meta_fingerprint(embedder),
        "texts": len(rows),
        "chunk_vectors": windows,
    }
    _write_whole(pa.Table.from_pylist(rows, schema=SCHEMA), chunk_url, footer)
    return EmbeddedChunk(chunk_url, len(rows), windows)


def _write_whole(table: pa.Table, url: str, footer: dict[str, object]) -> None:
    fs, path = filesystem(url)

    def write(writer: pq.ParquetWriter) -> None:
        writer.write_table(table)

    _write_streamed(url, fs, path, write, lambda: footer, schema=table.schema)


def _write_streamed(
    url: str,
    fs: Any,
    path: str,
    write: Callable[[pq.ParquetWriter], None],
    footer: Callable[[], dict[str, object]],
    schema: pa.Schema = TEXTS_SCHEMA,
) -> None:
    """Write ``url`` through ``write(writer)`` into a partial file renamed into place at the end,
    with ``footer()`` (read after the rows are written) in the file's key-value metadata: the
    file is there whole or not at all."""
    folder, _, name = path.rpartition("/")
    partial = f"{folder}/.{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.partial"
    with reaching(url):
        fs.makedirs(folder, exist_ok=True)
        try:
            with fs.open(partial, "wb") as sink:
                with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
                    write(writer)
                    writer.add_key_value_metadata({FOOTER_KEY: json.dumps(footer()).encode()})
            fs.mv(partial, path)
        except BaseException:
            if fs.exists(partial):
                fs.rm(partial)
            raise


def _footer(url: str) -> dict[str, Any]:
    fs, path = filesystem(url)
    with reaching(url), fs.open(path, "rb") as source:
        metadata = pq.read_metadata(source).metadata or {}
    return json.loads(metadata.get(FOOTER_KEY, b"{}"))


def chunk_fingerprint(chunk_url: str) -> dict[str, str]:
    """The embedder fingerprint a chunk file was made with."""
    footer = _footer(chunk_url)
    if footer.get("version") != FORMAT_VERSION:
        raise InvalidInputError(f"{chunk_url} is not a vectors file of this version of mind-harvest")
    return dict(footer["fingerprint"])


def refuse_other_space(chunk_url: str, embedder: Embedder) -> None:
    """FingerprintMismatchError when the chunk's vectors are not of ``embedder``'s space."""
    made, wanted = chunk_fingerprint(chunk_url), meta_fingerprint(embedder)
    if not same_space(made, wanted) or made.get("embedding_dim") != wanted["embedding_dim"]:
        raise FingerprintMismatchError(
            f"the vectors in {chunk_url} were made by {made}, but this mind's embedder is {wanted}; "
            "embed on the workers with the same provider, model, dimensions and backend as the home node"
        )


@dataclass
class LoadedVectors:
    loaded: int = 0  # frames whose vectors came from the chunk files
    embedded_here: int = 0  # frames no chunk covered, embedded on the home node

    @property
    def written(self) -> int:
        return self.loaded + self.embedded_here


def load_vectors(mind: Mind, chunk_urls: list[str], progress: Progress | None = None) -> LoadedVectors:
    """Vectors for every frame of the mind that needs one: from the chunk files when they hold
    its content, else embedded by the mind's embedder (which then loads its model). The mind's
    embedder fingerprint must match every chunk's, and the mind's own, first."""
    if mind.embedder is None:
        raise InvalidInputError("loading vectors needs the mind's embedder (to check their space)")
    index = VectorIndex(mind.db, mind.embedder)
    index.check_fingerprint()
    for url in chunk_urls:
        refuse_other_space(url, mind.embedder)
    ids = ids_needing_vectors(mind.db)
    pending = np.asarray(ids, dtype=np.int64)
    done = np.zeros(len(pending), dtype=bool)
    result = LoadedVectors()
    for url in chunk_urls:
        if done.all():
            break
        fs, path = filesystem(url)
        with reaching(url), fs.open(path, "rb") as source, pq.ParquetFile(source) as staged:
            for batch in staged.iter_batches(batch_size=LOAD_BATCH_ROWS):
                rows = {row["content_hash"]: row for row in batch.to_pylist()}
                entries = _entries_for(mind, rows, pending, done)
                for start in range(0, len(entries), EMBED_BATCH):
                    index.store_vectors(entries[start : start + EMBED_BATCH])
                result.loaded += len(entries)
                if progress is not None and entries:
                    progress(result.loaded, len(ids))
    rest = pending[~done].tolist()
    for batch in pending_vector_batches(mind.db, rest):
        result.embedded_here += index.index_frames([(frame_id, content) for frame_id, content, _ in batch])
        if progress is not None:
            progress(result.written, len(ids))
    return result


def _entries_for(mind: Mind, rows: dict[str, dict[str, Any]], pending: np.ndarray, done: np.ndarray) -> list[FrameVectors]:
    """The vectors of ``rows`` (a chunk file's, by content hash) for the pending frames holding
    those texts, in id order (as the engine writes them); marks those frames done."""
    entries: list[FrameVectors] = []
    found = mind.db.query(
        f"SELECT id, content, content_hash FROM memory_frames WHERE content_hash IN ({IN_LIST}) ORDER BY id",
        (in_list(rows),),
    )
    for frame in found:
        at = int(np.searchsorted(pending, frame["id"]))
        if at == len(pending) or pending[at] != frame["id"] or done[at]:
            continue  # not waiting for a vector, or already given one
        done[at] = True
        row = rows[frame["content_hash"]]
        chunks = [(TextChunk(c["index"], c["char_start"], c["char_end"], ""), c["vector"]) for c in row["chunks"]]
        entries.append(FrameVectors(frame["id"], frame["content"], row["vector"], chunks))
    return entries


def _check_chunk_size(chunk_size: int) -> None:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise InvalidInputError(f"chunk size must be a positive number of texts, got {chunk_size!r}")
