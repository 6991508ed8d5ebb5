"""Resources: where the minds live, how text becomes vectors, and which source plugins exist.

The defaults are the real things (``$MIND_HOME``, the in-process MiniLM model, the installed
plugins). Tests swap in fakes by passing instances of subclasses under the same resource keys.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
from mind_harvest.pipelines.homes import configured_homes

from mind_core.analytics.snapshot import default_snapshot_root
from mind_core.embeddings import Embedder, create_embedding_provider
from mind_core.errors import NotFoundError
from mind_core.harvest.catalog import HomeCatalog, read_catalog
from mind_core.harvest.items import ScanEvent
from mind_core.harvest.pipeline import NO_REDACTION, get_registered, scan_source, source_fingerprint
from mind_core.harvest.source_files import DEFAULT_RULES, ReadingRules
from mind_core.harvest.staging_store import StagingStore, default_staging_url
from mind_core.harvest.stores import HarvestSource, HarvestSourceStore
from mind_core.mind import Mind
from mind_core.privacy.redaction_policy import RedactionPolicy, effective_policy
from mind_core.store.home import MindHome


@functools.cache
def _provider(
    provider: str, dimensions: int | None, batch_size: int | None, model_path: str | None, backend: str | None
) -> Embedder:
    return create_embedding_provider(
        provider,
        dimensions,
        batch_size=batch_size,
        model_path=model_path,
        backend=backend,
        fallback_to_mock=False,
        lazy=provider != "auto",  # a step that embeds nothing loads no model
    )


@dataclass(frozen=True)
class ScanTarget:
    """What scanning a registered source needs: its plugin, its files, the fingerprint of its
    last complete harvest and its own reading rules (``mind sources add --max-file-size``,
    ``--follow-outside-links``). Carried in the harvest job's run config (read from the mind on
    the home node when the run is made), so the scan step itself opens no mind."""

    source: str
    kind: str
    source_path: str
    last_fingerprint: str | None = None
    rules: ReadingRules = DEFAULT_RULES
    redaction: RedactionPolicy = NO_REDACTION  # the policy its harvest applies (``mind redaction``)

    @classmethod
    def of(
        cls, registered: HarvestSource, rules: ReadingRules = DEFAULT_RULES, redaction: RedactionPolicy = NO_REDACTION
    ) -> ScanTarget:
        return cls(
            registered.source,
            str(registered.kind),
            str(registered.source_path),
            registered.last_fingerprint,
            rules,
            redaction,
        )


class MindHomeResource(dg.ConfigurableResource):
    """The mind home: ``root`` or, when unset, ``$MIND_HOME`` or ``~/.mind-harvest`` at run time;
    and the staging store the stateless steps share with it: ``staging_url`` or, when unset,
    ``$MIND_HARVEST_STAGING_URL`` or ``file://<home>/staging``. On a cluster every worker must see
    the same store (an ``s3://`` bucket, or one shared folder). Snapshots go to ``snapshot_url``
    or, when unset, ``$MIND_HARVEST_SNAPSHOT_URL`` or ``<home>/snapshots`` (any fsspec URL too)."""

    root: str | None = None
    staging_url: str | None = None
    snapshot_url: str | None = None

    def home(self) -> MindHome:
        return MindHome(self.root)

    def mind_path(self, workspace: str) -> Path:
        return self.home().mind_path(workspace)

    def owning(self, workspace: str) -> MindHomeResource:
        """This home as the code location reads ``workspace``'s mind: with a homes file
        (``pipelines/homes.py``), rooted at the minds folder of the node that holds it (the same
        staging store and snapshots); otherwise this one."""
        homes = configured_homes()
        folder = homes.owner(workspace).minds if homes else None
        if folder is None:
            return self
        return MindHomeResource(
            root=str(folder), staging_url=self.staging().url, snapshot_url=str(self.snapshot_root())
        )

    def catalog(self, now: str | None = None) -> HomeCatalog:
        """The registered sources the code location sees (``read_catalog``): of this home, or with a
        homes file of every home node's workspaces, each read in its node's minds folder. A node
        whose folder the file does not give is read under this home; its workspaces not found
        there count as unreadable (the sensor leaves their partitions alone), not as removed."""
        homes = configured_homes()
        if homes is None:
            return read_catalog(self.home(), now)
        merged = HomeCatalog()
        for node in homes.nodes:
            part = read_catalog(MindHome(node.minds) if node.minds else self.home(), now)
            merged.minds.update({w: p for w, p in part.minds.items() if w in node.workspaces})
            merged.unreadable.update({w: why for w, why in part.unreadable.items() if w in node.workspaces})
            merged.sources.extend(s for s in part.sources if s.workspace in node.workspaces)
            merged.due.extend(s for s in part.due if s.workspace in node.workspaces)
            if node.minds is None:
                merged.unreadable.update({
                    w: f"held by home node {node.name}, whose minds this code location does not read"
                    for w in node.workspaces if w not in part.minds
                })
        return merged

    def open_mind(self, workspace: str, embedder: Embedder | None = None, *, readonly: bool = False) -> Mind:
        """The workspace's mind; with an embedder its fingerprint must match the mind's vectors."""
        return Mind.open(self.mind_path(workspace), embedder=embedder, readonly=readonly)

    def staging(self) -> StagingStore:
        return StagingStore(self.staging_url or default_staging_url(self.home().root))

    def snapshot_root(self) -> str | Path:
        return self.snapshot_url or default_snapshot_root(self.home())

    def scan_url(self, workspace: str, source: str) -> str:
        """Where a source's scan is staged as Parquet: ``<staging>/<workspace>/<source>.parquet``."""
        return self.staging().scan_url(workspace, source)

    def registered_source(self, workspace: str, source: str) -> HarvestSource:
        with self._registry(workspace) as mind:
            return get_registered(mind, source)

    def scan_target(self, workspace: str, source: str) -> ScanTarget:
        with self._registry(workspace) as mind:
            registered = get_registered(mind, source)
            return ScanTarget.of(
                registered, HarvestSourceStore(mind.db).reading_rules(source), effective_policy(mind.db, source)
            )

    def _registry(self, workspace: str) -> Mind:
        """The workspace's mind opened to read its source registry; a clear error when it is gone."""
        path = self.mind_path(workspace)
        if not path.is_file():
            raise NotFoundError(f"no mind for workspace {workspace!r} at {path} (was it deleted?)")
        return self.open_mind(workspace, readonly=True)


class EmbedderResource(dg.ConfigurableResource):
    """The embedding provider chain of ``mind_core.embeddings``; never silently degrades to mock
    vectors (a harvest with the wrong vectors is worse than a failed one)."""

    provider: str = "inprocess"
    # None: $MIND_HARVEST_EMBED_DIMENSIONS, else the model's own width (1024: the original engine's)
    dimensions: int | None = None
    batch_size: int | None = None  # texts per model pass / HTTP request; None: the provider's own
    model_path: str | None = None
    backend: str | None = None  # in-process model: onnx-int8, onnx, torch; None: $MIND_HARVEST_EMBED_BACKEND

    def build(self) -> Embedder:
        """The embedder for this configuration, made once per process: Dagster makes a resource
        instance per step, and every step of an in-process run shares the process. The model
        itself loads at the first text embedded."""
        return _provider(self.provider, self.dimensions, self.batch_size, self.model_path, self.backend)


class PluginManagerResource(dg.ConfigurableResource):
    """The pluggy host of ``mind_core.plugins``: built-in sources and those of installed plugin
    packages (entry-point group ``mind_harvest``). Scans and fingerprints go through the engine's
    ``scan_source`` / ``source_fingerprint``, under the source's own reading rules (a
    ``ScanTarget``'s; the defaults for a bare registry row), as the command line's do."""

    def fingerprint(self, source: HarvestSource | ScanTarget, redaction: RedactionPolicy | None = None) -> str:
        """The source's fingerprint with its redaction policy's mark (a ``ScanTarget``'s own, else
        ``redaction``), as the command line's harvest records it."""
        if redaction is None:
            redaction = source.redaction if isinstance(source, ScanTarget) else NO_REDACTION
        return source_fingerprint(source, _rules_of(source), redaction)  # type: ignore[arg-type]

    def scan(self, source: HarvestSource | ScanTarget, excluded: set[str] | None = None) -> Iterator[ScanEvent]:
        """The source's scan; the paths of the files its exclusions pass over go to ``excluded``."""
        return scan_source(source, _rules_of(source), excluded)  # type: ignore[arg-type]


def _rules_of(source: HarvestSource | ScanTarget) -> ReadingRules:
    return source.rules if isinstance(source, ScanTarget) else DEFAULT_RULES
