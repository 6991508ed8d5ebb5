"""A scheduled source whose files changed is overdue once twice its interval passed without a
harvest; an unchanged one is fresh however old its harvest. The check runs as its schedule runs
it (``source_freshness_job``) against a real instance."""

from datetime import timedelta

import dagster as dg
from mind_harvest.pipelines.definitions import defs

from mind_core.harvest.pipeline import harvest as engine_harvest
from mind_core.mind import Mind
from mind_core.testing.exports import write_chatgpt_export
from tests.pipelines.harness import register


def freshness(instance, resources) -> dg.AssetCheckEvaluation:
    job = defs.resolve_job_def("source_freshness_job")
    result = job.execute_in_process(instance=instance, resources=resources)
    (evaluation,) = result.get_asset_check_evaluations()
    return evaluation


def test_a_scheduled_source_with_changes_waiting_is_overdue_after_two_intervals(
    tmp_path, home, instance, resources, now
):
    export = write_chatgpt_export(tmp_path / "e" / "c.json", 2, 3)
    register(home, "alpha", "chatgpt", export, "gpt", auto_sync=True, interval_hours=6)
    register(home, "alpha", "chatgpt", export, "manual")  # not scheduled: never overdue
    never = freshness(instance, resources)
    assert not never.passed and never.severity == dg.AssetCheckSeverity.WARN
    assert never.description == "1 scheduled source(s) overdue: alpha/gpt"

    with Mind.open(home.mind_path("alpha"), embedder=resources["embedder"].build()) as mind:
        assert engine_harvest(mind, "gpt").status == "ok"
    now.instant += timedelta(days=30)
    assert freshness(instance, resources).passed  # unchanged: nothing waits, however old

    write_chatgpt_export(export, 2, 3, seed=7)
    now.instant += timedelta(hours=1)
    assert not freshness(instance, resources).passed  # changed, harvested 30 days ago
    with Mind.open(home.mind_path("alpha"), embedder=resources["embedder"].build()) as mind:
        assert engine_harvest(mind, "gpt").status == "ok"
    write_chatgpt_export(export, 2, 3, seed=8)
    now.instant += timedelta(hours=11)  # changed, due, but within two intervals of its harvest
    assert freshness(instance, resources).passed
    now.instant += timedelta(hours=2)
    late = freshness(instance, resources)
    assert not late.passed and "alpha/gpt" in late.metadata["sources"].value
