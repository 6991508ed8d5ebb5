"""The per-source harvest summary that ``mind harvest`` and ``make run`` print.

One module so both tables use one vocabulary (the README's): a source was ``harvested`` or left
``unchanged``, and brought ``new frames``, ``entity mentions``, ``vectors``. ``--json`` keeps the
engine's own status words (``ok``, ``skipped``) for scripts.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Any

SUMMARY_COLUMNS = (
    "source",
    "status",
    "items",
    "new frames",
    "updated frames",
    "unchanged frames",
    "entity mentions",
    "vectors",
    "errors",
)
# which columns hold counts (right-aligned)
SUMMARY_NUMERIC = (False, False) + (True,) * 7
# the engine's statuses as the table says them; partial / failed / empty / missing read as they are
STATUS_WORDS = {"ok": "harvested", "skipped": "unchanged"}


def status_word(status: str) -> str:
    return STATUS_WORDS.get(status, status)


@dataclass(frozen=True)
class SourceSummary:
    """What one source's harvest brought in, as a table row."""

    source: str
    status: str
    items: int | str = "-"
    new_frames: int | str = "-"
    updated_frames: int | str = "-"
    unchanged_frames: int | str = "-"
    entity_mentions: int | str = "-"
    vectors: int | str = "-"
    errors: int | str = "-"

    @classmethod
    def of_report(cls, report: dict[str, Any]) -> SourceSummary:
        """From a harvest report (``HarvestReport.to_dict()``)."""
        imported = report.get("imported") or {}
        return cls(
            source=report["source"],
            status=status_word(report["status"]),
            items=imported.get("items_seen", 0),
            new_frames=imported.get("frames_new", 0),
            updated_frames=imported.get("frames_updated", 0),
            unchanged_frames=imported.get("frames_unchanged", 0),
            entity_mentions=(report.get("cognified") or {}).get("entities", 0),
            vectors=report.get("vectors_written", 0),
            errors=imported.get("error_count", 0),
        )

    def row(self) -> tuple[Any, ...]:
        return astuple(self)
