"""Finding an export inside the folder a user named. Exports arrive wrapped (notmuch's corpus
keeps its maildirs in ``default/``, a Gemini download its prompts in ``aistudio/``), so detection
looks a few levels down, breadth first, and gives up quickly on a folder that holds none."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

DETECT_DEPTH = 3  # levels below the named folder
DETECT_FOLDERS = 200  # folders looked at in all

_levels_below: ContextVar[int] = ContextVar("detect_levels_below", default=DETECT_DEPTH)


@contextmanager
def looking_at_top_only() -> Iterator[None]:
    """Detection that looks at a folder's own top only: a survey that walks the folders itself
    asks each folder this way, so its walk is bounded once, not once per folder it asks."""
    token = _levels_below.set(0)
    try:
        yield
    finally:
        _levels_below.reset(token)


def folder_entries(folder: Path) -> list[Path]:
    """What a folder holds, sorted; none when it cannot be read (detection never raises)."""
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def json_files_at_top(folder: Path, keep: Callable[[Path], bool]) -> list[Path]:
    """The regular ``.json`` files (any case) at a folder's top that ``keep`` accepts, sorted: a
    folder of conversations saved one by one, under names of their own."""
    return [
        entry
        for entry in folder_entries(folder)
        if entry.suffix.lower() == ".json" and entry.is_file() and keep(entry)
    ]


def subfolders(folder: Path, skip: Collection[str] = ()) -> list[Path]:
    """The folders an export may continue in, sorted: not hidden, not named in ``skip``, no symlinks."""
    return [
        entry
        for entry in folder_entries(folder)
        if not entry.name.startswith(".") and entry.name not in skip and not entry.is_symlink() and entry.is_dir()
    ]


def depth_of_first(folder: Path, holds: Callable[[Path], bool], skip: Collection[str] = ()) -> int | None:
    """How deep below ``folder`` the first folder that ``holds`` an export is (0: the folder
    itself), looking ``DETECT_DEPTH`` levels down (none in ``looking_at_top_only``) through at most ``DETECT_FOLDERS`` folders;
    None when none does."""
    level = [folder] if folder.is_dir() else []
    seen = 0
    for depth in range(_levels_below.get() + 1):
        below: list[Path] = []
        for current in level:
            seen += 1
            if seen > DETECT_FOLDERS:
                return None
            if holds(current):
                return depth
            below.extend(subfolders(current, skip))
        level = below
    return None
