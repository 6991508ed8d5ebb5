"""The query service behind ``mind serve``: minds, recall, search, frames, sources, entities, the
knowledge graph on both time axes and stats as typed answers (``mind_core.query.models``); it knows nothing about HTTP.

Safety rules:
- Minds are opened read-only (a pool of read-only handles per mind file). Recalled frames are
  touched only with ``record_access=True`` (``--record-access``), through one separate writable
  connection per mind used for nothing else.
- A file in the mind home that is not a readable mind (corrupt, foreign SQLite, made with another
  embedder) is one broken workspace: a request naming it gets a clear error, ``/stats`` lists it
  with its error, and every other mind keeps answering.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mind_core.embeddings.base import Embedder, at_width
from mind_core.errors import FingerprintMismatchError, MindAccessError, MindError, NotFoundError
from mind_core.limits import MAX_ENTITY_RESULTS
from mind_core.mind import Mind
from mind_core.query import graph
from mind_core.query.models.fields import package_version
from mind_core.query.models.frames import FrameResponse, SearchResponse
from mind_core.query.models.graph import (
    EntitiesResponse,
    GraphEntitiesResponse,
    GraphRelationsResponse,
    NeighboursResponse,
)
from mind_core.query.models.recall import RecallResponse
from mind_core.query.models.requests import (
    EntitiesRequest,
    GraphEntitiesRequest,
    GraphRelationsRequest,
    NeighboursRequest,
    RecallRequest,
    SearchRequest,
)
from mind_core.query.models.service import HealthResponse, MindStats, StatsResponse, UnreadableMind
from mind_core.query.models.sources import Source, SourcesResponse
from mind_core.retrieval import (
    CombinedRetrieval,
    ExternalRetriever,
    frame_provenance,
    recall_mind_paths,
    record_access,
    search_hit,
)
from mind_core.search.vector_index import VectorIndex
from mind_core.store.db import Database
from mind_core.store.home import PERSONAL, MindHome, validate_workspace_name
from mind_core.store.schema import vec_dimensions

log = logging.getLogger(__name__)

MAX_IDLE_HANDLES_PER_MIND = 8
MIND_TABLES = ("memory_frames", "sessions", "knowledge_entities", "knowledge_relations")


class UnreadableMindError(MindError):
    """A mind file that cannot be read as a mind: corrupt, another program's SQLite file, or
    vectors made with another embedder. The message names the workspace, never the file path."""

    def __init__(self, workspace: str, reason: str) -> None:
        super().__init__(f"the mind of workspace {workspace!r} cannot be read: {reason}")
        self.workspace = workspace
        self.reason = reason


def _reason(exc: BaseException) -> str:
    """The cause of a failed open without the server's file path (``MindAccessError`` names it)."""
    cause = exc.__cause__ if isinstance(exc, MindAccessError) and exc.__cause__ else exc
    return str(cause) or type(cause).__name__


def open_readable(path: Path, workspace: str, embedder: Embedder | None = None) -> Mind:
    """``path`` opened read-only, checked to be a mind before it is used (on the one connection
    the handle keeps: a second open would double the cost of every handle the pool opens);
    UnreadableMindError otherwise.

    As ``Mind.open`` does, the embedder is fitted to the width the mind stores (``at_width``).
    A mind that holds no vectors yet (registered by ``mind sources add`` and never harvested,
    at the default width) is read without the vector lane when the embedder cannot be fitted:
    there is nothing to compare a query's vector with, and the mind's first writable open
    adopts the embedder's width. Only stored vectors of another space are refused."""
    try:
        db = Database(path, readonly=True)
    except MindAccessError as exc:
        raise UnreadableMindError(workspace, _reason(exc)) from None
    try:
        missing = [table for table in MIND_TABLES if not db.table_exists(table)]
        if not missing:
            mind = Mind(db, _fitted(db, embedder))
            mind.search.vectors.check_fingerprint()
            return mind
        reason = f"not a mind (no {', '.join(missing)} table)"
    except (FingerprintMismatchError, db.errors.DatabaseError) as exc:
        reason = _reason(exc)
    db.close()
    raise UnreadableMindError(workspace, reason)


def _fitted(db: Database, embedder: Embedder | None) -> Embedder | None:
    """The embedder at the mind's width; None (no vector lane) for a mind without vectors or a
    fingerprint that the embedder cannot be fitted to."""
    width = vec_dimensions(db)
    if embedder is None or not width:
        return embedder
    fitted = at_width(embedder, width)
    if int(fitted.dimensions) == width:
        return fitted
    vectors = VectorIndex(db, None)
    return embedder if vectors.stored_fingerprint() is not None or vectors.holds_vectors() else None


def mind_stats(mind: Mind, workspace: str) -> MindStats:
    from mind_core.harvest.stores import HarvestSourceStore

    stats = mind.frames.get_stats()
    return MindStats(
        workspace=workspace,
        frames=stats["total"],
        by_type=stats["byType"],
        sessions=mind.db.scalar("SELECT COUNT(*) FROM sessions"),
        entities=mind.knowledge.get_entity_count(),
        relations=mind.db.scalar("SELECT COUNT(*) FROM knowledge_relations WHERE valid_to IS NULL"),
        vectors=mind.db.scalar("SELECT COUNT(*) FROM memory_frames WHERE embedded_hash IS NOT NULL"),
        sources=len(HarvestSourceStore(mind.db).get_all()),
        embedding=mind.search.vectors.stored_fingerprint(),
    )


def stats_or_error(mind: Mind, workspace: str) -> MindStats | UnreadableMind:
    """The counts of one mind, or its error when the file is damaged past its header."""
    try:
        return mind_stats(mind, workspace)
    except mind.db.errors.DatabaseError as exc:
        return UnreadableMind(workspace=workspace, error=_reason(exc))


def find_entities(mind: Mind, request: EntitiesRequest) -> EntitiesResponse:
    """Entities whose name contains the query; with a type, the first ``limit`` of that type
    among a wider search (the graph search itself does not filter by type); a type no entity can
    have is refused (``graph.require_known_type``)."""
    graph.require_known_type(request.type, graph.entity_types(mind.knowledge), "entity")
    wanted = request.limit if request.type is None else MAX_ENTITY_RESULTS * 5
    found = mind.knowledge.search_entities(request.query, wanted)
    if request.type is not None:
        found = [e for e in found if e.entity_type == request.type][: request.limit]
    return EntitiesResponse.model_validate({"entities": [e.__dict__ for e in found]})


class SerializedEmbedder:
    """One embedder shared by request threads, one call at a time (tokenizers are not re-entrant)."""

    def __init__(self, inner: Embedder, lock: threading.Lock | None = None) -> None:
        self.inner = inner
        self.provider = inner.provider
        self.model_name = inner.model_name
        self.dimensions = inner.dimensions
        self.degraded = bool(getattr(inner, "degraded", False))
        # the vector space (in-process runtime and weights) is part of a mind's fingerprint
        self.runtime = getattr(inner, "runtime", None)
        self.quantization = getattr(inner, "quantization", None)
        self._lock = lock or threading.Lock()

    def at_width(self, width: int) -> SerializedEmbedder:
        """The inner embedder at a mind's width, still one call at a time with this one."""
        if width == self.dimensions:
            return self
        return SerializedEmbedder(at_width(self.inner, width), self._lock)

    def embed(self, text: str) -> Any:
        with self._lock:
            return self.inner.embed(text)

    def embed_batch(self, texts: Sequence[str]) -> Any:
        with self._lock:
            return self.inner.embed_batch(texts)


class MindPool:
    """Read-only Mind handles per mind file, reused across requests; a handle serves one request
    at a time, so no SQLite connection is ever used by two threads at once."""

    def __init__(self, embedder: Embedder | None, max_idle: int = MAX_IDLE_HANDLES_PER_MIND) -> None:
        self.embedder = embedder
        self.max_idle = max_idle
        self._idle: dict[str, list[Mind]] = {}
        self._lock = threading.Lock()
        self._closed = False

    @contextlib.contextmanager
    def lease(self, path: Path, workspace: str) -> Iterator[Mind]:
        key = str(path)
        with self._lock:
            idle = self._idle.get(key)
            mind = idle.pop() if idle else None
        if mind is None:
            mind = open_readable(path, workspace, self.embedder)
        try:
            yield mind
        finally:
            with self._lock:
                idle = self._idle.setdefault(key, [])
                keep = not self._closed and len(idle) < self.max_idle
                if keep:
                    idle.append(mind)
            if not keep:
                mind.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            minds = [m for idle in self._idle.values() for m in idle]
            self._idle.clear()
        for mind in minds:
            mind.close()


class AccessRecorder:
    """The one writable connection per mind that touches recalled frames (``--record-access``)."""

    def __init__(self) -> None:
        self._dbs: dict[str, Database] = {}
        self._lock = threading.Lock()

    def __call__(self, path: str, frame_ids: Sequence[int]) -> None:
        try:
            with self._lock:
                db = self._dbs.get(path)
                if db is None:
                    db = self._dbs[path] = Database(path)
                record_access(db, frame_ids)
        except Exception:
            log.exception("could not record access to %d frames of %s", len(frame_ids), path)

    def close(self) -> None:
        with self._lock:
            for db in self._dbs.values():
                db.close()
            self._dbs.clear()


@dataclass
class ServiceConfig:
    home: MindHome
    default_workspace: str
    embedder: Embedder | None = None
    token: str | None = None
    retrievers: list[ExternalRetriever] = field(default_factory=list)
    record_access: bool = False


class QueryService:
    """The answers of the query service, over the minds of one mind home."""

    def __init__(self, config: ServiceConfig) -> None:
        if config.default_workspace != PERSONAL:
            validate_workspace_name(config.default_workspace)
        self.config = config
        embedder = SerializedEmbedder(config.embedder) if config.embedder is not None else None
        self.pool = MindPool(embedder)
        self.access = AccessRecorder() if config.record_access else None

    def close(self) -> None:
        self.pool.close()
        if self.access is not None:
            self.access.close()

    # -- minds ----------------------------------------------------------------------------
    def _path(self, workspace: str | None) -> tuple[str, Path]:
        name = workspace or self.config.default_workspace
        return name, self.config.home.mind_path(name)

    @contextlib.contextmanager
    def _mind(self, workspace: str | None) -> Iterator[Mind]:
        name, path = self._path(workspace)
        if not path.is_file():
            raise self.config.home.missing_mind(name)
        with self.pool.lease(path, name) as mind:
            yield mind

    # -- answers --------------------------------------------------------------------------
    def health(self, minds_shown: bool = True) -> HealthResponse:
        """The service's liveness; ``minds_shown`` False (a caller without the token of a server
        that has one): the minds and sources are not named."""
        home = self.config.home
        answer = HealthResponse(status="ok", version=package_version(), auth=bool(self.config.token))
        if minds_shown:
            answer.personal = home.personal_path.is_file()
            answer.workspaces = home.workspaces()
            answer.default_workspace = self.config.default_workspace
            answer.external_sources = [r.name for r in self.config.retrievers]
        return answer

    def recall(self, request: RecallRequest) -> RecallResponse:
        home, scope = self.config.home, request.scope
        name, ws_path, personal_path = recall_mind_paths(
            home, request.workspace, self.config.default_workspace, scope
        )
        with contextlib.ExitStack() as stack:
            ws_mind = stack.enter_context(self.pool.lease(ws_path, name)) if ws_path is not None else None
            personal_mind = (
                stack.enter_context(self.pool.lease(personal_path, PERSONAL))
                if personal_path is not None
                else None
            )
            retrieval = CombinedRetrieval(
                ws_mind,
                personal_mind,
                self.config.retrievers,
                workspace_name=name,
                record_access_on_recall=self.access is not None,
                access_writer=self.access,
            )
            result = retrieval.recall(request.parameters())
        return RecallResponse.from_retrieval(result, request)

    def search(self, request: SearchRequest) -> SearchResponse:
        options = request.model_dump(include={"limit", "profile", "since", "until", "explain"})
        with self._mind(request.workspace) as mind:
            found = mind.search.search(request.query, gop_id=request.session, **options)
            hits = [search_hit(r, request.query, request.snippet_chars) for r in found]
        confident = any(r.confident for r in found)
        workspace = self._path(request.workspace)[0]
        answer = {"query": request.query, "workspace": workspace, "results": hits, "confident": confident}
        return SearchResponse.model_validate(answer)

    def frame(self, frame_id: int, workspace: str | None) -> FrameResponse:
        with self._mind(workspace) as mind:
            frame = mind.frames.get_by_id(frame_id)
            if frame is None:
                raise NotFoundError(f"no frame {frame_id}")
            entities = mind.knowledge.entities_for_frame(frame_id)
            return FrameResponse.model_validate(
                {
                    "frame": frame.to_dict(),
                    "provenance": frame_provenance(frame),
                    "entities": [{"id": e.id, "type": e.entity_type, "name": e.name} for e in entities],
                }
            )

    def sources(self, workspace: str | None) -> SourcesResponse:
        from mind_core.harvest.stores import HarvestSourceStore

        name = self._path(workspace)[0]
        with self._mind(workspace) as mind:
            store = HarvestSourceStore(mind.db)
            found = [Source.of(name, s, store.reading_rules(s.source).exclude) for s in store.get_all()]
        return SourcesResponse(sources=found)

    def entities(self, request: EntitiesRequest) -> EntitiesResponse:
        with self._mind(request.workspace) as mind:
            return find_entities(mind, request)

    def graph_entities(self, request: GraphEntitiesRequest) -> GraphEntitiesResponse:
        with self._mind(request.workspace) as mind:
            return graph.graph_entities(mind.knowledge, request)

    def graph_relations(self, request: GraphRelationsRequest) -> GraphRelationsResponse:
        with self._mind(request.workspace) as mind:
            return graph.graph_relations(mind.knowledge, request)

    def neighbours(self, request: NeighboursRequest) -> NeighboursResponse:
        with self._mind(request.workspace) as mind:
            return graph.neighbours(mind.knowledge, request)

    def stats(self, workspace: str | None) -> StatsResponse:
        """Counts per mind: the named one, or every mind of the home, each broken one listed
        with its error instead of failing the others."""
        if workspace is not None:
            return StatsResponse(minds=[self._stats_of(workspace)])
        return StatsResponse(minds=[self._stats_of(name) for name in self.config.home.minds()])

    def _stats_of(self, workspace: str) -> MindStats | UnreadableMind:
        try:
            with self._mind(workspace) as mind:
                return stats_or_error(mind, workspace)
        except UnreadableMindError as exc:
            return UnreadableMind(workspace=workspace, error=exc.reason)
