"""``mind mcp``: the minds as MCP tools over stdio, with the original's tool names (reference §13).

Tools act on the server's current workspace mind unless a call names another
(``workspace="personal"`` is the personal mind). Reads of the server's workspace or the personal
mind before they exist answer empty, while a read naming any other workspace without a mind is an
error (as the command line's exit 2 and the HTTP service's 404, in the same words); writes create
the mind. Recalls read only, unless the server was started with ``--record-access``. Minds stay
open for the session and calls are serialized (the SDK runs sync tools in worker threads; one
SQLite connection per mind must not be shared concurrently).

``initialize`` does not wait for the embedding model: ``mind mcp`` builds the embedder when the
first tool call opens a mind (``OnFirstUse``), so a client sees the server (name, package
version, tools) as soon as the process is up. For the same reason this module imports only what
the tool signatures need (the request and answer models); the engine (minds, search, retrieval,
numpy, the HTTP client) is imported inside the tools, by the first call that uses it.

Differences from the original server, on purpose:
- ``save_memory`` runs cognify (frame, knowledge graph, entity links, vector), so saved memories
  are connected and findable at once; the original only wrote a frame.
- ``recall_memory`` is CombinedRetrieval (workspace + personal + external; scopes all, personal,
  workspace, and the original's ``current``, which every surface reads as workspace) with scores
  on the 0..1 match scale; it takes the same RecallRequest as ``mind serve`` and ``mind recall
  --json`` and answers the same RecallResponse (each result once, naming its workspace and
  source), and ``snippet_chars`` cuts each text to a snippet to save tokens.
- ``kg_entities``, ``kg_relations`` and ``kg_neighbours`` (not in the original) read the knowledge
  graph on both time axes (``valid_at``, ``known_at``) and answer what ``/kg/...`` and
  ``mind kg ... --json`` answer.
- ``list_sources`` (the original's ``harvest_sources``) lists the registered harvest sources; it
  starts no harvest, so its name says what it does.
- ``cleanup_frames`` offers only the modes ``reconcile`` and ``compact`` (which deletes old
  temporary and deprecated frames, so the tool is marked destructive).

Every tool declares what it does to a mind (MCP tool annotations: ``readOnlyHint``, and for a
write ``destructiveHint`` and ``idempotentHint``), every argument is described with its range,
and every answer is a model, so its output schema is exact. The SDK advertises the prompts and
resources capabilities although this server has neither (``MCPServer`` registers their list
handlers unconditionally); their lists are empty.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from mind_core import limits
from mind_core.errors import InvalidInputError, MindError
from mind_core.limits import DEFAULT_ENTITY_RESULTS, DEFAULT_GRAPH_RESULTS, DEFAULT_RESULTS
from mind_core.query.models.fields import (
    AS_OF_HELP,
    EXPLAIN_ASKED_HELP,
    PROFILE_HELP,
    SCOPE_HELP,
    SENDER_HELP,
    SINCE_HELP,
    SNIPPET_HELP,
    SOURCE_KIND_HELP,
    TAGS_HELP,
    UNTIL_HELP,
    Between,
    EntityLimit,
    Profile,
    QueryText,
    ResultLimit,
    Scope,
    SnippetChars,
    SourceFilterText,
    TimeBound,
    WorkspaceName,
    package_version,
)
from mind_core.query.models.graph import (
    EntitiesResponse,
    GraphEntitiesResponse,
    GraphRelationsResponse,
    NeighboursResponse,
)
from mind_core.query.models.recall import RecallResponse
from mind_core.query.models.requests import (
    INCLUDE_ENDED_HELP,
    KNOWN_AT_HELP,
    VALID_AT_HELP,
    EntitiesRequest,
    EntityTypeName,
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
from mind_core.query.models.validation import describe_errors
from mind_core.store.home import PERSONAL, MindHome, validate_workspace_name
from mind_core.store.identity import IDENTITY_FIELDS

if TYPE_CHECKING:
    from pathlib import Path

    from mind_core.embeddings.base import Embedder
    from mind_core.mind import Mind
    from mind_core.retrieval import ExternalRetriever

log = logging.getLogger(__name__)

SERVER_NAME = "mind-harvest"
Importance = Literal["critical", "important", "normal", "temporary", "deprecated"]
Category = Literal["task", "action", "pending", "flag"]
CleanupMode = Literal["reconcile", "compact"]

# -- the tools' arguments, each described in the input schema a client shows ---------------------
Workspace = Annotated[
    WorkspaceName | None,
    Field(description="Workspace mind ('personal' for the personal mind; default: the server's, mind mcp -w)."),
]
RecallScope = Annotated[Scope, Field(description=SCOPE_HELP)]
RecallProfile = Annotated[Profile, Field(description=PROFILE_HELP)]
Since = Annotated[TimeBound | None, Field(description=SINCE_HELP)]
Until = Annotated[TimeBound | None, Field(description=UNTIL_HELP)]
AsOf = Annotated[TimeBound | None, Field(description=AS_OF_HELP)]
Tags = Annotated[
    Annotated[list[SourceFilterText], Field(max_length=limits.MAX_FILTER_TAGS)] | None,
    Field(description=TAGS_HELP.split(" In a URL")[0]),
]
SnippetArg = Annotated[SnippetChars | None, Field(description=SNIPPET_HELP)]
ExplainArg = Annotated[bool, Field(description=EXPLAIN_ASKED_HELP)]
Sender = Annotated[SourceFilterText | None, Field(description=SENDER_HELP)]
SourceKindArg = Annotated[SourceFilterText | None, Field(description=SOURCE_KIND_HELP)]
MemoryText = Annotated[str, Field(description="The text to remember: a fact, a decision, a preference ...")]
ImportanceArg = Annotated[
    Importance,
    Field(
        description="How much it matters: critical and important rank higher in recall; temporary and "
        "deprecated frames are deleted by cleanup_frames compact once old enough."
    ),
]
EntityQuery = Annotated[str, Field(description="Part of the entity's name (case-insensitive).")]
ENTITY_TYPE_HELP = (
    "Only entities of this type: person, project, technology, organization, tool, concept, or another "
    "type the graph holds; a type it cannot hold is refused with the types there are."
)
EntityTypeArg = Annotated[EntityTypeName | None, Field(description=ENTITY_TYPE_HELP)]
RelationTypeArg = Annotated[
    EntityTypeName | None,
    Field(description="Only relations of this type (links_to, sent, replied_to, co_occurs_with ...); a type the "
    "graph does not hold is refused with the types it does."),
]
ValidAt = Annotated[TimeBound | None, Field(description=VALID_AT_HELP)]
KnownAt = Annotated[TimeBound | None, Field(description=KNOWN_AT_HELP)]
IncludeEnded = Annotated[bool, Field(description=INCLUDE_ENDED_HELP)]
EntityName = Annotated[str, Field(description="The entity's name (any case; an alias also finds it).")]
NewEntityType = Annotated[
    str,
    Field(
        min_length=1,
        max_length=limits.MAX_ENTITY_TYPE_CHARS,
        description="The entity's type: person, project, technology, organization, tool, concept, or one of your own.",
    ),
]
NewEntityName = Annotated[str, Field(min_length=1, description="The entity's name.")]
EntityProperties = Annotated[
    dict[str, Any] | None,
    Field(description="Properties of a new entity (e-mail, aliases ...); an existing one keeps its own."),
]
SourceEntityId = Annotated[int, Field(ge=1, description="The entity the relation goes from (an id from save_entity).")]
TargetEntityId = Annotated[int, Field(ge=1, description="The entity the relation goes to.")]
NewRelationType = Annotated[
    str,
    Field(
        min_length=1,
        max_length=limits.MAX_ENTITY_TYPE_CHARS,
        description="The relation's type, a snake_case verb: works_on, led_by, depends_on ...",
    ),
]
Confidence = Annotated[float, Between(0, 1), Field(description="How sure, from 0 to 1 (1: stated as fact).")]
RelationProperties = Annotated[dict[str, Any] | None, Field(description="Properties stored with the relation.")]
IdentityName = Annotated[str | None, Field(description="The agent's name (needed the first time).")]
IdentityRole = Annotated[str | None, Field(description="Its role, e.g. research assistant.")]
IdentityDepartment = Annotated[str | None, Field(description="Its department or team.")]
IdentityPersonality = Annotated[str | None, Field(description="How it speaks and behaves.")]
IdentityCapabilities = Annotated[str | None, Field(description="What it can do.")]
IdentitySystemPrompt = Annotated[str | None, Field(description="The system prompt it runs with.")]
CATEGORY_HELP = "task, action (something just done), pending (waiting on someone) or flag (a standing note)."
CategoryArg = Annotated[Category, Field(description=CATEGORY_HELP)]
CategoryFilter = Annotated[Category | None, Field(description="Only this category: " + CATEGORY_HELP)]
AwarenessText = Annotated[str, Field(description="The item's text.")]
Priority = Annotated[int, Field(description="Higher comes first; with 10 active, the lowest-priority oldest item goes.")]
ExpiresAt = Annotated[
    str | None,
    Field(
        max_length=limits.MAX_TIME_BOUND_CHARS,
        description="When the item stops being active: an ISO-8601 date/time with a zone "
        "(2025-06-30T18:00:00Z); default: active until cleared.",
    ),
]
CleanupModeArg = Annotated[
    CleanupMode,
    Field(
        description="reconcile: repair the full-text and vector indexes (no frame is deleted); compact: delete "
        "temporary and deprecated frames older than the ages below, fold long P-frame chains, then reconcile."
    ),
]
TempAgeDays = Annotated[int, Field(ge=0, description="compact: delete temporary frames older than this many days.")]
DeprecatedAgeDays = Annotated[
    int, Field(ge=0, description="compact: delete deprecated frames older than this many days.")
]


def writes(*, destructive: bool, idempotent: bool) -> ToolAnnotations:
    """The MCP spec's hints for a tool that writes a mind: destructive, it may remove or overwrite
    what is there; idempotent, a repeat with the same arguments changes nothing more."""
    return ToolAnnotations(
        read_only_hint=False, destructive_hint=destructive, idempotent_hint=idempotent, open_world_hint=False
    )


READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
TOOLS: dict[str, tuple[str, ToolAnnotations]] = {  # name: (title, what it does to the mind)
    "recall_memory": ("Recall memory", ToolAnnotations(read_only_hint=True, open_world_hint=True)),
    "save_memory": ("Save a memory", writes(destructive=False, idempotent=False)),
    "search_entities": ("Find entities by name", READS),
    "kg_entities": ("Knowledge-graph entities", READS),
    "kg_relations": ("Knowledge-graph relations", READS),
    "kg_neighbours": ("An entity's neighbours", READS),
    "save_entity": ("Save an entity", writes(destructive=False, idempotent=True)),
    "create_relation": ("Relate two entities", writes(destructive=False, idempotent=False)),  # counts sightings
    "get_identity": ("Get the agent's identity", READS),
    "set_identity": ("Set the agent's identity", writes(destructive=True, idempotent=True)),
    "get_awareness": ("Get awareness items", READS),
    "set_awareness": ("Add an awareness item", writes(destructive=True, idempotent=False)),  # may push one out
    "clear_awareness": ("Clear awareness items", writes(destructive=True, idempotent=True)),
    "list_sources": ("List harvest sources", READS),
    "cleanup_frames": ("Clean up frames", writes(destructive=True, idempotent=False)),
}
TOOL_NAMES = tuple(TOOLS)

_T = TypeVar("_T", bound=Callable[..., Any])
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
        getattr(embedder, "max_seq_length", None)  # loads an in-process model; HTTP ones need nothing

    def close(self) -> None:
        with self._lock:
            for mind in self._minds.values():
                mind.close()
            self._minds.clear()

    def _mind(self, workspace: str | None, *, create: bool) -> Mind | None:
        """The mind of ``workspace`` (default: the server's), opened for the session; a read
        (``create=False``) of one without a mind answers None for the server's workspace and the
        personal mind, and is an error for any other workspace."""
        name = workspace or self.default_workspace
        path = self.home.mind_path(name)
        key = str(path)
        mind = self._minds.get(key)
        if mind is None:
            if not create and not path.is_file():
                if name in (self.default_workspace, PERSONAL):
                    return None
                raise self.home.missing_mind(name)
            from mind_core.mind import Mind

            mind = self._minds[key] = Mind.open(path, embedder=_built(self.embedder))
        return mind

    def _mind_at(self, path: Path | None, workspace: str) -> Mind | None:
        return None if path is None else self._mind(workspace, create=False)

    def _writable(self, workspace: str | None) -> Mind:
        mind = self._mind(workspace, create=True)
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
        knowledge graph, and indexed for recall (cognify). Creates the mind if it does not exist."""
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
        mind = self._mind(workspace, create=False)
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
        mind = self._mind(request.workspace, create=False)
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
        mind = self._mind(request.workspace, create=False)
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
        mind = self._mind(request.workspace, create=False)
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
        mind = self._mind(workspace, create=False)
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
        mind = self._mind(workspace, create=False)
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
        mind = self._mind(workspace, create=False)
        return AwarenessCleared(removed=mind.awareness.clear(category) if mind else 0)

    # -- harvest and maintenance ----------------------------------------------------------
    def list_sources(self, workspace: Workspace = None) -> SourcesResponse:
        """List the mind's registered harvest sources with their last harvest (the same fields as
        GET /sources and `mind sources list --json`); starts no harvest."""
        from mind_core.harvest.stores import HarvestSourceStore

        mind = self._mind(workspace, create=False)
        if mind is None:
            return SourcesResponse(sources=[])
        name = workspace or self.default_workspace
        return SourcesResponse(sources=[Source.of(name, s) for s in HarvestSourceStore(mind.db).get_all()])

    def cleanup_frames(
        self,
        mode: CleanupModeArg,
        max_temp_age_days: TempAgeDays = 30,
        max_deprecated_age_days: DeprecatedAgeDays = 90,
        workspace: Workspace = None,
    ) -> CleanupAnswer:
        """Maintenance: 'reconcile' repairs the search indexes; 'compact' deletes old temporary and
        deprecated frames (for good), folds long P-frame chains, then reconciles."""
        mind = self._mind(workspace, create=False)
        if mind is None:
            return CleanupAnswer(mode=mode, skipped="no such mind")
        if mode == "compact":
            compacted = asdict(mind.frames.compact(max_temp_age_days, max_deprecated_age_days))
            return CleanupAnswer(mode=mode, **compacted, reconciled=asdict(mind.reconcile()))
        if mode == "reconcile":
            return CleanupAnswer(mode=mode, reconciled=asdict(mind.reconcile()))
        raise InvalidInputError(f"unknown mode {mode!r}; expected reconcile or compact")


def _serialized(tools: MindTools, method: _T) -> _T:
    """One call at a time; errors we raise on purpose reach the client with their message."""

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        with tools._lock:
            try:
                return method(*args, **kwargs)
            except MindError as exc:
                raise ToolError(str(exc)) from exc

    return call  # type: ignore[return-value]


def _readable(error: ToolError) -> str:
    """What a refused call tells the client: the arguments' faults in the words of the HTTP API
    (``describe_errors``), or the message of the error a tool raised on purpose, without the SDK's
    "Error executing tool ..." prefix and pydantic's multi-line dump."""
    cause = error.__cause__
    while cause is not None:
        if isinstance(cause, ValidationError):
            return describe_errors(cause.errors())
        if isinstance(cause, MindError):
            return str(cause)
        cause = cause.__cause__
    return str(error)


class MindServer(MCPServer):
    """The SDK's server, answering a refused tool call with one readable sentence (an error
    result, ``isError``): an unknown argument is refused like the HTTP API's unknown parameter
    instead of ignored, and a crash stays the SDK's generic message (details only in the log).
    An answer's text block (what a client without structured output reads, beside
    ``structuredContent``) is compact JSON: the SDK indents it, which made a recall's text a
    third longer, every space a token a model pays for."""

    def __init__(self, *args: Any, parameters: Mapping[str, frozenset[str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._parameters = parameters

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if name not in self._parameters:
            return _error_result(f"unknown tool {name!r}{_did_you_mean(name, self._parameters)}")
        known = self._parameters[name]
        unknown = sorted(arguments.keys() - known)
        if unknown:
            return _error_result("; ".join(f"unknown parameter {key!r}{_did_you_mean(key, known)}" for key in unknown))
        try:
            result = await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            return _error_result(_readable(exc))
        if isinstance(result, CallToolResult) and not result.is_error:
            result.content = [_compact(block) for block in result.content]
        return result


def _did_you_mean(word: str, choices: Collection[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest of ``choices``, as the command line suggests."""
    close = difflib.get_close_matches(word, sorted(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class WarmUpWhenInitialized:
    """Server middleware: once the client confirms the handshake (``notifications/initialized``),
    ``warm`` runs in a background thread. Started any earlier, it would hold the interpreter while
    the server still imports and answers initialize; started then, it overlaps the time a client
    spends before its first tool call (often the whole wait for a user's question)."""

    def __init__(self, warm: Callable[[], None]) -> None:
        self._warm = warm
        self._started = False

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await call_next(ctx)
        if ctx.method == "notifications/initialized" and not self._started:
            self._started = True
            threading.Thread(target=self._run, name="mind-mcp-warm-up", daemon=True).start()
        return result

    def _run(self) -> None:
        try:
            self._warm()
        except Exception:  # the first tool call that needs the part that failed reports it
            log.info("warming up for the first tool call failed", exc_info=True)


def _compact(block: Any) -> Any:
    """A text block holding JSON, without the indentation; any other block as it is."""
    if not isinstance(block, TextContent):
        return block
    try:
        data = json.loads(block.text)
    except ValueError:
        return block
    return TextContent(type="text", text=json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def _error_result(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def build_mcp_server(tools: MindTools) -> MindServer:
    """The MCP server exposing TOOL_NAMES; ``.run("stdio")`` serves it."""
    methods = {name: getattr(tools, name) for name in TOOL_NAMES}
    server = MindServer(
        SERVER_NAME,
        version=package_version(),
        instructions=(
            "Long-term memory. recall_memory before answering questions about past work; "
            "save_memory for facts worth keeping. Scores are 0..1."
        ),
        log_level="WARNING",
        middleware=[WarmUpWhenInitialized(tools.warm_up)],
        parameters={name: frozenset(inspect.signature(m).parameters) for name, m in methods.items()},
    )
    for name, method in methods.items():
        title, annotations = TOOLS[name]
        server.add_tool(
            _serialized(tools, method),
            name=name,
            title=title,
            description=inspect.cleandoc(method.__doc__ or ""),
            annotations=annotations,
        )
    return server
