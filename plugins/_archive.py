"""Reading export archives (.zip) in place: members are streamed, never extracted or written.

A member whose name could escape a folder (absolute, ``..``, a drive letter) is reported and
skipped even though nothing is extracted, because such a name marks a crafted archive.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

ARCHIVE_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, OSError)


def is_archive(path: Path) -> bool:
    try:
        return Path(path).is_file() and zipfile.is_zipfile(path)
    except OSError:
        return False


def is_safe_member_name(name: str) -> bool:
    pure = PurePosixPath(name.replace("\\", "/"))
    if not pure.parts or pure.is_absolute() or ".." in pure.parts:
        return False
    return ":" not in pure.parts[0]


def member_basename(info: zipfile.ZipInfo) -> str:
    return PurePosixPath(info.filename.replace("\\", "/")).name


def unsafe_members(archive: zipfile.ZipFile) -> Iterator[zipfile.ZipInfo]:
    return (info for info in archive.infolist() if not is_safe_member_name(info.filename))


def safe_files(archive: zipfile.ZipFile) -> Iterator[zipfile.ZipInfo]:
    return (info for info in archive.infolist() if not info.is_dir() and is_safe_member_name(info.filename))
