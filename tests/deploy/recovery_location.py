"""The code location of the lost-worker tests (``-m tests.deploy.recovery_location``): the real
assets and checks; the harvest job with small embedding chunks (CHUNK_TEXTS texts, the rest of its
config and its tags those of ``pipelines/jobs.py``) and the deterministic fake embedder slowed
down per text, so a partition's run has several chunks, each long enough to be killed midway."""

from __future__ import annotations

import time
from collections.abc import Sequence

import dagster as dg
import numpy as np
from mind_harvest.pipelines import jobs
from mind_harvest.pipelines.checks import ALL_CHECKS
from mind_harvest.pipelines.definitions import ASSETS
from mind_harvest.pipelines.executors import harvest_executor
from mind_harvest.pipelines.partitions import harvest_sources
from mind_harvest.pipelines.resources import EmbedderResource, MindHomeResource

from mind_core.testing.fakes import HashingEmbedder
from tests.pipelines.doubles import CountingPluginsResource

CHUNK_TEXTS = 8
SECONDS_PER_TEXT = 0.4  # a chunk embeds for about 3 s
CHUNK_CONFIG = {"ops": {"staged_vectors": {"ops": {"plan_vector_chunks": {"config": {"chunk_texts": CHUNK_TEXTS}}}}}}


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
    seconds_per_text: float = SECONDS_PER_TEXT

    def build(self) -> HashingEmbedder:
        return SlowHashingEmbedder(self.seconds_per_text)


harvest_job = dg.define_asset_job(
    jobs.harvest_job.name,
    selection=jobs.harvest_job.selection,
    config=dg.PartitionedConfig(
        partitions_def=harvest_sources,
        run_config_for_partition_key_fn=lambda key: {
            "ops": {**jobs.harvest_job.config.get_run_config_for_partition_key(key).get("ops", {}), **CHUNK_CONFIG["ops"]}
        },
        tags_for_partition_key_fn=lambda key: {  # the mind's tags (Dagster adds the partition's own)
            k: v for k, v in jobs.harvest_job.config.get_tags_for_partition_key(key).items() if not k.startswith("dagster/")
        },
    ),
)

defs = dg.Definitions(
    assets=ASSETS,
    asset_checks=ALL_CHECKS,
    jobs=[harvest_job],
    resources={
        "mind_home": MindHomeResource(),
        "embedder": SlowFakeEmbedderResource(),
        "plugins": CountingPluginsResource(),
    },
    executor=harvest_executor,
)
