"""The code location of the lost-worker tests (``-m tests.deploy.recovery_location``): the real
assets, checks and harvest job, with the deterministic fake embedder slowed down per text (run
config ``resources.embedder.config.seconds_per_text``), so an embedding chunk runs long enough
to be killed in the middle."""

from __future__ import annotations

import time
from collections.abc import Sequence

import dagster as dg
import numpy as np
from mind_harvest.pipelines.checks import ALL_CHECKS
from mind_harvest.pipelines.definitions import ASSETS, run_executor
from mind_harvest.pipelines.jobs import harvest_job
from mind_harvest.pipelines.resources import EmbedderResource, MindHomeResource

from mind_core.testing.fakes import HashingEmbedder
from tests.pipelines.doubles import CountingPluginsResource


class SlowHashingEmbedder(HashingEmbedder):
    """The fake embedder's vectors (the same as ``FakeEmbedderResource``'s), ``seconds_per_text``
    late."""

    def __init__(self, seconds_per_text: float) -> None:
        super().__init__()
        self.seconds_per_text = seconds_per_text

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        time.sleep(self.seconds_per_text * len(texts))
        return super().embed_batch(texts)


class SlowFakeEmbedderResource(EmbedderResource):
    seconds_per_text: float = 0.0

    def build(self) -> HashingEmbedder:
        return SlowHashingEmbedder(self.seconds_per_text)


defs = dg.Definitions(
    assets=ASSETS,
    asset_checks=ALL_CHECKS,
    jobs=[harvest_job],
    resources={
        "mind_home": MindHomeResource(),
        "embedder": SlowFakeEmbedderResource(),
        "plugins": CountingPluginsResource(),
    },
    executor=run_executor(),
)
