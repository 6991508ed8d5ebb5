"""``mind encrypt`` and ``mind decrypt``: a mind rewritten, encrypted or plain, and swapped in.

Both ways run the same steps: hold the mind's write lock (a harvest cannot write meanwhile) and
its SQLite write lock, copy the whole database with SQLCipher's ``sqlcipher_export`` into a new
file beside it (``<mind>.rewrite``: schema, FTS5 and sqlite-vec tables, every row), check the copy
(``quick_check``, the same number of rows in every table), then rename it over the mind in one
``os.replace``. Until that rename the original is untouched; a failure at any step removes the
copy and leaves the mind as it was. The WAL is checkpointed into the original first and the
original's ``-wal``/``-shm`` files go with its last connection, so no plain page stays beside an
encrypted mind in a WAL file.

What is not rewritten: the ANN graphs in ``<mind>.ann/`` hold vectors and frame ids, no text, and
stay as they are (docs/privacy.md); copies made before (backups, file-system snapshots, the disk's
freed blocks) keep what they held.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mind_core.errors import InvalidInputError, MindAccessError, NotFoundError
from mind_core.store import cipher
from mind_core.store.db import NEW_MIND_PAGE_SIZE, Database, driver, load_sqlite_vec
from mind_core.store.write_lock import mind_write_lock

REWRITE_SUFFIX = ".rewrite"
_EXPORTED = "exported"


@dataclass(frozen=True)
class Rewritten:
    """What ``encrypt_mind`` / ``decrypt_mind`` did: the mind, whether it is now encrypted, the
    rows copied (per table) and where its key came from (never the key)."""

    path: str
    encrypted: bool
    rows: dict[str, int]
    key_origin: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "encrypted": self.encrypted, "tables": len(self.rows),
                "rows": sum(self.rows.values()), "key_from": self.key_origin}


def encrypt_mind(path: str | Path, key: cipher.MindKey | None = None) -> Rewritten:
    """Encrypt the plain mind at ``path`` with ``key`` (default: the configured one)."""
    mind = _existing(path)
    if cipher.is_encrypted(mind):
        raise InvalidInputError(f"the mind {cipher.mind_name(mind)!r} is already encrypted")
    key = key or cipher.find_key(mind)
    if key is None:
        name = cipher.mind_name(mind)
        raise cipher.MindKeyError(
            f"no key to encrypt the mind {name!r} with: set ${cipher.key_variable(name)} or "
            f"${cipher.KEY_ENV}, or store one with `keyring set {cipher.KEYRING_SERVICE} {name}`"
        )
    rows = _rewrite(mind, source_key=None, target_key=key)
    return Rewritten(str(mind), True, rows, key.origin)


def decrypt_mind(path: str | Path, key: cipher.MindKey | None = None) -> Rewritten:
    """Write the encrypted mind at ``path`` back as a plain SQLite file."""
    mind = _existing(path)
    if not cipher.is_encrypted(mind):
        raise InvalidInputError(f"the mind {cipher.mind_name(mind)!r} is not encrypted")
    key = key or cipher.find_key(mind)
    if key is None:
        raise cipher.missing_key_error(mind)
    rows = _rewrite(mind, source_key=key, target_key=None)
    return Rewritten(str(mind), False, rows, key.origin)


def _existing(path: str | Path) -> Path:
    mind = Path(path).expanduser().resolve()
    if not mind.is_file():
        raise NotFoundError(f"no mind at {mind}")
    return mind


def _rewrite(mind: Path, source_key: cipher.MindKey | None, target_key: cipher.MindKey | None) -> dict[str, int]:
    copy = mind.with_name(mind.name + REWRITE_SUFFIX)
    with mind_write_lock(mind, blocking=False) as locked:
        if not locked:
            raise MindAccessError(
                f"the mind {cipher.mind_name(mind)!r} is being written (a harvest?): run the command "
                "again when it is done"
            )
        _remove_copy(copy)
        try:
            rows = _export(mind, copy, source_key, target_key)
            _check_copy(copy, target_key, rows)
            os.replace(copy, mind)
        except BaseException:
            _remove_copy(copy)
            raise
    return rows


def _export(mind: Path, copy: Path, source_key: cipher.MindKey | None, target_key: cipher.MindKey | None) -> dict[str, int]:
    """Copy ``mind`` into ``copy`` with ``sqlcipher_export``; the rows per table it holds."""
    source = Database(mind, key=source_key)
    source.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    source.close()  # reopened below, as it is, without the connection's settings
    module = cipher.require_cipher(driver())
    conn = module.connect(str(mind), isolation_level=None, check_same_thread=False)
    try:
        if source_key is not None:
            cipher.apply_key(conn, mind, source_key, NEW_MIND_PAGE_SIZE)
        load_sqlite_vec(conn)
        conn.execute("BEGIN IMMEDIATE")  # no other connection commits while the copy is made
        rows = _row_counts(conn)
        attach_key = '""' if target_key is None else _attach_key(target_key)
        conn.execute(f"ATTACH DATABASE ? AS {_EXPORTED} KEY {attach_key}", (str(copy),))
        if target_key is not None:
            conn.execute(f"PRAGMA {_EXPORTED}.cipher_page_size = {NEW_MIND_PAGE_SIZE}")
        else:
            conn.execute(f"PRAGMA {_EXPORTED}.page_size = {NEW_MIND_PAGE_SIZE}")
        conn.execute(f"SELECT sqlcipher_export('{_EXPORTED}')")
        conn.execute("COMMIT")
        conn.execute(f"DETACH DATABASE {_EXPORTED}")
    finally:
        conn.close()
    if mind.with_name(mind.name + "-wal").exists():  # the last connection to close removes it
        raise MindAccessError(
            f"another process has the mind {cipher.mind_name(mind)!r} open (`mind serve`, a Dagster "
            "run?): stop it and run the command again"
        )
    return rows


def _attach_key(key: cipher.MindKey) -> str:
    """The KEY clause of ATTACH for a new file: a raw key as a blob literal, a passphrase quoted
    (SQLCipher stretches it with the new file's own salt)."""
    statement = cipher.key_pragma(key, salt=None)
    return statement.removeprefix("PRAGMA key = ")


def _row_counts(conn: Any) -> dict[str, int]:
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' "
            "AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    ]
    return {table: conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0] for table in tables}


def _check_copy(copy: Path, key: cipher.MindKey | None, expected: dict[str, int]) -> None:
    """The copy opens (with ``key``), passes ``quick_check`` and holds every table's rows."""
    db = Database(copy, key=key)
    try:
        if db.encrypted != (key is not None):
            raise MindAccessError(f"the rewritten copy of the mind is {'not ' if key else ''}encrypted")
        verdict = db.scalar("PRAGMA quick_check")
        if verdict != "ok":
            raise MindAccessError(f"the rewritten copy of the mind failed its check: {verdict}")
        found = _row_counts(db.conn)
        if found != expected:
            differ = sorted(t for t in expected.keys() | found.keys() if expected.get(t) != found.get(t))
            raise MindAccessError(f"the rewritten copy of the mind lost rows (tables: {', '.join(differ)})")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()


def _remove_copy(copy: Path) -> None:
    for leftover in (copy, copy.with_name(copy.name + "-wal"), copy.with_name(copy.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
