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
- ``recall_memory`` is CombinedRetrieval (workspace + personal + external, scopes all, personal,
  workspace; ``current`` is accepted for workspace) with scores on the 0..1 match scale; it takes
  the same RecallRequest as ``mind serve`` and ``mind recall --json`` and answers the same
  RecallResponse (each result once, naming its workspace and source), and ``snippet_chars`` cuts
  each text to a snippet to save tokens.
- ``kg_entities``, ``kg_relations`` and ``kg_neighbours`` (not in the original) read the knowledge
  graph on both time axes (``valid_at``, ``known_at``) and answer what ``/kg/...`` and
  ``mind kg ... --json`` answer.
- ``list_sources`` (the original's ``harvest_sources``) lists the registered harvest sources; it
  starts no harvest, so its name says what it does.
- ``cleanup_frames`` offers only the non-destructive modes ``reconcile`` and ``compact``.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from mind_core.errors import InvalidInputError, MindError
from mind_core.home import PERSONAL, MindHome, validate_workspace_name
from mind_core.identity import IDENTITY_FIELDS
from mind_core.limits import DEFAULT_ENTITY_RESULTS, DEFAULT_GRAPH_RESULTS, DEFAULT_RESULTS
from mind_core.query.models import (
    EntitiesRequest,
    EntityLimit,
    GraphEntitiesRequest,
    GraphEntitiesResponse,
    GraphLimit,
    GraphRelationsRequest,
    GraphRelationsResponse,
    NeighboursRequest,
    NeighboursResponse,
    Profile,
    QueryText,
    RecallRequest,
    RecallResponse,
    ResultLimit,
    SnippetChars,
    TimeBound,
    WorkspaceName,
    describe_errors,
    package_version,
    parse_request,
)

if TYPE_CHECKING:
    from pathlib import Path

    from mind_core.embeddings.base import Embedder
    from mind_core.mind import Mind
    from mind_core.retrieval import ExternalRetriever

log = logging.getLogger(__name__)

SERVER_NAME = "mind-harvest"
Scope = Literal["all", "personal", "workspace", "current"]
Importance = Literal["critical", "important", "normal", "temporary", "deprecated"]
Category = Literal["task", "action", "pending", "flag"]
CleanupMode = Literal["reconcile", "compact"]

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
                from mind_core.retrieval import no_such_workspace

                raise no_such_workspace(self.home, name)
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
        scope: Scope = "all",
        profile: Profile = "balanced",
        workspace: WorkspaceName | None = None,
        since: TimeBound | None = None,
        until: TimeBound | None = None,
        snippet_chars: SnippetChars | None = None,
        as_of: TimeBound | None = None,
        tags: list[str] | None = None,
        sender: str | None = None,
        source_kind: str | None = None,
    ) -> RecallResponse:
        """Recall what the minds know about query: workspace and personal memory, plus external
        sources when local memory is thin. limit is the number of results in the whole answer;
        each result names its workspace (the mind; personal for the personal memory) and its
        source (the harvest source's name). score (0..1) orders the results; metadata.match_score
        above 0.5 means keyword and meaning agree; confident false means nothing matched well.
        Pass snippet_chars (e.g. 200) to get each text as a short snippet around the query's words;
        as_of to recall as of an instant (memories up to it); tags, sender (mail From or author) and
        source_kind (markdown, email, chatgpt ...) to keep only frames whose sources match."""
        from mind_core.retrieval import CombinedRetrieval, recall_mind_paths

        values = {"query": query, "limit": limit, "profile": profile, "workspace": workspace}
        values.update(scope="workspace" if scope == "current" else scope, since=since, until=until)
        values.update(as_of=as_of, tags=tags or [], sender=sender, source_kind=source_kind)
        request = parse_request(RecallRequest, {**values, "snippet_chars": snippet_chars})
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
        return RecallResponse.from_retrieval(retrieval.recall(request), request)

    def save_memory(
        self, content: str, importance: Importance = "normal", workspace: str | None = None
    ) -> dict[str, Any]:
        """Remember a piece of text: stored as a frame, its entities and relations extracted into the
        knowledge graph, and indexed for recall (cognify)."""
        if not isinstance(content, str) or not content.strip():
            raise InvalidInputError("content must be a non-empty string")
        mind = self._writable(workspace)
        outcome = mind.cognify.cognify(content, importance)
        return {
            "frame_id": outcome.frame_id,
            "entities_extracted": outcome.entities_extracted,
            "relations_created": outcome.relations_created,
            "workspace": workspace or self.default_workspace,
        }

    # -- knowledge graph ------------------------------------------------------------------
    def search_entities(
        self,
        query: str,
        limit: EntityLimit = DEFAULT_ENTITY_RESULTS,
        entity_type: str | None = None,
        workspace: WorkspaceName | None = None,
    ) -> dict[str, Any]:
        """Entities whose name contains ``query`` (case-insensitive), optionally of one type."""
        from mind_core.query.service import find_entities

        values = {"query": query, "limit": limit, "type": entity_type, "workspace": workspace}
        request = parse_request(EntitiesRequest, values)
        mind = self._mind(workspace, create=False)
        if mind is None:
            return {"entities": []}
        return find_entities(mind, request).model_dump()

    def kg_entities(
        self,
        entity_type: str | None = None,
        valid_at: TimeBound | None = None,
        known_at: TimeBound | None = None,
        limit: GraphLimit = DEFAULT_GRAPH_RESULTS,
        workspace: WorkspaceName | None = None,
        include_ended: bool = False,
    ) -> GraphEntitiesResponse:
        """Knowledge-graph entities (of one entity_type) on both time axes: valid_at keeps those that
        held at that ISO-8601 instant (valid time), known_at reads the graph as the mind believed it
        then (transaction time). Without valid_at only the current ones (not ended), unless
        include_ended. The same answer as GET /kg/entities and `mind kg entities --json`."""
        from mind_core.query.graph import graph_entities

        values = {"type": entity_type, "valid_at": valid_at, "known_at": known_at, "limit": limit, "include_ended": include_ended}
        request = parse_request(GraphEntitiesRequest, {**values, "workspace": workspace})
        mind = self._mind(request.workspace, create=False)
        return graph_entities(mind.knowledge if mind else None, request)

    def kg_relations(
        self,
        relation_type: str | None = None,
        valid_at: TimeBound | None = None,
        known_at: TimeBound | None = None,
        limit: GraphLimit = DEFAULT_GRAPH_RESULTS,
        workspace: WorkspaceName | None = None,
        include_ended: bool = False,
    ) -> GraphRelationsResponse:
        """Knowledge-graph relations (of one relation_type, e.g. links_to, sent, replied_to) with
        the names of the entities they join, on both time axes as kg_entities."""
        from mind_core.query.graph import graph_relations

        values = {"type": relation_type, "valid_at": valid_at, "known_at": known_at, "limit": limit, "include_ended": include_ended}
        request = parse_request(GraphRelationsRequest, {**values, "workspace": workspace})
        mind = self._mind(request.workspace, create=False)
        return graph_relations(mind.knowledge if mind else None, request)

    def kg_neighbours(
        self,
        name: str,
        valid_at: TimeBound | None = None,
        known_at: TimeBound | None = None,
        limit: GraphLimit = DEFAULT_GRAPH_RESULTS,
        workspace: WorkspaceName | None = None,
        include_ended: bool = False,
    ) -> NeighboursResponse:
        """The relations of the entity called name (any case), in and out, with the entity at each
        relation's other end, on both time axes as kg_entities; each row names the entity it belongs
        to (a person and a concept may share a name), typed relations before co-occurrences."""
        from mind_core.query.graph import neighbours

        values = {"name": name, "valid_at": valid_at, "known_at": known_at, "limit": limit, "include_ended": include_ended}
        request = parse_request(NeighboursRequest, {**values, "workspace": workspace})
        mind = self._mind(request.workspace, create=False)
        return neighbours(mind.knowledge if mind else None, request)

    def save_entity(
        self,
        entity_type: str,
        name: str,
        properties: dict[str, Any] | None = None,
        workspace: str | None = None,
    ) -> dict[str, Any]:
        """Create an entity, or return the active one with this type and name."""
        entity_id, created = self._writable(workspace).knowledge.upsert_entity(entity_type, name, properties)
        return {"id": entity_id, "created": created}

    def create_relation(
        self,
        source_id: int,
        target_id: int,
        relation_type: str,
        confidence: float = 1.0,
        properties: dict[str, Any] | None = None,
        workspace: str | None = None,
    ) -> dict[str, Any]:
        """Relate two entities by id; a repeat sighting of the same relation is counted, not duplicated."""
        relation_id, created = self._writable(workspace).knowledge.upsert_relation(
            source_id, target_id, relation_type, confidence, properties
        )
        return {"id": relation_id, "created": created}

    # -- identity and awareness -----------------------------------------------------------
    def get_identity(self, workspace: str | None = None) -> dict[str, Any]:
        """Who the agent is (name, role, department, personality, capabilities, system prompt)."""
        mind = self._mind(workspace, create=False)
        return {"identity": mind.identity.get() if mind else None}

    def set_identity(
        self,
        name: str | None = None,
        role: str | None = None,
        department: str | None = None,
        personality: str | None = None,
        capabilities: str | None = None,
        system_prompt: str | None = None,
        workspace: str | None = None,
    ) -> dict[str, Any]:
        """Create the identity (needs a name) or update the given fields."""
        given = dict(
            name=name,
            role=role,
            department=department,
            personality=personality,
            capabilities=capabilities,
            system_prompt=system_prompt,
        )
        fields = {k: v for k, v in given.items() if k in IDENTITY_FIELDS and v is not None}
        return {"identity": self._writable(workspace).identity.set(**fields)}

    def get_awareness(self, category: Category | None = None, workspace: str | None = None) -> dict[str, Any]:
        """Active short-term items (at most 10): tasks, recent actions, pending items, flags."""
        mind = self._mind(workspace, create=False)
        if mind is None:
            return {"items": []}
        items = mind.awareness.get_active() if category is None else mind.awareness.get_by_category(category)
        return {"items": items}

    def set_awareness(
        self,
        category: Category,
        content: str,
        priority: int = 0,
        expires_at: str | None = None,
        workspace: str | None = None,
    ) -> dict[str, Any]:
        """Add an awareness item; with 10 active, the lowest-priority oldest one makes room."""
        return {
            "item": self._writable(workspace).awareness.add(category, content, priority, None, expires_at)
        }

    def clear_awareness(
        self, category: Category | None = None, workspace: str | None = None
    ) -> dict[str, Any]:
        """Remove awareness items (all, or one category)."""
        mind = self._mind(workspace, create=False)
        return {"removed": mind.awareness.clear(category) if mind else 0}

    # -- harvest and maintenance ----------------------------------------------------------
    def list_sources(self, workspace: str | None = None) -> dict[str, Any]:
        """List the mind's registered harvest sources (name, kind, path, last sync and counts);
        starts no harvest."""
        from mind_core.harvest.stores import HarvestSourceStore

        mind = self._mind(workspace, create=False)
        return {"sources": [s.__dict__ for s in HarvestSourceStore(mind.db).get_all()] if mind else []}

    def cleanup_frames(
        self,
        mode: CleanupMode,
        max_temp_age_days: int = 30,
        max_deprecated_age_days: int = 90,
        workspace: str | None = None,
    ) -> dict[str, Any]:
        """Maintenance: 'reconcile' repairs the search indexes; 'compact' prunes old temporary and
        deprecated frames, folds long P-frame chains, then reconciles."""
        mind = self._mind(workspace, create=False)
        if mind is None:
            return {"mode": mode, "skipped": "no such mind"}
        if mode == "compact":
            result: dict[str, Any] = asdict(mind.frames.compact(max_temp_age_days, max_deprecated_age_days))
            result["reconciled"] = asdict(mind.reconcile())
        elif mode == "reconcile":
            result = {"reconciled": asdict(mind.reconcile())}
        else:
            raise InvalidInputError(f"unknown mode {mode!r}; expected reconcile or compact")
        return {"mode": mode, **result}


TOOL_NAMES = (
    "recall_memory",
    "save_memory",
    "search_entities",
    "kg_entities",
    "kg_relations",
    "kg_neighbours",
    "save_entity",
    "create_relation",
    "get_identity",
    "set_identity",
    "get_awareness",
    "set_awareness",
    "clear_awareness",
    "list_sources",
    "cleanup_frames",
)


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
        unknown = sorted(arguments.keys() - self._parameters.get(name, arguments.keys()))
        if unknown:
            return _error_result("; ".join(f"unknown parameter {key!r}" for key in unknown))
        try:
            result = await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            return _error_result(_readable(exc))
        if isinstance(result, CallToolResult) and not result.is_error:
            result.content = [_compact(block) for block in result.content]
        return result


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
        server.add_tool(
            _serialized(tools, method), name=name, description=inspect.cleandoc(method.__doc__ or "")
        )
    return server
