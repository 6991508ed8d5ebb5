"""A mind's registered harvest sources, as `mind sources list --json`, /sources and the MCP
tool list_sources answer them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

SOURCE_COUNTERS = {
    "last_items": "last_harvest_items",
    "last_errors": "last_harvest_errors",
    "last_frames": "frames_held",
    "items_imported": "items_imported_total",
    "frames_created": "frames_created_total",
}


class Source(BaseModel):
    """A registered harvest source with its last harvest: one shape for ``mind sources list
    --json``, ``GET /sources`` and MCP ``list_sources``, its counters named for what they count."""

    workspace: str = Field(description="The workspace whose mind the source fills (personal: the personal mind).")
    id: int = Field(description="The source's id in its mind.")
    source: str = Field(description="The source's registered name (what recall results name as their source).")
    display_name: str = Field(description="The kind's name as a person reads it (ChatGPT export, Email ...).")
    source_path: str | None = Field(description="The export file or folder it is harvested from.")
    kind: str | None = Field(description="The plugin that reads it (chatgpt, claude, gemini, markdown, email ...).")
    last_synced_at: str | None = Field(
        description="When a harvest last read it successfully (ISO-8601, UTC); null: never."
    )
    items_imported_total: int = Field(description="Items (conversations, notes, threads) imported, over every harvest.")
    frames_created_total: int = Field(description="Frames created, over every harvest.")
    auto_sync: bool = Field(description="Harvested by `mind harvest --due` once sync_interval_hours elapsed.")
    sync_interval_hours: int = Field(description="Hours between auto-sync harvests.")
    last_content_hash: str | None = Field(
        description="SHA-256 of the item hashes the last harvest imported: the same set is an unchanged source."
    )
    last_fingerprint: str | None = Field(
        description="The plugin's fingerprint of the files (sizes, times) at the last harvest: while it is "
        "the same, a harvest skips the source without reading it."
    )
    created_at: str = Field(description="When the source was registered (ISO-8601, UTC).")
    identity: str | None = Field(
        None, description="What the source's ledger is tied to (its kind and path): re-pointing it starts over."
    )
    last_status: str | None = Field(
        None, description="The last harvest's outcome: ok, partial, failed, empty or missing; null: never harvested."
    )
    last_status_reason: str | None = Field(None, description="Why the last harvest was not ok, in one line.")
    last_harvest_at: str | None = Field(None, description="When the last harvest ran (ISO-8601, UTC).")
    last_harvest_items: int = Field(0, description="Items the last harvest that read the files imported.")
    frames_held: int = Field(0, description="Frames the source holds now.")
    last_harvest_errors: int = Field(0, description="Items the last harvest skipped with an error.")
    last_first_errors: list[str] = Field(
        [], description="The last harvest's first errors, each located (file, record, reason)."
    )
    exclude: list[str] = Field(
        [], description="Globs of files of its folder a harvest skips (`mind sources add/set --exclude`)."
    )

    @classmethod
    def of(cls, workspace: str, source: Any, exclude: Sequence[str] = ()) -> Source:
        """A stored source (``HarvestSource``) of ``workspace``, its counters renamed, with the
        exclusions of its reading rules."""
        fields = {SOURCE_COUNTERS.get(key, key): value for key, value in vars(source).items()}
        return cls.model_validate({"workspace": workspace, **fields, "exclude": list(exclude)})


SOURCE_EXAMPLE: dict[str, Any] = {
    "workspace": "team",
    "id": 1,
    "source": "mail",
    "display_name": "Email (mbox, .eml, maildir)",
    "source_path": "/home/ada/Mail/falcon",
    "kind": "email",
    "last_synced_at": "2024-03-12T18:00:05.120Z",
    "items_imported_total": 38,
    "frames_created_total": 200,
    "auto_sync": True,
    "sync_interval_hours": 24,
    "last_content_hash": "b6bc88f9ca21c6dfa43dd97c3dccd36ae74b08147685cb1b3c598a2362d8b30d",
    "last_fingerprint": "343f3b5ec8de048b02e95f9f31a7cdbfa896d0bf5e7de1209b6f07fc89782f17",
    "created_at": "2024-03-01T08:00:00.000Z",
    "identity": "7a06cec418601741",
    "last_status": "ok",
    "last_status_reason": None,
    "last_harvest_at": "2024-03-12T18:00:00.950Z",
    "last_harvest_items": 38,
    "frames_held": 200,
    "last_harvest_errors": 0,
    "last_first_errors": [],
    "exclude": ["*.msg"],
}


class SourcesResponse(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"sources": [SOURCE_EXAMPLE]}]})

    sources: list[Source] = Field(description="The mind's sources, the most recently harvested first.")
