"""``Mind``: one SQLite file and the layers over it, as one object."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

from mind_core.awareness import AwarenessLayer
from mind_core.db import Database
from mind_core.frames import FrameStore
from mind_core.identity import IdentityLayer
from mind_core.schema import ensure_schema
from mind_core.sessions import SessionStore


class Mind:
    """A mind file opened with its schema ensured; use ``Mind.open(path)`` as a context manager."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.identity = IdentityLayer(db)
        self.awareness = AwarenessLayer(db)
        self.sessions = SessionStore(db)
        self.frames = FrameStore(db)

    @classmethod
    def open(cls, path: str | Path = ":memory:", *, dimensions: int | None = None, readonly: bool = False) -> Mind:
        db = Database(path, readonly=readonly)
        if not readonly:
            ensure_schema(db, dimensions)
        return cls(db)

    @property
    def path(self) -> str:
        return self.db.path

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Mind:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
