"""Partitions: one per harvest source (in any mind of the home), one per mind, one per day.

A harvest partition key is ``<workspace>/<source>``. Neither part can contain a ``/``
(workspace and source names are letters, digits, ``-``, ``_`` and ``.``), so the key splits back
unambiguously, and it reads like a path in the UI. The personal mind's sources use the workspace
label ``personal``.
"""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from mind_core.errors import InvalidInputError
from mind_core.harvest.pipeline import validate_source_name
from mind_core.store.home import PERSONAL, validate_workspace_name

SEPARATOR = "/"
SNAPSHOTS_START = "2026-01-01"

harvest_sources = dg.DynamicPartitionsDefinition(name="harvest_sources")
mind_workspaces = dg.DynamicPartitionsDefinition(name="mind_workspaces")
# end_offset=1: today's partition exists, so today's state can be snapshotted on demand.
snapshot_days = dg.DailyPartitionsDefinition(start_date=SNAPSHOTS_START, end_offset=1)


def check_workspace_label(workspace: str) -> str:
    """A workspace name, or 'personal' for the personal mind."""
    return workspace if workspace == PERSONAL else validate_workspace_name(workspace)


@dataclass(frozen=True)
class SourceKey:
    workspace: str
    source: str

    def __str__(self) -> str:
        return f"{self.workspace}{SEPARATOR}{self.source}"


def source_partition_key(workspace: str, source: str) -> str:
    """The partition key of a source; InvalidInputError when either name is not usable in one."""
    check_workspace_label(workspace)
    validate_source_name(source)
    key = f"{workspace}{SEPARATOR}{source}"
    if "..." in key:  # Dagster reserves '...' for partition ranges
        raise InvalidInputError(
            f"source {source!r} cannot be a Dagster partition: names must not contain '...'"
        )
    return key


def parse_source_partition_key(key: str) -> SourceKey:
    workspace, separator, source = key.partition(SEPARATOR)
    if not separator:
        raise InvalidInputError(f"harvest partition key {key!r} is not '<workspace>/<source>'")
    source_partition_key(workspace, source)
    return SourceKey(workspace, source)
