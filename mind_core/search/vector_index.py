"""The vector side of a mind: writing frame vectors (and chunk vectors for long frames), KNN
lookups, and the embedding fingerprint that keeps one mind in one vector space.

Long text: MiniLM reads about 256 word pieces and silently drops the rest, so a frame longer than
``LONG_FRAME_WORDS`` words also gets one vector per overlapping window of its later text, stored
in ``memory_frame_chunks_vec``. The vector lane takes, per frame, its best (nearest) vector.

Width: a mind stores vectors at one width, recorded as ``embedding_dim``. A new mind takes its
embedder's (the model's own, 384 for MiniLM: a scan reads no zero padding), unless it is asked for
another, such as the original engine's 1024 for a mind shared with it. A mind that already holds
vectors keeps its width; the embedder is fitted to it (``at_width``), and ``mind reindex``
re-embeds it at the embedder's own width.

Scale: a mind whose ANN index (mind_core/search/ann.py, built by ``mind doctor --repair`` once the
mind holds ``ANN_MIN_VECTORS`` frame vectors) is usable is searched through it; otherwise a table
of PRESCAN_MIN_VECTORS vectors or more is searched through quantized companions (``nearest``,
mind_core/search/vector_codes.py) rather than scanned whole.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mind_core.embeddings.base import NO_QUANTIZATION, Embedder, at_width, fingerprint_of, to_blob
from mind_core.errors import FingerprintMismatchError, InvalidInputError
from mind_core.search import ann, vector_codes
from mind_core.search.filters import SourceFilter
from mind_core.store.db import IN_LIST, Database, in_list
from mind_core.store.frames import delete_vector_rows, scope_clauses
from mind_core.store.schema import content_hash, get_meta, set_meta, vec_dimensions, vec_table_sql

CHUNK_WORDS = 150
CHUNK_OVERLAP = 30
LONG_FRAME_WORDS = 180
EMBED_BATCH = 512  # frames per embedder call and per transaction
# The vector lane of a table holding at least PRESCAN_MIN_VECTORS vectors first ranks their sign
# bits (mind_core/search/vector_codes.py), then the int8 codes of the nearest
# ``max(k * PRESCAN_OVERSAMPLE, PRESCAN_MIN_CANDIDATES)`` candidates, then the float vectors of
# the k best; a smaller table is scanned exactly, which is as cheap there. Chosen by measurement:
# benchmarks/README.md (Search: constants).
PRESCAN_MIN_VECTORS = 20_000
PRESCAN_OVERSAMPLE = 20
PRESCAN_MIN_CANDIDATES = 200

_WORD = re.compile(r"\S+")


@dataclass
class TextChunk:
    index: int
    char_start: int
    char_end: int
    text: str


def split_chunks(text: str) -> list[TextChunk]:
    """Windows of CHUNK_WORDS words (overlapping by CHUNK_OVERLAP) after the first window.

    The first window is what the frame vector itself already covers, so it is not repeated.
    """
    if len(text) < 2 * LONG_FRAME_WORDS or len(text.split()) <= LONG_FRAME_WORDS:
        return []  # the cheap tests first: most frames are short
    spans = [m.span() for m in _WORD.finditer(text)]  # \S+ runs: the same words str.split() counts
    chunks = []
    step = CHUNK_WORDS - CHUNK_OVERLAP
    for index, start in enumerate(range(step, len(spans), step)):
        window = spans[start : start + CHUNK_WORDS]
        char_start, char_end = window[0][0], window[-1][1]
        chunks.append(TextChunk(index, char_start, char_end, text[char_start:char_end]))
        if start + CHUNK_WORDS >= len(spans):
            break
    return chunks


@dataclass
class FrameVectors:
    """A frame's vector and its chunks' vectors, as sqlite-vec blobs."""

    frame_id: int
    content: str
    vector: bytes
    chunks: list[tuple[TextChunk, bytes]]


def framed_vectors(
    chunked: Sequence[tuple[int, str, list[TextChunk]]], blobs: Sequence[bytes]
) -> list[FrameVectors]:
    """Pair the vectors of one embedder call (frame texts first, then every frame's chunk texts in
    frame order) with their frames."""
    entries = []
    position = len(chunked)
    for index, (frame_id, content, chunks) in enumerate(chunked):
        chunk_blobs = blobs[position : position + len(chunks)]
        entries.append(FrameVectors(frame_id, content, blobs[index], list(zip(chunks, chunk_blobs, strict=True))))
        position += len(chunks)
    return entries


FINGERPRINT_KEYS = ("embedding_provider", "embedding_model", "embedding_dim")
SPACE_KEYS = ("embedding_backend", "embedding_quantization")


def meta_fingerprint(embedder: Embedder) -> dict[str, str]:
    """The embedder's fingerprint as the mind's meta rows: the original's [L] key names, plus
    (additive) the runtime and quantization of a model that runs in this process."""
    fingerprint = fingerprint_of(embedder)
    rows = {
        "embedding_provider": str(fingerprint["provider"]),
        "embedding_model": str(fingerprint["model"]),
        "embedding_dim": str(fingerprint["dimensions"]),
    }
    if "backend" in fingerprint:
        rows["embedding_backend"] = str(fingerprint["backend"])
        rows["embedding_quantization"] = str(fingerprint["quantization"])
    return rows


def same_space(stored: dict[str, str], wanted: dict[str, str]) -> bool:
    """Whether vectors of ``wanted``'s embedder can be compared with the stored ones.

    Provider, model and width must match, and so must the quantization: int8 weights move
    vectors (mean cosine 0.99 to fp32), enough to reorder close neighbours. The runtime need not:
    ONNX Runtime fp32 and torch fp32 give the same vectors (cosine >= 0.9999, measured by
    benchmarks/embed_model.py and pinned by tests/mind_core/test_onnx_embedder.py). A mind from
    before these rows existed was written by torch fp32 (or by a provider without a runtime).
    """
    if any(stored[key] != wanted[key] for key in FINGERPRINT_KEYS):
        return False
    return stored.get("embedding_quantization", NO_QUANTIZATION) == wanted.get(
        "embedding_quantization", NO_QUANTIZATION
    )


def _describe(fingerprint: dict[str, str]) -> str:
    text = f"{fingerprint['embedding_provider']}/{fingerprint['embedding_model']} ({fingerprint['embedding_dim']} dims"
    quantization = fingerprint.get("embedding_quantization")
    if quantization is not None or fingerprint["embedding_provider"] == "inprocess":
        text += ", fp32 weights" if quantization in (None, NO_QUANTIZATION) else f", {quantization} weights"
    return text + ")"


class VectorIndex:
    def __init__(self, db: Database, embedder: Embedder | None) -> None:
        self.db = db
        self.embedder = embedder
        self.prescan_min_vectors = PRESCAN_MIN_VECTORS
        self.bits_cache: vector_codes.BitsCache = {}  # a long-lived mind (a server) reads the bits once
        self.ann_min_vectors = ann.ANN_MIN_VECTORS
        self.ann_graphs: ann.AnnGraphs | None = None  # loaded once per graph token, then kept in step
        self._ann_refused: tuple[str, Any] | None = None  # (token, manifest) a load refused

    @property
    def dimensions(self) -> int:
        return vec_dimensions(self.db) or 0

    # -- fingerprint ----------------------------------------------------------------------
    def stored_fingerprint(self) -> dict[str, str] | None:
        values = {k: get_meta(self.db, k) for k in FINGERPRINT_KEYS}
        if not all(values.values()):
            return None
        space = {k: get_meta(self.db, k) for k in SPACE_KEYS}
        return {**values, **{k: v for k, v in space.items() if v}}  # type: ignore[dict-item]

    def check_fingerprint(self) -> None:
        """Refuse an embedder whose vectors would not be comparable with the stored ones."""
        if self.embedder is None:
            return
        wanted = meta_fingerprint(self.embedder)
        if int(wanted["embedding_dim"]) != self.dimensions:
            raise FingerprintMismatchError(
                f"this mind stores {self.dimensions}-dimensional vectors but the embedder makes "
                f"{wanted['embedding_dim']}; open it with the same dimensions, or rebuild the vector index "
                "(`mind reindex`) to switch"
            )
        stored = self.stored_fingerprint()
        if stored is not None and not same_space(stored, wanted):
            raise FingerprintMismatchError(
                f"this mind's vectors were made by {_describe(stored)}, not {_describe(wanted)}; "
                "use the same embedder (for the in-process model: $MIND_HARVEST_EMBED_BACKEND), "
                "or rebuild the vector index (`mind reindex`) to re-embed every frame"
            )

    def record_fingerprint(self) -> None:
        if self.embedder is not None and self.stored_fingerprint() is None:
            for key, value in meta_fingerprint(self.embedder).items():
                set_meta(self.db, key, value)

    def holds_vectors(self) -> bool:
        return any(
            self.db.query_one(f"SELECT 1 FROM {table} LIMIT 1") is not None
            for table in ("memory_frames_vec", "memory_frame_chunks_vec")
        )

    def adopt_embedder_width(self) -> bool:
        """Give a mind that has no vectors and no fingerprint yet its embedder's width.

        Such a mind was made without an embedder (``mind sources add``) at the default width;
        nothing in it depends on that width yet. Returns whether the tables were remade.
        """
        if self.embedder is None or self.stored_fingerprint() is not None:
            return False
        width = int(self.embedder.dimensions)
        if width == self.dimensions or self.holds_vectors():
            return False
        with self.db.transaction():
            self._create_tables(width)
        return True

    def rebuild(self, width: int | None = None) -> None:
        """Drop every vector and adopt the current embedder's space at ``width`` values (default:
        the embedder's own); frames are re-embedded later."""
        if self.embedder is None:
            raise InvalidInputError("rebuilding the vector index needs an embedder")
        self.embedder = at_width(self.embedder, int(width or self.embedder.dimensions))
        with self.db.transaction():
            self._create_tables(int(self.embedder.dimensions))
            self.db.execute("DELETE FROM memory_frame_chunks")
            self.db.execute("UPDATE memory_frames SET embedded_hash = NULL")
            self.db.execute(f"DELETE FROM meta WHERE key IN ({IN_LIST})", (in_list(SPACE_KEYS),))
            for key, value in meta_fingerprint(self.embedder).items():
                set_meta(self.db, key, value)

    def _create_tables(self, width: int) -> None:
        """(Re)create both vector tables, empty, at ``width`` values."""
        for table in vector_codes.VECTOR_TABLES:
            self.db.execute(f"DROP TABLE IF EXISTS {table}")
            self.db.execute(vec_table_sql(table, width))
            vector_codes.clear(self.db, table)
        ann.disable(self.db)
        set_meta(self.db, "vec_dimensions", str(width))

    # -- writes ---------------------------------------------------------------------------
    def index_frames(
        self,
        frames: Sequence[tuple[int, str]],
        batch_size: int = EMBED_BATCH,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Embed and store vectors for (frame id, content) pairs; re-indexing replaces.

        ``batch_size`` frames go to the embedder in one call (their chunks with them) and are
        written in one transaction. Large calls matter for a local model: it sorts a call's texts
        by length before padding them into model batches, so one long text in a small call makes
        every short one pay for its length. ``progress(done, total)`` follows each batch.
        """
        if self.embedder is None:
            raise InvalidInputError("vector indexing needs an embedder")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"batch_size must be a positive integer, got {batch_size!r}")
        latest: dict[int, str] = {}
        for frame_id, content in frames:
            if not isinstance(frame_id, int) or isinstance(frame_id, bool) or not math.isfinite(frame_id):
                raise InvalidInputError(f"invalid frame id for vector indexing: {frame_id!r}")
            if not isinstance(content, str):
                raise InvalidInputError(f"frame {frame_id}: content to index must be a string")
            latest[frame_id] = content  # a frame listed twice is indexed once, with its last text
        items = list(latest.items())
        self.check_fingerprint()
        for start in range(0, len(items), batch_size):
            self._index_batch(items[start : start + batch_size])
            if progress is not None:
                progress(min(start + batch_size, len(items)), len(items))
        return len(items)

    def _index_batch(self, batch: list[tuple[int, str]]) -> None:
        chunked = [(frame_id, content, split_chunks(content)) for frame_id, content in batch]
        texts = [content for _, content, _ in chunked]
        texts += [chunk.text for _, _, chunks in chunked for chunk in chunks]
        vectors = self.embedder.embed_batch(texts)  # type: ignore[union-attr]
        self.store_vectors(framed_vectors(chunked, [to_blob(vector) for vector in vectors]))

    def store_vectors(self, entries: Sequence[FrameVectors]) -> None:
        """Write vectors made elsewhere (a worker's embedding of the same texts by the same
        embedder), or by ``index_frames``, in one transaction; re-indexing replaces."""
        if not entries:
            return
        with self.db.transaction():
            self.record_fingerprint()
            ids = [entry.frame_id for entry in entries]
            delete_vector_rows(self.db, ids)
            frame_rows = [(entry.frame_id, entry.vector) for entry in entries]
            self.db.executemany("INSERT INTO memory_frames_vec (rowid, embedding) VALUES (?, ?)", frame_rows)
            vector_codes.put(self.db, "memory_frames_vec", frame_rows)
            chunk_rows = []
            for entry in entries:
                for chunk, vector in entry.chunks:
                    chunk_id = self.db.execute(
                        "INSERT INTO memory_frame_chunks (frame_id, chunk_idx, char_start, char_end) "
                        "VALUES (?, ?, ?, ?)",
                        (entry.frame_id, chunk.index, chunk.char_start, chunk.char_end),
                    ).lastrowid
                    chunk_rows.append((int(chunk_id), vector))
            self.db.executemany("INSERT INTO memory_frame_chunks_vec (rowid, embedding) VALUES (?, ?)", chunk_rows)
            vector_codes.put(self.db, "memory_frame_chunks_vec", chunk_rows)
            self.db.executemany(
                "UPDATE memory_frames SET embedded_hash = ? WHERE id = ?",
                [(content_hash(entry.content), entry.frame_id) for entry in entries],
            )

    # -- reads ----------------------------------------------------------------------------
    def embed_query(self, query: str) -> Any:
        if self.embedder is None:
            raise InvalidInputError("vector search needs an embedder")
        return self.embedder.embed(query)

    def knn(
        self,
        vector: Any,
        limit: int,
        gop_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        source: SourceFilter | None = None,
    ) -> list[tuple[int, float]]:
        """Nearest frames (id, distance) in distance order, a frame counted by its best vector."""
        filtered = bool(gop_id or since or until or (source is not None and not source.empty))
        k = max(1, limit * 3 if filtered else limit)
        blob = to_blob(vector)
        best: dict[int, float] = dict(self.nearest("memory_frames_vec", blob, k))
        if self.db.query_one("SELECT 1 FROM memory_frame_chunks LIMIT 1") is not None:
            hits = self.nearest("memory_frame_chunks_vec", blob, k)
            if hits:
                owner = dict(
                    self.db.query(
                        f"SELECT id, frame_id FROM memory_frame_chunks WHERE id IN ({IN_LIST})",
                        (in_list(h[0] for h in hits),),
                    )
                )
                for chunk_id, distance in hits:
                    frame_id = owner.get(chunk_id)
                    if frame_id is not None and distance < best.get(frame_id, math.inf):
                        best[frame_id] = distance
        if not best:
            return []
        scope, scope_params = scope_clauses("", gop_id, since, until, source)
        clauses = [f"id IN ({IN_LIST})", *scope]
        params: list[Any] = [in_list(best), *scope_params]
        alive = {
            r[0] for r in self.db.query(f"SELECT id FROM memory_frames WHERE {' AND '.join(clauses)}", params)
        }
        ranked = sorted(((fid, d) for fid, d in best.items() if fid in alive), key=lambda item: item[1])
        return ranked[:limit]

    def similarities(self, vector: Any, frame_ids: Sequence[int]) -> dict[int, float]:
        """Cosine similarity of ``vector`` to each frame's best vector (its own or a chunk's, as
        ``knn`` counts a frame); a frame without a vector is left out."""
        blob = to_blob(vector)
        best = dict(self.distances("memory_frames_vec", blob, frame_ids))
        if frame_ids and self.db.query_one("SELECT 1 FROM memory_frame_chunks LIMIT 1") is not None:
            owner = dict(
                self.db.query(
                    f"SELECT id, frame_id FROM memory_frame_chunks WHERE frame_id IN ({IN_LIST})", (in_list(frame_ids),)
                )
            )
            for chunk_id, distance in self.distances("memory_frame_chunks_vec", blob, list(owner)):
                if distance < best.get(owner[chunk_id], math.inf):
                    best[owner[chunk_id]] = distance
        return {frame_id: 1.0 - distance * distance / 2.0 for frame_id, distance in best.items()}

    def distances(self, vec_table: str, blob: bytes, rowids: Sequence[int]) -> list[tuple[int, float]]:
        """(rowid, L2 distance of its float vector to ``blob``) for the rows of ``rowids`` that exist."""
        rows = [
            self.db.query_one(f"SELECT rowid, vec_distance_l2(embedding, ?) FROM {vec_table} WHERE rowid = ?", (blob, rowid))
            for rowid in rowids
        ]
        return [(row[0], row[1]) for row in rows if row is not None]

    def ann_index(self) -> ann.AnnGraphs | None:
        """The mind's ANN graphs, up to date with every write, when the vector lane should use
        them: they exist, may serve this mind (``ann.load``) and hold ``ann_min_vectors`` frame
        vectors or more. Loaded once per graph token; a refused load is not retried until the
        token or the files change."""
        token = self.db.scalar("SELECT value FROM meta WHERE key = ?", (ann.TOKEN_KEY,))
        if token is None or ann.ann_dir(self.db) is None:
            self.ann_graphs = None
            return None
        graphs = self.ann_graphs
        if graphs is not None and (graphs.token != token or not graphs.catch_up(self.db)):
            graphs = None  # another graph, or changes a memory-mapped one cannot take: load again
        if graphs is None:
            refused = (token, ann.read_manifest(self.db))
            if self._ann_refused != refused:
                graphs = ann.load(self.db, self.stored_fingerprint())
                self._ann_refused = None if graphs is not None else refused
        self.ann_graphs = graphs
        if graphs is None or len(graphs.graphs["memory_frames_vec"]) < self.ann_min_vectors:
            return None
        return graphs

    def nearest(self, vec_table: str, blob: bytes, k: int, prescan: bool | None = None) -> list[tuple[int, float]]:
        """The ``k`` nearest rows of one vector table (rowid, L2 distance), nearest first.

        ``prescan`` None: the ANN graph when usable (``ann_index``: its distances are those of
        half-precision copies, within 1e-4 of the float vectors'), else by the table's size
        (``prescan_min_vectors``) and whether its quantized companions are current. The pre-scan
        (mind_core/search/vector_codes.py: sign bits over the whole table, then the int8 codes of
        the candidates) picks the k rows; their distances are still the float vectors' own (the
        ``vec_distance_l2`` the exact scan computes), so only a true neighbour lost by the
        quantized passes makes the answer differ from the exact scan's.
        """
        graphs = self.ann_index() if prescan is None else None
        if graphs is not None:
            return graphs.search(vec_table, np.frombuffer(blob, dtype=np.float32), k)
        if prescan is None:
            prescan = (
                vector_codes.vector_count(self.db, vec_table) >= self.prescan_min_vectors
                and vector_codes.is_current(self.db, vec_table)
            )
        nearest = None
        if prescan:
            query = np.frombuffer(blob, dtype=np.float32)
            count = max(k * PRESCAN_OVERSAMPLE, PRESCAN_MIN_CANDIDATES)
            candidates = vector_codes.bit_candidates(self.db, vec_table, query, count, self.bits_cache)
            if candidates is not None:
                nearest = vector_codes.int8_nearest(self.db, vec_table, query, candidates, k)
        if nearest is None:
            return [
                (row[0], row[1])
                for row in self.db.query(
                    f"SELECT rowid, distance FROM {vec_table} WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                    (blob, k),
                )
            ]
        return sorted(self.distances(vec_table, blob, nearest), key=lambda item: (item[1], item[0]))[:k]
