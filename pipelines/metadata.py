"""Materialization metadata a person can read: counts, time and rate, errors, new frames."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import dagster as dg

from mind_core.harvest.items import HarvestError
from mind_core.mind import Mind
from mind_core.store.frames import Frame

ERRORS_SHOWN = 10
FRAMES_SHOWN = 5
PREVIEW_CHARS = 160


def _cell(value: object) -> str:
    """Text safe inside a Markdown table cell (one line, no column breaks)."""
    text = " ".join(str(value if value is not None else "").split())
    return text.replace("|", "\\|")


def _clip(text: str, chars: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1] + "…"


def rate(count: int, seconds: float) -> float:
    """Per-second throughput, rounded; 0 when nothing was timed."""
    return round(count / seconds, 1) if seconds > 0 else 0.0


def errors_table(errors: Iterable[HarvestError], total: int) -> dg.MetadataValue:
    """The first located errors as a Markdown table (where, record, why)."""
    shown = list(errors)[:ERRORS_SHOWN]
    if not shown:
        return dg.MetadataValue.md("No errors.")
    lines = ["| # | file | record | reason |", "|---|---|---|---|"]
    lines += [
        f"| {i} | {_cell(e.path)} | {_cell(e.record or '')} | {_cell(e.reason)} |"
        for i, e in enumerate(shown, 1)
    ]
    if total > len(shown):
        lines.append(f"\n{total - len(shown):,} more not shown.")
    return dg.MetadataValue.md("\n".join(lines))


def frames_preview(frames: Iterable[Frame], total: int) -> dg.MetadataValue:
    """A few new frames: event time, title, the start of the text."""
    shown = list(frames)[:FRAMES_SHOWN]
    if not shown:
        return dg.MetadataValue.md("No new frames.")
    lines = []
    for frame in shown:
        title = frame.metadata.get("provenance", {}).get("title") or frame.gop_id
        lines.append(
            f"- **{_cell(frame.created_at)}** · {_cell(title)}  \n  {_cell(_clip(frame.content, PREVIEW_CHARS))}"
        )
    if total > len(shown):
        lines.append(f"\n…and {total - len(shown):,} more new frames.")
    return dg.MetadataValue.md("\n".join(lines))


def audit_table(examples: list[dict[str, Any]]) -> dg.MetadataValue:
    if not examples:
        return dg.MetadataValue.md("Nothing found.")
    columns = list(examples[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(row.get(c)) for c in columns) + " |" for row in examples]
    return dg.MetadataValue.md("\n".join(lines))


def redaction_metadata(policy: str | None, redacted: Mapping[str, int]) -> dict[str, Any]:
    """What a step redacted: the total, and a Markdown table by kind (``secret:aws-key``,
    ``email``...); with ``policy``, the policy it applied. Counts only, never a value."""
    metadata: dict[str, Any] = {} if policy is None else {"redaction_policy": policy}
    metadata["redacted"] = sum(redacted.values())
    if redacted:
        lines = ["| kind | redacted |", "|---|---|"]
        lines += [f"| {_cell(kind)} | {count:,} |" for kind, count in sorted(redacted.items(), key=lambda kv: -kv[1])]
        metadata["redacted_by_kind"] = dg.MetadataValue.md("\n".join(lines))
    return metadata


def mind_totals(mind: Mind) -> dict[str, int]:
    """What the whole mind holds after the step (frames, entities, relations, vectors)."""
    db = mind.db
    return {
        "mind_frames": int(db.scalar("SELECT COUNT(*) FROM memory_frames")),
        "mind_entities": mind.knowledge.get_entity_count(),
        "mind_relations": int(db.scalar("SELECT COUNT(*) FROM knowledge_relations WHERE valid_to IS NULL")),
        "mind_vectors": int(db.scalar("SELECT COUNT(*) FROM memory_frames_vec"))
        if db.table_exists("memory_frames_vec")
        else 0,
    }
