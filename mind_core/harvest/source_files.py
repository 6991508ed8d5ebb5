"""Opening and walking a source's files safely: regular files only, bounded, inside the source.

A harvest reads whatever a user's folder holds, and a folder can hold what must never be read:
a named pipe (``open`` blocks forever while the harvest holds the mind's write lock), a device
or a link to one (``/dev/zero`` never ends), a link to a file outside the folder (``/etc/passwd``
is not the user's notes), folders nested thousands deep (a recursive walk crashes). Every
built-in plugin opens and walks through here, so each of these is one located error and the
scan goes on:

- Only regular files are opened: the kind is checked before opening (a FIFO, socket or device is
  skipped) and again on the open descriptor (opened non-blocking, so even a swapped-in FIFO
  cannot hang the open).
- Every file has a size limit, checked before a byte is read: ``DEFAULT_MAX_FILE_BYTES`` (64 MiB)
  for a file read as one record (a note, an .eml or maildir message, an AI Studio prompt), and
  ``DEFAULT_MAX_EXPORT_BYTES`` (32 GiB) for a file streamed record by record in bounded memory (a
  chat export's JSON, an mbox, an export archive). A source's own ``max_file_bytes``
  (``mind sources add --max-file-size``) replaces both.
- A symlink that resolves outside the source's folder is not followed unless the source allows it
  (``--follow-outside-links``); links to folders are never followed, so a walk has no loops, and
  a file reached twice (a link beside its target, a hard link) is read once.
- Walks are iterative: depth never overflows the stack; a folder too deep for the operating
  system's path limit is reported by name.
- A source's exclusions (``mind sources add --exclude GLOB``) are skipped by every walk without
  an error, and counted (``scanned_with(..., excluded=set())`` collects their paths).

The rules of the source being scanned are a context variable (``scanned_with``), so a plugin's
``scan(path)`` keeps its signature and a third-party plugin gets the same protection by calling
``open_source_file`` and ``walk_files``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from fnmatch import fnmatch, fnmatchcase
from pathlib import Path
from typing import BinaryIO, TypeVar

from mind_core.harvest.items import HarvestError
from mind_core.harvest.paths import stored_text

DEFAULT_MAX_FILE_BYTES = 64 * 2**20
DEFAULT_MAX_EXPORT_BYTES = 32 * 2**30

T = TypeVar("T")


@dataclass(frozen=True)
class ReadingRules:
    """How a source's files may be read: its size limit (None: the defaults), whether links
    that lead outside its folder are followed, and the files it never reads (``exclude``: globs
    matched against a file's path relative to the folder walked, as ``is_excluded`` says)."""

    max_file_bytes: int | None = None
    follow_outside_links: bool = False
    exclude: tuple[str, ...] = ()

    def limit(self, streamed: bool) -> int:
        if self.max_file_bytes is not None:
            return self.max_file_bytes
        return DEFAULT_MAX_EXPORT_BYTES if streamed else DEFAULT_MAX_FILE_BYTES

    def to_json(self) -> str:
        return json.dumps(
            {
                "max_file_bytes": self.max_file_bytes,
                "follow_outside_links": self.follow_outside_links,
                "exclude": list(self.exclude),
            }
        )

    @property
    def exclusion_mark(self) -> str:
        """What a source fingerprint carries of the exclusions: new ones make the source read again."""
        if not self.exclude:
            return ""
        return "+exclude:" + hashlib.sha256("\x00".join(self.exclude).encode("utf-8", "surrogatepass")).hexdigest()[:16]

    def is_excluded(self, relpath: str) -> bool:
        """Whether ``relpath`` (``/``-separated, relative to the folder walked) matches an exclusion:
        the whole path (``drafts/**``, ``*.msg``: ``*`` also matches ``/``) or a folder it lies in
        (``drafts``); a pattern without ``/`` also any one name on the path (``outlook.msg``)."""
        parts = relpath.split("/")
        folders = ["/".join(parts[:end]) for end in range(1, len(parts))]
        return any(
            fnmatchcase(relpath, pattern)
            or any(fnmatchcase(folder, pattern.rstrip("/")) for folder in folders)
            or ("/" not in pattern and any(fnmatchcase(part, pattern) for part in parts))
            for pattern in self.exclude
        )

    @classmethod
    def from_json(cls, text: str | None) -> ReadingRules:
        try:
            data = json.loads(text) if text else {}
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            data = {}
        limit, follow, exclude = data.get("max_file_bytes"), data.get("follow_outside_links"), data.get("exclude")
        patterns = tuple(p for p in exclude if isinstance(p, str) and p) if isinstance(exclude, list) else ()
        return cls(limit if isinstance(limit, int) and limit > 0 else None, follow is True, patterns)


def exclusion_patterns(globs: Iterable[str]) -> tuple[str, ...]:
    """Globs as a source stores them: stripped, a leading ``./`` dropped, ``\\`` as ``/``, each once;
    an empty one is refused (ValueError)."""
    patterns: list[str] = []
    for glob in globs:
        pattern = glob.strip().replace("\\", "/").removeprefix("./")
        if not pattern:
            raise ValueError(f"{glob!r} is not a glob: give a pattern such as '*.msg' or 'drafts/**'")
        if pattern not in patterns:
            patterns.append(pattern)
    return tuple(patterns)


DEFAULT_RULES = ReadingRules()
_rules: ContextVar[ReadingRules | None] = ContextVar("source_reading_rules", default=None)
# the paths a scan's walks passed over as excluded (None: not counted, as in a fingerprint)
_excluded: ContextVar[set[str] | None] = ContextVar("source_excluded_files", default=None)


def current_rules() -> ReadingRules:
    return _rules.get() or DEFAULT_RULES


@contextmanager
def reading_with(rules: ReadingRules, excluded: set[str] | None = None) -> Iterator[None]:
    """The files opened and walked inside read under ``rules``; the paths of the files excluded
    are added to ``excluded`` when given."""
    token, excluded_token = _rules.set(rules), _excluded.set(excluded)
    try:
        yield
    finally:
        _excluded.reset(excluded_token)
        _rules.reset(token)


def scanned_with(events: Iterator[T], rules: ReadingRules, excluded: set[str] | None = None) -> Iterator[T]:
    """``events`` (a plugin's scan) run under ``rules``: the rules hold during each step of the
    generator, however its consumer interleaves it with other work; closing this closes the scan
    (its open files with it). The paths of the files the rules exclude go to ``excluded``."""
    try:
        while True:
            with reading_with(rules, excluded):
                try:
                    event = next(events)
                except StopIteration:
                    return
            yield event
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()


class RefusedFile(OSError):
    """A file the harvest does not open (not a regular file, too large, a link leading outside);
    an OSError, so a plugin's ``cannot read`` handling reports it with the file's name."""

    def __init__(self, reason: str, path: str | os.PathLike[str]) -> None:
        super().__init__(errno.EPERM, reason, os.fspath(path))

    def __str__(self) -> str:
        return str(self.strerror)


def kind_of(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def _size_problem(size: int, limit: int) -> str | None:
    if size <= limit:
        return None
    return (
        f"{size:,} bytes, over the {limit:,}-byte limit for one file; skipped (raise it with --max-file-size)"
    )


def outside_link(path: Path, within: Path) -> Path | None:
    """The target of ``path`` when it resolves outside ``within`` (through a symlink), else None."""
    target = Path(os.path.realpath(path))
    return None if target.is_relative_to(os.path.realpath(within)) else target


def outside_reason(target: Path) -> str:
    """Why an outside link is not read; the option is offered only where it could help: a link
    to a device, a pipe or a socket is never read, followed or not."""
    try:
        readable = stat.S_ISREG(os.stat(target).st_mode)
    except OSError:
        readable = False
    remedy = "(allow it with --follow-outside-links)" if readable else "(not a regular file: never read)"
    return f"a symlink to {stored_text(target)}, outside the source's folder; not followed {remedy}"


def open_source_file(
    path: str | os.PathLike[str], *, streamed: bool = False, within: Path | None = None
) -> BinaryIO:
    """``path`` opened for reading, or RefusedFile: not a regular file, over the size limit, or
    (with ``within``, the source's folder) a link that leads outside it."""
    rules = current_rules()
    if within is not None and not rules.follow_outside_links and (target := outside_link(Path(path), within)):
        raise RefusedFile(outside_reason(target), path)
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise RefusedFile(f"{kind_of(mode)}, not a regular file; skipped", path)
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise RefusedFile(f"{kind_of(status.st_mode)}, not a regular file; skipped", path)
        if problem := _size_problem(status.st_size, rules.limit(streamed)):
            raise RefusedFile(problem, path)
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def read_source_file(
    path: str | os.PathLike[str], *, streamed: bool = False, within: Path | None = None
) -> bytes:
    """The whole of a file ``open_source_file`` accepts (so never more than the size limit)."""
    with open_source_file(path, streamed=streamed, within=within) as handle:
        return handle.read()


def all_folders(folder: Path, names: list[str]) -> list[str]:
    return names


def walk_files(
    root: Path,
    wanted: Callable[[str], bool],
    enter: Callable[[Path, list[str]], list[str]] = all_folders,
) -> Iterator[Path | HarvestError]:
    """The regular files below ``root`` whose names ``wanted`` accepts, in os.walk's top-down
    order (a folder's files by name, then its subfolders by name, depth first), and a located
    error for each one that is skipped (not a regular file, a link leading outside, a broken
    link) or folder that cannot be listed. ``enter(folder, subfolder names)`` chooses the
    subfolders to walk into. Iterative, links to folders not followed, each file yielded once.
    A file the source's rules exclude is passed over without an error (and counted)."""
    rules = current_rules()
    excluded = _excluded.get()
    real_root = Path(os.path.realpath(root))
    seen: set[tuple[int, int]] = set()
    stack = [(Path(root), 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            yield HarvestError(
                str(folder), f"cannot list folder: {exc.strerror or exc}", record=_depth(depth)
            )
            continue
        subfolders = []
        for entry in entries:
            path = Path(entry.path)
            try:
                if entry.is_dir(follow_symlinks=False):
                    status = entry.stat(follow_symlinks=False)
                    if (status.st_dev, status.st_ino) not in seen:
                        seen.add((status.st_dev, status.st_ino))
                        subfolders.append(entry.name)
                    continue
                if not wanted(entry.name):
                    continue
                if rules.exclude and rules.is_excluded(path.relative_to(root).as_posix()):
                    if excluded is not None:
                        excluded.add(str(path))
                    continue
                linked = entry.is_symlink()
                status = entry.stat()
            except OSError as exc:  # a broken link, a path longer than the system allows
                yield HarvestError(str(path), f"cannot read: {exc.strerror or exc}", record=_depth(depth + 1))
                continue
            if linked and stat.S_ISDIR(status.st_mode):
                continue  # links to folders are not walked into: no loops, no double reads
            if linked and not rules.follow_outside_links and (target := outside_link(path, real_root)):
                yield HarvestError(str(path), outside_reason(target))
                continue
            if not stat.S_ISREG(status.st_mode):
                yield HarvestError(str(path), f"{kind_of(status.st_mode)}, not a regular file; skipped")
                continue
            if (status.st_dev, status.st_ino) in seen:
                continue
            seen.add((status.st_dev, status.st_ino))
            yield path
        stack.extend((folder / name, depth + 1) for name in reversed(enter(folder, subfolders)))


def _depth(depth: int) -> str | None:
    """Where a walk's error lies, for a path too long to read."""
    return f"{depth} folders deep" if depth else None


# fingerprint patterns for the JSON files a plugin reads, as it reads them: in any case
JSON_FILES = ("*.[jJ][sS][oO][nN]",)


def file_fingerprint(path: Path, patterns: tuple[str, ...] = ("*",)) -> str:
    """Sizes and mtimes of a file, or of every regular file below a folder whose name matches
    one of ``patterns``, hashed: a cheap change detector."""
    path = Path(path)
    entries: list[str] = []
    if path.is_file():
        st = path.stat()
        entries.append(f"{path.name}\x00{st.st_size}\x00{st.st_mtime_ns}")
    elif path.is_dir():
        for file in walk_files(path, lambda name: any(fnmatch(name, pattern) for pattern in patterns)):
            if isinstance(file, HarvestError):
                continue
            try:
                st = file.stat()
            except OSError:
                continue
            entries.append(f"{file.relative_to(path)}\x00{st.st_size}\x00{st.st_mtime_ns}")
    else:
        return "missing"
    entries.sort()
    return hashlib.sha256("\n".join(entries).encode("utf-8", "surrogatepass")).hexdigest()
