"""What the query surfaces accept: one set of pydantic request models for HTTP, MCP and
``mind recall --json``, so the three validate alike (the limits in ``mind_core.limits``).

Requests are strict (a JSON ``"5"`` is not a limit, ``true`` is not 1); the query-string form of
a request (``RecallQuery`` ...) is the same model in lax mode, because a URL carries only text.
Every text input is made well-formed first: JSON may carry lone surrogates that UTF-8 cannot.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from mind_core import limits
from mind_core.errors import InvalidInputError
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
    TIME_FORMAT_HELP,
    UNTIL_HELP,
    WORKSPACE_HELP,
    Between,
    EntityLimit,
    Profile,
    QueryText,
    ResultLimit,
    Scope,
    SnippetChars,
    SourceFilterText,
    SourceKind,
    TimeBound,
    WorkspaceName,
    not_blank,
    ordered_range,
    well_formed_input,
)
from mind_core.query.models.validation import describe_errors
from mind_core.recall import RecallParameters
from mind_core.search.filters import SourceFilter


class QueryRequest(BaseModel):
    """Every request model: unknown fields refused, JSON types not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True)


class RecallRequest(QueryRequest):
    """Combined recall: workspace + personal memory (+ external sources when local coverage is weak)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"query": "Falcon budget decision", "limit": 5, "since": "2024-03", "snippet_chars": 200},
                {"query": "PostgreSQL migration", "scope": "workspace", "tags": ["meeting"], "source_kind": "markdown"},
            ]
        }
    )

    query: QueryText
    workspace: WorkspaceName | None = Field(None, description=WORKSPACE_HELP)
    scope: Scope = Field("all", description=SCOPE_HELP)
    limit: ResultLimit = limits.DEFAULT_RESULTS
    profile: Profile = Field("balanced", description=PROFILE_HELP)
    since: TimeBound | None = Field(None, description=SINCE_HELP)
    until: TimeBound | None = Field(None, description=UNTIL_HELP)
    explain: bool = Field(False, description=EXPLAIN_ASKED_HELP)
    snippet_chars: SnippetChars | None = Field(None, description=SNIPPET_HELP)
    tags: list[SourceFilterText] = Field([], max_length=limits.MAX_FILTER_TAGS, description=TAGS_HELP)
    sender: SourceFilterText | None = Field(None, description=SENDER_HELP)
    source_kind: SourceKind | None = Field(None, description=SOURCE_KIND_HELP)
    as_of: TimeBound | None = Field(None, description=AS_OF_HELP)

    @model_validator(mode="after")
    def _range_in_order(self) -> RecallRequest:
        ordered_range(self.since, self.until)
        return self

    @field_validator("scope")
    @classmethod
    def _current_is_workspace(cls, scope: str) -> str:
        """The one name the engine knows: ``current`` is read as ``workspace``."""
        return "workspace" if scope == "current" else scope

    def parameters(self) -> RecallParameters:
        """The engine's request (``CombinedRetrieval.recall``) for this one."""
        return RecallParameters(
            query=self.query,
            limit=self.limit,
            profile=self.profile,
            scope=self.scope,
            since=self.since,
            until=self.until,
            explain=self.explain,
            source=SourceFilter(tuple(self.tags), self.sender, self.source_kind),
            as_of=self.as_of,
        )


class SearchRequest(QueryRequest):
    """Hybrid search in one mind: the keyword (FTS5) and vector lanes fused (convex fusion by
    default; ``explain`` names the fusion), ordered by score."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"query": "PostgreSQL migration plan", "limit": 5, "explain": True}]}
    )

    query: QueryText
    workspace: WorkspaceName | None = Field(None, description=WORKSPACE_HELP)
    limit: ResultLimit = limits.DEFAULT_RESULTS
    profile: Profile = Field("balanced", description=PROFILE_HELP)
    since: TimeBound | None = Field(None, description=SINCE_HELP)
    until: TimeBound | None = Field(None, description=UNTIL_HELP)
    explain: bool = Field(False, description=EXPLAIN_ASKED_HELP)
    snippet_chars: SnippetChars | None = Field(None, description=SNIPPET_HELP)
    session: Annotated[str, Field(max_length=limits.MAX_SESSION_ID_CHARS)] | None = Field(
        None, description="Only frames of this session (gop_id)."
    )

    @model_validator(mode="after")
    def _range_in_order(self) -> SearchRequest:
        ordered_range(self.since, self.until)
        return self


class EntitiesRequest(QueryRequest):
    query: Annotated[
        str,
        BeforeValidator(well_formed_input),
        Field(
            min_length=1, max_length=limits.MAX_ENTITY_QUERY_CHARS, description="Part of the entity name.", examples=["bob"]
        ),
        AfterValidator(not_blank),
    ]
    workspace: WorkspaceName | None = Field(None, description=WORKSPACE_HELP)
    type: Annotated[str, Field(max_length=limits.MAX_ENTITY_TYPE_CHARS)] | None = Field(
        None, description="Only entities of this type."
    )
    limit: EntityLimit = limits.DEFAULT_ENTITY_RESULTS


EntityTypeName = Annotated[
    str,
    BeforeValidator(well_formed_input),
    Field(min_length=1, max_length=limits.MAX_ENTITY_TYPE_CHARS),
    AfterValidator(not_blank),
]
GraphLimit = Annotated[int, Between(1, limits.MAX_GRAPH_RESULTS), Field(description="Rows to return.")]
VALID_AT_HELP = (
    "What held in the world at this instant (valid time); default: the current facts (see include_ended). "
    + TIME_FORMAT_HELP
)
KNOWN_AT_HELP = (
    "As the mind believed it at this instant (transaction time: what it had learnt by then); default: now. "
    + TIME_FORMAT_HELP
)
INCLUDE_ENDED_HELP = (
    "Without valid_at: also the facts that have ended (their history: a note deleted from its vault, "
    "a project marked done); default: only those not ended (by known_at, or now)."
)


class GraphRequest(QueryRequest):
    """A knowledge-graph query on both time axes: ``valid_at`` (when the fact held in the world)
    and ``known_at`` (what the mind believed then); either, both or neither."""

    workspace: WorkspaceName | None = Field(None, description=WORKSPACE_HELP)
    valid_at: TimeBound | None = Field(None, description=VALID_AT_HELP)
    known_at: TimeBound | None = Field(None, description=KNOWN_AT_HELP)
    include_ended: bool = Field(False, description=INCLUDE_ENDED_HELP)
    limit: GraphLimit = limits.DEFAULT_GRAPH_RESULTS


class GraphEntitiesRequest(GraphRequest):
    """Entities (of one type) as they held and as they were known."""

    type: EntityTypeName | None = Field(
        None,
        description="Only entities of this type (person, project ...); a type no entity can have is refused "
        "with the types there are.",
    )


class GraphRelationsRequest(GraphRequest):
    """Relations (of one type) with the entities they join."""

    type: EntityTypeName | None = Field(
        None,
        description="Only relations of this type (links_to, sent, replied_to ...); a type the graph does not "
        "hold is refused with the types it does.",
    )


class NeighboursRequest(GraphRequest):
    """An entity's relations, in and out, with the entities at their other end."""

    name: Annotated[
        str,
        BeforeValidator(well_formed_input),
        Field(
            min_length=1,
            max_length=limits.MAX_ENTITY_QUERY_CHARS,
            description="The entity's name (any case; an alias also finds it).",
            examples=["Bob Smith"],
        ),
        AfterValidator(not_blank),
    ]


class WorkspaceRequest(QueryRequest):
    workspace: WorkspaceName | None = Field(None, description=WORKSPACE_HELP)


class RecallQuery(RecallRequest):
    model_config = ConfigDict(strict=False)


class SearchQuery(SearchRequest):
    model_config = ConfigDict(strict=False)


class EntitiesQuery(EntitiesRequest):
    model_config = ConfigDict(strict=False)


class WorkspaceQuery(WorkspaceRequest):
    model_config = ConfigDict(strict=False)


class GraphEntitiesQuery(GraphEntitiesRequest):
    model_config = ConfigDict(strict=False)


class GraphRelationsQuery(GraphRelationsRequest):
    model_config = ConfigDict(strict=False)


class NeighboursQuery(NeighboursRequest):
    model_config = ConfigDict(strict=False)


RequestT = TypeVar("RequestT", bound=QueryRequest)


def parse_request(model: type[RequestT], values: Mapping[str, Any]) -> RequestT:
    """``model`` from plain values (CLI arguments, MCP tool arguments, Python calls); a value
    outside the contract is an InvalidInputError with one readable line."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        raise InvalidInputError(describe_errors(exc.errors())) from None
