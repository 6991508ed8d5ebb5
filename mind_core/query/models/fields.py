"""The field types of the query surfaces' requests: texts made well-formed, bounded numbers
whose one error names both bounds, time bounds, workspace names and source filters, each with
the description the OpenAPI document and the MCP tool schemas show."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    GetCoreSchemaHandler,
    ValidationError,
)
from pydantic_core import PydanticCustomError, core_schema

from mind_core import limits
from mind_core.errors import InvalidInputError
from mind_core.recall import SCOPES
from mind_core.search.scoring import SCORING_PROFILES
from mind_core.store.db import well_formed
from mind_core.store.frames import time_bound
from mind_core.store.home import PERSONAL, validate_workspace_name

PACKAGE = "mind-harvest"
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
def well_formed_input(value: Any) -> Any:
    return well_formed(value) if isinstance(value, str) else value


def not_blank(value: str) -> str:
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


def ordered_range(since: str | None, until: str | None) -> None:
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
    BeforeValidator(well_formed_input),
    Field(
        min_length=1,
        max_length=limits.MAX_QUERY_CHARS,
        description="What to recall (free text).",
        examples=["Falcon budget decision"],
    ),
    AfterValidator(not_blank),
]
WorkspaceName = Annotated[
    str,
    BeforeValidator(well_formed_input),
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
    BeforeValidator(well_formed_input),
    Field(max_length=limits.MAX_TIME_BOUND_CHARS),
    AfterValidator(_instant),
]
SourceFilterText = Annotated[
    str,
    BeforeValidator(well_formed_input),
    Field(min_length=1, max_length=limits.MAX_FILTER_CHARS),
    AfterValidator(not_blank),
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
    BeforeValidator(well_formed_input),
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
