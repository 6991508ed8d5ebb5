"""Several home nodes under one Dagster instance: which node owns each mind.

One home node holds all the minds unless a homes file says otherwise. The file (YAML, named by
``$MIND_HARVEST_HOMES``; ``deploy/homes.example.yaml``) lists the home nodes, each with

- ``name``: the node (its Celery worker's name on the local cluster);
- ``queue``: the Celery queue its home worker listens on; the steps that open a mind of a run of
  one of its workspaces are sent there (``pipelines/home_routing.py``);
- ``workspaces``: the minds it holds (each workspace in one home only);
- ``minds`` (optional): its minds folder as the code location sees it, where the code location
  reads the registries (the harvest sensor, a run's scan config) and records failed scans. A
  relative path is relative to the file's folder. Without it, the code location reads that home's
  minds under its own ``$MIND_HOME``.

The first home listed also takes the home steps of runs tied to no mind (the daily snapshot).
The writing steps themselves open the minds under the worker's own ``$MIND_HOME``: each home
worker's folder holds its own minds only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.store.home import validate_workspace_name

HOMES_ENV = "MIND_HARVEST_HOMES"


@dataclass(frozen=True)
class HomeNode:
    name: str
    queue: str
    workspaces: tuple[str, ...]
    minds: Path | None = None


@dataclass(frozen=True)
class Homes:
    nodes: tuple[HomeNode, ...]
    file: Path

    def owner(self, workspace: str) -> HomeNode:
        """The home node holding ``workspace``'s mind; NotFoundError naming the file when none does."""
        for node in self.nodes:
            if workspace in node.workspaces:
                return node
        raise NotFoundError(f"workspace {workspace!r} has no home node in {self.file} (${HOMES_ENV}): add it to one")

    @property
    def default(self) -> HomeNode:
        """The node that takes the home steps of runs tied to no mind."""
        return self.nodes[0]


def read_homes(path: str | Path) -> Homes:
    """Parse and check a homes file; InvalidInputError naming the file and the entry when wrong."""
    file = Path(path).resolve()
    try:
        document = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidInputError(f"homes file {file}: {exc}") from exc
    entries = document.get("homes") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise InvalidInputError(f"homes file {file}: expected a non-empty list under 'homes'")
    nodes: list[HomeNode] = []
    owners: dict[str, str] = {}
    for number, entry in enumerate(entries, 1):
        where = f"homes file {file}, home {number}"
        if not isinstance(entry, dict) or not entry.get("name") or not entry.get("queue"):
            raise InvalidInputError(f"{where}: each home needs a 'name' and a 'queue'")
        workspaces = tuple(str(w) for w in entry.get("workspaces") or ())
        for workspace in workspaces:
            validate_workspace_name(workspace)
            if workspace in owners:
                raise InvalidInputError(f"{where}: workspace {workspace!r} is already held by {owners[workspace]!r}")
            owners[workspace] = str(entry["name"])
        minds = entry.get("minds")
        nodes.append(
            HomeNode(str(entry["name"]), str(entry["queue"]), workspaces, file.parent / minds if minds else None)
        )
    for label in ("name", "queue"):
        values = [getattr(node, label) for node in nodes]
        if len(set(values)) != len(values):
            raise InvalidInputError(f"homes file {file}: two homes share a {label}")
    return Homes(tuple(nodes), file)


@lru_cache(maxsize=4)
def _cached(path: str, modified: float) -> Homes:
    return read_homes(path)


def configured_homes() -> Homes | None:
    """The homes file of ``$MIND_HARVEST_HOMES`` (read again when it changes), or None: one home."""
    path = os.environ.get(HOMES_ENV)
    if not path:
        return None
    try:
        modified = Path(path).stat().st_mtime
    except OSError as exc:
        raise InvalidInputError(f"homes file {path} (${HOMES_ENV}): {exc}") from exc
    return _cached(path, modified)
