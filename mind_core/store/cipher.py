"""Encryption at rest: a mind file encrypted with SQLCipher, its key from the environment or the
OS keyring.

SQLCipher (through the ``sqlcipher3`` wheel, which bundles its own SQLite with FTS5 and can load
sqlite-vec; the store's driver for every mind, ``mind_core.store.db``) encrypts every page of the
file and of its WAL with AES-256 and authenticates each with an HMAC; without the key the file is
indistinguishable from random bytes, and plain ``sqlite3`` calls it "not a database". A mind
whose file does not start with SQLite's header is encrypted, and keyed on every connection.

Where the key comes from, first found wins:

1. ``$MIND_HARVEST_KEY_<NAME>``: the key of one mind, ``<NAME>`` its workspace in capitals with
   every other character an underscore (``personal`` -> ``MIND_HARVEST_KEY_PERSONAL``,
   ``team-a`` -> ``MIND_HARVEST_KEY_TEAM_A``);
2. ``$MIND_HARVEST_KEY``: the key of every mind of the home;
3. the OS keyring (when the optional ``keyring`` package is installed): service ``mind-harvest``,
   user the workspace's name (``keyring set mind-harvest personal``). Read only for a mind that
   is already encrypted, so a desktop's keyring is never woken for plain minds.

A key is a passphrase (stretched by SQLCipher's PBKDF2-HMAC-SHA512, 256,000 rounds, with the
file's own salt) or 64 hexadecimal digits, a raw 256-bit key used as it is. The stretched key of a
passphrase is kept per process and salt, so a process pays the ~0.2 s of stretching once per mind,
not once per connection. A new mind is created encrypted when one of the variables names a key
for it; an existing plain mind stays plain until ``mind encrypt``.

The key is never logged, never part of an error message or a ``repr``: ``MindKey`` shows only
where it came from.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from mind_core.errors import ExtensionMissingError, MindAccessError

CIPHER_DRIVER = "sqlcipher3.dbapi2"
SQLITE_HEADER = b"SQLite format 3\x00"
SALT_BYTES = 16
KEY_ENV = "MIND_HARVEST_KEY"
KEYRING_SERVICE = "mind-harvest"
# SQLCipher 4's defaults for a passphrase: PBKDF2-HMAC-SHA512 over the file's 16-byte salt.
KDF_ROUNDS = 256_000
KEY_BYTES = 32
_RAW_KEY = re.compile(r"^[0-9a-fA-F]{64}$")


class MindKeyError(MindAccessError):
    """An encrypted mind without its key, or with a key that does not open it. The message names
    the mind and where a key is looked for; never the key."""


@dataclass(frozen=True)
class MindKey:
    """A mind's key and where it came from (``$MIND_HARVEST_KEY``, ``keyring``...)."""

    secret: str = field(repr=False)
    origin: str

    @property
    def raw(self) -> bytes | None:
        """The 32 bytes of a raw key (64 hex digits), None for a passphrase."""
        return bytes.fromhex(self.secret) if _RAW_KEY.match(self.secret) else None

    def __str__(self) -> str:
        return f"the key from {self.origin}"


def mind_name(path: str | Path) -> str:
    """The workspace a mind file belongs to: ``personal.mind`` -> personal,
    ``workspaces/team-a.mind`` -> team-a (the home's layout, mind_core.store.home)."""
    return Path(path).stem


def key_variable(name: str) -> str:
    """The variable holding one mind's key: ``MIND_HARVEST_KEY_TEAM_A`` for ``team-a``."""
    return f"{KEY_ENV}_{re.sub(r'[^A-Z0-9]', '_', name.upper())}"


def is_encrypted(path: str | Path) -> bool:
    """Whether ``path`` is a non-empty file that does not start with SQLite's header (an encrypted
    mind; a file that is no SQLite database at all also reads as one, and fails on its key)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except (FileNotFoundError, IsADirectoryError):
        return False
    return len(head) == len(SQLITE_HEADER) and head != SQLITE_HEADER


def key_from_environment(name: str) -> MindKey | None:
    """The key the environment names for mind ``name``: its own variable, else the home's."""
    for variable in (key_variable(name), KEY_ENV):
        secret = os.environ.get(variable)
        if secret:
            return MindKey(secret, f"${variable}")
    return None


def key_from_keyring(name: str) -> MindKey | None:
    """The key stored in the OS keyring for ``name`` (service ``mind-harvest``); None without the
    ``keyring`` package, without a usable backend, or without an entry."""
    try:
        import keyring
        import keyring.errors
    except ImportError:
        return None
    try:
        secret = keyring.get_password(KEYRING_SERVICE, name)
    except keyring.errors.KeyringError:
        return None
    return MindKey(secret, f"the keyring ({KEYRING_SERVICE}/{name})") if secret else None


def find_key(path: str | Path) -> MindKey | None:
    """The key configured for the mind at ``path``: environment first, then the keyring."""
    name = mind_name(path)
    return key_from_environment(name) or key_from_keyring(name)


def missing_key_error(path: str | Path) -> MindKeyError:
    name = mind_name(path)
    return MindKeyError(
        f"the mind {name!r} is encrypted and no key was given (or this file is not a mind, an "
        f"SQLite database): set ${key_variable(name)} or ${KEY_ENV}, or store the key with "
        f"`keyring set {KEYRING_SERVICE} {name}`"
    )


def wrong_key_error(path: str | Path, key: MindKey) -> MindKeyError:
    return MindKeyError(
        f"the mind {mind_name(path)!r} is encrypted and {key} does not open it "
        "(a wrong key, or the file is damaged or not a mind at all)"
    )


def require_cipher(module: ModuleType) -> ModuleType:
    """``module`` (the store's driver) when it is SQLCipher's; a clear error otherwise."""
    if module.__name__ != CIPHER_DRIVER:
        raise ExtensionMissingError(
            "this mind is encrypted, and reading it needs SQLCipher: `pip install sqlcipher3`"
        )
    return module


@functools.lru_cache(maxsize=32)
def _stretched(secret: str, salt: bytes) -> bytes:
    return hashlib.pbkdf2_hmac("sha512", secret.encode("utf-8"), salt, KDF_ROUNDS, KEY_BYTES)


def key_pragma(key: MindKey, salt: bytes | None) -> str:
    """The ``PRAGMA key`` statement for ``key``: a raw key as SQLCipher's blob literal (no
    stretching); a passphrase stretched here once per salt (the file's first 16 bytes) and given
    raw, which SQLCipher accepts as equal to the passphrase; for a new file (no salt yet) the
    passphrase itself, quoted, and SQLCipher stretches it with a fresh salt."""
    raw = key.raw
    if raw is None and salt is not None:
        raw = _stretched(key.secret, salt)
    if raw is not None:
        return f"PRAGMA key = \"x'{raw.hex()}'\""
    return "PRAGMA key = '" + key.secret.replace("'", "''") + "'"


def file_salt(path: str | Path) -> bytes | None:
    """The salt at the start of an encrypted file; None for a new (missing or empty) one."""
    try:
        with open(path, "rb") as handle:
            salt = handle.read(SALT_BYTES)
    except FileNotFoundError:
        return None
    return salt if len(salt) == SALT_BYTES else None


def apply_key(conn: Any, path: str | Path, key: MindKey, page_size: int) -> None:
    """Key a fresh SQLCipher connection (the first statement on it) and check that the key opens
    the file; ``MindKeyError`` when it does not. Temporary tables and sorts stay in memory, so no
    decrypted page is spilled to a temporary file.

    SQLCipher cannot read the page size from an encrypted header, so every encrypted mind uses
    the one ``page_size`` (the store's 16 KiB, set before the first read, on creation and on
    every open alike)."""
    conn.execute("PRAGMA cipher_log_level = NONE")  # a wrong key is our error, not SQLCipher's log
    conn.execute(key_pragma(key, file_salt(path) if is_encrypted(path) else None))
    conn.execute(f"PRAGMA cipher_page_size = {int(page_size)}")
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchall()
    except Exception as exc:
        if "not a database" in str(exc):
            raise wrong_key_error(path, key) from None
        raise
    conn.execute("PRAGMA temp_store = MEMORY")
