"""The answers of the MCP tools that answer no HTTP model (saving memories, identity,
awareness, cleanup): their output schemas."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
)


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
