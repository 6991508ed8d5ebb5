"""Vectors embedded away from the mind: the texts that need vectors, in chunks, to Parquet.

Embedding is the heavy, stateless part of a harvest: it needs the texts and the model, not the
mind. After the import, the home node stages the texts of the frames that need a vector (new,
changed, or left without one by a crash: what ``reconcile_vec_index`` would embed; none for an
unchanged source) as one Parquet file; any worker embeds chunk number ``n`` of it
(``chunk_size`` texts) the way ``VectorIndex`` does (the frame text, then the windows of its
later text) into one Parquet file per chunk keyed by content hash. A chunk file is written whole
or not at all, so a retried chunk just writes it again and the mind is never touched.

The home node then loads the vectors into the mind for every frame that needs one, matching by
content hash; a frame no chunk covers (its text changed in between) is embedded there, as the
engine would. A chunk made by another embedder (provider, model, width, or quantization) than the
mind's is refused: vectors of two spaces in one index give meaningless distances.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

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
from mind_core.store.reconcile import frames_needing_vectors
from mind_core.store.schema import content_hash

DEFAULT_CHUNK_TEXTS = 2000
FOOTER_KEY = b"mind_harvest.staged_vectors"
FORMAT_VERSION = 1

_CHUNK = pa.struct(
    [("index", pa.int32()), ("char_start", pa.int32()), ("char_end", pa.int32()), ("vector", pa.binary())]
)
SCHEMA = pa.schema([("content_hash", pa.string()), ("vector", pa.binary()), ("chunks", pa.list_(_CHUNK))])

Progress = Callable[[int, int | None], None]


TEXTS_SCHEMA = pa.schema([("content_hash", pa.string()), ("content", pa.large_string())])
TEXTS_BATCH = 10_000


def stage_pending_texts(mind: Mind, texts_url: str) -> int:
    """Write the distinct texts of the frames that need a vector to ``texts_url``; their count."""
    texts: dict[str, str] = {}
    for _, content in frames_needing_vectors(mind.db):
        texts.setdefault(content_hash(content), content)
    rows = [{"content_hash": digest, "content": content} for digest, content in texts.items()]
    _write_whole(pa.Table.from_pylist(rows, schema=TEXTS_SCHEMA), texts_url, {"version": FORMAT_VERSION})
    return len(rows)


def chunk_count(texts: int, chunk_size: int) -> int:
    """How many chunks of ``chunk_size`` texts ``texts`` texts make."""
    _check_chunk_size(chunk_size)
    return -(-texts // chunk_size)


def _texts_of_chunk(texts_url: str, first: int, last: int) -> Iterator[tuple[str, str]]:
    fs, path = filesystem(texts_url)
    position = 0
    with reaching(texts_url), fs.open(path, "rb") as source, pq.ParquetFile(source) as staged:
        for batch in staged.iter_batches(batch_size=TEXTS_BATCH):
            if position + batch.num_rows > first:
                for row in batch.slice(max(0, first - position), last - max(first, position)).to_pylist():
                    yield row["content_hash"], row["content"]
            position += batch.num_rows
            if position >= last:
                return


@dataclass
class EmbeddedChunk:
    url: str
    texts: int  # distinct texts embedded (frame vectors)
    chunk_vectors: int  # windows of long texts embedded


def embed_chunk(
    texts_url: str, chunk: int, chunk_size: int, embedder: Embedder, chunk_url: str
) -> EmbeddedChunk:
    """Embed texts ``chunk * chunk_size`` to ``(chunk + 1) * chunk_size`` of the staged texts into
    ``chunk_url`` (replaced whole; never half-written)."""
    _check_chunk_size(chunk_size)
    if chunk < 0:
        raise InvalidInputError(f"chunk must be >= 0, got {chunk}")
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
    footer = {"version": FORMAT_VERSION, "fingerprint": meta_fingerprint(embedder), "texts": texts_url}
    _write_whole(pa.Table.from_pylist(rows, schema=SCHEMA), chunk_url, footer)
    return EmbeddedChunk(chunk_url, len(rows), windows)


def _write_whole(table: pa.Table, url: str, footer: dict[str, object]) -> None:
    fs, path = filesystem(url)
    folder, _, name = path.rpartition("/")
    partial = f"{folder}/.{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.partial"
    table = table.replace_schema_metadata({FOOTER_KEY: json.dumps(footer).encode()})
    with reaching(url):
        fs.makedirs(folder, exist_ok=True)
        try:
            with fs.open(partial, "wb") as sink:
                pq.write_table(table, sink, compression="zstd")
            fs.mv(partial, path)
        except BaseException:
            if fs.exists(partial):
                fs.rm(partial)
            raise


def chunk_fingerprint(chunk_url: str) -> dict[str, str]:
    """The embedder fingerprint a chunk file was made with."""
    fs, path = filesystem(chunk_url)
    with reaching(chunk_url), fs.open(path, "rb") as source:
        metadata = pq.read_metadata(source).metadata or {}
    footer = json.loads(metadata.get(FOOTER_KEY, b"{}"))
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
    needed: dict[str, list[tuple[int, str]]] = {}
    for frame_id, content in frames_needing_vectors(mind.db):
        needed.setdefault(content_hash(content), []).append((frame_id, content))
    total = sum(len(frames) for frames in needed.values())
    result = LoadedVectors()
    for url in chunk_urls:
        if not needed:
            break
        fs, path = filesystem(url)
        with reaching(url), fs.open(path, "rb") as source:
            table = pq.read_table(source)
        entries: list[FrameVectors] = []
        for row in table.to_pylist():
            for frame_id, content in needed.pop(row["content_hash"], []):
                chunks = [
                    (TextChunk(c["index"], c["char_start"], c["char_end"], ""), c["vector"])
                    for c in row["chunks"]
                ]
                entries.append(FrameVectors(frame_id, content, row["vector"], chunks))
        entries.sort(key=lambda entry: entry.frame_id)  # the order the engine writes them in
        for start in range(0, len(entries), EMBED_BATCH):
            index.store_vectors(entries[start : start + EMBED_BATCH])
        result.loaded += len(entries)
        if progress is not None and entries:
            progress(result.loaded, total)
    rest = [frame for frames in needed.values() for frame in frames]
    if rest:
        result.embedded_here = index.index_frames(rest)
        if progress is not None:
            progress(result.written, total)
    return result


def _check_chunk_size(chunk_size: int) -> None:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise InvalidInputError(f"chunk size must be a positive number of texts, got {chunk_size!r}")
