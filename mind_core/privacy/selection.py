"""What a forget is about: the selector (``--source``, ``--frames``, ``--query``, ``--since`` /
``--until``, or ``--person``) and the frames it selects.

The frame selectors combine as an intersection (``--source mail --since 2010`` is the mail's
frames of 2010 on). A query selects by the full-text index, every word required: a forget must
take what the words say, never the vector lane's nearest neighbours, which always exist. A
person is a selector of its own (``person.find_person``): what goes with them is not a set of
frames alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mind_core.errors import InvalidInputError
from mind_core.privacy.keys import keyed, person_term
from mind_core.search.keywords import keyword_tokens
from mind_core.store.db import IN_LIST, Database, in_list
from mind_core.store.frames import time_clauses


@dataclass(frozen=True)
class Selector:
    source: str | None = None
    frame_ids: tuple[int, ...] = field(default_factory=tuple)
    query: str | None = None
    person: str | None = None
    since: str | None = None
    until: str | None = None

    def __post_init__(self) -> None:
        if not self.kinds:
            raise InvalidInputError(
                "say what to forget: --source, --frames, --query, --person or --since/--until"
            )
        if self.person is not None and len(self.kinds) > 1:
            raise InvalidInputError("--person forgets a person everywhere: give it alone")
        if self.query is not None and not keyword_tokens(self.query):
            raise InvalidInputError(f"the query {self.query!r} has no word to search for (3 letters or more)")

    @property
    def kinds(self) -> list[str]:
        """The kinds of selector given, as the audit log records them."""
        given = {
            "source": self.source is not None,
            "frames": bool(self.frame_ids),
            "query": self.query is not None,
            "person": self.person is not None,
            "time": self.since is not None or self.until is not None,
        }
        return [kind for kind, present in given.items() if present]

    def canonical(self) -> str:
        """The selector as one string, the same for the same thing however it was spelled."""
        return json.dumps(
            {
                "source": self.source,
                "frames": sorted(set(self.frame_ids)),
                "query": " ".join(t.casefold() for t in keyword_tokens(self.query)) if self.query else None,
                "person": person_term(self.person) if self.person else None,
                "since": self.since,
                "until": self.until,
            },
            sort_keys=True,
        )

    def digest(self, key: bytes) -> str:
        """The keyed hash the audit log and the tombstones keep instead of the selector's text."""
        return keyed(key, "selector", self.canonical())


def parse_frame_ids(text: str) -> tuple[int, ...]:
    """``"12,13 40"`` as frame ids."""
    try:
        ids = tuple(int(part) for part in text.replace(",", " ").split())
    except ValueError as exc:
        raise InvalidInputError(f"--frames takes frame ids separated by commas, not {text!r}") from exc
    if not ids:
        raise InvalidInputError("--frames needs at least one frame id")
    return ids


def selected_frames(db: Database, selector: Selector) -> list[int]:
    """The ids of the frames a (non-person) selector selects, oldest first."""
    clauses: list[str] = []
    params: list[Any] = []
    if selector.source is not None:
        clauses.append(
            "(id IN (SELECT frame_id FROM harvest_ledger WHERE source = ?) OR "
            "(json_valid(metadata) AND json_extract(metadata, '$.provenance.source') = ?))"
        )
        params += [selector.source, selector.source]
    if selector.frame_ids:
        clauses.append(f"id IN ({IN_LIST})")
        params.append(in_list(selector.frame_ids))
    if selector.query is not None:
        match = " ".join(f'"{token}"' for token in keyword_tokens(selector.query))
        clauses.append("id IN (SELECT rowid FROM memory_frames_fts WHERE memory_frames_fts MATCH ?)")
        params.append(match)
    time_sql, time_params = time_clauses("created_at", selector.since, selector.until)
    clauses += time_sql
    params += time_params
    rows = db.query(
        f"SELECT id FROM memory_frames WHERE {' AND '.join(clauses)} ORDER BY created_at, id", params
    )
    return [row[0] for row in rows]
