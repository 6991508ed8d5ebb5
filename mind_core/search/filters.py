"""Search filters on what the sources said about a frame (its ``metadata.source`` and provenance).

A frame harvested from a note carries the note's tags and the section's tags; a mail carries its
``from``; every harvested frame names its plugin. These filters narrow a search to them in SQL, in
both lanes, so a rare tag still finds its frames (a filter applied after ranking would not).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mind_core.errors import InvalidInputError
from mind_core.store.db import escape_like

_TAG_PATHS = ("$.source.item.tags", "$.source.message.tags")


@dataclass(frozen=True)
class SourceFilter:
    """``tags``: every tag must be on the frame (case-insensitive; ``project`` also matches the
    nested ``project/alpha``, as Obsidian's tag search does). ``sender``: a substring of the mail's
    From header or the message's author. ``source_kind``: the plugin (``markdown``, ``email``,
    ``chatgpt`` ...) or the item kind (``note``, ``email``, ``conversation`` ...)."""

    tags: tuple[str, ...] = ()
    sender: str | None = None
    source_kind: str | None = None

    def __post_init__(self) -> None:
        tags = tuple(t.strip().lstrip("#") for t in self.tags if isinstance(t, str))
        if any(not t for t in tags) or len(tags) != len(self.tags):
            raise InvalidInputError("a tag filter must be a non-empty string")
        object.__setattr__(self, "tags", tags)
        for name in ("sender", "source_kind"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InvalidInputError(f"the {name} filter must be a non-empty string")

    @property
    def empty(self) -> bool:
        return not self.tags and not self.sender and not self.source_kind

    def clauses(self, alias: str) -> tuple[list[str], list[Any]]:
        """SQL conditions on the frames table (alias ``alias``, or "" for none)."""
        meta = f"{alias}.metadata" if alias else "metadata"
        clauses: list[str] = []
        params: list[Any] = []
        for tag in self.tags:
            lanes = " OR ".join(
                f"EXISTS (SELECT 1 FROM json_each({meta}, '{path}') t WHERE lower(t.value) = lower(?) "
                "OR lower(t.value) LIKE lower(?) ESCAPE '\\')"
                for path in _TAG_PATHS
            )
            clauses.append(f"({lanes})")
            nested = escape_like(tag) + "/%"
            params += [tag, nested] * len(_TAG_PATHS)
        if self.sender:
            clauses.append(
                "instr(lower(coalesce(json_extract("
                f"{meta}, '$.source.message.from'), json_extract({meta}, '$.provenance.author'), '')), "
                "lower(?)) > 0"
            )
            params.append(self.sender.strip())
        if self.source_kind:
            clauses.append(
                f"(json_extract({meta}, '$.provenance.plugin') = ? OR json_extract({meta}, '$.provenance.item_kind') = ?)"
            )
            params += [self.source_kind.strip()] * 2
        return clauses, params

