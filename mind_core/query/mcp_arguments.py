"""The MCP tools' arguments, each described in the input schema a client shows, and what each
tool does to a mind (MCP tool annotations)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.types import ToolAnnotations
from pydantic import Field

from mind_core import limits
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
    Profile,
    Scope,
    SnippetChars,
    SourceFilterText,
    TimeBound,
    WorkspaceName,
)
from mind_core.query.models.ingest import IngestItems
from mind_core.query.models.requests import (
    INCLUDE_ENDED_HELP,
    KNOWN_AT_HELP,
    VALID_AT_HELP,
    EntityTypeName,
)

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
IngestItemsArg = IngestItems
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
    "ingest_items": ("Add memories (Universal JSON items)", writes(destructive=False, idempotent=True)),
}
TOOL_NAMES = tuple(TOOLS)
