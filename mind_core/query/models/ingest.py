"""The ingest request and answer, shared by POST /ingest and the MCP tool ``ingest_items``.

The items are taken as JSON objects, not validated field by field here: the Universal JSON
reader of the harvest (``mind_core.harvest.ingest``) reads them, so a bad item is reported by
its index and the good ones are kept, as a bad record of a harvested file is.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from mind_core import limits
from mind_core.query.models.fields import WorkspaceName

ITEMS_HELP = (
    "Universal JSON items (the seed's UniversalImportItem): {id?, source, type, title, content, "
    "messages?: [{role, text, timestamp?}], timestamp, metadata?}. One memory per message (or per item "
    f"without messages), at the message's own time; at most {limits.MAX_INGEST_ITEMS} items. An item with an "
    "id is updated when sent again changed; sent again unchanged it writes nothing."
)
# any JSON value: an item that is not an object is reported by its index, not the whole request refused
IngestItems = Annotated[list[Any], Field(min_length=1, max_length=limits.MAX_INGEST_ITEMS, description=ITEMS_HELP)]
EXAMPLE_ITEM = {
    "id": "standup-2024-03-05",
    "source": "notes-app",
    "type": "conversation",
    "title": "Stand-up",
    "content": "",
    "messages": [
        {"role": "user", "text": "We moved the Falcon launch to April.", "timestamp": "2024-03-05T09:00:00Z"},
        {"role": "assistant", "text": "Noted: Falcon launches in April.", "timestamp": "2024-03-05T09:00:05Z"},
    ],
    "timestamp": "2024-03-05T09:00:00Z",
    "metadata": {"tags": ["standup"]},
}


class IngestRequest(BaseModel):
    """Items to add to a workspace's mind, through the harvest's import path."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": [{"items": [EXAMPLE_ITEM]}]})

    items: IngestItems
    workspace: WorkspaceName | None = Field(
        None, description="The workspace mind to add them to (default: the server's); it must exist."
    )


class ItemProblem(BaseModel):
    item: int | None = Field(description="The item's index in the request (null: not one item's).")
    reason: str = Field(description="What is wrong with it; the other items were kept.")


class IngestResponse(BaseModel):
    """What the ingest did, in a harvest's counts."""

    workspace: str = Field(description="The mind written.")
    source: str = Field(description="The source the items are held by (ingest:http, ingest:mcp).")
    status: str | None = Field(description="ok, partial (some items were refused) or failed (all were).")
    reason: str | None = Field(description="Why the status is not ok.")
    items: int = Field(description="Items in the request.")
    items_read: int = Field(description="Items read and imported.")
    messages: int = Field(description="Messages (memories) they hold.")
    frames_new: int = Field(description="New frames written.")
    frames_updated: int = Field(description="Frames changed: an item sent again with other text.")
    frames_unchanged: int = Field(description="Messages already held unchanged: nothing written.")
    frames_duplicate: int = Field(description="New messages whose text another source holds: its frame is shared.")
    entities: int = Field(description="Entities extracted from the new frames.")
    relations: int = Field(description="Relations extracted from the new frames.")
    vectors_written: int = Field(description="Vectors embedded.")
    errors: list[ItemProblem] = Field(description="The items refused or cut, by index.")
