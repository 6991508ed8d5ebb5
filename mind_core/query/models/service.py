"""The answers about the service and its home: counts per mind, liveness, and the error shape
every failed request answers."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)


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
