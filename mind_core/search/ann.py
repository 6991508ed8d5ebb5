"""Approximate nearest neighbours for a large mind's vector lane: one HNSW graph (usearch) per
vector table, persisted beside the mind file in ``<mind>.ann/``.

Why: an exact scan (or the sign-bit pre-scan of mind_core/search/vector_codes.py) reads every
stored vector per query, linear in the archive; an HNSW graph answers in a few hundred
microseconds at 100,000 vectors and grows about logarithmically. usearch was chosen by
measurement against hnswlib and faiss (benchmarks/ann_libraries.py): as fast and as exact as
either, wheels for every platform (hnswlib ships only a source archive), and it deletes and
replaces keys in place (faiss's HNSW cannot remove). The graph keeps half-precision copies of
the vectors (``AnnParameters.scalar``): half of float32's memory, and distances within 1e-4 of the
float vectors' own, so the lane takes them as they are (int8 copies, a quarter of the memory,
misorder close neighbours: their answer had to be re-ranked by the float vectors, and reading
those back one row at a time from sqlite-vec cost more than the graph saved).

Kept in step without a second commit protocol: every write to a vector table already writes its
quantized companions in the same transaction (``vector_codes.put/remove``), and while a mind has
a graph those calls also append the changed rowids to ``vector_ann_log`` — in the same
transaction, so the log can never disagree with the vectors. The files on disk record the log
position they include (``seq``); a reader loads them and applies the later log entries (re-reading
each changed row: present means add or replace, absent means remove) before it searches. So the
files may lag, the answer never does. ``mind doctor --repair`` folds the log into the files (or
rebuilds them), which keeps the log short.

Removals: usearch keeps a removed vector's slot, its bytes included (in memory and in the saved
files), until the graph is made again. ``mind doctor --repair`` folds the log while removals are few and
rebuilds once they reach ``MAX_TOMBSTONE_SHARE`` of the graph, which also drops every deleted
frame's copy from the files.

A graph is refused — the lane falls back to the exact path — when its token is not the mind's
(a mind restored from a backup, or a graph made for another copy), when it was made from another
embedder's vectors, when its parameters are not the current ones, or when more than
``MAX_PENDING`` changes wait in the log. ``mind doctor`` reports each of these (``status``).

Width: a mind may store its vectors zero-padded (MiniLM's 384 values in a 1024-wide table shared
with the original engine); the graph indexes only the leading values that are ever non-zero
(``indexed_dims``), which leaves L2 distances unchanged.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mind_core.store.db import IN_LIST, Database, in_list

if TYPE_CHECKING:
    from usearch.index import Index

# The vector lane searches the graph once the mind holds at least this many frame vectors, the
# size from which the pre-scan starts too (``PRESCAN_MIN_VECTORS``); below it the exact scan costs
# under 15 ms CPU (9 ms at 10,000 frames, benchmarks/archive.py) and a mind needs no file beside
# it. ``mind doctor --repair`` builds the graph when a mind crosses it.
ANN_MIN_VECTORS = 20_000
# A search for k rows explores at least k x SEARCH_WIDTH candidates (usearch's expansion): at
# exactly k, recall falls fast on clustered vectors (0.92 of the exact top 100 on
# benchmarks/archive.py's 100k vectors, against 0.99 at twice k).
SEARCH_WIDTH = 2
# usearch keeps a removed vector's slot (and its bytes, in the files too) until the graph is made
# again: ``mind doctor --repair`` rebuilds rather than folds once removals reach this share of it.
MAX_TOMBSTONE_SHARE = 0.1
MAX_PENDING = 10_000  # log entries a reader applies in memory (seconds at most); beyond, the graph is stale
# Vectors read per step while building: a page of stored vectors is a few MB (2,000 x 4 KiB at
# 1,024 float32), copied once into the block the graph takes, so the build's memory is the graph's.
BUILD_PAGE = 2_000
# The first vectors of a graph are added on one thread: usearch's parallel insertion into a graph
# of a few hundred nodes leaves it poorly linked (on 200 random vectors, 57 of 400 searches missed
# an exact top-10 neighbour; 0 when seeded serially), at no measurable cost in build time.
SERIAL_SEED = 1_024
TOKEN_KEY = "vector_ann_token"  # meta: the token of the graph this mind's log is kept for
MANIFEST = "ann.json"
VECTOR_TABLES = ("memory_frames_vec", "memory_frame_chunks_vec")
LOG_SQL = (
    "CREATE TABLE IF NOT EXISTS vector_ann_log ("
    "seq INTEGER PRIMARY KEY AUTOINCREMENT, vec_table TEXT NOT NULL, row INTEGER NOT NULL)"
)


@dataclass(frozen=True)
class AnnParameters:
    """The graph's construction and search parameters, recorded in the manifest: a graph made
    with others is rebuilt. A search widens ``expansion_search`` to ``SEARCH_WIDTH`` times the
    rows it asks for (the vector lane's depth is 100)."""

    connectivity: int = 16
    expansion_add: int = 128
    expansion_search: int = 128
    scalar: str = "f16"
    metric: str = "l2sq"


PARAMETERS = AnnParameters()


def ann_dir(db: Database) -> Path | None:
    """Where a mind's graphs live: beside its file; None for a mind in memory."""
    return None if db.path == ":memory:" else Path(db.path + ".ann")


def enabled(db: Database) -> bool:
    """Whether this mind keeps a graph (and so a change log)."""
    return db.table_exists("vector_ann_log") and db.scalar("SELECT value FROM meta WHERE key = ?", (TOKEN_KEY,)) is not None


def note_changes(db: Database, vec_table: str, rowids: list[int]) -> None:
    """Log rows of ``vec_table`` whose vectors were written or deleted, in the writer's
    transaction; nothing while the mind keeps no graph."""
    if rowids and enabled(db):
        db.executemany("INSERT INTO vector_ann_log (vec_table, row) VALUES (?, ?)", [(vec_table, r) for r in rowids])


def disable(db: Database) -> None:
    """Forget the graph (the vector tables were remade at another width): the files beside the
    mind no longer match its token and are ignored until a reconcile rebuilds them."""
    db.execute("DELETE FROM meta WHERE key = ?", (TOKEN_KEY,))
    if db.table_exists("vector_ann_log"):
        db.execute("DELETE FROM vector_ann_log")


def pending(db: Database, after: int) -> int:
    """Log entries newer than position ``after``."""
    if not db.table_exists("vector_ann_log"):
        return 0
    return int(db.scalar("SELECT count(*) FROM vector_ann_log WHERE seq > ?", (after,)) or 0)


def _log_end(db: Database) -> int:
    return int(db.scalar("SELECT coalesce(max(seq), 0) FROM vector_ann_log") or 0)


def usearch_index() -> type[Index]:
    """usearch's ``Index``, imported when a graph is used (a small mind never pays for it).

    ONNX Runtime, when installed, is imported first: with usearch 2.26 and ONNX Runtime 1.32, a
    process that loaded usearch before ONNX Runtime crashes (SIGSEGV) when it imports ONNX Runtime
    later, for the question's embedding after a graph was opened (a reconcile, then a search)."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        pass
    from usearch.index import Index

    return Index


def _new_graph(dims: int, params: AnnParameters) -> Index:
    Index = usearch_index()  # noqa: N806
    return Index(
        ndim=dims,
        metric=params.metric,
        dtype=params.scalar,
        connectivity=params.connectivity,
        expansion_add=params.expansion_add,
        expansion_search=params.expansion_search,
    )


def _add(graph: Index, keys: np.ndarray, vectors: np.ndarray) -> None:
    """Add rows to a graph: serially while it is small (``SERIAL_SEED``), in parallel after."""
    serial = max(0, min(len(keys), SERIAL_SEED - len(graph)))
    if serial:
        graph.add(keys[:serial], np.ascontiguousarray(vectors[:serial]), threads=1)
    if serial < len(keys):
        graph.add(keys[serial:], np.ascontiguousarray(vectors[serial:]))


class AnnGraphs:
    """A mind's graphs in memory with the log position they include; ``search`` first applies
    what the log holds beyond it."""

    def __init__(self, manifest: dict[str, Any], graphs: dict[str, Index], viewed: bool = False) -> None:
        self.manifest = manifest
        self.graphs = graphs
        self.viewed = viewed  # memory-mapped from the files: read-only, so no change can be applied
        self.applied = int(manifest["seq"])
        self.tombstones = int(manifest.get("tombstones", 0))  # removed slots whose bytes the graph keeps
        self.dims = int(manifest["indexed_dims"])
        self.lock = threading.Lock()

    @property
    def token(self) -> str:
        return str(self.manifest["token"])

    def counts(self) -> dict[str, int]:
        return {table: len(graph) for table, graph in self.graphs.items()}

    def worn(self) -> bool:
        """Whether removals have left so many dead slots that the graph should be made again."""
        return self.tombstones > MAX_TOMBSTONE_SHARE * max(1, sum(self.counts().values()))

    def catch_up(self, db: Database) -> bool:
        """Apply the log entries past ``applied``; False when the graphs are memory-mapped (load
        them again, as copies) or a changed vector has values beyond the indexed width (the graph
        no longer fits the mind: rebuild)."""
        with self.lock:
            return self._catch_up(db)

    def _catch_up(self, db: Database) -> bool:
        end = _log_end(db)
        if end <= self.applied:
            return True
        if self.viewed:
            return False
        changed: dict[str, set[int]] = {table: set() for table in VECTOR_TABLES}
        for table, row in db.query(
            "SELECT vec_table, row FROM vector_ann_log WHERE seq > ? AND seq <= ?", (self.applied, end)
        ):
            changed.setdefault(table, set()).add(int(row))
        for table, rows in changed.items():
            if not rows or table not in self.graphs:
                continue
            graph = self.graphs[table]
            found = {
                int(rowid): blob
                for rowid, blob in db.query(
                    f"SELECT rowid, embedding FROM {table} WHERE rowid IN ({IN_LIST})", (in_list(sorted(rows)),)
                )
            }
            for rowid in rows:
                if graph.contains(rowid):
                    graph.remove(rowid)
                    self.tombstones += 1
            if found:
                vectors = np.frombuffer(b"".join(found.values()), dtype=np.float32).reshape(len(found), -1)
                if vectors.shape[1] > self.dims and np.any(vectors[:, self.dims :]):
                    return False
                _add(graph, np.asarray(list(found), dtype=np.uint64), vectors[:, : self.dims])
        self.applied = end
        return True

    def search(self, vec_table: str, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest rows of one table by the graph (rowid, L2 distance of the
        half-precision copies), nearest first."""
        graph = self.graphs[vec_table]
        if k < 1 or not len(graph):
            return []
        with self.lock:
            graph.expansion_search = max(int(self.manifest["parameters"]["expansion_search"]), SEARCH_WIDTH * k)
            matches = graph.search(np.ascontiguousarray(query[: self.dims], dtype=np.float32), k)
        return [(int(key), float(np.sqrt(max(d, 0.0)))) for key, d in zip(matches.keys, matches.distances, strict=True)]


def _pages(db: Database, table: str, dims: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The rows of a vector table, ``BUILD_PAGE`` at a time: their rowids and their first ``dims``
    values (all of them when None), one float32 block per page, each vector copied once from its row."""
    cursor = db.execute(f"SELECT rowid, embedding FROM {table}")
    while page := cursor.fetchmany(BUILD_PAGE):
        width = len(page[0][1]) // 4 if dims is None else dims
        block = np.empty((len(page), width), dtype=np.float32)
        for i, (_, blob) in enumerate(page):
            block[i] = np.frombuffer(blob, dtype=np.float32, count=width)
        yield np.fromiter((row[0] for row in page), dtype=np.uint64, count=len(page)), block


def _indexed_dims(db: Database) -> int:
    """The leading values of the stored vectors that are ever non-zero (the rest is padding)."""
    width = 0
    for table in VECTOR_TABLES:
        if db.table_exists(table):
            for _, vectors in _pages(db, table):
                columns = np.flatnonzero(np.any(vectors != 0, axis=0))
                width = max(width, int(columns[-1]) + 1 if len(columns) else 0)
    return max(width, 1)


def build(db: Database, fingerprint: dict[str, str] | None, params: AnnParameters = PARAMETERS) -> AnnGraphs:
    """Make the graphs from every vector and write them beside the mind.

    A new token and the log's start are committed first, so a write while the graphs are built
    is logged and applied by the next reader (applying a change twice is harmless)."""
    folder = ann_dir(db)
    if folder is None:
        raise ValueError("a mind in memory keeps no ANN index")
    token = uuid.uuid4().hex
    with db.transaction():
        db.execute(LOG_SQL)
        start = _log_end(db)
        db.execute("DELETE FROM vector_ann_log WHERE seq <= ?", (start,))
        db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (TOKEN_KEY, token),
        )
    dims = _indexed_dims(db)
    graphs = {}
    for table in VECTOR_TABLES:
        graph = _new_graph(dims, params)
        if db.table_exists(table):
            for keys, vectors in _pages(db, table, dims):
                _add(graph, keys, vectors)
        graphs[table] = graph
    manifest = {
        "library": f"usearch {version('usearch')}",
        "token": token,
        "seq": start,
        "fingerprint": fingerprint,
        "stored_dims": _stored_dims(db),
        "indexed_dims": dims,
        "parameters": asdict(params),
    }
    loaded = AnnGraphs(manifest, graphs)
    save(db, loaded)
    return loaded


def _stored_dims(db: Database) -> int:
    row = db.query_one("SELECT value FROM meta WHERE key = 'vec_dimensions'")
    return int(row[0]) if row is not None else 0


def save(db: Database, loaded: AnnGraphs) -> None:
    """Write the graphs and their manifest (each file replaced whole), then drop the log entries
    they include. Applies the log first, so the files include everything written so far."""
    folder = ann_dir(db)
    assert folder is not None
    if loaded.viewed:  # memory-mapped graphs cannot take changes: read copies of the files
        Index = usearch_index()  # noqa: N806
        loaded.graphs = {table: Index.restore(str(folder / f"{table}.usearch")) for table in loaded.graphs}
        loaded.viewed = False
    if not loaded.catch_up(db):
        raise ValueError("the ANN index no longer fits the mind's vectors; rebuild it")
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {**loaded.manifest, "seq": loaded.applied, "counts": loaded.counts(), "tombstones": loaded.tombstones}
    for table, graph in loaded.graphs.items():
        partial = folder / f"{table}.usearch.partial"
        graph.save(str(partial))
        os.replace(partial, folder / f"{table}.usearch")
    partial = folder / f"{MANIFEST}.partial"
    partial.write_text(json.dumps(manifest, indent=2))
    os.replace(partial, folder / MANIFEST)
    loaded.manifest = manifest
    with db.transaction():
        db.execute("DELETE FROM vector_ann_log WHERE seq <= ?", (loaded.applied,))


def read_manifest(db: Database) -> dict[str, Any] | None:
    folder = ann_dir(db)
    if folder is None or not (folder / MANIFEST).is_file():
        return None
    try:
        return dict(json.loads((folder / MANIFEST).read_text()))
    except (OSError, ValueError):
        return None


def problem(
    db: Database, manifest: dict[str, Any] | None, fingerprint: dict[str, str] | None, params: AnnParameters = PARAMETERS
) -> str | None:
    """Why the graphs on disk cannot serve this mind (None when they can, apart from the count,
    which needs them loaded)."""
    if manifest is None:
        return "missing"
    token = db.scalar("SELECT value FROM meta WHERE key = ?", (TOKEN_KEY,))
    if manifest.get("token") != token:
        return "made for another state of this mind (token differs)"
    if manifest.get("fingerprint") != fingerprint:
        return f"made from another embedder's vectors ({manifest.get('fingerprint')})"
    if manifest.get("parameters") != asdict(params) or manifest.get("stored_dims") != _stored_dims(db):
        return "made with other parameters"
    waiting = pending(db, int(manifest.get("seq", 0)))
    if waiting > MAX_PENDING:
        return f"{waiting} changes wait in its log"
    return None


def load(db: Database, fingerprint: dict[str, str] | None, params: AnnParameters = PARAMETERS) -> AnnGraphs | None:
    """The mind's graphs, brought up to date with its log; None when there are none it may use
    (``problem``), or when their counts disagree with the vector tables (a writer that bypassed
    the log).

    Graphs the log has nothing to add to are memory-mapped rather than read (at 100k vectors 19 ms
    to open instead of 108, and the pages a search never touches are never read): what a
    short-lived ``mind search`` pays per command."""
    manifest = read_manifest(db)
    if problem(db, manifest, fingerprint, params) is not None:
        return None
    folder = ann_dir(db)
    assert folder is not None and manifest is not None
    Index = usearch_index()  # noqa: N806

    viewed = pending(db, int(manifest["seq"])) == 0
    graphs = {}
    for table in VECTOR_TABLES:
        path = folder / f"{table}.usearch"
        graph = Index.restore(str(path), view=viewed) if path.is_file() else None
        if graph is None:
            return None
        graphs[table] = graph
    loaded = AnnGraphs(manifest, graphs, viewed)
    if not loaded.catch_up(db) or loaded.counts() != vector_counts(db):
        return None
    return loaded


def vector_counts(db: Database) -> dict[str, int]:
    """Rows of each vector table, from its rowid shadow table."""
    return {
        table: int(db.scalar(f"SELECT count(*) FROM {table}_rowids") or 0) if db.table_exists(table) else 0
        for table in VECTOR_TABLES
    }
