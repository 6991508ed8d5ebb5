"""Test stand-ins for the pipeline resources, swapped in under the same resource keys."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from mind_harvest.pipelines.resources import EmbedderResource, PluginManagerResource

from mind_core.harvest.items import ScanEvent
from mind_core.harvest.stores import HarvestSource
from mind_core.testing.fakes import HashingEmbedder

FAKE_EMBEDDER = HashingEmbedder()
SCANS: Counter[str] = Counter()


class FakeEmbedderResource(EmbedderResource):
    """The deterministic bag-of-words embedder instead of the model; one shared instance, so a
    test can see what was embedded across runs (in-process runs only)."""

    def build(self) -> HashingEmbedder:
        return FAKE_EMBEDDER


class OtherModelEmbedderResource(EmbedderResource):
    """An embedder of another vector space (as if the configuration changed)."""

    def build(self) -> HashingEmbedder:
        embedder = HashingEmbedder()
        embedder.model_name = "another-model"
        return embedder


class CountingPluginsResource(PluginManagerResource):
    """The real plugins, counting scans per source name."""

    def scan(self, source: HarvestSource, excluded: set[str] | None = None) -> Iterator[ScanEvent]:
        SCANS[source.source] += 1
        return super().scan(source, excluded)


def reset() -> None:
    FAKE_EMBEDDER.calls = 0
    FAKE_EMBEDDER.texts_embedded.clear()
    SCANS.clear()
