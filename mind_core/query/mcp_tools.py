"""The MCP tool bodies (``MindTools``) over a mind home: plain methods, so they work without
the SDK too; the server (``mind_core.query.mcp``) exposes them."""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Generic, TypeVar

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.limits import DEFAULT_ENTITY_RESULTS, DEFAULT_GRAPH_RESULTS, DEFAULT_RESULTS
from mind_core.query.mcp_arguments import (
    AllowReturn,
    AsOf,
    AwarenessText,
    CategoryArg,
    CategoryFilter,
    CleanupModeArg,
    Confidence,
    DeprecatedAgeDays,
    EntityName,
    EntityProperties,
    EntityQuery,
    EntityTypeArg,
    ExpiresAt,
    ExplainArg,
    ForgetBy,
    ForgetFrames,
    ForgetPerson,
    ForgetQuery,
    ForgetSince,
    ForgetSource,
    ForgetUntil,
    ForgetYes,
    IdentityCapabilities,
    IdentityDepartment,
    IdentityName,
    IdentityPersonality,
    IdentityRole,
    IdentitySystemPrompt,
    ImportanceArg,
    IncludeEnded,
    IngestItemsArg,
    KnownAt,
    MemoryText,
    NewEntityName,
    NewEntityType,
    NewRelationType,
    Priority,
    RecallProfile,
    RecallScope,
    RelationProperties,
    RelationTypeArg,
    Sender,
    Since,
    SnippetArg,
    SourceEntityId,
    SourceKindArg,
    Tags,
    TargetEntityId,
    TempAgeDays,
    Until,
    ValidAt,
    Workspace,
)
from mind_core.query.models.fields import (
    EntityLimit,
    QueryText,
    ResultLimit,
)
from mind_core.query.models.forget import ForgetBody, ForgetResponse
from mind_core.query.models.graph import (
    EntitiesResponse,
    GraphEntitiesResponse,
    GraphRelationsResponse,
    NeighboursResponse,
)
from mind_core.query.models.ingest import IngestRequest, IngestResponse
from mind_core.query.models.recall import RecallResponse
from mind_core.query.models.requests import (
    EntitiesRequest,
    GraphEntitiesRequest,
    GraphLimit,
    GraphRelationsRequest,
    NeighboursRequest,
    RecallRequest,
    parse_request,
)
from mind_core.query.models.sources import Source, SourcesResponse
from mind_core.query.models.tools import (
    AwarenessAdded,
    AwarenessCleared,
    AwarenessItems,
    CleanupAnswer,
    IdentityAnswer,
    SavedMemory,
    Upserted,
)
from mind_core.store.home import PERSONAL, MindHome, validate_workspace_name
from mind_core.store.identity import IDENTITY_FIELDS

if TYPE_CHECKING:
    from pathlib import Path

    from mind_core.embeddings.base import Embedder
    from mind_core.mind import Mind
    from mind_core.retrieval import ExternalRetriever


log = logging.getLogger(__name__)

_V = TypeVar("_V")


class OnFirstUse(Generic[_V]):
    """A value built when a tool first needs it (or the warm-up builds it, whichever comes first).
    ``mind mcp`` builds the embedder (loading a model takes seconds) and the external retrievers
    (finding them loads every plugin) this way, so initialize and tools/list wait for neither."""

    def __init__(self, make: Callable[[], _V]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._built = False
        self._value: _V | None = None

    def get(self) -> _V:
        with self._lock:
            if not self._built:
                self._value = self._make()
                self._built = True
            return self._value  # type: ignore[return-value]


def _built(value: OnFirstUse[_V] | _V) -> _V:
    return value.get() if isinstance(value, OnFirstUse) else value


class MindTools:
    """The tool bodies, over a mind home; plain methods, so they work without the SDK too.

    ``embedder`` and ``retrievers`` may be OnFirstUse: built when the first mind is opened, and
    when the first recall asks, respectively. ``record_access``: recalls count as accesses of the
    frames they answer (``mind mcp --record-access``); otherwise they read only."""

    def __init__(
        self,
        home: MindHome,
        default_workspace: str,
        embedder: Embedder | OnFirstUse[Embedder | None] | None,
        retrievers: Sequence[ExternalRetriever] | OnFirstUse[Sequence[ExternalRetriever]] = (),
        *,
        record_access: bool = False,
    ) -> None:
        if default_workspace != PERSONAL:
            validate_workspace_name(default_workspace)
        self.home = home
        self.default_workspace = default_workspace
        self.embedder = embedder
        self.retrievers = retrievers if isinstance(retrievers, OnFirstUse) else list(retrievers)
        self.record_access = record_access
        self._minds: dict[str, Mind] = {}
        self._lock = threading.RLock()

    def warm_up(self) -> None:
        """Import the engine and build the embedder (loading an in-process model) and the external
        retrievers, so that a first tool call finds them ready; a call that comes first waits for
        the same build (OnFirstUse), never for a second one."""
        importlib.import_module("mind_core.mind")  # the engine: numpy, sqlite-vec, search, cognify
        importlib.import_module("mind_core.retrieval")
        _built(self.retrievers)
        embedder = _built(self.embedder)
        from mind_core.embeddings import InprocessEmbedder  # the engine is loaded by now

        if isinstance(embedder, InprocessEmbedder):  # HTTP embedders need nothing
            embedder.embed("warm up")  # loads the session a question uses (not the batch one)

    def close(self) -> None:
        with self._lock:
            for mind in self._minds.values():
                mind.close()
            self._minds.clear()

    def _mind(self, workspace: str | None) -> Mind | None:
        """The mind of ``workspace`` (default: the server's), opened for the session. One that
        does not exist is None for the server's workspace and the personal mind (a read answers
        empty) and an error for any other workspace; it is never created (``_writable``)."""
        name = workspace or self.default_workspace
        path = self.home.mind_path(name)
        key = str(path)
        mind = self._minds.get(key)
        if mind is None:
            if not path.is_file():
                if name in (self.default_workspace, PERSONAL):
                    return None
                raise self.home.missing_mind(name)
            from mind_core.mind import Mind

            mind = self._minds[key] = Mind.open(path, embedder=_built(self.embedder))
        return mind

    def _mind_at(self, path: Path | None, workspace: str) -> Mind | None:
        return None if path is None else self._mind(workspace)

    def _writable(self, workspace: str | None) -> Mind:
        """The mind a write goes to, which must exist: MCP never creates a mind (a typo in a
        workspace name would otherwise become a new mind holding what was saved); ``mind sources
        add`` does."""
        name = workspace or self.default_workspace
        path = self.home.mind_path(name)
        if str(path) not in self._minds and not path.is_file():
            missing = self.home.missing_mind(name)
            raise NotFoundError(f"{missing}; MCP creates no mind: `mind sources add PATH -w {name}` does")
        mind = self._mind(name)
        assert mind is not None
        return mind

    # -- memory ---------------------------------------------------------------------------
    def recall_memory(
        self,
        query: QueryText,
        limit: ResultLimit = DEFAULT_RESULTS,
        scope: RecallScope = "all",
        profile: RecallProfile = "balanced",
        workspace: Workspace = None,
        since: Since = None,
        until: Until = None,
        snippet_chars: SnippetArg = None,
        as_of: AsOf = None,
        tags: Tags = None,
        sender: Sender = None,
        source_kind: SourceKindArg = None,
        explain: ExplainArg = False,
    ) -> RecallResponse:
        """Recall what the minds know about query: workspace and personal memory, plus external
        sources when local memory is thin. limit is the number of results in the whole answer;
        each result names its workspace (the mind; personal for the personal memory) and its
        source (the harvest source's name). score (0..1) orders the results; metadata.match_score
        above 0.5 means keyword and meaning agree; confident false means nothing matched well.
        Pass snippet_chars (e.g. 200) to get each text as a short snippet around the query's words;
        as_of to recall as of an instant; tags, sender and source_kind to keep only the frames
        whose sources match; explain for each result's lane ranks and score parts. The same answer
        as GET /recall and `mind recall --json`."""
        from mind_core.retrieval import CombinedRetrieval, recall_mind_paths

        values = {"query": query, "limit": limit, "profile": profile, "workspace": workspace, "scope": scope}
        values.update(since=since, until=until, as_of=as_of, tags=tags or [], sender=sender, explain=explain)
        request = parse_request(RecallRequest, {**values, "source_kind": source_kind, "snippet_chars": snippet_chars})
        name, ws_path, personal_path = recall_mind_paths(
            self.home, request.workspace, self.default_workspace, request.scope
        )
        ws = self._mind_at(ws_path, name)
        personal = self._mind_at(personal_path, PERSONAL)
        retrieval = CombinedRetrieval(
            ws,
            personal,
            _built(self.retrievers),
            workspace_name=name,
            record_access_on_recall=self.record_access,
        )
        return RecallResponse.from_retrieval(retrieval.recall(request.parameters()), request)

    def save_memory(
        self, content: MemoryText, importance: ImportanceArg = "normal", workspace: Workspace = None
    ) -> SavedMemory:
        """Remember a piece of text: stored as a frame, its entities and relations extracted into the
        knowledge graph, and indexed for recall (cognify). The workspace's mind must exist: this creates
        none (`mind sources add` does)."""
        if not isinstance(content, str) or not content.strip():
            raise InvalidInputError("content must be a non-empty string")
        mind = self._writable(workspace)
        outcome = mind.cognify.cognify(content, importance)
        return SavedMemory(
            frame_id=outcome.frame_id,
            entities_extracted=outcome.entities_extracted,
            relations_created=outcome.relations_created,
            workspace=workspace or self.default_workspace,
        )

    # -- knowledge graph ------------------------------------------------------------------
    def search_entities(
        self,
        query: EntityQuery,
        limit: EntityLimit = DEFAULT_ENTITY_RESULTS,
        entity_type: EntityTypeArg = None,
        workspace: Workspace = None,
    ) -> EntitiesResponse:
        """Entities whose name contains query (case-insensitive), optionally of one entity_type.
        The same answer as GET /entities."""
        from mind_core.query.graph import entity_types, require_known_type
        from mind_core.query.service import find_entities

        values = {"query": query, "limit": limit, "type": entity_type, "workspace": workspace}
        request = parse_request(EntitiesRequest, values)
        mind = self._mind(workspace)
        if mind is None:
            require_known_type(request.type, entity_types(None), "entity")
            return EntitiesResponse(entities=[])
        return find_entities(mind, request)

    def kg_entities(
        self,
        entity_type: EntityTypeArg = None,
        valid_at: ValidAt = None,
        known_at: KnownAt = None,
        limit: GraphLimit = DEFAULT_GRAPH_RESULTS,
        workspace: Workspace = None,
        include_ended: IncludeEnded = False,
    ) -> GraphEntitiesResponse:
        """Knowledge-graph entities (of one entity_type) on both time axes: valid_at keeps those that
        held at that instant (valid time), known_at reads the graph as the mind believed it then
        (transaction time). Without valid_at only the current ones (not ended), unless
        include_ended. The same answer as GET /kg/entities and `mind kg entities --json`."""
        from mind_core.query.graph import graph_entities

        values = {"type": entity_type, "valid_at": valid_at, "known_at": known_at, "limit": limit}
        request = parse_request(
            GraphEntitiesRequest, {**values, "include_ended": include_ended, "workspace": workspace}
        )
        mind = self._mind(request.workspace)
        return graph_entities(mind.knowledge if mind else None, request)

    def kg_relations(
        self,
        relation_type: RelationTypeArg = None,
        valid_at: ValidAt = None,
        known_at: KnownAt = None,
        limit: GraphLimit = DEFAULT_GRAPH_RESULTS,
        workspace: Workspace = None,
        include_ended: IncludeEnded = False,
    ) -> GraphRelationsResponse:
        """Knowledge-graph relations (of one relation_type, e.g. links_to, sent, replied_to) with
        the names of the entities they join, on both time axes as kg_entities. The same answer as
        GET /kg/relations and `mind kg relations --json`."""
        from mind_core.query.graph import graph_relations

        values = {"type": relation_type, "valid_at": valid_at, "known_at": known_at, "limit": limit}
        request = parse_request(
            GraphRelationsRequest, {**values, "include_ended": include_ended, "workspace": workspace}
        )
        mind = self._mind(request.workspace)
        return graph_relations(mind.knowledge if mind else None, request)

    def kg_neighbours(
        self,
        name: EntityName,
        valid_at: ValidAt = None,
        known_at: KnownAt = None,
        limit: GraphLimit = DEFAULT_GRAPH_RESULTS,
        workspace: Workspace = None,
        include_ended: IncludeEnded = False,
    ) -> NeighboursResponse:
        """The relations of the entity called name (any case), in and out, with the entity at each
        relation's other end, on both time axes as kg_entities; each row names the entity it belongs
        to (a person and a concept may share a name), typed relations before co-occurrences. The
        same answer as GET /kg/neighbours and `mind kg neighbours --json`."""
        from mind_core.query.graph import neighbours

        values = {"name": name, "valid_at": valid_at, "known_at": known_at, "limit": limit}
        request = parse_request(NeighboursRequest, {**values, "include_ended": include_ended, "workspace": workspace})
        mind = self._mind(request.workspace)
        return neighbours(mind.knowledge if mind else None, request)

    def save_entity(
        self,
        entity_type: NewEntityType,
        name: NewEntityName,
        properties: EntityProperties = None,
        workspace: Workspace = None,
    ) -> Upserted:
        """Create an entity, or return the active one with this type and name (unchanged)."""
        entity_id, created = self._writable(workspace).knowledge.upsert_entity(entity_type, name, properties)
        return Upserted(id=entity_id, created=created)

    def create_relation(
        self,
        source_id: SourceEntityId,
        target_id: TargetEntityId,
        relation_type: NewRelationType,
        confidence: Confidence = 1.0,
        properties: RelationProperties = None,
        workspace: Workspace = None,
    ) -> Upserted:
        """Relate two entities by id; a repeat sighting of the same relation is counted, not duplicated."""
        relation_id, created = self._writable(workspace).knowledge.upsert_relation(
            source_id, target_id, relation_type, confidence, properties
        )
        return Upserted(id=relation_id, created=created)

    # -- identity and awareness -----------------------------------------------------------
    def get_identity(self, workspace: Workspace = None) -> IdentityAnswer:
        """Who the agent is (name, role, department, personality, capabilities, system prompt)."""
        mind = self._mind(workspace)
        return IdentityAnswer.model_validate({"identity": mind.identity.get() if mind else None})

    def set_identity(
        self,
        name: IdentityName = None,
        role: IdentityRole = None,
        department: IdentityDepartment = None,
        personality: IdentityPersonality = None,
        capabilities: IdentityCapabilities = None,
        system_prompt: IdentitySystemPrompt = None,
        workspace: Workspace = None,
    ) -> IdentityAnswer:
        """Create the identity (needs a name) or update the given fields; the others are kept."""
        given = dict(
            name=name,
            role=role,
            department=department,
            personality=personality,
            capabilities=capabilities,
            system_prompt=system_prompt,
        )
        fields = {k: v for k, v in given.items() if k in IDENTITY_FIELDS and v is not None}
        return IdentityAnswer.model_validate({"identity": self._writable(workspace).identity.set(**fields)})

    def get_awareness(self, category: CategoryFilter = None, workspace: Workspace = None) -> AwarenessItems:
        """Active short-term items (at most 10): tasks, recent actions, pending items, flags."""
        mind = self._mind(workspace)
        if mind is None:
            return AwarenessItems(items=[])
        items = mind.awareness.get_active() if category is None else mind.awareness.get_by_category(category)
        return AwarenessItems.model_validate({"items": items})

    def set_awareness(
        self,
        category: CategoryArg,
        content: AwarenessText,
        priority: Priority = 0,
        expires_at: ExpiresAt = None,
        workspace: Workspace = None,
    ) -> AwarenessAdded:
        """Add an awareness item; with 10 active, the lowest-priority oldest one is removed to make room."""
        item = self._writable(workspace).awareness.add(category, content, priority, None, expires_at)
        return AwarenessAdded.model_validate({"item": item})

    def clear_awareness(self, category: CategoryFilter = None, workspace: Workspace = None) -> AwarenessCleared:
        """Remove awareness items (all, or those of one category)."""
        mind = self._mind(workspace)
        return AwarenessCleared(removed=mind.awareness.clear(category) if mind else 0)

    # -- harvest and maintenance ----------------------------------------------------------
    def list_sources(self, workspace: Workspace = None) -> SourcesResponse:
        """List the mind's registered harvest sources with their last harvest (the same fields as
        GET /sources and `mind sources list --json`); starts no harvest."""
        from mind_core.harvest.stores import HarvestSourceStore

        mind = self._mind(workspace)
        if mind is None:
            return SourcesResponse(sources=[])
        name = workspace or self.default_workspace
        store = HarvestSourceStore(mind.db)
        return SourcesResponse(sources=[Source.of(name, s, store.reading_rules(s.source).exclude) for s in store.get_all()])

    def cleanup_frames(
        self,
        mode: CleanupModeArg,
        max_temp_age_days: TempAgeDays = 30,
        max_deprecated_age_days: DeprecatedAgeDays = 90,
        workspace: Workspace = None,
    ) -> CleanupAnswer:
        """Maintenance: 'reconcile' repairs the search indexes; 'compact' deletes old temporary and
        deprecated frames (for good), folds long P-frame chains, then reconciles."""
        mind = self._mind(workspace)
        if mind is None:
            return CleanupAnswer(mode=mode, skipped="no such mind")
        if mode == "compact":
            compacted = asdict(mind.frames.compact(max_temp_age_days, max_deprecated_age_days))
            return CleanupAnswer(mode=mode, **compacted, reconciled=asdict(mind.reconcile()))
        if mode == "reconcile":
            return CleanupAnswer(mode=mode, reconciled=asdict(mind.reconcile()))
        raise InvalidInputError(f"unknown mode {mode!r}; expected reconcile or compact")

    def ingest_items(self, items: IngestItemsArg, workspace: Workspace = None) -> IngestResponse:
        """Add memories: items in the Universal JSON shape (the seed's import item), run through
        the harvest's import path (one memory per message at its own time, entities extracted,
        embedded), held by the workspace's source ingest:mcp. Sent again unchanged, nothing is
        written; a bad item is reported by its index and the others are kept. The mind must exist
        (never created here). The same as POST /ingest."""
        from mind_core.harvest.ingest import ingest_items, ingest_source_name
        from mind_core.store.write_lock import mind_write_lock

        request = parse_request(IngestRequest, {"items": items, "workspace": workspace})
        name = request.workspace or self.default_workspace
        mind = self._writable(name)
        with mind_write_lock(self.home.mind_path(name)):
            report = ingest_items(mind, ingest_source_name("mcp"), request.items)
        return IngestResponse.model_validate({"workspace": name, **report.to_dict()})

    def forget_memory(
        self,
        source: ForgetSource = None,
        frames: ForgetFrames = None,
        query: ForgetQuery = None,
        person: ForgetPerson = None,
        since: ForgetSince = None,
        until: ForgetUntil = None,
        yes: ForgetYes = False,
        allow_return: AllowReturn = False,
        by: ForgetBy = None,
        workspace: Workspace = None,
    ) -> ForgetResponse:
        """Forget for good: a source's frames, frame ids, a query's full-text matches, a time
        range (these combine), or a person (alone: what they wrote goes, their name and address
        elsewhere become a placeholder, their entity and its history go), with everything derived
        from them; tombstones keep a later harvest from bringing it back. A dry run unless yes:
        it says what would go (counts, the first frames, a person's mentions to replace); show it
        to the user and ask before calling again with yes. allow_return lifts an earlier forget's
        tombstones instead. The same as POST /admin/forget and `mind forget`."""
        from mind_core.analytics.snapshot import default_snapshot_root
        from mind_core.privacy.requests import run_forget
        from mind_core.store.write_lock import mind_write_lock

        values = {"source": source, "frames": frames, "query": query, "person": person, "since": since}
        values.update(until=until, yes=yes, allow_return=allow_return, by=by, workspace=workspace)
        body = parse_request(ForgetBody, values)
        request = body.request()
        request.selector()  # a request that says nothing is refused before the mind is opened
        name = body.workspace or self.default_workspace
        mind = self._writable(name)
        with mind_write_lock(self.home.mind_path(name)) if request.apply else contextlib.nullcontext():
            answer = run_forget(
                mind,
                request,
                body.actor("mcp"),
                workspace=name,
                snapshot_root=default_snapshot_root(self.home),
            )
        return ForgetResponse.model_validate({"workspace": name, **answer})
