"""One harvest history: the command line's harvests are recorded in the mind home's Dagster
instance; a Dagster run of an unchanged source leaves it materialized; broken sources fail their
runs with the reason in plain sight, on both paths."""

import dagster as dg
import pytest
from mind_harvest.pipelines.history import CHAIN
from mind_harvest.pipelines.partitions import harvest_sources

from mind_core.cli import EXIT_FAILED, EXIT_OK, main
from mind_core.harvest.pipeline import harvest as engine_harvest
from mind_core.mind import Mind
from mind_core.testing.exports import write_chatgpt_export
from tests.pipelines.harness import add_partitions, check_results, harvest, materialized, register


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
    write_chatgpt_export(export, 2, 5, seed=99)  # the export changed: harvested again
    assert mind(cli_home, "harvest") == EXIT_OK  # a second harvest is recorded as well
    with dg.DagsterInstance.from_config(str(cli_home.root / "dagster")) as instance:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("iframe_imports"), asset_partitions=["alpha/gpt"]), limit=5
        ).records
        assert len(records) == 2


def test_failed_command_line_harvests_are_recorded_with_the_reason(tmp_path, cli_home, capsys):
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
        assert latest(instance, "harvest_items", "alpha/notes") is None
        observations = instance.fetch_observations(dg.AssetKey("harvest_items"), limit=10).records
        assert len(observations) == 2
        observation = observations[0].asset_observation
        assert observation.partition == "alpha/notes"
        assert observation.description.startswith("missing: ") and "does not exist" in observation.description


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


@pytest.mark.slow
def test_broken_sources_fail_their_runs_with_the_reason(tmp_path, home, instance, resources):
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
    assert "missing: " in failure.step_failure_data.user_failure_data.description
    assert "does not exist" in failure.step_failure_data.user_failure_data.description

    nothing = harvest(instance, resources, keys["empty"], raise_on_error=False)
    assert not nothing.success
    parsed = check_results(nothing)["source_parsed"]
    assert not parsed.passed and parsed.description.startswith("empty: no file in ")
    assert set(materialized(nothing)) == {"harvest_items"}  # blocked: nothing imported
    with Mind.open(home.mind_path("alpha"), readonly=True) as opened:
        statuses = dict(opened.db.query("SELECT source, last_status FROM harvest_sources"))
    assert statuses == {"missing": "missing", "empty": "empty"}
