"""The executor is chosen by Dagster configuration: a run's config picks the mode, a run that
picks none gets the deployment's ($MIND_HARVEST_DAGSTER_EXECUTOR, read when the run starts), and
the default runs every step in the run's process. Real runs of the harvest job, whose steps go to
other processes when asked."""

import dagster as dg
import pytest
from mind_harvest.pipelines.executors import EXECUTOR_ENV, harvest_executor, run_executor

from mind_core.errors import InvalidInputError
from mind_core.testing.exports import write_chatgpt_export
from tests.pipelines import queued_location
from tests.pipelines.harness import add_partitions, register

pytestmark = pytest.mark.slow


def engine_messages(instance, run_id) -> list[str]:
    return [
        e.dagster_event.message or ""
        for e in instance.all_logs(run_id)
        if e.is_dagster_event and e.dagster_event.event_type == dg.DagsterEventType.ENGINE_EVENT
    ]


def run(instance, key, run_config=None, only_the_scan: bool = False) -> dg.DagsterRun:
    """A run of the harvest job; ``only_the_scan``: its first step alone (each step of a
    multiprocess run is a new process: the whole chain twice took two minutes of the suite)."""
    job = dg.reconstructable(queued_location.harvest_job_def)
    selection = {"asset_selection": [dg.AssetKey("harvest_items")]} if only_the_scan else {}
    with dg.execute_job(
        job, instance=instance, run_config=run_config or {}, tags={"dagster/partition": key}, **selection
    ) as result:
        assert result.success
        return result.dagster_run


def test_the_run_config_chooses_the_executor_and_the_default_is_in_process(tmp_path, home, monkeypatch):
    monkeypatch.setenv("MIND_HOME", str(home.root))
    monkeypatch.delenv(EXECUTOR_ENV, raising=False)
    key = register(home, "alpha", "chatgpt", write_chatgpt_export(tmp_path / "e" / "c.json", 2, 3), "gpt")
    with dg.instance_for_test() as instance:
        add_partitions(instance, key)
        default = run(instance, key)
        assert any("Executing steps in process" in m for m in engine_messages(instance, default.run_id))
        config = {"execution": {"config": {"mode": "multiprocess"}}, "ops": {"harvest_items": {"config": {"force": True}}}}
        isolated = run(instance, key, config, only_the_scan=True)
        messages = engine_messages(instance, isolated.run_id)
        assert any("multiprocess executor" in m for m in messages), messages
        monkeypatch.setenv(EXECUTOR_ENV, "multiprocess")  # the deployment's mode, read at run start
        forced = {"ops": {"harvest_items": {"config": {"force": True}}}}
        forced_run = run(instance, key, forced, only_the_scan=True)
        assert any("multiprocess executor" in m for m in engine_messages(instance, forced_run.run_id))


def test_an_unknown_mode_is_refused_with_the_modes_there_are(monkeypatch):
    with pytest.raises(InvalidInputError, match="in_process, multiprocess, celery, k8s"):
        run_executor("threads")
    monkeypatch.setenv(EXECUTOR_ENV, "celery")
    assert run_executor().name == "celery"
    assert harvest_executor.name == "harvest_executor"
