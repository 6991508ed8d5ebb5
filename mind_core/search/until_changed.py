"""Values a search reads from the whole mind (its speakers, its latest event time), kept until the
mind changes: computing them per question would cost more than the search itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mind_core.store.db import Database


class UntilChanged:
    """``get(name, compute)`` is ``compute()``, kept until the mind changes: another connection's
    commit moves ``data_version``, this connection's own writes ``total_changes``."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._kept: dict[str, tuple[tuple[int, int], Any]] = {}  # name -> (mind version, value)

    def get(self, name: str, compute: Callable[[], Any]) -> Any:
        version = (self.db.scalar("PRAGMA data_version"), self.db.conn.total_changes)
        kept = self._kept.get(name)
        if kept is None or kept[0] != version:
            kept = self._kept[name] = (version, compute())
        return kept[1]
