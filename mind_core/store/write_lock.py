"""One writer per mind, enforced by the operating system: an exclusive lock beside the mind file.

SQLite already serializes single transactions (BEGIN IMMEDIATE, busy timeout), but a harvest step
writes many transactions, and two steps interleaving their batches on one mind make each other
wait on every batch and, with a long batch, fail with "database is locked". A scheduler can queue
writers (Dagster's run queue does), yet a queue kept in a database is only as atomic as that
database's row locks; this lock is the guarantee that holds whatever schedules the writers:
``flock`` on ``<mind>.writer.lock`` held for the whole write, released by the kernel when the
process ends, however it ends.

POSIX only (Linux, macOS), and on network file systems only where they support ``flock``.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mind_core.errors import MindAccessError

LOCK_SUFFIX = ".writer.lock"


def lock_path_for(mind_path: str | Path) -> Path:
    path = Path(mind_path)
    return path.with_name(path.name + LOCK_SUFFIX)


@contextmanager
def mind_write_lock(mind_path: str | Path, *, blocking: bool = True) -> Iterator[bool]:
    """Hold the exclusive write lock of a mind for the block (waiting for it unless ``blocking``
    is False, in which case the block runs with ``False`` when another process holds it)."""
    lock_path = lock_path_for(mind_path)
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise MindAccessError(
            f"cannot write the mind at {mind_path}: its folder is read-only or not writable by this user "
            f"({exc.strerror}: {lock_path}); fix the permissions, or only read it (recall, doctor)"
        ) from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
