"""Harvest: the item model, the import engine and the source / run stores.

Plugins import from here (and ``mind_core.plugins``) only: the item model, event-time helpers,
the safe way to read a source's files and the HTTP retry policy.
"""

from mind_core.harvest.detection import depth_of_first, folder_entries, json_files_at_top
from mind_core.harvest.items import (
    ITEM_KINDS,
    HarvestError,
    HarvestItem,
    HarvestMessage,
    ScanEvent,
    Source,
    stable_key,
)
from mind_core.harvest.source_files import file_fingerprint, open_source_file, walk_files
from mind_core.http_retry import RetryableReply, RetryPolicy, is_retryable, retry_after_seconds, with_retries
from mind_core.timestamps import epoch_to_iso, format_utc, normalize_iso, parse_instant

__all__ = [
    "ITEM_KINDS",
    "HarvestError",
    "HarvestItem",
    "HarvestMessage",
    "RetryPolicy",
    "RetryableReply",
    "ScanEvent",
    "Source",
    "depth_of_first",
    "folder_entries",
    "epoch_to_iso",
    "file_fingerprint",
    "format_utc",
    "is_retryable",
    "json_files_at_top",
    "normalize_iso",
    "parse_instant",
    "retry_after_seconds",
    "open_source_file",
    "stable_key",
    "walk_files",
    "with_retries",
]
