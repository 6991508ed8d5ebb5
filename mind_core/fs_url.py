"""Folders addressed by fsspec URLs: where staged Parquet and snapshots go.

A location is a local path or a URL: ``file://`` (the default), ``memory://``, ``s3://``,
``gs://``, ``abfs://`` ... through the matching fsspec package (s3fs, gcsfs, adlfs). A location
that cannot be reached (unknown protocol, missing package, refused credentials, a path that is
not a folder) raises an ``UnreachableLocationError`` naming the URL and the reason, so a run
fails with a sentence rather than a driver's traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import fsspec
from fsspec.core import split_protocol, url_to_fs

from mind_core.errors import MindError

# What fsspec and its backends raise for a location that is not there: OSError (and its
# FileNotFoundError, PermissionError), ValueError ("Protocol not known"), ImportError (the
# backend package is not installed).
UNREACHABLE = (OSError, ValueError, ImportError)
# What the object stores' client libraries raise of their own, not as OSError: botocore's errors
# (an endpoint that refuses connections, credentials that are missing) under s3fs, aiohttp's under
# the HTTP-based backends. Looked up only when the library is already loaded: an error can only
# come from a library that was imported.
BACKEND_ERRORS = {"botocore.exceptions": "BotoCoreError", "aiohttp": "ClientError"}
LOCAL_PROTOCOLS = (None, "file", "local")


class UnreachableLocationError(MindError):
    """A location cannot be read or written; subclasses say which one (``what``)."""

    what = "location"

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{self.what} {url} is unreachable: {reason}")
        self.url = url
        self.reason = reason


def reason_of(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextmanager
def reaching(url: str, error: type[UnreachableLocationError] = UnreachableLocationError) -> Iterator[None]:
    """Turn the errors of a location that is not there into ``error(url, reason)``."""
    try:
        yield
    except UnreachableLocationError:
        raise
    except Exception as exc:
        if isinstance(exc, UNREACHABLE + backend_errors()):
            raise error(url, reason_of(exc)) from exc
        raise


def backend_errors() -> tuple[type[BaseException], ...]:
    """The loaded object-store client libraries' own error classes (see BACKEND_ERRORS)."""
    loaded = (getattr(sys.modules.get(module), name, None) for module, name in BACKEND_ERRORS.items())
    return tuple(kind for kind in loaded if isinstance(kind, type))


def filesystem(
    url: str, error: type[UnreachableLocationError] = UnreachableLocationError
) -> tuple[fsspec.AbstractFileSystem, str]:
    """The fsspec file system of ``url`` and the path within it."""
    with reaching(url, error):
        return url_to_fs(url)


def as_url(location: str | Path) -> str:
    """A URL as it is (without a trailing slash); a local path as its absolute ``file://`` URL."""
    text = str(location)
    if "://" in text:
        return text.rstrip("/")
    return Path(text).expanduser().resolve().as_uri()


def local_path(url: str) -> Path | None:
    """The local folder a ``file://`` URL (or a plain path) names; None for any other file system."""
    protocol, path = split_protocol(url)
    return Path(path) if protocol in LOCAL_PROTOCOLS else None
