"""A source's outcome after a harvest: ok, partial, failed, empty or missing, and why.

"0 items, 0 errors" is never a success: a scan that found nothing is ``empty``, with the reason a
user can act on (the path holds nothing this kind of source recognises, or an export that is
empty). A failed, empty or missing source does not record its fingerprint, so the next harvest
tries it again instead of calling it unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mind_core.harvest.paths import stored_text
from mind_core.harvest.stores import SourceOutcome
from mind_core.plugins import PLAUSIBLE, rank_sources

if TYPE_CHECKING:  # staging reads and writes Parquet: pyarrow is no import of a harvest that reads nothing
    from mind_core.harvest.staging import StagedScan


def _a(word: str) -> str:
    return f"an {word}" if word[:1].lower() in "aeiou" else f"a {word}"


def empty_reason(kind: str, path: str | Path | None) -> str:
    if path is None:
        return f"the scan found nothing {_a(kind)} source recognises"
    shown = stored_text(str(path))
    try:
        claimed = any(d.kind == kind and d.confidence >= PLAUSIBLE for d in rank_sources(path))
    except OSError:
        claimed = False
    if claimed:
        return f"{shown} looks like {_a(kind)} export but holds no items (an empty export?)"
    return f"no file in {shown} looks like {_a(kind)} export"


SOURCE_MISSING_LABEL = "source_missing"


def missing_outcome(path: str | Path, frames: int) -> SourceOutcome:
    return SourceOutcome(
        "missing",
        f"{stored_text(str(path))} does not exist (an unmounted drive, a moved or renamed folder?)",
        frames=frames,
    )


def judge_import(
    kind: str,
    path: str | Path | None,
    items: int,
    errors: int,
    first_errors: list[str],
    frames: int,
) -> SourceOutcome:
    """The status of a finished scan and import, from what it read and what failed."""
    if items == 0 and errors:
        status, reason = "failed", f"every record failed ({errors} error(s)); first: {first_errors[0]}"
    elif items == 0:
        status, reason = "empty", empty_reason(kind, path)
    elif errors:
        status, reason = "partial", f"{errors} record(s) or file(s) could not be read (see the errors)"
    else:
        status, reason = "ok", None
    return SourceOutcome(
        status,
        None if reason is None else stored_text(reason),
        items,
        frames,
        errors,
        [stored_text(e) for e in first_errors],
    )


def staged_outcome(staged: StagedScan, path: str | Path, frames: int) -> SourceOutcome:
    """The outcome of a staged scan before its import (the import judges it again with its own
    counts): what a scan that read no item means for its source. A scan staged for a source
    whose path was not there (``SOURCE_MISSING_LABEL``) says so: the worker that scanned cannot
    write the mind, the import step records it."""
    if staged.labels.get(SOURCE_MISSING_LABEL) == "true":
        return missing_outcome(path, frames)
    return judge_import(
        str(staged.labels.get("kind")),
        path,
        staged.items,
        staged.error_count,
        [str(e) for e in staged.errors],
        frames,
    )
