"""What the query surfaces accept and answer: one set of pydantic models for HTTP, MCP and
``mind recall --json``, so the three validate alike (the limits in ``mind_core.limits``) and
return the same JSON shape. The HTTP service's OpenAPI document is generated from these.

Requests are strict (a JSON ``"5"`` is not a limit, ``true`` is not 1); the query-string form of
a request (``RecallQuery`` ...) is the same model in lax mode, because a URL carries only text.
Every text input is made well-formed first: JSON may carry lone surrogates that UTF-8 cannot.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    GetCoreSchemaHandler,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError, core_schema

from mind_core import limits
from mind_core.errors import InvalidInputError
from mind_core.search.scoring import SCORING_PROFILES
from mind_core.search.snippets import make_snippet, own_text
from mind_core.store.db import well_formed
from mind_core.store.frames import time_bound
from mind_core.store.home import PERSONAL, validate_workspace_name

if TYPE_CHECKING:
    from mind_core.retrieval import CombinedRetrievalResult

PACKAGE = "mind-harvest"
SCOPES = ("all", "personal", "workspace", "current")
SCOPE_HELP = (
    "Which memory to recall from: all (the workspace and the personal mind, and external sources "
    "when local memory is thin), workspace (the workspace mind only), personal (the personal mind "
    "only); current is workspace by the original MCP server's name for it."
)
WORKSPACE_HELP = "Workspace mind ('personal' for the personal mind; default: the server's)."


@cache
def package_version() -> str:
    """The installed distribution's version: what the service, OpenAPI and MCP report (read once:
    reading the distribution's metadata costs more than a /health answer)."""
    try:
        return version(PACKAGE)
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


# -- field types --------------------------------------------------------------------------------
def _well_formed(value: Any) -> Any:
    return well_formed(value) if isinstance(value, str) else value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def _workspace(value: str) -> str:
    return value if value == PERSONAL else validate_workspace_name(value)


def _instant(value: str) -> str:
    try:
        time_bound(value, end=False)
    except InvalidInputError:
        raise ValueError(
            "must be an ISO-8601 date or date/time, e.g. 2024, 2024-05, 2024-05-01 or 2024-05-01T09:30:00Z"
        ) from None
    return value


def _ordered(since: str | None, until: str | None) -> None:
    """An inverted range (``since`` after ``until``) is a usage error, not an empty answer that
    looks like "nothing found"."""
    if since is not None and until is not None and time_bound(since, end=False) > time_bound(until, end=True):
        raise PydanticCustomError(
            "inverted_range", "since {since} is after until {until}", {"since": since, "until": until}
        )


@dataclass(frozen=True)
class Between:
    """``Annotated`` metadata of an integer (or a float) from ``low`` to ``high`` (both in the JSON schema).
    Out of range, the one error names both bounds ("must be between 1 and 100"), where pydantic's
    own ``ge``/``le`` errors name only the bound that was crossed."""

    low: int
    high: int

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        def in_range(value: Any, validate: Callable[[Any], Any]) -> Any:
            try:
                return validate(value)
            except ValidationError as exc:
                if any(e["type"] not in ("greater_than_equal", "less_than_equal") for e in exc.errors()):
                    raise
                raise PydanticCustomError(
                    "out_of_range", "must be between {low} and {high}", {"low": self.low, "high": self.high}
                ) from None

        bounded = (
            core_schema.float_schema(ge=self.low, le=self.high)
            if source is float
            else core_schema.int_schema(ge=self.low, le=self.high)
        )
        return core_schema.no_info_wrap_validator_function(in_range, bounded)


Scope = Literal[SCOPES]  # type: ignore[valid-type]
Profile = Literal[tuple(SCORING_PROFILES)]  # type: ignore[valid-type]
QueryText = Annotated[
    str,
    BeforeValidator(_well_formed),
    Field(
        min_length=1,
        max_length=limits.MAX_QUERY_CHARS,
        description="What to recall (free text).",
        examples=["Falcon budget decision"],
    ),
    AfterValidator(_not_blank),
]
WorkspaceName = Annotated[
    str,
    BeforeValidator(_well_formed),
    Field(max_length=limits.MAX_WORKSPACE_NAME_CHARS),
    AfterValidator(_workspace),
]
# A time's format, said in each field's own description: a nullable field's schema is an anyOf,
# and Swagger UI and MCP clients show the field's description, not one inside the anyOf.
TIME_FORMAT_HELP = (
    "ISO-8601 date or date/time (2024-05-01, 2024-05-01T09:30:00Z); a year (2024) or year-month "
    "(2024-05) is its whole span: its first instant as a start, its last as an end."
)
TimeBound = Annotated[
    str,
    BeforeValidator(_well_formed),
    Field(max_length=limits.MAX_TIME_BOUND_CHARS),
    AfterValidator(_instant),
]
SourceFilterText = Annotated[
    str,
    BeforeValidator(_well_formed),
    Field(min_length=1, max_length=limits.MAX_FILTER_CHARS),
    AfterValidator(_not_blank),
]
def known_source_kind(value: str) -> str:
    """A kind that names no installed plugin and no item kind would match nothing: refused with
    the kinds there are, not answered with an empty recall (the plugins are loaded on first use)."""
    from mind_core.harvest.items import ITEM_KINDS
    from mind_core.plugins import source_kinds

    known = sorted({*source_kinds(), *ITEM_KINDS})
    if value.strip() not in known:
        raise ValueError(f"must be an installed plugin's kind or an item kind: {', '.join(known)}")
    return value


SourceKind = Annotated[
    str,
    BeforeValidator(_well_formed),
    Field(min_length=1, max_length=limits.MAX_FILTER_CHARS),
    AfterValidator(known_source_kind),
]
ResultLimit = Annotated[
    int,
    Between(1, limits.MAX_RESULTS),
    Field(description="Results to answer, at most (a recall's whole answer, across the minds it reads)."),
]
EntityLimit = Annotated[int, Between(1, limits.MAX_ENTITY_RESULTS), Field(description="Entities to return.")]
SNIPPET_HELP = (
    "Return each result's text as a snippet of about this many characters around the "
    "query's words (saves tokens); default: the whole text."
)
SnippetChars = Annotated[
    int,
    Between(limits.MIN_SNIPPET_CHARS, limits.MAX_SNIPPET_CHARS),
    Field(description=SNIPPET_HELP),
]


SINCE_HELP = "Only frames written at or after this instant (event time). " + TIME_FORMAT_HELP
UNTIL_HELP = "Only frames written at or before this instant (event time). " + TIME_FORMAT_HELP
AS_OF_HELP = (
    "Recall as of this instant: only frames written up to it, recency counted from it (event time). "
    + TIME_FORMAT_HELP
)
PROFILE_HELP = (
    "Relevance profile, how a match is weighed: balanced (recency 0.4, popularity, connections and "
    "importance 0.2 each), recent (recency first), important (importance first), connected "
    "(frames linked to the query's entities first)."
)
EXPLAIN_ASKED_HELP = "Answer each result's lane ranks and score parts (explain)."
TAGS_HELP = (
    "Only frames carrying every one of these tags (a note's or section's tags; nested tags match: "
    "project matches project/falcon). In a URL, repeat the parameter: tags=a&tags=b."
)
SENDER_HELP = "Only frames whose mail From or author contains this text (case-insensitive)."
SOURCE_KIND_HELP = (
    "Only frames of this plugin (chatgpt, claude, gemini, markdown, email ...) or item kind (conversation, "
    "note, email, memory ...); another value is refused with the kinds there are."
)


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
        _ordered(self.since, self.until)
        return self

    @field_validator("scope")
    @classmethod
    def _current_is_workspace(cls, scope: str) -> str:
        """The one name the engine knows: ``current`` is read as ``workspace``."""
        return "workspace" if scope == "current" else scope


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
        _ordered(self.since, self.until)
        return self


class EntitiesRequest(QueryRequest):
    query: Annotated[
        str,
        BeforeValidator(_well_formed),
        Field(
            min_length=1, max_length=limits.MAX_ENTITY_QUERY_CHARS, description="Part of the entity name.", examples=["bob"]
        ),
        AfterValidator(_not_blank),
    ]
    workspace: WorkspaceName | None = Field(None, description=WORKSPACE_HELP)
    type: Annotated[str, Field(max_length=limits.MAX_ENTITY_TYPE_CHARS)] | None = Field(
        None, description="Only entities of this type."
    )
    limit: EntityLimit = limits.DEFAULT_ENTITY_RESULTS


EntityTypeName = Annotated[
    str,
    BeforeValidator(_well_formed),
    Field(min_length=1, max_length=limits.MAX_ENTITY_TYPE_CHARS),
    AfterValidator(_not_blank),
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
        BeforeValidator(_well_formed),
        Field(
            min_length=1,
            max_length=limits.MAX_ENTITY_QUERY_CHARS,
            description="The entity's name (any case; an alias also finds it).",
            examples=["Bob Smith"],
        ),
        AfterValidator(_not_blank),
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


# -- validation errors as one readable line -----------------------------------------------------
def _shown(value: Any) -> str:
    """A rejected value as a message quotes it: short, and as JSON would spell it."""
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:40] + "...")
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


# pydantic's error types for a value of the wrong type -> what the value must be
_EXPECTED_TYPES = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def _describe(error: Mapping[str, Any]) -> str:
    where = ".".join(str(part) for part in error["loc"])
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "inverted_range":
        return f"since {ctx['since']!r} is after until {ctx['until']!r}"
    if not where:
        if isinstance(value, bytes | bytearray):
            return "send the body as JSON (Content-Type: application/json)"
        if kind == "missing":
            return "a JSON object body is required"
        return "the body must be a JSON object"
    got = f" (got {_shown(value)})"
    if kind == "missing":
        return f"{where} is required"
    if kind == "extra_forbidden":
        return f"unknown parameter {where!r}"
    if kind == "out_of_range":
        return f"{where} must be between {ctx['low']} and {ctx['high']}{got}"
    if kind == "greater_than_equal":
        return f"{where} must be at least {ctx['ge']}{got}"
    if kind == "less_than_equal":
        return f"{where} must be at most {ctx['le']}{got}"
    if kind in ("string_too_long", "too_long") and isinstance(value, str):
        return f"{where} is longer than {ctx['max_length']} characters (got {len(value)})"
    if kind == "too_long":
        return f"{where} has more than {ctx['max_length']} items (got {len(value)})"
    if kind in ("string_too_short", "too_short"):
        return f"{where} must not be empty"
    if kind == "literal_error":
        return f"{where} must be one of {ctx['expected']}{got}"
    if kind in _EXPECTED_TYPES:
        return f"{where} must be {_EXPECTED_TYPES[kind]}{got}"
    if kind == "value_error":
        reason = str(ctx.get("error") or error["msg"])
        return f"{where} {reason}{got}" if reason.startswith("must") else reason
    return f"{where}: {error['msg']}"


def describe_errors(errors: Sequence[Mapping[str, Any]]) -> str:
    """Pydantic's error list as one line a person can act on, each error naming the parameter and
    its rule ("limit must be between 1 and 100 (got 0)"): the wording of HTTP 400 answers, MCP
    tool errors and the command line alike."""
    return "; ".join(dict.fromkeys(_describe(e) for e in errors))


RequestT = TypeVar("RequestT", bound=QueryRequest)


def parse_request(model: type[RequestT], values: Mapping[str, Any]) -> RequestT:
    """``model`` from plain values (CLI arguments, MCP tool arguments, Python calls); a value
    outside the contract is an InvalidInputError with one readable line."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        raise InvalidInputError(describe_errors(exc.errors())) from None


# -- answers ------------------------------------------------------------------------------------
class Provenance(BaseModel):
    """Where a frame came from; ``event_time`` is the message's own time (UTC)."""

    source: str | None = Field(
        None,
        description="The registered harvest source's name in its workspace (a recall result's source); "
        "for a frame not harvested, how it was learnt (user_stated ...).",
    )
    plugin: str | None = Field(None, description="The plugin that read it (chatgpt, markdown, email ...).")
    item_kind: str | None = Field(None, description="What the plugin read: conversation, note, message ...")
    container: str | None = Field(None, description="The conversation, note or mail thread it belongs to.")
    title: str | None = Field(None, description="The container's title (chat title, note name, subject).")
    message_id: str | None = Field(
        None,
        description="The message's own id in its export, as the plugin read it: a mail's Message-ID, a "
        "ChatGPT message id; null when the export gives none (a note section).",
    )
    message_key: str | None = Field(
        None,
        description="The harvest ledger's key of the message (what makes a re-harvest a no-op): the "
        "export's id where it has one, else a hash the engine made; null for a frame not harvested.",
    )
    role: str | None = Field(None, description="user, assistant, author ... as the export says.")
    author: str | None = Field(None, description="Who wrote it, when the export says.")
    path: str | None = Field(None, description="The file it was read from.")
    session: str | None = Field(None, description="The harvest session (conversation) it belongs to.")
    event_time: str | None = Field(None, description="When the message was written (ISO-8601, UTC).")
    original_timestamp: str | None = Field(None, description="The time as the export spelled it.")
    dated_by_file: bool = Field(
        False, description="The event time is the file's modification time: the note has no date of its own."
    )
    dated_by: Literal["message", "file", "harvest"] = Field(
        "message",
        description="What gave event_time: the message's own time; the file's modification time (a note "
        "without a date of its own); or the harvest's time (an item its export gave no time, such as an AI "
        "Studio prompt). Only a message's own time earns recency or sets the 'now' of 'last week'.",
    )


SCORE_HELP = (
    "0..1, what the results are ordered by: a memory's match times its relevance (recency, importance, "
    "popularity), as a share of the most its profile gives; an external result's own score. The parts "
    "(rrf_score, relevance_score, final_score, the relevance components) are in explain."
)
MATCH_SCORE_HELP = (
    "0..1, how well the frame matches the query, relevance left out: 1.0 is the best match of both the "
    "keyword and the vector lane; one lane alone gives at most 0.5 (what the coverage and conflict "
    "thresholds compare)."
)
def _absent(value: Any) -> bool:
    """An explanation nobody asked for is left out of the answer, not sent as null."""
    return value is None


EXPLAIN_HELP = (
    "With explain=true: the lane ranks (0-based; null: not found by that lane), the fusion, rrf_score "
    "(the fused lane score), relevance (its components and the profile's weights), relevance_score, "
    "max_relevance, final_score (rrf_score x relevance_score), the similarity and the keyword share."
)


class MemoryMetadata(BaseModel):
    frame_id: int = Field(description="The frame's id in its mind (GET /frames/{frame_id}).")
    frame_type: str = Field(description="I (a message), P (an update of base_frame_id) or B (a cross-reference).")
    importance: str = Field(description="critical, important, normal, temporary or deprecated.")
    created_at: str = Field(description="When the message was written (event time, ISO-8601).")
    access_count: int = Field(
        description="How often a recall that records access returned it (recalls read only by default)."
    )
    match_score: float = Field(description=MATCH_SCORE_HELP)
    confident: bool = Field(description="The frame is close in meaning or holds every keyword of the query.")
    provenance: Provenance = Field(description="Where the frame came from.")
    source_fields: dict[str, Any] = Field(
        default_factory=dict,
        description="What the source's plugin read about the frame: item, the conversation, note or mail "
        "thread (a note's frontmatter and tags; a thread's root; a chat's model), without the lists that "
        "gather what its other messages hold (a thread's message ids, participants and files; a note's "
        "links: see GET /frames/{frame_id}); message, the message itself (a mail's headers and "
        "Message-ID; a section's heading, links and tags; a chat turn's model). Empty for a memory saved "
        "directly.",
    )


class ExternalProvenance(BaseModel):
    source: str = Field(description="The external source's name.")
    document_id: str | None = Field(None, description="The document's id at the source.")
    title: str | None = Field(None, description="The document's title.")
    url: str | None = Field(None, description="Where the document can be read.")


class ExternalMetadata(BaseModel):
    retriever: str = Field(description="The external source that answered (its configured name).")
    document_id: str | None = Field(None, description="The document's id at the source.")
    document_type: str | None = Field(None, description="What the document is, as the source says (pdf, page ...).")
    title: str | None = Field(None, description="The document's title.")
    url: str | None = Field(None, description="Where the document can be read.")
    provenance: ExternalProvenance = Field(description="Where the result came from.")


def _metadata_kind(value: Any) -> str:
    """Which metadata a result carries, so pydantic validates one shape instead of trying both."""
    if isinstance(value, Mapping):
        return "external" if "retriever" in value else "memory"
    return "external" if isinstance(value, ExternalMetadata) else "memory"


ResultMetadata = Annotated[
    Annotated[MemoryMetadata, Tag("memory")] | Annotated[ExternalMetadata, Tag("external")],
    Discriminator(_metadata_kind),
]


class RecallResult(BaseModel):
    content: str = Field(description="The frame's text (a snippet when snippet_chars was given).")
    workspace: str | None = Field(
        description="The mind it came from: the workspace's name, personal for the personal mind; "
        "null for an external source's result."
    )
    source: str = Field(
        description="The harvest source it was read from (its registered name, as `mind sources list` "
        "shows it; user_stated for a memory saved directly), or the external source's name."
    )
    attribution: str = Field(
        description="Where it came from, as a person reads it: workspace/source: title for a memory, "
        "[NAME: type: title] for an external result."
    )
    score: float = Field(description=SCORE_HELP)
    metadata: ResultMetadata = Field(
        description="A memory's frame (id, type, importance, event time, match_score, confident, provenance, "
        "source_fields); an external result's document (retriever, id, type, title, url)."
    )
    explain: dict[str, Any] | None = Field(None, description=EXPLAIN_HELP, exclude_if=_absent)


RECALL_EXAMPLE: dict[str, Any] = {
    "query": "Falcon budget decision",
    "results": [
        {
            "content": "Bob approved the Falcon budget on Monday: 40k for the PostgreSQL migration.",
            "workspace": "team",
            "source": "mail",
            "attribution": "team/mail: PostgreSQL migration plan for Falcon",
            "score": 0.82,
            "metadata": {
                "frame_id": 42,
                "frame_type": "I",
                "importance": "normal",
                "created_at": "2024-03-12T09:14:00.000Z",
                "access_count": 0,
                "match_score": 0.91,
                "confident": True,
                "provenance": {
                    "source": "mail",
                    "plugin": "email",
                    "item_kind": "email",
                    "container": "falcon-plan@example.com",
                    "title": "PostgreSQL migration plan for Falcon",
                    "message_id": "approval-7@example.com",
                    "message_key": "3f9c0d2e51a8b7c4",
                    "role": None,
                    "author": "Bob Smith <bob.smith@example.com>",
                    "path": "falcon.mbox",
                    "session": "harvest:mail:falcon-plan@example.com",
                    "event_time": "2024-03-12T09:14:00.000Z",
                    "original_timestamp": "Tue, 12 Mar 2024 10:14:00 +0100",
                    "dated_by_file": False,
                    "dated_by": "message",
                },
                "source_fields": {
                    "item": {"thread_root": "falcon-plan@example.com"},
                    "message": {
                        "message_id": "approval-7@example.com",
                        "subject": "Re: PostgreSQL migration plan for Falcon",
                        "from": "Bob Smith <bob.smith@example.com>",
                        "to": ["Alice Johnson <alice@example.com>"],
                    },
                },
            },
        }
    ],
    "external_available": False,
    "external_skipped": True,
    "external_error": None,
    "has_conflict": False,
    "conflict_note": None,
    "confident": True,
}
CONFIDENT_HELP = (
    "False when no memory in the answer matches the query well: the results are only the least poor "
    "candidates (no close meaning, no frame with every keyword)."
)


class RecallResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [RECALL_EXAMPLE]})

    query: str = Field(description="The query as it was read.")
    results: list[RecallResult] = Field(
        description="The answer, at most limit results across the minds read, each once: memories that "
        "match well (metadata.confident) by score, then external results by their score, then the "
        "other memories by score. A result's workspace says which mind it came from."
    )
    external_available: bool = Field(description="An external source is configured.")
    external_skipped: bool = Field(
        description="External sources were not asked: local memory covered the query (or the scope "
        "was not all)."
    )
    external_error: str | None = Field(description="What failed when an external source was asked.")
    has_conflict: bool = Field(
        description="Workspace memory and external results disagree in status words (approved vs rejected)."
    )
    conflict_note: str | None = Field(description="The disagreement, as a sentence.")
    confident: bool = Field(description=CONFIDENT_HELP)

    @classmethod
    def from_retrieval(cls, result: CombinedRetrievalResult, request: RecallRequest) -> RecallResponse:
        """The answer to ``request``; with ``snippet_chars``, each text cut to a snippet around
        the query's words (the window the command line's table shows)."""
        merged = result.merged()
        results = [RecallResult.model_validate(item.to_dict()) for item in merged]
        if request.snippet_chars is not None:
            for item, model in zip(merged, results, strict=True):
                text = own_text(item.content, item.metadata.get("provenance") or {})
                model.content = make_snippet(text, request.query, width=request.snippet_chars)
        return cls(
            query=result.query,
            results=results,
            external_available=result.external_available,
            external_skipped=result.external_skipped,
            external_error=result.external_error,
            has_conflict=result.has_conflict,
            conflict_note=result.conflict_note,
            confident=result.confident,
        )


class Frame(BaseModel):
    """A memory frame: one message or note section, as stored."""

    id: int = Field(description="The frame's id in its mind.")
    frame_type: str = Field(description="I (a message), P (an update of base_frame_id) or B (a cross-reference).")
    gop_id: str = Field(
        description="The session it belongs to: a conversation, note or mail thread (harvest:SOURCE:CONTAINER), "
        "or the session a memory was saved in."
    )
    t: int = Field(description="The frame's position in its group (0: the I-frame).")
    base_frame_id: int | None = Field(description="The frame a P- or B-frame refers to (null for an I-frame).")
    content: str = Field(description="The frame's text.")
    importance: str = Field(description="critical, important, normal, temporary or deprecated.")
    source: str = Field(
        description="How the frame was learnt (the original's column): import for a harvested frame, "
        "user_stated, tool_verified, agent_inferred or system; the harvest source's name is "
        "provenance.source."
    )
    access_count: int = Field(description="How often recall returned it.")
    created_at: str = Field(description="When the message was written (event time, ISO-8601).")
    last_accessed: str = Field(description="When recall last returned it (or when it was stored).")
    content_hash: str | None = Field(None, description="SHA-256 of the text: what re-harvests compare.")
    metadata: dict[str, Any] = Field(description="The plugin's provenance and source fields.")


FRAME_EXAMPLE: dict[str, Any] = {
    "id": 42,
    "frame_type": "I",
    "gop_id": "harvest:mail:falcon-plan@example.com",
    "t": 0,
    "base_frame_id": None,
    "content": "Bob approved the Falcon budget on Monday: 40k for the PostgreSQL migration.",
    "importance": "normal",
    "source": "import",
    "access_count": 0,
    "created_at": "2024-03-12T09:14:00.000Z",
    "last_accessed": "2024-03-12T18:00:02.800Z",
    "content_hash": "9b1f0c3e8d7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c",
    "metadata": {
        "provenance": {"source": "mail", "plugin": "email", "item_kind": "email", "message_key": "3f9c0d2e51a8b7c4"},
        "source": {
            "item": {
                "thread_root": "falcon-plan@example.com",
                "message_ids": ["falcon-plan@example.com", "approval-7@example.com"],
                "participants": ["Alice Johnson <alice@example.com>", "Bob Smith <bob.smith@example.com>"],
                "paths": ["falcon.mbox"],
            },
            "message": {"message_id": "approval-7@example.com", "from": "Bob Smith <bob.smith@example.com>"},
        },
    },
}


class SearchHit(BaseModel):
    frame: Frame = Field(description="The frame as stored.")
    score: float = Field(description=SCORE_HELP)
    match_score: float = Field(description=MATCH_SCORE_HELP)
    confident: bool = Field(description="The frame is close in meaning or holds every keyword of the query.")
    provenance: Provenance = Field(description="Where the frame came from.")
    explain: dict[str, Any] | None = Field(None, description=EXPLAIN_HELP, exclude_if=_absent)


class SearchResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "query": "PostgreSQL migration plan",
                    "workspace": "team",
                    "results": [
                        {
                            "frame": FRAME_EXAMPLE,
                            "score": 0.79,
                            "match_score": 0.88,
                            "confident": True,
                            "provenance": RECALL_EXAMPLE["results"][0]["metadata"]["provenance"],
                        }
                    ],
                    "confident": True,
                }
            ]
        }
    )

    query: str = Field(description="The query as it was read.")
    workspace: str = Field(description="The mind searched (every hit is one of its frames).")
    results: list[SearchHit] = Field(description="At most limit hits, by score.")
    confident: bool = Field(description=CONFIDENT_HELP)


class EntityRef(BaseModel):
    id: int = Field(description="The entity's id in the mind's knowledge graph.")
    type: str = Field(description="person, project, organization, topic ...")
    name: str = Field(description="The entity's name.")


class FrameResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "frame": FRAME_EXAMPLE,
                    "provenance": RECALL_EXAMPLE["results"][0]["metadata"]["provenance"],
                    "entities": [{"id": 7, "type": "person", "name": "Bob Smith"}],
                }
            ]
        }
    )

    frame: Frame = Field(description="The frame as stored, with its whole metadata (a mail thread's lists too).")
    provenance: Provenance = Field(description="Where the frame came from.")
    entities: list[EntityRef] = Field(description="The entities the frame mentions.")


# a harvest source's stored counter -> its name in every answer: which counts the last harvest,
# which every harvest
SOURCE_COUNTERS = {
    "last_items": "last_harvest_items",
    "last_errors": "last_harvest_errors",
    "last_frames": "frames_held",
    "items_imported": "items_imported_total",
    "frames_created": "frames_created_total",
}


class Source(BaseModel):
    """A registered harvest source with its last harvest: one shape for ``mind sources list
    --json``, ``GET /sources`` and MCP ``list_sources``, its counters named for what they count."""

    workspace: str = Field(description="The workspace whose mind the source fills (personal: the personal mind).")
    id: int = Field(description="The source's id in its mind.")
    source: str = Field(description="The source's registered name (what recall results name as their source).")
    display_name: str = Field(description="The kind's name as a person reads it (ChatGPT export, Email ...).")
    source_path: str | None = Field(description="The export file or folder it is harvested from.")
    kind: str | None = Field(description="The plugin that reads it (chatgpt, claude, gemini, markdown, email ...).")
    last_synced_at: str | None = Field(
        description="When a harvest last read it successfully (ISO-8601, UTC); null: never."
    )
    items_imported_total: int = Field(description="Items (conversations, notes, threads) imported, over every harvest.")
    frames_created_total: int = Field(description="Frames created, over every harvest.")
    auto_sync: bool = Field(description="Harvested by `mind harvest --due` once sync_interval_hours elapsed.")
    sync_interval_hours: int = Field(description="Hours between auto-sync harvests.")
    last_content_hash: str | None = Field(
        description="SHA-256 of the item hashes the last harvest imported: the same set is an unchanged source."
    )
    last_fingerprint: str | None = Field(
        description="The plugin's fingerprint of the files (sizes, times) at the last harvest: while it is "
        "the same, a harvest skips the source without reading it."
    )
    created_at: str = Field(description="When the source was registered (ISO-8601, UTC).")
    identity: str | None = Field(
        None, description="What the source's ledger is tied to (its kind and path): re-pointing it starts over."
    )
    last_status: str | None = Field(
        None, description="The last harvest's outcome: ok, partial, failed, empty or missing; null: never harvested."
    )
    last_status_reason: str | None = Field(None, description="Why the last harvest was not ok, in one line.")
    last_harvest_at: str | None = Field(None, description="When the last harvest ran (ISO-8601, UTC).")
    last_harvest_items: int = Field(0, description="Items the last harvest that read the files imported.")
    frames_held: int = Field(0, description="Frames the source holds now.")
    last_harvest_errors: int = Field(0, description="Items the last harvest skipped with an error.")
    last_first_errors: list[str] = Field(
        [], description="The last harvest's first errors, each located (file, record, reason)."
    )

    @classmethod
    def of(cls, workspace: str, source: Any) -> Source:
        """A stored source (``HarvestSource``) of ``workspace``, its counters renamed."""
        fields = {SOURCE_COUNTERS.get(key, key): value for key, value in vars(source).items()}
        return cls.model_validate({"workspace": workspace, **fields})


SOURCE_EXAMPLE: dict[str, Any] = {
    "workspace": "team",
    "id": 1,
    "source": "mail",
    "display_name": "Email (mbox, .eml, maildir)",
    "source_path": "/home/ada/Mail/falcon",
    "kind": "email",
    "last_synced_at": "2024-03-12T18:00:05.120Z",
    "items_imported_total": 38,
    "frames_created_total": 200,
    "auto_sync": True,
    "sync_interval_hours": 24,
    "last_content_hash": "b6bc88f9ca21c6dfa43dd97c3dccd36ae74b08147685cb1b3c598a2362d8b30d",
    "last_fingerprint": "343f3b5ec8de048b02e95f9f31a7cdbfa896d0bf5e7de1209b6f07fc89782f17",
    "created_at": "2024-03-01T08:00:00.000Z",
    "identity": "7a06cec418601741",
    "last_status": "ok",
    "last_status_reason": None,
    "last_harvest_at": "2024-03-12T18:00:00.950Z",
    "last_harvest_items": 38,
    "frames_held": 200,
    "last_harvest_errors": 0,
    "last_first_errors": [],
}


class SourcesResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"sources": [SOURCE_EXAMPLE]}]})

    sources: list[Source] = Field(description="The mind's sources, the most recently harvested first.")


class Entity(BaseModel):
    """One version of a knowledge-graph entity, on both time axes."""

    id: int = Field(description="The entity's id in the mind's knowledge graph.")
    entity_type: str = Field(description="person, project, organization, topic ...")
    name: str = Field(description="The entity's name.")
    properties: dict[str, Any] = Field(description="What cognify learned about it (aliases, e-mail ...).")
    valid_from: str = Field(description="Since when it holds in the world (valid time, ISO-8601).")
    valid_to: str | None = Field(description="Until when it held; null: it still holds.")
    recorded_at: str = Field(description="When the mind learned this version (transaction time).")


ENTITY_EXAMPLE: dict[str, Any] = {
    "id": 7,
    "entity_type": "person",
    "name": "Bob Smith",
    "properties": {"email": "bob.smith@example.com", "aliases": ["Bob"]},
    "valid_from": "2024-03-11T08:02:00.000Z",
    "valid_to": None,
    "recorded_at": "2024-03-12T18:00:03.410Z",
}
RELATION_EXAMPLE: dict[str, Any] = {
    "id": 31,
    "relation_type": "replied_to",
    "source_id": 7,
    "source": "Bob Smith",
    "source_type": "person",
    "target_id": 12,
    "target": "PostgreSQL migration plan for Falcon",
    "target_type": "thread",
    "confidence": 1.0,
    "properties": {"count": 2},
    "valid_from": "2024-03-11T09:30:00.000Z",
    "valid_to": None,
    "recorded_at": "2024-03-12T18:00:03.410Z",
}


class EntitiesResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"entities": [ENTITY_EXAMPLE]}]})

    entities: list[Entity] = Field(description="At most limit entities whose name contains the query.")


class GraphAnswer(BaseModel):
    """The time axes a knowledge-graph answer was read on (None: not restricted / now)."""

    valid_at: str | None = Field(description="The valid-time instant asked for, as given; null: the current facts.")
    known_at: str | None = Field(
        description="The transaction-time instant asked for, as given; null: as the mind believes it now."
    )
    include_ended: bool = Field(False, description="Ended facts included (asked for, or by valid_at).")


class GraphEntitiesResponse(GraphAnswer):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "valid_at": "2024-03-12",
                    "known_at": None,
                    "include_ended": True,
                    "entities": [ENTITY_EXAMPLE],
                    "truncated": False,
                }
            ]
        }
    )

    entities: list[Entity] = Field(description="By name; each version as believed at known_at.")
    truncated: bool = Field(False, description="More entities match than limit: these are the first.")


class GraphRelation(BaseModel):
    id: int = Field(description="The relation's id in the mind's knowledge graph.")
    relation_type: str = Field(description="What joins the two: replied_to, sent, links_to, co_occurs_with ...")
    source_id: int = Field(description="The entity the relation goes from.")
    source: str | None = Field(description="The source entity's name as known at known_at.")
    source_type: str | None = Field(description="The source entity's type.")
    target_id: int = Field(description="The entity the relation goes to.")
    target: str | None = Field(description="The target entity's name as known at known_at.")
    target_type: str | None = Field(description="The target entity's type.")
    confidence: float = Field(description="0..1, how sure the extraction was (1: stated).")
    properties: dict[str, Any] = Field(description="What was learnt with it (count: how often it was seen ...).")
    valid_from: str = Field(description="Since when it holds in the world (valid time, ISO-8601).")
    valid_to: str | None = Field(description="Until when it held; null: it still holds.")
    recorded_at: str = Field(description="When the mind learned this version (transaction time).")


class GraphRelationsResponse(GraphAnswer):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "valid_at": None,
                    "known_at": None,
                    "include_ended": False,
                    "relations": [RELATION_EXAMPLE],
                    "truncated": False,
                }
            ]
        }
    )

    relations: list[GraphRelation] = Field(description="Typed relations before co-occurrences, each by id.")
    truncated: bool = Field(False, description="More relations match than limit: these are the first.")


class Neighbour(BaseModel):
    """One relation of an entity named so; ordered per entity (by id), typed relations before
    co-occurrences, then by confidence and sightings."""

    entity_id: int = Field(description="The entity asked about (one of the entities named so).")
    entity_type: str = Field(description="That entity's type: two entities may share a name.")
    entity: str = Field(description="That entity's name.")
    direction: Literal["out", "in"] = Field(description="out: the entity is the relation's source.")
    neighbour_id: int = Field(description="The entity at the relation's other end.")
    neighbour: str | None = Field(description="Its name as known at known_at.")
    neighbour_type: str | None = Field(description="Its type.")
    relation: GraphRelation = Field(description="The relation itself.")


class NeighboursResponse(GraphAnswer):
    name: str = Field(description="The name asked about, as given.")
    entities: list[Entity] = Field(description="The entities with this name (any type).")
    neighbours: list[Neighbour] = Field(description="At most limit relations of those entities, the strongest first.")


class EmbeddingSpace(BaseModel):
    """The embedder a mind's vectors were made with (keys added by newer versions pass through)."""

    model_config = ConfigDict(extra="allow")

    embedding_provider: str = Field(description="inprocess, ollama, voyage, openai, litellm or mock.")
    embedding_model: str = Field(description="The model's name.")
    embedding_dim: int = Field(description="The vectors' width.")


class MindStats(BaseModel):
    workspace: str = Field(description="The workspace (personal: the personal mind).")
    frames: int = Field(description="Memory frames.")
    by_type: dict[str, int] = Field(description="Frames per frame type (I, P, B).")
    sessions: int = Field(description="Harvested conversations and threads.")
    entities: int = Field(description="Knowledge-graph entities.")
    relations: int = Field(description="Active (current) relations.")
    vectors: int = Field(description="Frames with a vector.")
    sources: int = Field(description="Registered harvest sources.")
    embedding: EmbeddingSpace | None = Field(description="The embedder the vectors were made with.")


class UnreadableMind(BaseModel):
    """A file in the mind home that cannot be read as a mind (corrupt, foreign, or made with
    another embedder): listed with its error, so the other minds still answer."""

    workspace: str = Field(description="The workspace whose mind it is.")
    error: str = Field(description="Why it cannot be read, and what fixes it.")


class StatsResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "minds": [
                        {
                            "workspace": "team",
                            "frames": 200,
                            "by_type": {"I": 200, "P": 0, "B": 0},
                            "sessions": 38,
                            "entities": 57,
                            "relations": 342,
                            "vectors": 200,
                            "sources": 1,
                            "embedding": {
                                "embedding_provider": "inprocess",
                                "embedding_model": "all-MiniLM-L6-v2",
                                "embedding_dim": 384,
                            },
                        },
                        {"workspace": "old", "error": "not a mind (no memory_frames table)"},
                    ]
                }
            ]
        }
    )

    minds: list[MindStats | UnreadableMind] = Field(
        description="One entry per mind asked for: its counts, or its error when it cannot be read."
    )


WITHHELD = " Null when the server has a token and the request does not carry it."


class HealthResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "status": "ok",
                    "version": "0.1.0",
                    "personal": True,
                    "workspaces": ["team"],
                    "default_workspace": "team",
                    "external_sources": [],
                    "auth": False,
                }
            ]
        }
    )

    status: Literal["ok"] = Field(description="Always ok: the service answers.")
    version: str = Field(description="The mind-harvest package version the server runs.")
    personal: bool | None = Field(None, description="Whether the personal mind exists." + WITHHELD)
    workspaces: list[str] | None = Field(
        None, description="The workspaces that have a mind in the server's mind home." + WITHHELD
    )
    default_workspace: str | None = Field(
        None, description="The workspace a request without workspace reads (mind serve -w)." + WITHHELD
    )
    external_sources: list[str] | None = Field(
        None, description="The external sources a recall may ask (their names)." + WITHHELD
    )
    auth: bool = Field(description="Whether a bearer token is required.")


class ErrorResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"error": "limit must be between 1 and 100 (got 0)"}]})

    error: str = Field(description="What was wrong, in one line naming the parameter and its rule.")
    error_id: str | None = Field(None, description="Names the server log entry of an unexpected error.")


# -- MCP tool answers (the tools that answer no HTTP model): their output schemas -----------------
class SavedMemory(BaseModel):
    frame_id: int = Field(description="The new frame's id in its mind.")
    entities_extracted: int = Field(description="Entities cognify found in the text.")
    relations_created: int = Field(description="Relations cognify added to the knowledge graph.")
    workspace: str = Field(description="The mind it was saved in (personal: the personal mind).")


class Upserted(BaseModel):
    id: int = Field(description="The entity's or relation's id in the mind's knowledge graph.")
    created: bool = Field(description="False: it existed already (a relation's sighting was counted).")


class Identity(BaseModel):
    """Who the agent is, as ``set_identity`` stored it."""

    name: str = Field(description="The agent's name.")
    role: str = Field(description="Its role ('' when not set).")
    department: str = Field(description="Its department or team ('' when not set).")
    personality: str = Field(description="How it speaks and behaves ('' when not set).")
    capabilities: str = Field(description="What it can do ('' when not set).")
    system_prompt: str = Field(description="The system prompt it runs with ('' when not set).")
    created_at: str = Field(description="When the identity was first set (ISO-8601, UTC).")
    updated_at: str = Field(description="When it last changed (ISO-8601, UTC).")


class IdentityAnswer(BaseModel):
    identity: Identity | None = Field(description="The identity; null until set_identity gave it a name.")


class AwarenessItem(BaseModel):
    id: int = Field(description="The item's id.")
    category: Literal["task", "action", "pending", "flag"] = Field(description="What kind of item it is.")
    content: str = Field(description="The item's text.")
    priority: int = Field(description="Higher comes first; the lowest-priority oldest item makes room.")
    metadata: dict[str, Any] = Field(description="Extra fields stored with it.")
    created_at: str = Field(description="When it was added (ISO-8601, UTC).")
    expires_at: str | None = Field(description="When it stops being active; null: it stays until cleared.")


class AwarenessItems(BaseModel):
    items: list[AwarenessItem] = Field(description="The active items (at most 10), by priority, newest first.")


class AwarenessAdded(BaseModel):
    item: AwarenessItem = Field(description="The item as stored.")


class AwarenessCleared(BaseModel):
    removed: int = Field(description="Items removed.")


class ReconcileCounts(BaseModel):
    fts_fixed: int = Field(description="Full-text index rows written or repaired.")
    vectors_fixed: int = Field(description="Frames (re)embedded into the vector index.")
    orphans_removed: int = Field(description="Index rows of frames that no longer exist, removed.")


class CleanupAnswer(BaseModel):
    mode: Literal["reconcile", "compact"] = Field(description="The mode that ran.")
    temporary_pruned: int | None = Field(None, description="compact: temporary frames deleted.")
    deprecated_pruned: int | None = Field(None, description="compact: deprecated frames deleted.")
    p_frames_merged: int | None = Field(None, description="compact: P-frame chains folded into their I-frame.")
    reconciled: ReconcileCounts | None = Field(None, description="What the index repair did.")
    skipped: str | None = Field(None, description="Why nothing ran (the mind does not exist yet).")
