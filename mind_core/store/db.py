"""Connections to a mind file: sqlite-vec loaded, WAL, foreign keys, busy timeout, transactions.

The driver is chosen at import time, the first of these that can load extensions:
``sqlcipher3`` (SQLCipher 4: a recent SQLite with FTS5 and page encryption, bundled in its
wheel), the stdlib ``sqlite3`` (which cannot load extensions on many builds, this project's CI
machine's included), ``pysqlite3`` (a bundled SQLite with the same DB-API).

One driver for every mind, plain and encrypted alike: a process that loaded sqlite-vec into two
SQLite libraries would crash, since SQLite loads an extension with ``RTLD_GLOBAL`` and the
second load rebinds the first's pointer to its SQLite. SQLCipher reads and writes a plain mind
as plain SQLite does; an encrypted one is keyed before anything else runs on its connection
(``mind_core.store.cipher``). Every connection to a mind file is made by ``Database._open``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote

from mind_core.errors import ExtensionMissingError, MindAccessError
from mind_core.store import cipher

BUSY_TIMEOUT_MS = 30_000
# How much of the file a connection reads through a memory map: the vector lane scans every stored
# vector, which costs about a third less CPU this way on a large mind. The mapped pages count in the
# process's resident memory as they are read (the kernel's page cache, dropped at will), so a
# writer that passes over the whole file (a harvest) maps none (``Database.memory_bounds``).
MMAP_BYTES = 1 << 30
CACHE_KIB = 65_536  # the page cache of a connection, in KiB (64 MiB)
# A stored vector is 4 KiB (1024 float32): with 16 KiB pages a batch of vectors is written in about
# half the time of 4 KiB pages (sqlite-vec keeps vectors in large blobs spread over pages).
NEW_MIND_PAGE_SIZE = 16_384
WAL_CHECKPOINT_BYTES = 16 << 20  # checkpoint after about 16 MiB of WAL
# The one way this package asks for rows whose column is one of many values: ``col IN (IN_LIST)``
# with ``in_list(values)`` as its single bound parameter. Any number of values in one statement,
# never SQLite's bound-parameter limit, and no SQL text that changes with the count.
IN_LIST = "SELECT value FROM json_each(?)"


def in_list(values: Iterable[Any]) -> str:
    """The bound parameter of :data:`IN_LIST`: the values (ints or strings) as one JSON array."""
    return json.dumps(list(values))


def escape_like(term: str) -> str:
    """``term`` with ``%``, ``_`` and ``\\`` made literal, for ``LIKE ? ESCAPE '\\'``."""
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _can_load_extensions(module: ModuleType) -> bool:
    try:
        conn = module.connect(":memory:")
    except Exception:
        return False
    try:
        return hasattr(conn, "enable_load_extension")
    finally:
        conn.close()


def _pick_driver() -> ModuleType | None:
    candidates = [cipher.CIPHER_DRIVER, "sqlite3", "pysqlite3.dbapi2"]
    for name in candidates:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if _can_load_extensions(module):
            return module
    return None


sqlite: ModuleType | None = _pick_driver()

_FIX_HINT = (
    "mind-harvest needs an SQLite driver that can load the sqlite-vec extension. "
    "Python's sqlite3 module here cannot load extensions; install the bundled driver with "
    "`pip install pysqlite3-binary` (Linux x86_64) or use a Python built with "
    "--enable-loadable-sqlite-extensions, and make sure `pip install sqlite-vec` succeeded."
)


def driver() -> ModuleType:
    """The DB-API module in use; raises a clear error when none can load extensions."""
    if sqlite is None:
        raise ExtensionMissingError(_FIX_HINT)
    return sqlite


def load_sqlite_vec(conn: Any) -> None:
    try:
        import sqlite_vec
    except ImportError as exc:
        raise ExtensionMissingError("The sqlite-vec package is not installed. " + _FIX_HINT) from exc
    try:
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
    except Exception as exc:  # driver-specific error types
        raise ExtensionMissingError(f"sqlite-vec failed to load ({exc}). " + _FIX_HINT) from exc


def _keyed(module: ModuleType, target: str, path: Path, key: cipher.MindKey | None, **options: Any) -> Any:
    """``module.connect(target)``, keyed with ``key`` when the mind is encrypted."""
    conn = module.connect(target, isolation_level=None, check_same_thread=False, **options)
    if key is not None:
        try:
            cipher.apply_key(conn, path, key, NEW_MIND_PAGE_SIZE)
        except BaseException:
            conn.close()
            raise
    return conn


def _connect_readonly(module: ModuleType, path: Path, key: cipher.MindKey | None) -> Any:
    """A read-only connection to a mind in WAL mode.

    ``mode=ro`` needs the -wal/-shm files or the right to create them. A mind in a folder we
    cannot write (a read-only disk, a snapshot) and without a WAL is opened ``immutable``
    instead, which assumes the file does not change while open; one with a non-empty WAL we
    cannot read is refused rather than read without its latest commits.
    """
    uri = f"file:{quote(str(path))}?mode=ro"
    conn = _keyed(module, uri, path, key, uri=True)
    try:
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return conn
    except module.OperationalError:
        conn.close()
        wal = path.with_name(path.name + "-wal")
        if not path.is_file() or (wal.exists() and wal.stat().st_size > 0):
            raise
    return _keyed(module, uri + "&immutable=1", path, key, uri=True)


_ACCESS_HINTS = (
    ("readonly", "the file or its folder is read-only: fix the permissions or open the mind read-only"),
    ("cannot be written", "the file or its folder is read-only: fix the permissions or open the mind read-only"),
    ("disk is full", "the disk is full: free some space and run the command again"),
    ("unable to open", "check that the folder exists and can be written"),
    ("not a database", "this file is not a mind (an SQLite database)"),
)


def access_error(path: str, exc: BaseException) -> MindAccessError:
    """A one-line, actionable error for a mind that cannot be opened or written."""
    reason = str(exc) or type(exc).__name__
    folder = Path(path).parent
    if "unable to open" in reason and folder.is_dir() and not os.access(folder, os.W_OK):
        reason += " (its folder cannot be written)"
    hint = next((text for key, text in _ACCESS_HINTS if key in reason.lower()), None)
    return MindAccessError(f"cannot use the mind at {path}: {reason}" + (f" ({hint})" if hint else ""))


def well_formed(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD.

    JSON allows ``"\\ud800"`` escapes, so a query from a client can hold code points that UTF-8
    (SQLite bindings, embedders) refuses; a query must not fail because of one stray unit.
    """
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class Database:
    """One connection to one mind file, with re-entrant transactions.

    The connection runs in autocommit mode; ``transaction()`` issues ``BEGIN IMMEDIATE`` so a
    writer takes the write lock up front and waits (busy timeout) instead of failing later with
    "database is locked" when two processes write the same mind. Nested calls become savepoints.
    """

    def __init__(
        self, path: str | Path = ":memory:", *, readonly: bool = False, key: cipher.MindKey | None = None
    ) -> None:
        """Open ``path``. An encrypted mind is opened with ``key``, else the key the environment
        or the keyring holds for it (``cipher.find_key``); a new mind is created encrypted when
        ``key`` is given or the environment names one for it."""
        self.path = str(path)
        self.readonly = readonly
        self.key = self._key_to_use(key)
        self.encrypted = self.key is not None
        module = cipher.require_cipher(driver()) if self.encrypted else driver()
        self.conn: Any = None
        try:
            self._open(module)
        except (module.DatabaseError, OSError) as exc:
            if self.conn is not None:
                self.conn.close()
            raise access_error(self.path, exc) from exc
        self._depth = 0
        self._lock = threading.RLock()

    def _key_to_use(self, given: cipher.MindKey | None) -> cipher.MindKey | None:
        """The key this connection needs: for an encrypted file the given or configured one
        (``MindKeyError`` without any); for a new file the given or the environment's; else none."""
        if self.path == ":memory:":
            return None
        if cipher.is_encrypted(self.path):
            key = given or cipher.find_key(self.path)
            if key is None:
                raise cipher.missing_key_error(self.path)
            return key
        new = not Path(self.path).is_file() or Path(self.path).stat().st_size == 0
        if new and not self.readonly:
            return given or cipher.key_from_environment(cipher.mind_name(self.path))
        return None

    def _open(self, module: ModuleType) -> None:
        readonly = self.readonly
        if self.path != ":memory:":
            path = Path(self.path).resolve()
            if readonly:
                self.conn = _connect_readonly(module, path, self.key)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.conn = _keyed(module, self.path, path, self.key)
        else:
            self.conn = module.connect(":memory:", isolation_level=None, check_same_thread=False)
        self.conn.row_factory = module.Row
        self.errors = module
        load_sqlite_vec(self.conn)
        self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self.conn.execute(f"PRAGMA cache_size = {-CACHE_KIB}")
        self.conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        if not readonly and self.path != ":memory:":
            if not self.encrypted:  # (an encrypted mind's page size is set with its key)
                # Takes effect only while the file is still empty (a new mind), before WAL is on.
                self.conn.execute(f"PRAGMA page_size = {NEW_MIND_PAGE_SIZE}")
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            page_size = int(self.conn.execute("PRAGMA page_size").fetchone()[0])
            # fewer, larger checkpoints on bulk imports
            self.conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_BYTES // page_size}")
        self.conn.execute("PRAGMA foreign_keys = ON")

    # -- statements -------------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> Any:
        return self.conn.executemany(sql, rows)

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Any]:
        return self.conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        return self.conn.execute(sql, params).fetchone()

    def scalar(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        row = self.conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def table_exists(self, name: str) -> bool:
        return self.scalar("SELECT 1 FROM sqlite_master WHERE name = ? AND type IN ('table','view')", (name,)) == 1

    def columns(self, table: str) -> set[str]:
        return {row[1] for row in self.conn.execute(f"PRAGMA table_info({table})")}

    @contextlib.contextmanager
    def memory_bounds(self, mmap_bytes: int, cache_kib: int) -> Iterator[Database]:
        """Within the block, read at most ``mmap_bytes`` of the file through a memory map (0: none)
        and keep at most ``cache_kib`` KiB of pages in this connection's cache; then the bounds it
        had before (a smaller cache frees the pages beyond it at once)."""
        before = (int(self.scalar("PRAGMA mmap_size") or 0), int(self.scalar("PRAGMA cache_size") or 0))
        self.conn.execute(f"PRAGMA mmap_size = {int(mmap_bytes)}")
        self.conn.execute(f"PRAGMA cache_size = {-int(cache_kib)}")
        try:
            yield self
        finally:
            self.conn.execute(f"PRAGMA mmap_size = {before[0]}")
            self.conn.execute(f"PRAGMA cache_size = {before[1]}")

    # -- transactions -----------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[Database]:
        """Run the block in one transaction (BEGIN IMMEDIATE); nested blocks are savepoints."""
        with self._lock:
            depth = self._depth
            if depth == 0:
                self.conn.execute("BEGIN IMMEDIATE")
            else:
                self.conn.execute(f"SAVEPOINT sp{depth}")
            self._depth += 1
            try:
                yield self
            except BaseException:
                self._depth -= 1
                if depth == 0:
                    self.conn.execute("ROLLBACK")
                else:
                    self.conn.execute(f"ROLLBACK TO sp{depth}")
                    self.conn.execute(f"RELEASE sp{depth}")
                raise
            else:
                self._depth -= 1
                if depth == 0:
                    self.conn.execute("COMMIT")
                else:
                    self.conn.execute(f"RELEASE sp{depth}")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self._depth == 0 and not self.readonly and self.path != ":memory:":
                # what ANALYZE reads goes through the bounded cache, not the memory map: on a large
                # mind the map's pages would count in the process's memory as it ends
                self.conn.execute("PRAGMA mmap_size = 0")
                self.conn.execute("PRAGMA optimize")
        self.conn.close()
