"""The answers that show frames as stored: search hits and one frame with its provenance and
entities."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

from mind_core.query.models.recall import (
    CONFIDENT_HELP,
    EXPLAIN_HELP,
    MATCH_SCORE_HELP,
    RECALL_EXAMPLE,
    SCORE_HELP,
    Provenance,
    absent,
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
    explain: dict[str, Any] | None = Field(None, description=EXPLAIN_HELP, exclude_if=absent)


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
