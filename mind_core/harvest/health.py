"""What ``doctor`` says about a mind's harvest sources: the ones a user should not trust as they are.

A source is reported when its path is gone, when its last harvest failed, found nothing or lost
records (partial: the next harvest reads it again), and
when some of its messages point at a frame that no longer holds their text (a mind written by an
engine that rewrote shared frames in place). Read-only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from mind_core.harvest.locations import location_exists
from mind_core.harvest.paths import stored_text
from mind_core.harvest.stores import RETRIED_STATUSES, HarvestSourceStore
from mind_core.store.db import Database


@dataclass
class SourceProblem:
    source: str
    status: str  # missing / failed / empty / partial / diverged
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.source}: {self.status}: {self.reason}"


def source_problems(db: Database) -> list[SourceProblem]:
    if not db.table_exists("harvest_sources"):
        return []
    problems: list[SourceProblem] = []
    for source in HarvestSourceStore(db).get_all():
        if source.source_path and not location_exists(source.source_path):
            problems.append(
                SourceProblem(source.source, "missing", f"{stored_text(source.source_path)} does not exist")
            )
        elif source.last_status in RETRIED_STATUSES:
            reason = source.last_status_reason or "its last harvest did not succeed"
            problems.append(SourceProblem(source.source, source.last_status, reason))  # type: ignore[arg-type]
    if db.table_exists("harvest_ledger"):
        for row in db.query(
            "SELECT l.source, COUNT(*) AS n FROM harvest_ledger l JOIN memory_frames f ON f.id = l.frame_id "
            "WHERE f.content_hash IS NOT l.content_hash GROUP BY l.source ORDER BY l.source"
        ):
            problems.append(
                SourceProblem(
                    row["source"],
                    "diverged",
                    f"{row['n']} message(s) point at a frame that no longer holds their text; "
                    f"`mind harvest {row['source']} --force` gives them their text back",
                )
            )
    return problems
