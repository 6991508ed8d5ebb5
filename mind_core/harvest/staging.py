"""A scan staged on disk as Parquet: the hand-off between scanning a source and importing it.

Scanning (parsing an export) and importing (writing the mind) are separate steps in Dagster, in
separate processes and possibly on separate machines, so the scan's output must outlive the
process that made it. One Parquet file holds one scan: one row per event, in scan order, items
and located errors alike, so reading it back yields exactly the stream the plugin produced and
the import engine cannot tell a staged scan from a live one (same keys, same hashes, same frames).

Every string a plugin yields is stored as UTF-8 bytes encoded with ``surrogatepass``: exports
contain lone surrogates (a truncated emoji in a JSON escape), file names may carry
``surrogateescape`` bytes, and a string column would refuse both. Metadata dictionaries are
stored as JSON (values JSON cannot hold become their ``str``).

Files are written in row groups of ``batch_items`` events with a ``ParquetWriter`` (memory
follows the batch, not the export) to a temporary name and renamed at the end, so a crash never
leaves a half-written file where a complete one is expected. A location is a local path or an
fsspec URL of the staging store (``mind_core.harvest.staging_store``); a store that cannot be
reached raises ``StagingStoreError`` with the URL and the reason. The footer records the source
fingerprint the scan was made from and the counts, which ``staged_scan_info`` reads without
touching the rows.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from mind_core.harvest.items import HarvestError, HarvestItem, HarvestMessage, ScanEvent
from mind_core.harvest.staging_store import filesystem, reaching

FORMAT_VERSION = 1
FOOTER_KEY = b"mind_harvest.staged_scan"
DEFAULT_BATCH_ITEMS = 500
MAX_ERRORS_LISTED = 200
COMPRESSION = "zstd"

ITEM, ERROR = "item", "error"

_MESSAGE = pa.struct(
    [
        ("key", pa.binary()),
        ("text", pa.large_binary()),
        ("role", pa.binary()),
        ("author", pa.binary()),
        ("timestamp", pa.binary()),
        ("metadata", pa.large_binary()),
    ]
)
_ERROR = pa.struct([("path", pa.binary()), ("reason", pa.binary()), ("record", pa.binary())])

SCHEMA = pa.schema(
    [
        ("event", pa.string()),
        ("key", pa.binary()),
        ("kind", pa.string()),
        ("title", pa.binary()),
        ("container_key", pa.binary()),
        ("timestamp", pa.binary()),
        ("metadata", pa.large_binary()),
        ("messages", pa.list_(_MESSAGE)),
        ("error", _ERROR),
    ]
)


@dataclass
class StagedScan:
    """What one staging file holds, from its footer (no rows read)."""

    path: str  # a local path or a staging store URL
    fingerprint: str | None
    items: int
    messages: int
    error_count: int
    errors: list[HarvestError] = field(default_factory=list)  # the first MAX_ERRORS_LISTED
    labels: dict[str, str] = field(default_factory=dict)
    scan_seconds: float = 0.0
    bytes: int = 0

    @property
    def events(self) -> int:
        return self.items + self.error_count

    @property
    def error_rate(self) -> float:
        """Share of the scan's records that could not be read (0.0 for an empty scan)."""
        return self.error_count / self.events if self.events else 0.0


def _encode(value: str | None) -> bytes | None:
    return None if value is None else value.encode("utf-8", "surrogatepass")


def _decode(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "surrogatepass")


def _encode_json(value: Mapping[str, Any] | None) -> bytes:
    return json.dumps(dict(value or {}), ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")


def _decode_json(value: bytes | None) -> dict[str, Any]:
    return json.loads(value.decode("utf-8", "surrogatepass")) if value else {}


def _row(event: ScanEvent) -> dict[str, Any]:
    if isinstance(event, HarvestError):
        return {
            "event": ERROR,
            "error": {
                "path": _encode(str(event.path)),
                "reason": _encode(str(event.reason)),
                "record": _encode(event.record),
            },
        }
    return {
        "event": ITEM,
        "key": _encode(event.key),
        "kind": event.kind,
        "title": _encode(event.title),
        "container_key": _encode(event.container_key),
        "timestamp": _encode(event.timestamp),
        "metadata": _encode_json(event.metadata),
        "messages": [
            {
                "key": _encode(m.key),
                "text": _encode(m.text),
                "role": _encode(m.role),
                "author": _encode(m.author),
                "timestamp": _encode(m.timestamp),
                "metadata": _encode_json(m.metadata),
            }
            for m in event.messages
        ],
    }


def _event(row: Mapping[str, Any]) -> ScanEvent:
    if row["event"] == ERROR:
        error = row["error"]
        return HarvestError(
            path=_decode(error["path"]) or "",
            reason=_decode(error["reason"]) or "",
            record=_decode(error["record"]),
        )
    return HarvestItem(
        key=_decode(row["key"]) or "",
        kind=row["kind"],
        title=_decode(row["title"]) or "",
        container_key=_decode(row["container_key"]) or "",
        messages=[
            HarvestMessage(
                key=_decode(m["key"]) or "",
                text=_decode(m["text"]) or "",
                role=_decode(m["role"]),
                author=_decode(m["author"]),
                timestamp=_decode(m["timestamp"]),
                metadata=_decode_json(m["metadata"]),
            )
            for m in row["messages"] or []
        ],
        metadata=_decode_json(row["metadata"]),
        timestamp=_decode(row["timestamp"]),
    )


def stage_scan(
    events: Iterable[ScanEvent],
    path: str | Path,
    *,
    fingerprint: str | None = None,
    labels: Mapping[str, str] | None = None,
    batch_items: int = DEFAULT_BATCH_ITEMS,
) -> StagedScan:
    """Write a scan's events to ``path`` (replacing any previous file) and describe it.

    ``fingerprint`` is the source fingerprint taken before the scan, so a later reader can tell
    whether the staged data is still what the source holds. ``labels`` (workspace, source, kind)
    are kept in the footer for people who find the file.
    """
    if batch_items < 1:
        raise ValueError(f"batch_items must be >= 1, got {batch_items}")
    target = str(path)
    fs, target_path = filesystem(target)
    folder, _, name = target_path.rpartition("/")
    partial = f"{folder}/.{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.partial"
    began = time.perf_counter()
    items = messages = error_count = 0
    errors: list[HarvestError] = []
    rows: list[dict[str, Any]] = []
    with reaching(target):
        fs.makedirs(folder, exist_ok=True)
        sink = fs.open(partial, "wb")
    try:
        # the plugin's own errors pass through as they are; only the store's are "unreachable"
        with sink, pq.ParquetWriter(sink, SCHEMA, compression=COMPRESSION) as writer:
            for event in events:
                if isinstance(event, HarvestError):
                    error_count += 1
                    if len(errors) < MAX_ERRORS_LISTED:
                        errors.append(event)
                else:
                    items += 1
                    messages += len(event.messages)
                rows.append(_row(event))
                if len(rows) >= batch_items:
                    _write_rows(writer, rows, target)
            if rows:
                _write_rows(writer, rows, target)
            seconds = time.perf_counter() - began
            footer = {
                "version": FORMAT_VERSION,
                "fingerprint": fingerprint,
                "items": items,
                "messages": messages,
                "error_count": error_count,
                "errors": [[e.path, e.reason, e.record] for e in errors],
                "labels": dict(labels or {}),
                "scan_seconds": seconds,
            }
            writer.add_key_value_metadata(
                {FOOTER_KEY: json.dumps(footer, ensure_ascii=True, default=str).encode("ascii")}
            )
        with reaching(target):
            fs.mv(partial, target_path)
            size = fs.size(target_path)
    except BaseException:
        _remove_quietly(fs, partial)
        raise
    return StagedScan(
        path=target,
        fingerprint=fingerprint,
        items=items,
        messages=messages,
        error_count=error_count,
        errors=errors,
        labels=dict(labels or {}),
        scan_seconds=seconds,
        bytes=size,
    )


def _write_rows(writer: pq.ParquetWriter, rows: list[dict[str, Any]], target: str) -> None:
    with reaching(target):
        writer.write_table(pa.Table.from_pylist(rows, schema=SCHEMA))
    rows.clear()


def _remove_quietly(fs: Any, path: str) -> None:
    try:
        if fs.exists(path):
            fs.rm(path)
    except OSError:
        pass  # the store is gone: there is nothing left to tidy


def staged_scan_info(path: str | Path) -> StagedScan | None:
    """The footer of a staging file; None when there is no complete, readable one (an
    unreachable store raises ``StagingStoreError``)."""
    target = str(path)
    fs, target_path = filesystem(target)
    with reaching(target):
        if not fs.isfile(target_path):
            return None
        size = fs.size(target_path)
    try:
        with fs.open(target_path, "rb") as source:
            metadata = pq.read_metadata(source).metadata or {}
        footer = json.loads(metadata[FOOTER_KEY])
    except (OSError, KeyError, ValueError, pa.ArrowException):
        return None
    if footer.get("version") != FORMAT_VERSION:
        return None
    return StagedScan(
        path=target,
        fingerprint=footer.get("fingerprint"),
        items=int(footer.get("items", 0)),
        messages=int(footer.get("messages", 0)),
        error_count=int(footer.get("error_count", 0)),
        errors=[HarvestError(path=p, reason=r, record=rec) for p, r, rec in footer.get("errors", [])],
        labels=dict(footer.get("labels", {})),
        scan_seconds=float(footer.get("scan_seconds", 0.0)),
        bytes=size,
    )


def read_staged(path: str | Path) -> Iterator[ScanEvent]:
    """The staged events in scan order, one row group at a time."""
    target = str(path)
    fs, target_path = filesystem(target)
    with reaching(target), fs.open(target_path, "rb") as source, pq.ParquetFile(source) as staged:
        for batch in staged.iter_batches():
            for row in batch.to_pylist():
                yield _event(row)
