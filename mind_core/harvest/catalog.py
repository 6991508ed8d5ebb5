"""The harvest sources registered in every mind of a home, read without writing anything.

A scheduler looking for work (which sources exist, which are due) reads every mind of the home,
possibly while harvests write them: minds are opened read-only (WAL readers never block the
writer), and one mind that cannot be read is reported and passed over instead of hiding the
sources of all the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mind_core.harvest.stores import HarvestSource, HarvestSourceStore
from mind_core.privacy.redaction_policy import RedactionPolicy, effective_policy
from mind_core.store.db import Database
from mind_core.store.home import MindHome


@dataclass(frozen=True)
class HomeSource:
    workspace: str  # a workspace name, or 'personal'
    source: HarvestSource
    redaction: RedactionPolicy = RedactionPolicy()  # the policy its harvest applies (its fingerprint's mark)


@dataclass
class HomeCatalog:
    minds: dict[str, Path] = field(default_factory=dict)  # every mind file found, by workspace
    sources: list[HomeSource] = field(default_factory=list)
    due: list[HomeSource] = field(default_factory=list)  # auto-sync sources whose interval elapsed
    unreadable: dict[str, str] = field(default_factory=dict)  # workspace -> why it could not be read


def home_minds(home: MindHome) -> dict[str, Path]:
    """Every mind file of the home: the personal mind (when it exists) and each workspace mind."""
    return {name: home.mind_path(name) for name in home.minds()}


def read_catalog(home: MindHome, now: str | None = None) -> HomeCatalog:
    """Every registered source, and which auto-sync sources are due at ``now`` (default: now)."""
    catalog = HomeCatalog(minds=home_minds(home))
    for workspace, path in catalog.minds.items():
        try:
            db = Database(path, readonly=True)
        except Exception as exc:  # driver-specific error types: a locked, corrupt or foreign file
            catalog.unreadable[workspace] = f"{type(exc).__name__}: {exc}"
            continue
        try:
            if db.table_exists("harvest_sources"):
                store = HarvestSourceStore(db)
                # a source without a path has no files to harvest (one fed by ingest): no work here
                catalog.sources.extend(
                    HomeSource(workspace, s, effective_policy(db, s.source)) for s in store.get_all() if s.source_path
                )
                catalog.due.extend(
                    HomeSource(workspace, s, effective_policy(db, s.source)) for s in store.get_stale(now) if s.source_path
                )
        except Exception as exc:
            catalog.unreadable[workspace] = f"{type(exc).__name__}: {exc}"
        finally:
            db.close()
    for listed in (catalog.sources, catalog.due):
        listed.sort(key=lambda s: (s.workspace, s.source.source))
    return catalog
