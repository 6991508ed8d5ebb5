"""The run queue of the shipped instance holds every run of a mind, whoever made it: a run of a
harvest source's or a mind's partition made without the jobs' tags (as the automation sensor
and asset backfills make them) gets the mind's tag when it is queued, so the one-run-per-mind
limit counts it; the jobs' own runs and other partitions keep their tags as they are."""

import shutil

import dagster as dg
from dagster._core.remote_origin import RegisteredCodeLocationOrigin, RemoteRepositoryOrigin
from mind_harvest.pipelines.instance import SHIPPED_CONFIG
from mind_harvest.pipelines.jobs import SOURCE_TAG, WORKSPACE_TAG
from mind_harvest.pipelines.partitions import harvest_sources, mind_workspaces
from mind_harvest.pipelines.run_queue import MindRunCoordinator


@dg.asset(partitions_def=harvest_sources)
def _source_asset() -> None: ...


@dg.asset(partitions_def=mind_workspaces)
def _mind_asset() -> None: ...


JOB = dg.Definitions(assets=[_source_asset, _mind_asset]).resolve_implicit_global_asset_job_def()
# where a queued run says it comes from (the daemon reloads the job from there to launch it)
ORIGIN = RemoteRepositoryOrigin(RegisteredCodeLocationOrigin("harvest"), "__repository__").get_job_origin(JOB.name)


def _queued(instance: dg.DagsterInstance, **tags: str) -> dg.DagsterRun:
    run = instance.create_run_for_job(JOB, tags=tags, remote_job_origin=ORIGIN)
    instance.run_coordinator.submit_run(dg.SubmitRunContext(run, workspace=None))
    return instance.get_run_by_id(run.run_id)


def test_runs_of_a_mind_made_without_its_tag_get_it_when_queued(tmp_path):
    shutil.copyfile(SHIPPED_CONFIG, tmp_path / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert isinstance(instance.run_coordinator, MindRunCoordinator)
        instance.add_dynamic_partitions(harvest_sources.name, ["alpha/chats"])
        instance.add_dynamic_partitions(mind_workspaces.name, ["alpha"])

        automation = _queued(instance, **{"dagster/partition": "alpha/chats"})
        assert automation.status == dg.DagsterRunStatus.QUEUED
        assert automation.tags[WORKSPACE_TAG] == "alpha" and automation.tags[SOURCE_TAG] == "chats"
        assert _queued(instance, **{"dagster/partition": "alpha"}).tags[WORKSPACE_TAG] == "alpha"

        tagged = _queued(instance, **{"dagster/partition": "alpha/chats", WORKSPACE_TAG: "alpha", SOURCE_TAG: "x"})
        assert tagged.tags[SOURCE_TAG] == "x"  # the job's own tags are left as they are
        for other in ({"dagster/partition": "2026-12-01"}, {}):  # a snapshot day, an unpartitioned run
            assert WORKSPACE_TAG not in _queued(instance, **other).tags
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
        assert limits == [{"key": WORKSPACE_TAG, "value": {"applyLimitPerUniqueValue": True}, "limit": 1}]
