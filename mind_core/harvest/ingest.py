"""Adding memories without a file: items in the Universal JSON shape (the seed's
``UniversalImportItem``), sent to POST /ingest or the MCP tool ``ingest_items``, go the way a
harvest's items go, so an ingested memory is stored, deduplicated and found as a harvested one.

- The items are read by the registered ``universal`` source (``items_from_records``), the very
  reader of a Universal JSON file: the engine never imports a plugin, it asks the plugin host.
- They are imported by ``import_items`` into a source of the workspace's registry named
  ``ingest:<surface>`` (``ingest:http``, ``ingest:mcp``): its ledger makes a repeated post write
  nothing and a changed item update its frames; dedup shares frames with every other source.
- Then the harvest's own cognify (entities, relations, sessions closed with their summary) and
  vector stages for the source. The index repairs a harvest ends with are left to the next
  harvest or ``mind doctor``: they sweep the whole mind, too much for one request.
- The limits are a harvest's (a message cut at ``MAX_MESSAGE_CHARS``, reported) and
  ``MAX_INGEST_ITEMS`` items per call; a bad item is reported by its index in the request, the
  others are kept. A workspace without a mind is refused, never created (``ingest_into``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from mind_core.embeddings.base import Embedder
from mind_core.errors import InvalidInputError
from mind_core.harvest.importer import import_items
from mind_core.harvest.items import HarvestError, HarvestItem, ScanEvent
from mind_core.harvest.pipeline import (
    INGEST_SOURCE_PREFIX,
    cognify_source,
    index_vectors,
    validate_source_name,
)
from mind_core.harvest.stores import HarvestSourceStore
from mind_core.limits import MAX_INGEST_ITEMS
from mind_core.mind import Mind
from mind_core.plugins import get_source
from mind_core.store import change_log
from mind_core.store.home import MindHome
from mind_core.store.reconcile import changes_to_check
from mind_core.store.write_lock import mind_write_lock

READER_KIND = "universal"
_ITEM_RECORD = re.compile(r"item (\d+)")


class ItemsReader(Protocol):
    """What the ``universal`` source offers ingest: parsed records read as its files' items are."""

    def items_from_records(self, records: Sequence[Any], where: str) -> Iterator[ScanEvent]: ...


@dataclass
class ItemError:
    """A problem with one item of the request: its index (None: not tied to one item) and why."""

    item: int | None
    reason: str


@dataclass
class IngestReport:
    """What one ingest call did, in the counts a harvest reports."""

    source: str
    status: str | None = None  # ok / partial / failed, as a harvest's outcome
    reason: str | None = None
    items: int = 0  # items in the request
    items_read: int = 0
    messages: int = 0
    frames_new: int = 0
    frames_updated: int = 0
    frames_unchanged: int = 0
    frames_duplicate: int = 0  # shared with a frame that already held the same text
    entities: int = 0
    relations: int = 0
    vectors_written: int = 0
    errors: list[ItemError] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def ingest_source_name(surface: str) -> str:
    """The source an ingest surface writes under: ``ingest:http``, ``ingest:mcp``."""
    return INGEST_SOURCE_PREFIX + validate_source_name(surface)


def _located(items: Sequence[Any], reader: ItemsReader, where: str, index_of: dict[str, int]) -> Iterator[ScanEvent]:
    """Each item read alone, so an error names its index in the request; ``index_of`` learns
    every item's key, so a problem the import finds later (a cut message) is located too."""
    for index, value in enumerate(items):
        for event in reader.items_from_records([value], where):
            if isinstance(event, HarvestError):
                event = HarvestError(where, event.reason, record=f"item {index}")
            elif isinstance(event, HarvestItem):
                index_of[event.key] = index
            yield event


def _item_index(error: HarvestError, index_of: dict[str, int]) -> int | None:
    record = error.record or ""
    match = _ITEM_RECORD.fullmatch(record)
    return int(match.group(1)) if match else index_of.get(record.split("/", 1)[0])


def ingest_items(mind: Mind, source_name: str, items: Sequence[Any]) -> IngestReport:
    """Import ``items`` (Universal JSON objects) into ``mind`` under the ingest source
    ``source_name``, then extract their knowledge and embed them; the caller holds the mind's
    write lock (``ingest_into`` does)."""
    if not source_name.startswith(INGEST_SOURCE_PREFIX):
        raise InvalidInputError(f"an ingest source is named {INGEST_SOURCE_PREFIX}<surface>, not {source_name!r}")
    validate_source_name(source_name.removeprefix(INGEST_SOURCE_PREFIX))
    if not isinstance(items, list | tuple) or not items:
        raise InvalidInputError("items must be a non-empty list of Universal JSON items")
    if len(items) > MAX_INGEST_ITEMS:
        raise InvalidInputError(f"{len(items)} items; at most {MAX_INGEST_ITEMS} in one call (send them in parts)")
    reader: ItemsReader = get_source(READER_KIND)  # type: ignore[assignment]
    with mind.db.transaction():
        HarvestSourceStore(mind.db).upsert(source_name, f"Ingested items ({source_name})", None, READER_KIND)
    index_of: dict[str, int] = {}
    summary = import_items(mind, source_name, _located(items, reader, source_name, index_of), kind=READER_KIND)
    cognified = cognify_source(mind, source_name)[0]
    # the frames changed since the last reconcile, not every frame of the mind (its watermark
    # stays: the full-text and orphan sweeps are the reconcile's)
    changes = changes_to_check(mind.db, change_log.RECONCILE, full=False)[0]
    vectors = int(cognified.get("vectors", 0)) + index_vectors(mind, changes=changes)
    return IngestReport(
        source=source_name,
        status=summary.status,
        reason=summary.status_reason,
        items=len(items),
        items_read=summary.items_seen,
        messages=summary.messages_seen,
        frames_new=summary.frames_new,
        frames_updated=summary.frames_updated + summary.frames_restored,
        frames_unchanged=summary.frames_unchanged + summary.frames_metadata_refreshed,
        frames_duplicate=summary.frames_duplicate,
        entities=int(cognified.get("entities", 0)),
        relations=int(cognified.get("relations", 0)),
        vectors_written=vectors,
        errors=[ItemError(_item_index(e, index_of), e.reason) for e in summary.errors],
    )


def ingest_into(
    home: MindHome, workspace: str, source_name: str, items: Sequence[Any], embedder: Embedder | None
) -> IngestReport:
    """``ingest_items`` into the mind of ``workspace``, opened for this call under its write lock
    (a harvest of the same mind waits, or is waited for); NotFoundError when the workspace has no
    mind: ingest never creates one (a typo in a workspace name must not become a mind)."""
    path = home.mind_path(workspace)
    if not path.is_file():
        raise home.missing_mind(workspace)
    with mind_write_lock(path), Mind.open(path, embedder=embedder) as mind:
        return ingest_items(mind, source_name, items)
