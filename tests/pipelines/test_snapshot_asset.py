"""The daily snapshot asset writes to the resource's snapshot URL; an unreachable one fails the
step with the URL and the reason."""

import uuid

import dagster as dg
import fsspec
from mind_harvest.pipelines.assets import memory_snapshots
from mind_harvest.pipelines.resources import MindHomeResource

from mind_core.mind import Mind
from tests.pipelines.harness import materialized

DAY = "2026-03-04"


def one_mind(home):
    with Mind.open(home.workspace_path("alpha")) as mind:
        mind.sessions.ensure("g")
        mind.frames.create_i_frame("g", "a note for the analysts")


def test_the_snapshot_and_its_report_go_to_the_snapshot_url(home, instance, resources):
    one_mind(home)
    folder = f"/snapshots-{uuid.uuid4().hex}"
    url = f"memory://{folder}"
    mind_home = MindHomeResource(root=str(home.root), snapshot_url=url)
    result = dg.materialize([memory_snapshots], resources={**resources, "mind_home": mind_home},
                            instance=instance, partition_key=DAY)
    memory = fsspec.filesystem("memory")
    written = {path.removeprefix(folder + "/") for path in memory.find(folder)}
    memory.rm(folder, recursive=True)
    assert result.success
    taken = materialized(result)["memory_snapshots"]
    assert taken["snapshot_root"] == url and taken["report"] == f"{url}/reports/{DAY}/index.html"
    assert f"frames/workspace=alpha/snapshot_date={DAY}/part-0.parquet" in written
    assert f"reports/{DAY}/index.html" in written
    assert not (home.root / "snapshots").exists()


def test_an_unreachable_snapshot_url_fails_the_step_with_the_url_and_reason(home, instance, resources):
    one_mind(home)
    url = "nosuchfs://bucket/snapshots"
    mind_home = MindHomeResource(root=str(home.root), snapshot_url=url)
    result = dg.materialize([memory_snapshots], resources={**resources, "mind_home": mind_home},
                            instance=instance, partition_key=DAY, raise_on_error=False)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    data = failure.step_failure_data.user_failure_data
    assert data.description.startswith(f"snapshot destination {url} is unreachable: ")
    assert data.metadata["snapshot_url"].value == url
