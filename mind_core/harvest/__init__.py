"""Harvest: the item model, the import engine and the source / run stores."""

from mind_core.harvest.items import (
    ITEM_KINDS,
    HarvestError,
    HarvestItem,
    HarvestMessage,
    ScanEvent,
    Source,
    file_fingerprint,
    stable_key,
)

__all__ = [
    "ITEM_KINDS",
    "HarvestError",
    "HarvestItem",
    "HarvestMessage",
    "ScanEvent",
    "Source",
    "file_fingerprint",
    "stable_key",
]
