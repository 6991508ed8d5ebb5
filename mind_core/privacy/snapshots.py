"""Snapshots taken before a forget still hold what it forgot: a marker beside them says so.

A Parquet snapshot is a copy outside the mind; a forget cannot edit it (it may have been copied
on already). So a forget writes ``FORGOTTEN_MARKER`` into the snapshot root (a local folder or
any fsspec URL): per workspace, the instant of its latest forget. Until the workspace's
snapshots are taken again, analytics leaves out those taken before that instant
(``mind_core.analytics.queries``); the next snapshot of the workspace deletes them and clears
the workspace's entry (``mind_core.analytics.snapshot``).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from mind_core import fs_url
from mind_core.errors import InvalidInputError
from mind_core.timestamps import now_iso

FORGOTTEN_MARKER = "_forgotten.json"


def _marker(root: str | Path) -> tuple[Any, str]:
    fs, path = fs_url.filesystem(fs_url.as_url(root))
    return fs, f"{path.rstrip('/')}/{FORGOTTEN_MARKER}"


def _read(fs: Any, marker: str) -> dict[str, Any]:
    """The marker's entries; a damaged marker is refused (which snapshots are stale is unknown)."""
    try:
        with fs.open(marker, "rb") as file:
            data = json.loads(file.read() or b"{}")
    except FileNotFoundError:
        return {}
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise InvalidInputError(
            f"the snapshot marker {marker} is damaged: take every workspace's snapshots again "
            "(`mind snapshot --all-workspaces`), then delete it"
        )
    return data


def _write(fs: Any, marker: str, data: dict[str, Any]) -> None:
    with fs.open(marker, "wb") as file:
        file.write(json.dumps(data, indent=2, sort_keys=True).encode())


def mark_stale(root: str | Path | None, workspace: str, audit_id: int) -> str | None:
    """Record that ``workspace``'s snapshots under ``root`` taken before now hold forgotten data;
    None (nothing marked) when there is no snapshot root yet, or it cannot be reached."""
    if root is None:
        return None
    try:
        fs, marker = _marker(root)
        with fs_url.reaching(str(root)):
            if not fs.isdir(marker.rpartition("/")[0]):
                return None
            try:
                data = _read(fs, marker)
            except InvalidInputError:  # started again: this workspace's entry at least is right
                data = {}
            data[workspace] = {"forgotten_at": now_iso(), "audit_id": audit_id}
            _write(fs, marker, data)
    except fs_url.UnreachableLocationError:
        return None
    local = fs_url.local_path(fs_url.as_url(root))
    return str(local / FORGOTTEN_MARKER) if local is not None else f"{fs_url.as_url(root)}/{FORGOTTEN_MARKER}"


def stale_marks(root: str | Path) -> dict[str, str]:
    """Workspace -> the instant before which its snapshots under ``root`` hold forgotten data."""
    with contextlib.suppress(fs_url.UnreachableLocationError):
        fs, marker = _marker(root)
        with fs_url.reaching(str(root)):
            data = _read(fs, marker)
        return {
            name: entry["forgotten_at"]
            for name, entry in data.items()
            if isinstance(entry, dict) and isinstance(entry.get("forgotten_at"), str)
        }
    return {}


def stale_before(root: str | Path, workspace: str) -> str | None:
    """The instant before which ``workspace``'s snapshots under ``root`` hold forgotten data."""
    return stale_marks(root).get(workspace)


def clear_mark(root: str | Path, workspace: str, up_to: str) -> None:
    """Forget ``workspace``'s entry once its stale snapshots are gone: only an entry no later than
    ``up_to`` (the instant the snapshot read the mind), so a forget made meanwhile stays marked.
    The marker goes when no entry is left."""
    fs, marker = _marker(root)
    with fs_url.reaching(str(root)):
        data = _read(fs, marker)
        entry = data.get(workspace)
        if isinstance(entry, dict) and str(entry.get("forgotten_at", "")) <= up_to:
            del data[workspace]
        else:
            return
        if data:
            _write(fs, marker, data)
        else:
            fs.rm(marker)
