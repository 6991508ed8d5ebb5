"""The staging store: where stateless harvest stages leave their Parquet for the writing ones.

Scanning and embedding may run on any machine; importing and loading vectors run where the mind
lives. What passes between them is Parquet files under one fsspec URL: ``file://`` under the mind
home by default, ``s3://``, ``gs://``, ``abfs://`` ... through the matching fsspec package
(s3fs, gcsfs, adlfs), chosen with ``$MIND_HARVEST_STAGING_URL`` or the pipeline's configuration.

Layout under the URL (one folder per mind, one entry per source)::

    <workspace>/<source>.parquet                    the staged scan
    <workspace>/<source>.vectors/texts.parquet      the texts of the frames that need a vector
    <workspace>/<source>.vectors/chunk-<key>.parquet the vectors of one chunk of those texts (its key:
                                                    the digest of its texts' content hashes)

A store that cannot be reached (unknown protocol, missing fsspec package, refused credentials,
a path that is not a folder) raises ``StagingStoreError`` naming the URL and the reason, so a run
fails with a sentence rather than a driver's traceback.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import fsspec

from mind_core import fs_url

STAGING_URL_ENV = "MIND_HARVEST_STAGING_URL"
STAGING_DIR = "staging"
SCAN_SUFFIX = ".parquet"
VECTORS_SUFFIX = ".vectors"
REACHABLE_MARKER = ".mind-harvest-staging"


class StagingStoreError(fs_url.UnreachableLocationError):
    """The staging store cannot be read or written."""

    what = "staging store"


@contextmanager
def reaching(url: str) -> Iterator[None]:
    """Turn the errors of a store that is not there into ``StagingStoreError(url, reason)``."""
    with fs_url.reaching(url, StagingStoreError):
        yield


def default_staging_url(home_root: str | Path) -> str:
    """``$MIND_HARVEST_STAGING_URL``, else ``file://<home>/staging``."""
    configured = os.environ.get(STAGING_URL_ENV)
    if configured:
        return configured
    return Path(home_root, STAGING_DIR).resolve().as_uri()


def filesystem(url: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """The fsspec file system of ``url`` and the path within it."""
    return fs_url.filesystem(url, StagingStoreError)


class StagingStore:
    """One staging store, addressed by its URL."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def __repr__(self) -> str:
        return f"StagingStore({self.url!r})"

    def scan_url(self, workspace: str, source: str) -> str:
        return f"{self.url}/{workspace}/{source}{SCAN_SUFFIX}"

    def vectors_url(self, workspace: str, source: str) -> str:
        """The folder of a source's vector chunks."""
        return f"{self.url}/{workspace}/{source}{VECTORS_SUFFIX}"

    def texts_url(self, workspace: str, source: str) -> str:
        return f"{self.vectors_url(workspace, source)}/texts{SCAN_SUFFIX}"

    def chunk_url(self, workspace: str, source: str, key: str) -> str:
        return f"{self.vectors_url(workspace, source)}/chunk-{key}{SCAN_SUFFIX}"

    def ensure_reachable(self) -> None:
        """Create the store's root if needed, write its marker and list it: fails early, with the URL
        and reason. The marker is what makes the root exist on an object store (S3 and the like have
        no empty folders) and proves the credentials may write, not only read."""
        fs, path = filesystem(self.url)
        with reaching(self.url):
            fs.makedirs(path, exist_ok=True)
            fs.pipe_file(f"{path}/{REACHABLE_MARKER}", b"")
            fs.ls(path)

    def chunk_urls(self, workspace: str, source: str) -> list[str]:
        """The vector chunk files of a source, in chunk order (none when it has no folder)."""
        folder = self.vectors_url(workspace, source)
        fs, path = filesystem(folder)
        with reaching(self.url):
            if not fs.exists(path):
                return []
            names = sorted(
                entry.rsplit("/", 1)[-1] for entry in fs.ls(path, detail=False) if _is_chunk(entry)
            )
        return [f"{folder}/{name}" for name in names]

    def keep_only_chunks(self, workspace: str, source: str, keys: list[str]) -> int:
        """Remove the source's vector chunks whose key is not in ``keys`` (made for texts that no
        longer need a vector); the others are kept for the embedding steps to reuse. The count removed."""
        wanted = {self.chunk_url(workspace, source, key) for key in keys}
        stale = [url for url in self.chunk_urls(workspace, source) if url not in wanted]
        fs, _ = filesystem(self.url)
        with reaching(self.url):
            for url in stale:
                fs.rm(filesystem(url)[1])
        return len(stale)


def _is_chunk(entry: Any) -> bool:
    name = str(entry).rsplit("/", 1)[-1]
    return name.startswith("chunk-") and name.endswith(SCAN_SUFFIX)
