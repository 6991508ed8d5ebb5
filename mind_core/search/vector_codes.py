"""Quantized companions of a vector table: the cheap passes of the vector lane in a large mind.

A brute-force scan of float vectors reads 4 bytes per value of every stored vector; at 100,000
frames of 384 values that is 150 MB per query. Two smaller copies of each vector make a search
read far less:

- sign bits, one per value (as sqlite-vec's ``vec_quantize_binary``: 48 bytes for 384 values),
  ranked by Hamming distance over the whole table for an oversampled candidate set;
- int8 codes (one byte per value and the vector's scale), read only for those candidates, which
  rank them to the ``k`` nearest; ``VectorIndex.nearest`` then takes those k's distances from the
  float vectors themselves.

So the lane's answer is the exact scan's whenever the true neighbours survive the two passes
(benchmarks/search.py measures this as the candidate recall).

Why not sqlite-vec's own ``bit[N]`` / ``int8[N]`` vec0 columns: in 0.1.9 a vec0 KNN with a large
``k`` is slow (k = 1,000 over 100,000 bit vectors took longer than the exact float scan) and
reading single vectors back out of a vec0 table costs 20-60 µs each. So the bits live in an
ordinary table in blocks of ``BLOCK_ROWS`` consecutive rowids (``rowid // BLOCK_ROWS``: a scan
reads one row per block, a write rewrites only the blocks it touches) and are ranked with numpy;
the int8 codes are one ordinary row per vector, read by primary key.

A long-lived reader (``VectorIndex.bits_cache``) keeps the bits in memory while the token in
``meta`` (``VERSION_KEY``) that every change of the companions renews is unchanged, so a server
reads them once rather than per query.

Every write to a vector table writes its companions in the same transaction (``VectorIndex``,
``frames.delete_vector_rows``, ``reconcile``), and with them the ANN index's change log
(mind_core/search/ann.py) when the mind keeps one. A writer that does not know them (the original
engine sharing a mind) leaves the counts unequal; the lane then scans exactly (:func:`is_current`)
until a reconcile rebuilds them.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from mind_core.search import ann
from mind_core.store.db import IN_LIST, Database, in_list

BLOCK_ROWS = 1024
COMPANION_SQL = """
CREATE TABLE IF NOT EXISTS vector_bit_blocks (
  vec_table TEXT NOT NULL, block INTEGER NOT NULL, size INTEGER NOT NULL,
  ids BLOB NOT NULL, bits BLOB NOT NULL, PRIMARY KEY (vec_table, block));
CREATE TABLE IF NOT EXISTS vector_int8_codes (
  vec_table TEXT NOT NULL, row INTEGER NOT NULL, code BLOB NOT NULL, PRIMARY KEY (vec_table, row)
) WITHOUT ROWID
"""
VECTOR_TABLES = ("memory_frames_vec", "memory_frame_chunks_vec")
REBUILD_PAGE = 20_000  # vectors read per query while rebuilding
# meta key of a fresh token written with every change of the companions: a reader may keep the
# bits in memory while the token is unchanged (a token, not a counter, so a rolled-back write
# cannot make two contents share a value)
VERSION_KEY = "vector_codes_version"


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """One bit per value, 1 where the value is positive, packed eight to a byte."""
    return np.packbits(np.asarray(vectors, dtype=np.float32) > 0, axis=-1)


def int8_codes(vectors: np.ndarray) -> list[bytes]:
    """Each vector as its float32 scale (largest magnitude / 127) followed by one int8 per value."""
    scales = np.abs(vectors).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    codes = np.rint(vectors / scales[:, None]).astype(np.int8)
    return [scale.tobytes() + code.tobytes() for scale, code in zip(scales.astype(np.float32), codes, strict=True)]


def decode_int8(blobs: Sequence[bytes]) -> np.ndarray:
    """The approximate float vectors of :func:`int8_codes` blobs."""
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), -1)
    scales = raw[:, :4].copy().view(np.float32)
    return raw[:, 4:].view(np.int8).astype(np.float32) * scales


def _as_floats(blobs: Sequence[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)


# -- writes -----------------------------------------------------------------------------------
def _blocks(db: Database, vec_table: str, blocks: Iterable[int]) -> dict[int, dict[int, bytes]]:
    """The rows (rowid -> bits) of these blocks as they are stored."""
    found: dict[int, dict[int, bytes]] = {}
    for block in blocks:
        row = db.query_one(
            "SELECT ids, bits FROM vector_bit_blocks WHERE vec_table = ? AND block = ?", (vec_table, block)
        )
        found[block] = {} if row is None else _block_rows(row[0], row[1])
    return found


def _block_rows(ids: bytes, bits: bytes) -> dict[int, bytes]:
    rowids = np.frombuffer(ids, dtype=np.int64)
    width = len(bits) // len(rowids) if len(rowids) else 0
    return {int(rowid): bits[i * width : (i + 1) * width] for i, rowid in enumerate(rowids)}


def _new_version(db: Database) -> None:
    db.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (VERSION_KEY, uuid.uuid4().hex),
    )


def _write_blocks(db: Database, vec_table: str, changed: dict[int, dict[int, bytes]]) -> None:
    if changed:
        _new_version(db)
    for block, rows in changed.items():
        if not rows:
            db.execute("DELETE FROM vector_bit_blocks WHERE vec_table = ? AND block = ?", (vec_table, block))
            continue
        ordered = sorted(rows)
        db.execute(
            "INSERT OR REPLACE INTO vector_bit_blocks (vec_table, block, size, ids, bits) VALUES (?, ?, ?, ?, ?)",
            (
                vec_table,
                block,
                len(ordered),
                np.asarray(ordered, dtype=np.int64).tobytes(),
                b"".join(rows[rowid] for rowid in ordered),
            ),
        )


def put(db: Database, vec_table: str, rows: Sequence[tuple[int, bytes]]) -> None:
    """Store (or replace) the companions of these (rowid, float32 blob) rows."""
    if not rows:
        return
    vectors = _as_floats([blob for _, blob in rows])
    bits = sign_bits(vectors)
    by_block: dict[int, list[int]] = defaultdict(list)
    for index, (rowid, _) in enumerate(rows):
        by_block[rowid // BLOCK_ROWS].append(index)
    stored = _blocks(db, vec_table, by_block)
    for block, indexes in by_block.items():
        for index in indexes:
            stored[block][rows[index][0]] = bits[index].tobytes()
    _write_blocks(db, vec_table, stored)
    db.executemany(
        "INSERT OR REPLACE INTO vector_int8_codes (vec_table, row, code) VALUES (?, ?, ?)",
        [(vec_table, rowid, code) for (rowid, _), code in zip(rows, int8_codes(vectors), strict=True)],
    )
    ann.note_changes(db, vec_table, [rowid for rowid, _ in rows])


def remove(db: Database, vec_table: str, rowids: Iterable[int]) -> None:
    """Forget the companions of these rowids (absent ones are ignored)."""
    by_block: dict[int, list[int]] = defaultdict(list)
    for rowid in rowids:
        by_block[rowid // BLOCK_ROWS].append(rowid)
    if not by_block:
        return
    stored = _blocks(db, vec_table, by_block)
    changed = {}
    for block, members in by_block.items():
        rows = stored[block]
        if any(rowid in rows for rowid in members):
            for rowid in members:
                rows.pop(rowid, None)
            changed[block] = rows
    _write_blocks(db, vec_table, changed)
    db.executemany(
        "DELETE FROM vector_int8_codes WHERE vec_table = ? AND row = ?",
        [(vec_table, rowid) for members in by_block.values() for rowid in members],
    )
    ann.note_changes(db, vec_table, [rowid for members in by_block.values() for rowid in members])


def clear(db: Database, vec_table: str) -> None:
    _new_version(db)
    db.execute("DELETE FROM vector_bit_blocks WHERE vec_table = ?", (vec_table,))
    db.execute("DELETE FROM vector_int8_codes WHERE vec_table = ?", (vec_table,))


def rebuild(db: Database, vec_table: str) -> int:
    """Make the companions again from every vector of ``vec_table``; returns how many."""
    clear(db, vec_table)
    if not db.table_exists(vec_table):
        return 0
    cursor = db.execute(f"SELECT rowid, embedding FROM {vec_table}")  # one pass over the vectors
    done = 0
    while page := cursor.fetchmany(REBUILD_PAGE):
        put(db, vec_table, [(row[0], row[1]) for row in page])
        done += len(page)
    return done


# -- reads ------------------------------------------------------------------------------------
def vector_count(db: Database, vec_table: str) -> int:
    """Rows of a vec0 table, from its rowid shadow table (``count(*)`` on vec0 reads every vector)."""
    return int(db.scalar(f"SELECT count(*) FROM {vec_table}_rowids") or 0)


def bit_count(db: Database, vec_table: str) -> int:
    return int(db.scalar("SELECT total(size) FROM vector_bit_blocks WHERE vec_table = ?", (vec_table,)) or 0)


def is_current(db: Database, vec_table: str) -> bool:
    """Whether the companions hold a row for every vector (a writer that bypassed them, such as
    the original engine, leaves the counts unequal). The bits stand for both companions: every
    write here changes both in one transaction, and counting the bits' blocks is cheap."""
    return db.table_exists("vector_bit_blocks") and bit_count(db, vec_table) == vector_count(db, vec_table)


BitsCache = dict[str, tuple[str, np.ndarray, np.ndarray]]


def stored_bits(db: Database, vec_table: str, cache: BitsCache | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every rowid of the companion and its bits (one row of bytes each); from ``cache`` while
    the companions' version token is the one they were read at."""
    version = db.scalar("SELECT value FROM meta WHERE key = ?", (VERSION_KEY,))
    if cache is not None and version is not None and vec_table in cache and cache[vec_table][0] == version:
        return cache[vec_table][1], cache[vec_table][2]
    rows = db.query("SELECT ids, bits FROM vector_bit_blocks WHERE vec_table = ?", (vec_table,))
    rowids = np.frombuffer(b"".join(row[0] for row in rows), dtype=np.int64)
    bits = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.uint8).reshape(len(rowids), -1)
    if cache is not None and version is not None:
        cache[vec_table] = (version, rowids, bits)
    return rowids, bits


def bit_candidates(
    db: Database, vec_table: str, query: np.ndarray, count: int, cache: BitsCache | None = None
) -> list[int] | None:
    """The ``count`` rowids whose sign bits are nearest the query's (Hamming distance); None
    when the stored bits are of another width than the query."""
    rowids, stored = stored_bits(db, vec_table, cache)
    if not len(rowids):
        return []
    query_bits = sign_bits(query.reshape(1, -1))
    if stored.shape[1] != query_bits.shape[1]:
        return None
    if stored.shape[1] % 8 == 0:  # 64 bits at a time
        stored, query_bits = stored.view(np.uint64), query_bits.view(np.uint64)
    distances = np.bitwise_count(stored ^ query_bits).sum(axis=1, dtype=np.int32)
    if count >= len(distances):
        return rowids.tolist()
    return rowids[np.argpartition(distances, count)[:count]].tolist()


def int8_nearest(db: Database, vec_table: str, query: np.ndarray, rowids: Sequence[int], k: int) -> list[int]:
    """The ``k`` of ``rowids`` nearest the query by their int8 codes (L2), nearest first."""
    codes = dict(
        db.query(
            f"SELECT row, code FROM vector_int8_codes WHERE vec_table = ? AND row IN ({IN_LIST})",
            (vec_table, in_list(rowids)),
        )
    )
    found = [(rowid, codes[rowid]) for rowid in rowids if rowid in codes]  # in the candidates' order
    if not found:
        return []
    vectors = decode_int8([code for _, code in found])
    distances = ((vectors - query.reshape(1, -1)) ** 2).sum(axis=1)
    order = np.argsort(distances, kind="stable")[:k]
    return [int(found[i][0]) for i in order]
