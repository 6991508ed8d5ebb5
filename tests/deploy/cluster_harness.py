"""What the cluster tests share: a running local cluster with the test process pointed at its
instance, and the one-process harvest their minds are compared with."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import dagster as dg
import pytest
from mind_harvest.pipelines.resources import MindHomeResource

from deploy.local_cluster import ClusterSettings, LocalCluster
from mind_core.store.home import MindHome
from tests.pipelines import doubles
from tests.pipelines.harness import add_partitions, harvest


@contextmanager
def running_cluster(settings: ClusterSettings) -> Iterator[tuple[LocalCluster, dg.DagsterInstance]]:
    """The cluster started, and this process's DAGSTER_HOME and storage pointed at its instance."""
    with LocalCluster(settings) as running, pytest.MonkeyPatch.context() as patch:
        for name, value in running.instance_env.items():
            patch.setenv(name, value)
        with dg.DagsterInstance.get() as instance:
            yield running, instance


def harvest_in_one_process(home: MindHome, keys: Sequence[str], run_config: dict[str, Any] | None = None) -> None:
    """The partitions ``keys`` harvested one after another by in-process runs (the reference)."""
    resources = {
        "mind_home": MindHomeResource(root=str(home.root)),
        "embedder": doubles.FakeEmbedderResource(),
        "plugins": doubles.CountingPluginsResource(),
    }
    with dg.instance_for_test() as instance:
        add_partitions(instance, *keys)
        for key in keys:
            options = {"run_config": run_config} if run_config is not None else {}
            assert harvest(instance, resources, key, **options).success
