"""The per-source harvest summary that ``mind harvest`` and ``make run`` print.

One module so both tables use one vocabulary (the README's): a source was ``harvested`` or left
``unchanged``, and brought ``new frames``, ``entity mentions``, ``vectors``; a ``--prune`` that
deleted frames adds a ``pruned frames`` column. ``--json`` keeps the engine's own status words
(``ok``, ``skipped``) for scripts.

An unchanged source was not read (its files' fingerprint is the last harvest's), so its per-run
counts would all be 0 while it holds thousands of frames: its row says ``-`` for what was not
read (items, errors), 0 for what was written, and counts the frames it holds as its unchanged
frames, which they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

# shown only when a row has something in it
OPTIONAL_COLUMNS = ("shared frames", "pruned frames", "redacted")
# the engine's statuses as the table says them; partial / failed / empty / missing read as they are
STATUS_WORDS = {"ok": "harvested", "skipped": "unchanged"}
UNCHANGED_NOTE = (
    "unchanged: the files are as at the last harvest, so they were not read again (items and "
    "errors '-'; `mind harvest --force` reads them); its unchanged frames are all the frames it holds"
)
SHARED_NOTE = (
    "shared frames: messages whose text was already in the mind as a frame, so they share that "
    "frame instead of a copy (no new frame, no new vector)"
)


def status_word(status: str) -> str:
    return STATUS_WORDS.get(status, status)


def is_numeric(column: str) -> bool:
    """Whether a column holds counts (right-aligned)."""
    return column not in ("source", "status")


@dataclass(frozen=True)
class SourceSummary:
    """What one source's harvest brought in, as a table row."""

    source: str
    status: str
    items: int | str = "-"
    new_frames: int | str = "-"
    updated_frames: int | str = "-"
    unchanged_frames: int | str = "-"
    shared_frames: int | str = "-"
    pruned_frames: int | str = "-"
    entity_mentions: int | str = "-"
    vectors: int | str = "-"
    errors: int | str = "-"
    redacted: int | str = "-"  # values the redaction policy replaced (``redacted_line`` has them by kind)

    @classmethod
    def unchanged(cls, source: str, frames_held: int | None) -> SourceSummary:
        """A source whose files did not change: nothing read, nothing written; it holds its frames."""
        held = "-" if frames_held is None else frames_held
        written = {"new_frames": 0, "updated_frames": 0, "entity_mentions": 0, "vectors": 0}
        return cls(source, status_word("skipped"), unchanged_frames=held, **written)

    @classmethod
    def of_report(cls, report: dict[str, Any]) -> SourceSummary:
        """From a harvest report (``HarvestReport.to_dict()``)."""
        if report["status"] == "skipped":
            return cls.unchanged(report["source"], report.get("frames_held"))
        imported = report.get("imported") or {}
        return cls(
            source=report["source"],
            status=status_word(report["status"]),
            items=imported.get("items_seen", 0),
            new_frames=imported.get("frames_new", 0),
            updated_frames=imported.get("frames_updated", 0),
            unchanged_frames=imported.get("frames_unchanged", 0),
            shared_frames=imported.get("frames_duplicate", 0),
            pruned_frames=imported.get("pruned", 0),
            entity_mentions=(report.get("cognified") or {}).get("entities", 0),
            vectors=report.get("vectors_written", 0),
            errors=imported.get("error_count", 0),
            redacted=sum((imported.get("redacted") or {}).values()),
        )

    def row(self, columns: Sequence[str]) -> tuple[Any, ...]:
        return tuple(getattr(self, SUMMARY_FIELDS[column]) for column in columns)


# column header -> SourceSummary field, in table order (a header is its field's name in words)
SUMMARY_FIELDS = {f.name.replace("_", " "): f.name for f in fields(SourceSummary)}
SUMMARY_COLUMNS = tuple(SUMMARY_FIELDS)


def summary_columns(summaries: Sequence[SourceSummary]) -> list[str]:
    """The table's columns: every one, but ``shared frames``, ``pruned frames`` and ``redacted``
    only when a source shared, pruned or redacted something."""
    return [
        column
        for column in SUMMARY_FIELDS
        if column not in OPTIONAL_COLUMNS
        or any(isinstance(v := getattr(s, SUMMARY_FIELDS[column]), int) and v > 0 for s in summaries)
    ]


def summary_notes(summaries: Sequence[SourceSummary]) -> list[str]:
    """What a reader of the table needs told: what an ``unchanged`` row counts, what a shared
    frame is."""
    notes = [UNCHANGED_NOTE] if any(s.status == status_word("skipped") for s in summaries) else []
    if any(isinstance(s.shared_frames, int) and s.shared_frames > 0 for s in summaries):
        notes.append(SHARED_NOTE)
    return notes


def shared_frames_line(source: str, shared_with: dict[str, int]) -> str:
    """Whose frames one source's shared frames are (``ImportSummary.frames_shared_with``):
    ``team/claude: 2 frames already in the mind from source 'gpt': shared, not copied``."""
    total = sum(shared_with.values())
    owners = []
    others = sorted(owner for owner in shared_with if owner and owner != source)
    if others:
        owners.append(f"source{'s' if len(others) > 1 else ''} " + ", ".join(repr(o) for o in others))
    if source in shared_with:
        owners.append("an identical message of this source")
    if "" in shared_with:
        owners.append("frames no harvest wrote")
    return (
        f"{source}: {total} frame{'s' if total != 1 else ''} already in the mind from "
        f"{' and '.join(owners)}: shared, not copied"
    )


def redacted_line(source: str, redacted: dict[str, int]) -> str:
    """What one source's harvest redacted, by kind: ``mail: redacted 2 email, 1 secret:aws-key``."""
    kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(redacted.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{source}: redacted {kinds}"
