"""Snapshots taken before a forget still hold what it forgot: a marker beside them says so.

A Parquet snapshot is a copy outside the mind; a forget cannot reach into it (it may have been
copied on already). So a forget writes ``FORGOTTEN_MARKER`` into the snapshot root of a local
snapshot folder: the workspaces whose snapshots from before an instant hold forgotten data,
until they are taken again (``mind snapshot``), and ``stale_before`` reads it back.
"""

from __future__ import annotations

import json
from pathlib import Path

from mind_core.timestamps import now_iso

FORGOTTEN_MARKER = "_forgotten.json"


def mark_stale(root: Path | None, workspace: str, audit_id: int) -> Path | None:
    """Record that ``workspace``'s snapshots under ``root`` taken before now are stale; None when
    there is no local snapshot folder (nothing to mark)."""
    if root is None or not root.is_dir():
        return None
    marker = root / FORGOTTEN_MARKER
    data = json.loads(marker.read_text()) if marker.is_file() else {}
    data[workspace] = {"forgotten_at": now_iso(), "audit_id": audit_id}
    marker.write_text(json.dumps(data, indent=2, sort_keys=True))
    return marker


def stale_before(root: Path, workspace: str) -> str | None:
    """The instant before which ``workspace``'s snapshots under ``root`` hold forgotten data."""
    marker = root / FORGOTTEN_MARKER
    if not marker.is_file():
        return None
    entry = json.loads(marker.read_text()).get(workspace)
    return entry.get("forgotten_at") if isinstance(entry, dict) else None
