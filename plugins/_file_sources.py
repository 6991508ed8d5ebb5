"""What the sources that read files of their own kind share, written once: a source path is one
file or a folder walked for the wanted files (``scan_path``, ``FileSource``; a JSON export among
other JSON is told by its head, ``scan_sniffed``, ``SniffedSource``); a file is recognised by its
first bytes and a folder by such files at its top; the hooks that register the source and answer
detection (``source_hooks``).

A file named directly is scanned whatever its name (a FIFO or device is refused when opened), as
its own name; a file found in a folder is named by its path relative to the folder, so the same
export harvested from two places keeps its keys. Hidden files are skipped, and hidden folders in
a ``FileSource`` walk; detection looks at a folder's first ``FOLDER_ENTRIES`` entries only.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import IO, Any

from mind_harvest.plugins._jsonhead import read_head

from mind_core.harvest import folder_entries
from mind_core.harvest.items import HarvestError, ScanEvent
from mind_core.harvest.source_files import file_fingerprint, open_source_file, walk_files
from mind_core.plugins import hookimpl

FOLDER_ENTRIES = 200  # how many of a folder's entries detection looks at
SURE = 0.95
PLAUSIBLE_FOLDER = 0.6
LEADING_BLANKS = b"\xef\xbb\xbf \r\n\t"  # a UTF-8 byte order mark and white space before a text format's opening

ScanFile = Callable[[Path, str, "Path | None"], Iterator[ScanEvent]]


def visible_folders(folder: Path, names: list[str]) -> list[str]:
    """Every subfolder but the hidden ones: what a walk enters."""
    return [name for name in names if not name.startswith(".")]


def named_with(name: str, suffixes: tuple[str, ...]) -> bool:
    """A visible file name ending in one of the suffixes (any case)."""
    return name.lower().endswith(suffixes) and not name.startswith(".")


def scan_path(
    path: Path | str,
    scan_file: ScanFile,
    wanted: Callable[[str], bool],
    enter: Callable[[Path, list[str]], list[str]] = visible_folders,
    keep: Callable[[Path], bool] | None = None,
) -> Generator[ScanEvent, None, int | None]:
    """A file's events, or those of every wanted file below a folder (``keep`` may pass a found
    file over), each as ``scan_file(file, relpath, within)``: ``within`` is the folder a found
    file must stay inside, None for a file named directly. Returns how many files a folder gave
    (None for a file or a missing path), so a source can say a folder held none of its files."""
    root = Path(path)
    if root.exists() and not root.is_dir():  # a FIFO or device here is refused when opened
        yield from scan_file(root, root.name, None)
        return None
    if not root.is_dir():
        yield HarvestError(str(root), "no such file or folder")
        return None
    scanned = 0
    for found in walk_files(root, wanted, enter):
        if isinstance(found, HarvestError):
            yield found
        elif keep is None or keep(found):
            scanned += 1
            yield from scan_file(found, found.relative_to(root).as_posix(), root)
    return scanned


def scan_opened(
    path: Path, read: Callable[[IO[bytes], Path], Iterator[ScanEvent]], within: Path | None = None
) -> Iterator[ScanEvent]:
    """``read`` over the file opened as a stream (inside ``within`` when given); a file that cannot
    be opened or read is one located error."""
    try:
        with open_source_file(path, streamed=True, within=within) as handle:
            yield from read(handle, path)
    except OSError as exc:
        yield HarvestError(str(path), f"cannot read: {exc}")


def scan_sniffed(
    path: Path | str,
    wanted: Callable[[str], bool],
    looks: Callable[[bytes], bool],
    read: Callable[[IO[bytes], Path], Iterator[ScanEvent]],
) -> Iterator[ScanEvent]:
    """A JSON export named directly, or every file below a folder whose name is wanted and whose
    head ``looks`` like the export (a folder of many exports holds other JSON too)."""
    root = Path(path)
    if not root.is_dir():
        yield from scan_opened(root, read)
        return
    for found in walk_files(root, wanted):
        if isinstance(found, HarvestError):
            yield found
        elif looks(read_head(found)):
            yield from scan_opened(found, read, within=root)


def sniffed_confidence(
    path: Path, wanted: Callable[[str], bool], looks: Callable[[bytes], bool], sure: float, folder: float
) -> float:
    """``sure`` of a wanted file whose head ``looks`` like the export; ``folder`` for a folder with
    one among the first 20 wanted files at its top."""
    if path.is_file():
        return sure if wanted(path.name) and looks(read_head(path)) else 0.0
    if path.is_dir():
        files = [e for e in folder_entries(path)[:FOLDER_ENTRIES] if e.is_file() and wanted(e.name)]
        return folder if any(looks(read_head(file)) for file in files[:20]) else 0.0
    return 0.0


def head_starts(
    file: Path, openings: tuple[bytes, ...], size: int, *, streamed: bool = True, blanks: bytes | None = LEADING_BLANKS
) -> bool:
    """Whether the file's first ``size`` bytes, ``blanks`` left out of their start (None: ASCII
    white space) and upper-cased, open with one of ``openings`` (upper case); False when it
    cannot be read."""
    try:
        with open_source_file(file, streamed=streamed) as handle:
            head = handle.read(size)
    except OSError:
        return False
    return head.lstrip(blanks).upper().startswith(openings)


def holds_at_top(folder: Path, suffixes: tuple[str, ...]) -> bool:
    """Whether a folder has a visible file of one of the suffixes among its first entries."""
    try:
        entries = sorted(folder.iterdir())[:FOLDER_ENTRIES]
    except OSError:
        return False
    return any(e.is_file() and e.suffix.lower() in suffixes and not e.name.startswith(".") for e in entries)


def file_confidence(
    path: Path | str,
    suffixes: tuple[str, ...],
    is_such_file: Callable[[Path], bool],
    sure: float = SURE,
    folder: float = PLAUSIBLE_FOLDER,
) -> float:
    """``sure`` of a file ``is_such_file`` accepts, ``folder`` for a folder with files of the
    suffixes at its top, else 0."""
    path = Path(path)
    if path.is_file():
        return sure if is_such_file(path) else 0.0
    if path.is_dir() and holds_at_top(path, suffixes):
        return folder
    return 0.0


class FileSource:
    """A source of files with the given suffixes, one file or a folder of them. A subclass names
    its ``kind``, ``display_name`` and ``suffixes`` and gives ``scan_file(file, relpath)``;
    ``enter`` and ``keep`` narrow a folder's walk. Detection is sure of a file ``starts_as``
    accepts (by default: its head opens with one of ``openings``) and plausible for a folder
    with files of the suffixes at its top."""

    kind: str
    display_name: str
    suffixes: tuple[str, ...]
    scan_file: Callable[[Path, str], Iterator[ScanEvent]]
    openings: tuple[bytes, ...] = ()
    head_bytes = 4096

    def confidence(self, path: Path | str) -> float:
        return file_confidence(path, self.suffixes, self.starts_as)

    def starts_as(self, file: Path) -> bool:
        return head_starts(file, self.openings, self.head_bytes)

    def detect(self, path: Path) -> bool:
        return self.confidence(path) > 0

    def scan(self, path: Path) -> Iterator[ScanEvent]:
        return scan_path(
            path, lambda file, relpath, _within: self.scan_file(file, relpath), self.wanted, self.enter, self.keep
        )

    def fingerprint(self, path: Path) -> str:
        return file_fingerprint(Path(path), tuple(f"*{suffix}" for suffix in self.suffixes))

    def wanted(self, name: str) -> bool:
        return named_with(name, self.suffixes)

    def enter(self, folder: Path, names: list[str]) -> list[str]:
        return visible_folders(folder, names)

    def keep(self, file: Path) -> bool:
        return True


class SniffedSource:
    """A JSON export told apart by its head, one file or the files below a folder that look like
    it. A subclass names its ``kind``, ``display_name`` and ``suffixes`` and gives
    ``looks(head)`` and ``read(handle, path)``. Detection is ``sure`` of a file that looks like
    the export and gives ``folder`` to a folder with one at its top; it counts from 0.5."""

    kind: str
    display_name: str
    suffixes: tuple[str, ...]
    looks: Callable[[bytes], bool]
    read: Callable[[IO[bytes], Path], Iterator[ScanEvent]]
    sure = 0.9
    folder = 0.85

    def confidence(self, path: Path | str) -> float:
        return sniffed_confidence(Path(path), self.wanted, self.looks, self.sure, self.folder)

    def detect(self, path: Path) -> bool:
        return self.confidence(path) >= 0.5

    def scan(self, path: Path) -> Iterator[ScanEvent]:
        return scan_sniffed(path, self.wanted, self.looks, self.read)

    def fingerprint(self, path: Path) -> str:
        return file_fingerprint(Path(path), tuple(f"*{suffix}" for suffix in self.suffixes))

    def wanted(self, name: str) -> bool:
        return named_with(name, self.suffixes)


def source_hooks(
    make_source: Any, confidence: Callable[[Any], float] | None = None
) -> tuple[Callable[[Any], None], Callable[[Path], dict[str, float]]]:
    """The ``register_sources`` and ``detect_sources`` hook implementations of a plugin with one
    source (``make_source``, a source class, makes a source of its ``kind`` per registration); a
    module binds them to those names: ``register_sources, detect_sources = source_hooks(...)``.
    ``confidence`` (else the source's own) is given the path as detection got it (a URL may come
    as text)."""
    kind = make_source.kind
    confidence = confidence or make_source().confidence

    @hookimpl
    def register_sources(register: Any) -> None:
        register(make_source())

    @hookimpl
    def detect_sources(path: Path) -> dict[str, float]:
        return {kind: confidence(path)}

    return register_sources, detect_sources
