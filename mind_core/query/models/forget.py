"""The forget request and answer, shared by POST /admin/forget and the MCP tool ``forget_memory``
(and, in the same fields, ``mind forget --json``): the engine's ``ForgetRequest`` and the
answer of ``mind_core.privacy.requests.run_forget``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from mind_core import limits
from mind_core.query.models.fields import (
    TimeBound,
    WorkspaceName,
    not_blank,
    ordered_range,
    well_formed_input,
)
from mind_core.query.models.requests import QueryRequest

if TYPE_CHECKING:  # the engine is imported by the call that needs it (MCP answers initialize first)
    from mind_core.privacy.requests import ForgetRequest

MAX_FORGET_FRAME_IDS = 10_000
ForgetText = Annotated[
    str,
    BeforeValidator(well_formed_input),
    Field(min_length=1, max_length=limits.MAX_QUERY_CHARS),
]
SOURCE_HELP = "The frames a harvest source brought (its name, as `mind sources list` shows it)."
FRAMES_HELP = "Frame ids."
QUERY_HELP = "The frames holding every word of this text (full-text match, never the vector lane)."
PERSON_HELP = (
    "A person, by name, alias or address: the frames they wrote go, their name and address in other "
    "frames become a placeholder, their entity and its history go. Given alone."
)
SINCE_HELP = "Frames from this event time on (ISO-8601 date or date/time: 2024, 2024-05, 2024-05-01T09:30Z)."
UNTIL_HELP = "Frames up to this event time (ISO-8601, inclusive: 2024 is to the end of 2024)."
YES_HELP = "Forget for real; without it (the default) a dry run: what would go, nothing changed."
ALLOW_RETURN_HELP = (
    "Instead of forgetting: lift the tombstones an earlier forget with the same selector laid, so a "
    "later harvest may bring the content back (a dry run too without yes)."
)
BY_HELP = "Who asks, for the audit log (kept with the surface's name: http:<by>, mcp:<by>)."


class ForgetBody(QueryRequest):
    """What to forget: source, frames, query and since/until combine (every condition must hold);
    person stands alone."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "examples": [
                {"person": "zq@quarles.example"},
                {"query": "api key", "since": "2024-01", "yes": True, "by": "dpo"},
                {"source": "old-mail", "allow_return": True},
            ]
        },
    )

    workspace: WorkspaceName | None = Field(
        None, description="The workspace mind (default: the server's); it must exist."
    )
    source: ForgetText | None = Field(None, description=SOURCE_HELP)
    frames: list[Annotated[int, Field(ge=1)]] | None = Field(
        None, max_length=MAX_FORGET_FRAME_IDS, description=FRAMES_HELP
    )
    query: ForgetText | None = Field(None, description=QUERY_HELP)
    person: ForgetText | None = Field(None, description=PERSON_HELP)
    since: TimeBound | None = Field(None, description=SINCE_HELP)
    until: TimeBound | None = Field(None, description=UNTIL_HELP)
    yes: bool = Field(False, description=YES_HELP)
    allow_return: bool = Field(False, description=ALLOW_RETURN_HELP)
    by: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(None, description=BY_HELP)

    @model_validator(mode="after")
    def _checked(self) -> ForgetBody:
        ordered_range(self.since, self.until)
        for text in (self.source, self.query, self.person, self.by):
            if text is not None:
                not_blank(text)
        return self

    def request(self) -> ForgetRequest:
        """The engine's request (its ``selector()`` refuses one that selects nothing)."""
        from mind_core.privacy.requests import ForgetRequest

        return ForgetRequest(
            source=self.source,
            frames=tuple(self.frames or ()),
            query=self.query,
            person=self.person,
            since=self.since,
            until=self.until,
            apply=self.yes,
            allow_return=self.allow_return,
        )

    def actor(self, surface: str) -> str:
        """The audit log's who: the surface, and who the caller says they are."""
        return f"{surface}:{self.by}" if self.by else surface


class ForgottenFrame(BaseModel):
    id: int = Field(description="The frame's id.")
    time: str | None = Field(description="Its event time.")
    snippet: str = Field(description="The start of its text.")


class ScrubReport(BaseModel):
    vacuumed: bool = Field(description="Whether the mind file was vacuumed.")
    wal_busy: bool = Field(
        description="Another reader kept the WAL open, so it could not be truncated: forget again later."
    )


class ForgetResponse(BaseModel):
    """What a forget would take or took (or, with allow_return, the tombstones lifted)."""

    workspace: str = Field(description="The mind.")
    action: Literal["forget", "allow_return"] = Field(description="What was asked.")
    applied: bool = Field(description="false: a dry run, nothing changed.")
    counts: dict[str, int] | None = Field(
        None,
        description="frames_deleted, frames_redacted (a person's mentions replaced), entities_deleted, "
        "relations_deleted; applied, also tombstones, versions_deleted, sessions_deleted ...",
    )
    frames: list[ForgottenFrame] | None = Field(None, description="The first frames that go.")
    redaction: str | None = Field(None, description="For a person: what is replaced in the other frames.")
    audit_id: int | None = Field(None, description="The audit log's entry for this forget.")
    scrub: ScrubReport | None = Field(None, description="How the mind's files were scrubbed.")
    seconds: float | None = Field(None, description="How long the forget took.")
    snapshot_marker: str | None = Field(
        None, description="Where the workspace's earlier snapshots were marked stale (none: no snapshot root)."
    )
    tombstones_removed: int | None = Field(None, description="allow_return: the tombstones lifted (or that would be).")
