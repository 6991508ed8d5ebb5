import json
from datetime import UTC, datetime

import dagster as dg
from mind_harvest.pipelines.partitions import harvest_sources, mind_workspaces
from mind_harvest.pipelines.schedules import daily_memory_snapshot, daily_mind_upkeep
from mind_harvest.pipelines.sensors import harvest_sources_sensor

from mind_core.harvest.stores import HarvestSourceStore
from mind_core.mind import Mind
from mind_core.testing.exports import chatgpt_conversation, write_chatgpt_export
from tests.pipelines.harness import harvest, register


def tick(instance, resources, cursor=None) -> dg.SensorResult:
    """One sensor evaluation, with its partition requests applied as the daemon applies them."""
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources)
    result = harvest_sources_sensor(context)
    for request in result.dynamic_partitions_requests or []:
        if isinstance(request, dg.AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        else:
            for key in request.partition_keys:
                instance.delete_dynamic_partition(request.partitions_def_name, key)
    return result


def partitions(instance):
    return (
        sorted(instance.get_dynamic_partitions(harvest_sources.name)),
        sorted(instance.get_dynamic_partitions(mind_workspaces.name)),
    )


def test_partitions_follow_sources_as_they_are_registered_and_removed(tmp_path, home, instance, resources):
    export = write_chatgpt_export(tmp_path / "e" / "c.json", 1, 1)
    register(home, "alpha", "chatgpt", export, "gpt")
    result = tick(instance, resources)
    assert partitions(instance) == (["alpha/gpt"], ["alpha"])
    assert result.run_requests == []  # not an auto-sync source

    register(home, "beta", "chatgpt", export, "more")
    register(home, "alpha", "chatgpt", export, "notes")
    tick(instance, resources)
    assert partitions(instance) == (["alpha/gpt", "alpha/notes", "beta/more"], ["alpha", "beta"])

    with Mind.open(home.mind_path("alpha")) as mind:
        HarvestSourceStore(mind.db).remove("gpt")
    home.mind_path("beta").unlink()
    tick(instance, resources)
    assert partitions(instance) == (["alpha/notes"], ["alpha"])


def test_an_unreadable_mind_keeps_its_partitions(tmp_path, home, instance, resources):
    register(home, "alpha", "chatgpt", write_chatgpt_export(tmp_path / "e" / "c.json", 1, 1), "gpt")
    tick(instance, resources)
    home.mind_path("alpha").write_bytes(b"damaged" * 1000)
    tick(instance, resources)
    assert partitions(instance) == (["alpha/gpt"], ["alpha"])


def test_a_due_source_gets_exactly_one_run_and_a_new_one_only_when_it_changes(
    tmp_path, home, instance, resources
):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 2, 2)
    register(home, "alpha", "chatgpt", export, "gpt", auto_sync=True, interval_hours=1)
    register(home, "alpha", "chatgpt", export, "manual")

    first = tick(instance, resources)
    (request,) = first.run_requests
    assert request.partition_key == "alpha/gpt" and request.run_key.startswith("alpha/gpt@")
    assert request.tags == {"mind_harvest/workspace": "alpha", "mind_harvest/source": "gpt"}
    assert tick(instance, resources, first.cursor).run_requests == []  # same content: nothing new

    assert harvest(instance, resources, "alpha/gpt").success  # the requested run
    with Mind.open(home.mind_path("alpha")) as mind:  # an hour later, due again...
        mind.db.execute("UPDATE harvest_sources SET last_synced_at = '2020-01-01T00:00:00.000Z'")
    assert tick(instance, resources, first.cursor).run_requests == []  # ...but unchanged

    data = json.loads(export.read_text())
    data.append(chatgpt_conversation("conv-9", "New", ["a new message"]))
    export.write_text(json.dumps(data))
    changed = tick(instance, resources, first.cursor)
    (again,) = changed.run_requests
    assert again.partition_key == "alpha/gpt" and again.run_key != request.run_key
    assert tick(instance, resources, changed.cursor).run_requests == []


def test_the_daily_upkeep_runs_once_per_mind(instance):
    context = dg.build_schedule_context(
        instance=instance, scheduled_execution_time=datetime(2026, 3, 4, 3, 0, tzinfo=UTC)
    )
    assert isinstance(daily_mind_upkeep(context), dg.SkipReason)
    instance.add_dynamic_partitions(mind_workspaces.name, ["beta", "alpha"])
    requests = daily_mind_upkeep(context)
    assert [(r.partition_key, r.run_key) for r in requests] == [
        ("alpha", "alpha@2026-03-04"),
        ("beta", "beta@2026-03-04"),
    ]


def test_the_daily_snapshot_takes_the_day_it_runs_on_once_there_are_minds(instance):
    context = dg.build_schedule_context(
        instance=instance, scheduled_execution_time=datetime(2026, 3, 4, 23, 30, tzinfo=UTC)
    )
    assert isinstance(daily_memory_snapshot(context), dg.SkipReason)
    instance.add_dynamic_partitions(mind_workspaces.name, ["alpha"])
    request = daily_memory_snapshot(context)
    assert (request.partition_key, request.run_key) == ("2026-03-04", "snapshot@2026-03-04")
