"""What a plugin read about an item and a message, kept in the frame's metadata.

A frame's ``metadata.source`` holds the item's metadata (a note's frontmatter, tags, links; a
thread's root and participants; a conversation's model) under ``item`` and the message's own
(a section's links and tags; a mail's from/to/cc/subject/message id; a chat turn's model) under
``message``. Search filters (``mind_core.search.filters``), snapshots and the knowledge graph's
structure step read it from there, so nothing a plugin parsed is lost at import.

Values are made JSON-safe (a plugin's odd value becomes its string, never a failed batch) and a
list is cut to ``MAX_LIST_ENTRIES``: a thread of thousands of mails would otherwise copy its
message ids into each of its frames.
"""

from __future__ import annotations

import json
from typing import Any

from mind_core.harvest.items import HarvestItem, HarvestMessage
from mind_core.store.schema import content_hash

MAX_LIST_ENTRIES = 200


def source_metadata(item: HarvestItem, message: HarvestMessage) -> dict[str, Any]:
    return {"item": _bounded(item.metadata), "message": _bounded(message.metadata)}


def ledger_digest(content: str, kept: dict[str, Any]) -> str:
    """A message's hash in its item's hash: its frame's text and the metadata kept with it, so a
    note whose frontmatter or tags changed (same text) is not an unchanged item set."""
    return content_hash(content + "\x00" + json.dumps(kept, sort_keys=True, ensure_ascii=False))


def same_source_metadata(stored: str | None, kept: dict[str, Any]) -> bool:
    """Whether a frame's stored ``metadata.source`` (JSON text) is what the plugin read now."""
    if stored is None:
        return False
    return json.loads(stored) == json.loads(json.dumps(kept, ensure_ascii=False))


def _bounded(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _bounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_bounded(v) for v in value[:MAX_LIST_ENTRIES]]
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    return json.loads(json.dumps(value, default=str))
