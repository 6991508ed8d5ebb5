"""Reading export archives (.zip) in place: members are streamed, never extracted or written.

A member whose name could escape a folder (absolute, ``..``, a drive letter) is reported and
skipped even though nothing is extracted, because such a name marks a crafted archive.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

from mind_harvest.plugins._jsonhead import HEAD_BYTES

from mind_core.harvest.items import HarvestError, ScanEvent
from mind_core.harvest.source_files import open_source_file

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


def any_member_head(path: Path, name: str, accept: Callable[[bytes], bool]) -> bool:
    """True when a member called ``name`` (in any folder) begins with bytes that ``accept`` takes.

    Detection never raises: an archive that cannot be read is simply not a match.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            for info in safe_files(archive):
                if member_basename(info) == name:
                    with archive.open(info) as member:
                        if accept(member.read(HEAD_BYTES)):
                            return True
    except ARCHIVE_ERRORS:
        return False
    return False


def scan_archive(
    path: Path, scan_members: Callable[[zipfile.ZipFile, str], Iterator[ScanEvent]]
) -> Iterator[ScanEvent]:
    """Open an export archive, report crafted member names, then ``scan_members(archive, report_path)``.

    An archive that breaks while being read ends the scan with a located error, never an exception.
    """
    report_path = str(path)
    try:
        with open_source_file(path, streamed=True) as handle, zipfile.ZipFile(handle) as archive:
            for info in unsafe_members(archive):
                yield HarvestError(report_path, "unsafe archive member name; skipped", record=info.filename)
            yield from scan_members(archive, report_path)
    except ARCHIVE_ERRORS as exc:
        yield HarvestError(report_path, f"cannot read archive: {exc}")
