"""One harvest history: the command line's harvests are recorded in the mind home's Dagster
instance; a Dagster run of an unchanged source leaves it materialized; broken sources fail their
runs with the reason in plain sight, on both paths."""

import dagster as dg
import pytest
from mind_harvest.pipelines.assets import harvest_items
from mind_harvest.pipelines.chain import CHAIN
from mind_harvest.pipelines.checks import SOURCE_CHECKS
from mind_harvest.pipelines.failed_sources import record_failed_sources
from mind_harvest.pipelines.history import JOB_NAME
from mind_harvest.pipelines.partitions import harvest_sources

from mind_core.cli import EXIT_FAILED, EXIT_OK, main
from mind_core.harvest.pipeline import harvest as engine_harvest
from mind_core.mind import Mind
from mind_core.testing.exports import write_chatgpt_export
from tests.pipelines.harness import (
    HARVEST_ASSETS,
    add_partitions,
    check_results,
    harvest,
    materialized,
    register,
)
from tests.pipelines.ui_status import CheckStatus, check_status, partition_status

# The checks a command-line harvest evaluates (the embedder's is left to Dagster's runs).
RECORDED = [
    ("harvest_items", "source_parsed"),
    ("harvest_items", "error_rate_below_threshold"),
    ("iframe_imports", "no_item_imported_twice"),
    ("iframe_imports", "timestamps_kept"),
    ("vector_index", "indexes_cover_frames"),
]


@pytest.fixture
def cli_home(home, monkeypatch):
    """The mind home of the command line, whose instance is ``<home>/dagster`` (no DAGSTER_HOME)."""
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    return home


def mind(cli_home, *argv):
    return main([*argv, "--home", str(cli_home.root), "--workspace", "alpha", "--embedder", "mock", "-q"])


def latest(instance, asset, partition):
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]), limit=1
    ).records
    return records[0].asset_materialization if records else None


def test_a_command_line_harvest_is_recorded_as_the_partitions_materializations(tmp_path, cli_home):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 2, 5)
    assert mind(cli_home, "sources", "add", "chatgpt", str(export), "--name", "gpt") == EXIT_OK
    assert mind(cli_home, "harvest") == EXIT_OK
    with dg.DagsterInstance.from_config(str(cli_home.root / "dagster")) as instance:
        assert instance.has_dynamic_partition(harvest_sources.name, "alpha/gpt")
        recorded = {asset: latest(instance, asset, "alpha/gpt") for asset in CHAIN}
        assert all(recorded.values()), recorded
        assert recorded["iframe_imports"].metadata["frames_new"].value == 10
        written = [recorded[a].metadata["vectors_written"].value for a in ("cognified_frames", "vector_index")]
        assert sum(written) == 10  # cognify embeds what it processed, the vector step the rest
        assert recorded["harvest_items"].tags["mind_harvest/recorded_by"] == "command-line"
        (run,) = instance.get_runs()
        assert run.job_name == JOB_NAME and run.status == dg.DagsterRunStatus.SUCCESS
        for asset, check in RECORDED:  # evaluated, not "Not evaluated"
            assert check_status(instance, asset, check, "alpha/gpt") == CheckStatus("SUCCEEDED", run.run_id)
    write_chatgpt_export(export, 2, 5, seed=99)  # the export changed: harvested again
    assert mind(cli_home, "harvest") == EXIT_OK  # a second harvest is recorded as well
    with dg.DagsterInstance.from_config(str(cli_home.root / "dagster")) as instance:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("iframe_imports"), asset_partitions=["alpha/gpt"]), limit=5
        ).records
        assert len(records) == 2


def test_failed_command_line_harvests_are_red_each_linked_to_its_own_run(tmp_path, cli_home, capsys):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "note.md").write_text("# A note\n\nSome text.\n")
    assert mind(cli_home, "sources", "add", "markdown", str(vault), "--name", "notes") == EXIT_OK
    (vault / "note.md").unlink()
    vault.rmdir()
    assert mind(cli_home, "harvest") == EXIT_FAILED
    assert mind(cli_home, "harvest") == EXIT_FAILED  # tried again, and recorded again
    assert "could not record" not in capsys.readouterr().err
    with dg.DagsterInstance.from_config(str(cli_home.root / "dagster")) as instance:
        runs = instance.get_runs()
        assert [run.status for run in runs] == [dg.DagsterRunStatus.FAILURE] * 2
        assert {run.job_name for run in runs} == {JOB_NAME}
        assert all(run.tags["mind_harvest/recorded_by"] == "command-line" for run in runs)
        assert all(run.tags["dagster/partition"] == "alpha/notes" for run in runs)
        assert latest(instance, "harvest_items", "alpha/notes") is None
        assert all(partition_status(instance, asset, "alpha/notes") == "failed" for asset in CHAIN)
        parsed = check_status(instance, "harvest_items", "source_parsed", "alpha/notes")
        assert parsed == CheckStatus("FAILED", runs[0].run_id)  # the newest failure, its own run
        (failure,) = [e for e in instance.all_logs(runs[0].run_id) if e.is_dagster_event and e.dagster_event.is_step_failure]
        reason = failure.dagster_event.step_failure_data.user_failure_data.description
        assert reason.startswith("alpha/notes: missing: ") and "does not exist" in reason

    vault.mkdir()
    (vault / "note.md").write_text("# A note\n\nSome text.\n")
    assert mind(cli_home, "harvest") == EXIT_OK  # repaired: green again, its checks evaluated
    with dg.DagsterInstance.from_config(str(cli_home.root / "dagster")) as instance:
        assert all(partition_status(instance, asset, "alpha/notes") == "materialized" for asset in CHAIN)
        newest = instance.get_runs(limit=1)[0]
        assert newest.status == dg.DagsterRunStatus.SUCCESS
        for asset, check in RECORDED:
            assert check_status(instance, asset, check, "alpha/notes") == CheckStatus("SUCCEEDED", newest.run_id)


def test_a_dagster_run_of_an_unchanged_source_keeps_it_materialized(tmp_path, home, instance, resources):
    key = register(home, "alpha", "chatgpt", write_chatgpt_export(tmp_path / "e" / "c.json", 2, 3), "gpt")
    with Mind.open(home.mind_path("alpha"), embedder=resources["embedder"].build()) as opened:
        assert engine_harvest(opened, "gpt").status == "ok"  # harvested outside this instance's history
    add_partitions(instance, key)
    result = harvest(instance, resources, key)
    assert result.success and set(materialized(result)) == set(CHAIN)
    assert all(metadata["unchanged"] is True for metadata in materialized(result).values())
    again = harvest(instance, resources, key)
    assert again.success and materialized(again) == {}  # already up to date: nothing new recorded
    assert all(key in instance.get_materialized_partitions(dg.AssetKey(asset)) for asset in CHAIN)


def record_failure(instance, resources, result) -> None:
    """What the daemon does with a failed run: ``record_failed_sources`` evaluated for it."""
    run = instance.get_run_by_id(result.run_id)
    (failure,) = [e for e in result.all_events if e.event_type == dg.DagsterEventType.RUN_FAILURE]
    context = dg.build_run_status_sensor_context(
        sensor_name=record_failed_sources.name,
        dagster_instance=instance,
        dagster_run=run,
        dagster_event=failure,
        resources={"mind_home": resources["mind_home"]},
    )
    record_failed_sources(context.for_run_failure())


@pytest.mark.slow
def test_broken_sources_fail_their_scan_red_with_the_reason(tmp_path, home, instance, resources):
    missing = tmp_path / "gone"
    missing.mkdir()
    empty = tmp_path / "empty"
    empty.mkdir()
    keys = {
        "missing": register(home, "alpha", "markdown", missing, "missing"),
        "empty": register(home, "alpha", "markdown", empty, "empty"),
    }
    missing.rmdir()
    add_partitions(instance, *keys.values())
    gone = harvest(instance, resources, keys["missing"], raise_on_error=False)
    assert not gone.success
    (failure,) = [e for e in gone.all_events if e.is_step_failure]
    assert failure.step_key == "harvest_items"
    assert "missing: " in failure.step_failure_data.user_failure_data.description
    assert "does not exist" in failure.step_failure_data.user_failure_data.description

    nothing = harvest(instance, resources, keys["empty"], raise_on_error=False)
    assert not nothing.success
    parsed = check_results(nothing)["source_parsed"]
    assert not parsed.passed and parsed.description.startswith("empty: no file in ")
    assert materialized(nothing) == {}  # the scan failed: nothing imported
    for key, result in ((keys["missing"], gone), (keys["empty"], nothing)):
        assert all(partition_status(instance, asset, key) == "failed" for asset in CHAIN), key
        assert check_status(instance, "harvest_items", "source_parsed", key) == CheckStatus("FAILED", result.run_id)

    with Mind.open(home.mind_path("alpha"), readonly=True) as opened:  # recorded on the home node
        assert dict(opened.db.query("SELECT source, last_status FROM harvest_sources")) == {
            "missing": None,
            "empty": None,
        }
    record_failure(instance, resources, gone)
    record_failure(instance, resources, nothing)
    with Mind.open(home.mind_path("alpha"), readonly=True) as opened:
        statuses = dict(opened.db.query("SELECT source, last_status FROM harvest_sources"))
    assert statuses == {"missing": "missing", "empty": "empty"}


@pytest.mark.slow
def test_the_automation_sensor_starts_no_second_run_for_a_broken_source(tmp_path, home, instance, resources):
    broken = tmp_path / "e" / "conversations.json"
    broken.parent.mkdir()
    broken.write_text("{ this is not json")
    key = register(home, "alpha", "chatgpt", broken, "broken")
    good = register(home, "alpha", "chatgpt", write_chatgpt_export(tmp_path / "g" / "c.json", 2, 3), "good")
    add_partitions(instance, key, good)
    defs = dg.Definitions(assets=HARVEST_ASSETS, asset_checks=SOURCE_CHECKS, resources=resources)
    targets = [a.key for a in HARVEST_ASSETS if a.key != harvest_items.key]

    def tick(cursor):
        evaluated = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
        requested = {(t.to_user_string(), p) for t in targets for p in evaluated.get_requested_partitions(t)}
        return requested, evaluated.cursor

    _, cursor = tick(None)  # the sensor's first tick, before any harvest
    assert not harvest(instance, resources, key, raise_on_error=False).success
    scanned = dg.materialize([harvest_items], resources=resources, instance=instance, partition_key=good)
    assert scanned.success  # the good source's scan alone, as "Materialize" in the UI does
    requested, cursor = tick(cursor)
    assert ("iframe_imports", good) in requested  # the rest of the good source's chain follows
    assert all(partition != key for _, partition in requested)  # the broken one's does not
    for _ in range(2):  # nor later, while the broken source stays as it is
        requested, cursor = tick(cursor)
        assert all(partition != key for _, partition in requested)
