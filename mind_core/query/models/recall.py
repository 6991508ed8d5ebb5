"""The recall answer: each result with its score, provenance and, asked for, the parts of its
score; converted from the engine's ``CombinedRetrievalResult``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
)

from mind_core.query.models.requests import RecallRequest
from mind_core.recall import CombinedRetrievalResult
from mind_core.search.snippets import make_snippet, own_text


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


def absent(value: Any) -> bool:
    """An explanation nobody asked for is left out of the answer, not sent as null."""
    return value is None


EXPLAIN_HELP = (
    "With explain=true: the lane ranks (0-based; null: not found by that lane), the fusion, rrf_score "
    "(the fused lane score), relevance (its components and the profile's weights), relevance_score, "
    "max_relevance, relevance_parts (each part x its share) and relevance_share (their sum, the relevance "
    "mind recall --explain prints), final_score (rrf_score x relevance_score), the similarity and the keyword "
    "share; "
    "for a question naming a speaker, speaker (who said the frame) and speaker_score (1: a named one)."
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
    evidence: float = Field(
        0.0,
        description="0..1, how well the frame matches on scales every mind shares: the mean of its cosine "
        "similarity to the query and the share of the query's keywords it holds (1.0 for a frame from the "
        "only time the query asks about).",
    )
    mind_weight: float | None = Field(
        None,
        description="When several minds answered: what this mind's scores were multiplied by (the evidence "
        "of its best result), so that minds compare; absent for a recall of one mind.",
        exclude_if=absent,
    )
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
    explain: dict[str, Any] | None = Field(None, description=EXPLAIN_HELP, exclude_if=absent)


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
