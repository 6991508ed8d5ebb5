"""What else a folder holds: the exports of other kinds below a folder added as one kind.

A source reads its path with one plugin, so a mixed folder added as Markdown leaves the
mailboxes and chat exports below it unread. ``sources add`` names them, so the user can add
their folders as sources of their own. The walk is bounded like detection (``DETECT_DEPTH``
levels, ``DETECT_FOLDERS`` folders), asks each folder about its own top only, and does not go
into a folder another kind claims (the rest of that export lies there).
"""

from __future__ import annotations

from pathlib import Path

from mind_core.harvest.detection import DETECT_DEPTH, DETECT_FOLDERS, looking_at_top_only, subfolders
from mind_core.plugins import PLAUSIBLE, rank_sources


def other_kinds_below(path: Path | str, kind: str) -> dict[str, list[Path]]:
    """The folders below ``path`` that other kinds than ``kind`` claim, by kind, in the order
    found (breadth first, so the shallowest first); empty for a file and a URL (a ``str``)."""
    found: dict[str, list[Path]] = {}
    level = subfolders(path) if isinstance(path, Path) and path.is_dir() else []
    seen = 0
    with looking_at_top_only():
        for _ in range(DETECT_DEPTH):
            below: list[Path] = []
            for folder in level:
                seen += 1
                if seen > DETECT_FOLDERS:
                    return found
                others = [d.kind for d in rank_sources(folder) if d.kind != kind and d.confidence >= PLAUSIBLE]
                for other in others:
                    found.setdefault(other, []).append(folder)
                if not others:
                    below.extend(subfolders(folder))
            level = below
    return found
