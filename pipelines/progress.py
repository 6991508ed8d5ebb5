"""Progress of long steps, written to the run's event log (the Dagster UI's run view): a line every
few seconds while a step works, and one when it is done."""

from __future__ import annotations

import time
from typing import Any

from mind_core.harvest.importer import Progress

PROGRESS_EVERY_S = 10.0


def progress_log(log: Any, what: str, every_s: float = PROGRESS_EVERY_S) -> Progress:
    """A progress callback ``(done, total or None)`` logging "<what>: <done> of <total>" to ``log``
    (a step's ``context.log``) at most every ``every_s`` seconds, and always when done == total."""
    last = time.monotonic()

    def report(done: int, total: int | None) -> None:
        nonlocal last
        now = time.monotonic()
        if (total is not None and done >= total) or now - last >= every_s:
            last = now
            log.info(f"{what}: {done:,}" + (f" of {total:,}" if total is not None else ""))

    return report
