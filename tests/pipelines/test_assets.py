import json
import os

import dagster as dg
import pytest
from mind_harvest.pipelines.assets import compacted_frames, memory_snapshots, reconciled_indexes
from mind_harvest.pipelines.checks import mind_indexes_consistent
from mind_harvest.pipelines.definitions import defs
from mind_harvest.pipelines.partitions import harvest_sources

from mind_core.harvest.pipeline import harvest as engine_harvest
from mind_core.harvest.pipeline import register_source
from mind_core.harvest.stores import HarvestSourceStore
from mind_core.mind import Mind
from mind_core.testing.dump import canonical_dump
from mind_core.testing.exports import chatgpt_conversation, write_chatgpt_export
from mind_core.testing.fakes import HashingEmbedder
from tests.pipelines import doubles
from tests.pipelines.harness import add_partitions, check_results, harvest, materialized, register

pytestmark = pytest.mark.slow


def write_vault(folder):
    (folder / "People").mkdir(parents=True)
    (folder / "Project Kestrel.md").write_text(
        "---\ncreated: 2024-02-01\n---\n# Project Kestrel\n\nKestrel moves billing to Postgres.\n\n"
        "## Risks\n\nThe cutover needs a read-only window.\n"
    )
    (folder / "People" / "Dana Lee.md").write_text("# Dana Lee\n\nDana owns the Kestrel cutover.\n")
    return folder


def frames_of(mind, source):
    return mind.db.scalar(
        "SELECT COUNT(*) FROM memory_frames WHERE json_extract(metadata, '$.provenance.source') = ?",
        (source,),
    )


def test_two_partitions_into_one_workspace_and_one_into_another(tmp_path, home, instance, resources):
    gpt = register(
        home, "alpha", "chatgpt", write_chatgpt_export(tmp_path / "gpt" / "conversations.json", 3, 4), "gpt"
    )
    notes = register(home, "alpha", "markdown", write_vault(tmp_path / "vault"), "notes")
    other = register(
        home,
        "beta",
        "chatgpt",
        write_chatgpt_export(tmp_path / "b" / "conversations.json", 2, 2, seed=9),
        "chats",
    )
    add_partitions(instance, gpt, notes, other)

    results = {key: harvest(instance, resources, key) for key in (gpt, notes, other)}

    for key, result in results.items():
        assert result.success
        assert all(c.passed for c in check_results(result).values()), key
        assert len(check_results(result)) == 6
    meta = {key: materialized(result) for key, result in results.items()}
    assert meta[gpt]["harvest_items"]["items"] == 3 and meta[gpt]["iframe_imports"]["frames_new"] == 12
    assert meta[notes]["iframe_imports"]["frames_new"] == 3  # one frame per section
    assert meta[other]["iframe_imports"]["frames_new"] == 4
    with (
        Mind.open(home.mind_path("alpha"), readonly=True) as alpha,
        Mind.open(home.mind_path("beta"), readonly=True) as beta,
    ):
        assert (frames_of(alpha, "gpt"), frames_of(alpha, "notes"), frames_of(alpha, "chats")) == (12, 3, 0)
        assert (frames_of(beta, "chats"), frames_of(beta, "gpt")) == (4, 0)
        assert alpha.doctor().ok and beta.doctor().ok
        assert (
            meta[notes]["vector_index"]["mind_vectors"]
            == 15
            == alpha.db.scalar("SELECT COUNT(*) FROM memory_frames_vec")
        )
        assert meta[notes]["cognified_frames"]["mind_entities"] == alpha.knowledge.get_entity_count() > 0
        assert "Kestrel" in meta[notes]["iframe_imports"]["new_frames"]
        fingerprints = {s.source: s.last_fingerprint for s in HarvestSourceStore(alpha.db).get_all()}
        assert all(fingerprints.values())  # each harvest completed in one run and recorded its state
    assert meta[gpt]["vector_index"]["harvest_complete"] is True
    assert meta[gpt]["harvest_items"]["staged_file"].endswith("staging/alpha/gpt.parquet")

    for workspace in ("alpha", "beta"):
        upkeep = dg.materialize(
            [reconciled_indexes, compacted_frames, mind_indexes_consistent],
            resources=resources,
            instance=instance,
            partition_key=workspace,
        )
        assert upkeep.success and check_results(upkeep)["mind_indexes_consistent"].passed
        assert materialized(upkeep)["reconciled_indexes"]["problems_after"] == "none"

    snapshot = dg.materialize(
        [memory_snapshots], resources=resources, instance=instance, partition_key="2026-03-04"
    )
    taken = materialized(snapshot)["memory_snapshots"]
    assert taken["minds"] == 2 and taken["frames"] == 19 and taken["snapshot_date"] == "2026-03-04"
    assert "| alpha |" in taken["rows_per_mind"] and "| beta |" in taken["rows_per_mind"]
    assert os.path.isfile(taken["report"]) and taken["report"].endswith("reports/2026-03-04/index.html")
    assert os.path.isdir(
        os.path.join(taken["snapshot_root"], "frames", "workspace=alpha", "snapshot_date=2026-03-04")
    )


def test_backfill_materializes_every_partition_of_the_harvest_job(tmp_path, home, instance, resources):
    """A backfill of harvest_job launches one run per partition; these are those runs, executed
    here one after another (the daemon that launches them is not part of a unit test)."""
    keys = [
        register(
            home, workspace, "chatgpt", write_chatgpt_export(tmp_path / name / "c.json", 2, 2, seed=n), name
        )
        for n, (workspace, name) in enumerate([("alpha", "a1"), ("alpha", "a2"), ("beta", "b1")])
    ]
    add_partitions(instance, *keys)
    job = defs.resolve_job_def("harvest_job")
    all_keys = job.partitions_def.get_partition_keys(dynamic_partitions_store=instance)
    assert sorted(all_keys) == sorted(keys)
    for key in all_keys:
        result = job.execute_in_process(partition_key=key, instance=instance, resources=resources)
        assert result.success
    status = instance.get_status_by_partition(dg.AssetKey("vector_index"), all_keys, harvest_sources)
    assert set(status.values()) == {dg.AssetPartitionStatus.MATERIALIZED}
    with Mind.open(home.mind_path("alpha"), readonly=True) as alpha:
        assert alpha.db.scalar("SELECT COUNT(*) FROM memory_frames") == 8


def test_rematerializing_an_unchanged_partition_writes_and_embeds_nothing(
    tmp_path, home, instance, resources
):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 3, 3)
    key = register(home, "alpha", "chatgpt", export, "gpt")
    add_partitions(instance, key)
    assert harvest(instance, resources, key).success
    with Mind.open(home.mind_path("alpha"), readonly=True) as mind:
        before = canonical_dump(mind)
    doubles.reset()

    again = harvest(instance, resources, key)
    assert again.success and materialized(again) == {}  # nothing changed, so nothing materialized
    observation = again.asset_observations_for_node("harvest_items")[0]
    assert observation.metadata["skipped"].value is True
    assert doubles.SCANS["gpt"] == 0 and doubles.FAKE_EMBEDDER.calls == 0
    with Mind.open(home.mind_path("alpha"), readonly=True) as mind:
        assert canonical_dump(mind) == before

    os.utime(export, (1_800_000_000, 1_800_000_000))  # touched, same content: scanned, but nothing to write
    touched = harvest(instance, resources, key)
    assert doubles.SCANS["gpt"] == 1 and doubles.FAKE_EMBEDDER.calls == 0
    imports = materialized(touched)["iframe_imports"]
    assert (
        imports["frames_new"] == 0 and imports["frames_unchanged"] == 9 and imports["unchanged_set"] is True
    )
    with Mind.open(home.mind_path("alpha"), readonly=True) as mind:
        assert canonical_dump(mind) == before


def test_the_run_log_shows_the_vector_step_s_progress(tmp_path, home, instance, resources):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 3, 3)
    key = register(home, "alpha", "chatgpt", export, "gpt")
    add_partitions(instance, key)
    result = harvest(instance, resources, key)
    messages = [r.user_message for r in instance.all_logs(result.run_id) if r.step_key == "vector_index"]
    assert "frames embedded: 9 of 9" in messages


def test_a_changed_source_imports_and_embeds_only_what_changed(tmp_path, home, instance, resources):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 2, 2)
    key = register(home, "alpha", "chatgpt", export, "gpt")
    add_partitions(instance, key)
    harvest(instance, resources, key)
    data = json.loads(export.read_text())
    data.append(
        chatgpt_conversation(
            "conv-new", "Kestrel cutover", ["When is the read-only window?"], 1_710_000_000.0
        )
    )
    export.write_text(json.dumps(data))
    doubles.reset()

    result = harvest(instance, resources, key)
    meta = materialized(result)
    assert meta["iframe_imports"]["frames_new"] == 1 and meta["iframe_imports"]["frames_unchanged"] == 4
    assert meta["vector_index"]["vectors_written"] == 1
    assert doubles.FAKE_EMBEDDER.texts_embedded == ["[Kestrel cutover] User: When is the read-only window?"]
    assert "2024-03-09T16:00:00.000Z" in meta["iframe_imports"]["new_frames"]  # the message's own time


def test_force_rescans_an_unchanged_source(tmp_path, home, instance, resources):
    key = register(home, "alpha", "chatgpt", write_chatgpt_export(tmp_path / "e" / "c.json", 1, 2), "gpt")
    add_partitions(instance, key)
    harvest(instance, resources, key)
    forced = harvest(
        instance, resources, key, run_config={"ops": {"harvest_items": {"config": {"force": True}}}}
    )
    assert doubles.SCANS["gpt"] == 2
    assert materialized(forced)["iframe_imports"]["frames_unchanged"] == 2


def test_located_errors_are_listed_and_good_items_still_imported(tmp_path, home, instance, resources):
    export = tmp_path / "e" / "conversations.json"
    good = chatgpt_conversation("ok", "Fine", ["a readable message"])
    export.parent.mkdir()
    export.write_text(json.dumps([good, {"id": "bad", "mapping": "not a mapping"}]))
    key = register(home, "alpha", "chatgpt", export, "gpt")
    add_partitions(instance, key)
    result = harvest(instance, resources, key)
    meta = materialized(result)
    assert meta["harvest_items"]["items"] == 1 and meta["harvest_items"]["errors"] == 1
    table = meta["harvest_items"]["first_errors"]
    assert table.startswith("| # | file | record | reason |") and "conversations.json" in table
    assert meta["iframe_imports"]["frames_new"] == 1 and meta["iframe_imports"]["errors"] == 1


@pytest.mark.parametrize("asset", ["iframe_imports", "cognified_frames", "staged_vectors", "vector_index"])
def test_downstream_harvest_assets_follow_their_upstream(asset):
    condition = defs.resolve_assets_def(asset).get_asset_spec().automation_condition
    labels = {operand.get_label() for operand in condition.children}
    assert labels == {"eager", "all_deps_blocking_checks_passed"}


def test_the_dagster_harvest_writes_the_same_mind_as_the_engine_harvest(tmp_path, home, instance, resources):
    export = write_vault(tmp_path / "vault")
    key = register(home, "alpha", "markdown", export, "notes")
    add_partitions(instance, key)
    assert harvest(instance, resources, key).success
    with Mind.open(tmp_path / "engine.mind", embedder=HashingEmbedder()) as engine:
        register_source(engine, "markdown", export, "notes")
        engine_harvest(engine, "notes")
        expected = canonical_dump(engine)
    with Mind.open(home.mind_path("alpha"), readonly=True) as mind:
        assert canonical_dump(mind) == expected


def test_a_partition_whose_mind_was_deleted_fails_with_a_clear_message(tmp_path, home, instance, resources):
    key = register(home, "alpha", "chatgpt", write_chatgpt_export(tmp_path / "e" / "c.json", 1, 1), "gpt")
    add_partitions(instance, key)
    home.mind_path("alpha").unlink()
    result = harvest(instance, resources, key, raise_on_error=False)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    cause = failure.step_failure_data.error.cause
    assert cause.cls_name == "NotFoundError" and "no mind for workspace 'alpha'" in cause.message
