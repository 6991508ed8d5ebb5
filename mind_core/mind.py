"""``Mind``: one SQLite file and the layers over it, as one object."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from types import TracebackType

from mind_core.embeddings.base import Embedder, at_width
from mind_core.knowledge.cognify import CognifyPipeline
from mind_core.knowledge.graph import KnowledgeGraph
from mind_core.search.hybrid import HybridSearch
from mind_core.search.linker import MemoryLinker
from mind_core.search.vector_index import VectorIndex
from mind_core.store import reconcile
from mind_core.store.awareness import AwarenessLayer
from mind_core.store.db import Database, access_error
from mind_core.store.frames import FrameStore
from mind_core.store.identity import IdentityLayer
from mind_core.store.schema import ensure_schema, vec_dimensions
from mind_core.store.sessions import SessionStore


class Mind:
    """A mind file opened with its schema ensured; use ``Mind.open(path)`` as a context manager."""

    def __init__(self, db: Database, embedder: Embedder | None = None) -> None:
        self.db = db
        self.embedder = embedder
        self.identity = IdentityLayer(db)
        self.awareness = AwarenessLayer(db)
        self.sessions = SessionStore(db)
        self.frames = FrameStore(db)
        self.knowledge = KnowledgeGraph(db)
        self.search = HybridSearch(db, embedder, self.frames, self.knowledge)
        self.linker = MemoryLinker(self.search)

    @classmethod
    def open(
        cls,
        path: str | Path = ":memory:",
        *,
        embedder: Embedder | None = None,
        dimensions: int | None = None,
        readonly: bool = False,
        rebuild_vectors: bool = False,
    ) -> Mind:
        """Open (or create) a mind. With an embedder, its fingerprint must match the mind's
        vectors unless ``rebuild_vectors`` drops them (to be re-embedded by ``reconcile``).

        A new mind stores vectors at ``dimensions`` values, else at the embedder's width (the
        model's own unless the embedder pads, e.g. to the original engine's 1024). An existing mind
        keeps its width and gets the embedder fitted to it; rebuilding adopts the new width.
        """
        db = Database(path, readonly=readonly)
        try:
            if not readonly:
                new = vec_dimensions(db) is None
                ensure_schema(db, dimensions or (embedder.dimensions if new and embedder is not None else None))
            if embedder is not None:
                vectors = VectorIndex(db, embedder)
                if rebuild_vectors:
                    vectors.rebuild(dimensions)
                elif dimensions is None and not readonly:
                    vectors.adopt_embedder_width()
                width = vec_dimensions(db)
                if width:
                    embedder = at_width(embedder, width)
            mind = cls(db, embedder)
            mind.search.vectors.check_fingerprint()
        except db.errors.DatabaseError as exc:  # e.g. a read-only or full disk met by the schema
            db.close()
            raise access_error(db.path, exc) from exc
        except BaseException:
            db.close()
            raise
        return mind

    @cached_property
    def cognify(self) -> CognifyPipeline:
        """The write path (frame, knowledge graph, vector), built on first use; linking off."""
        return CognifyPipeline(self.frames, self.sessions, self.knowledge, self.search, linker=self.linker)

    def reconcile(self) -> reconcile.ReconcileResult:
        """Repair FTS and vector indexes (vectors only when this mind has an embedder)."""
        return reconcile.reconcile_indexes(self.db, self.embedder)

    def doctor(self, repair: bool = False) -> reconcile.DoctorReport:
        return reconcile.doctor(self.db, self.embedder, repair)

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
