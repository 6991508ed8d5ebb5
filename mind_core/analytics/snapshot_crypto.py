"""Encrypted Parquet snapshots of encrypted minds: Parquet modular encryption (pyarrow) with a KMS
client whose master key is drawn from the mind's own key.

A snapshot of an encrypted mind would otherwise put its frames back on disk in the clear. Its
files are written with uniform encryption (footer and every column, AES-GCM), each file with
its own random data keys, wrapped (double wrapping, the Parquet key-management standard) under a
master key that ``MindKeyKms`` derives from the mind's key: HMAC-SHA256 of a raw key, or
PBKDF2-HMAC-SHA256 (256,000 rounds, a fixed label as salt) of a passphrase, once per process.
Whoever holds the mind's key reads its snapshots, nobody else; the key material (the wrapped data
keys) sits in each file's footer, so a snapshot moves as a folder of files.

Encrypted files end with the magic ``PARE`` instead of ``PAR1``: ``is_encrypted_parquet`` tells
them apart, and ``mind_core.analytics.queries`` reads them through pyarrow (DuckDB's own Parquet
encryption does not implement the key-management layer pyarrow writes).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os
from typing import Any

import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mind_core.store.cipher import MindKey

MASTER_KEY_ID = "mind-harvest-master"
ENCRYPTED_MAGIC = b"PARE"
_LABEL = b"mind-harvest/parquet-master-key/v1"
_PASSPHRASE_ROUNDS = 256_000
_NONCE_BYTES = 12


class SnapshotKeyError(Exception):
    """The key given does not open an encrypted snapshot file (its wrapped data keys)."""


@functools.lru_cache(maxsize=32)
def _master_from(secret: str, raw: bytes | None) -> bytes:
    if raw is not None:
        return hmac.new(raw, _LABEL, hashlib.sha256).digest()
    return hashlib.pbkdf2_hmac("sha256", secret.encode("utf-8"), _LABEL, _PASSPHRASE_ROUNDS)


def master_key(key: MindKey) -> bytes:
    """The 256-bit master key of a mind's snapshots, derived from the mind's key."""
    return _master_from(key.secret, key.raw)


class MindKeyKms(pe.KmsClient):
    """A KMS in the process: wraps data keys with AES-256-GCM under the mind-derived master key."""

    def __init__(self, master: bytes) -> None:
        super().__init__()
        self._aead = AESGCM(master)

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, key_bytes, master_key_identifier.encode())
        return base64.b64encode(nonce + sealed).decode("ascii")

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        blob = base64.b64decode(wrapped_key)
        try:
            return self._aead.decrypt(blob[:_NONCE_BYTES], blob[_NONCE_BYTES:], master_key_identifier.encode())
        except InvalidTag:
            raise SnapshotKeyError("the key does not open this snapshot") from None


@functools.lru_cache(maxsize=32)
def _factory(master: bytes) -> pe.CryptoFactory:
    """One crypto factory per master key: pyarrow caches wrapped keys per factory, so two minds'
    keys never meet in one cache."""
    return pe.CryptoFactory(lambda _config: MindKeyKms(master))


def encryption_properties(key: MindKey) -> Any:
    """Properties for ``pq.ParquetWriter``/``write_table``: every column and the footer encrypted."""
    config = pe.EncryptionConfiguration(footer_key=MASTER_KEY_ID, uniform_encryption=True)
    return _factory(master_key(key)).file_encryption_properties(pe.KmsConnectionConfig(), config)


def decryption_properties(key: MindKey) -> Any:
    """Properties for ``pq.read_table``/``ParquetFile`` to read a snapshot written with ``key``."""
    return _factory(master_key(key)).file_decryption_properties(
        pe.KmsConnectionConfig(), pe.DecryptionConfiguration()
    )


def is_encrypted_parquet(fs: Any, path: str) -> bool:
    """Whether the Parquet file at ``path`` (on fsspec ``fs``) has an encrypted footer."""
    with fs.open(path, "rb") as handle:
        handle.seek(-len(ENCRYPTED_MAGIC), os.SEEK_END)
        return bool(handle.read(len(ENCRYPTED_MAGIC)) == ENCRYPTED_MAGIC)


def read_encrypted(fs: Any, path: str, key: MindKey) -> Any:
    """The table in one encrypted snapshot file, as a pyarrow Table."""
    with fs.open(path, "rb") as handle:
        return pq.read_table(handle, decryption_properties=decryption_properties(key))
