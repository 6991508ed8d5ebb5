"""Each check passes on a clean harvest (see test_assets) and fails when its promise is broken."""

import json

import dagster as dg
import pytest
from mind_harvest.pipelines.checks import (
    embedding_fingerprint_matches,
    error_rate_below_threshold,
    indexes_cover_frames,
    mind_indexes_consistent,
    no_item_imported_twice,
    timestamps_kept,
)
from mind_harvest.pipelines.definitions import defs

from mind_core.mind import Mind
from mind_core.store.frames import NewFrame
from mind_core.testing.exports import chatgpt_conversation, write_chatgpt_export
from tests.pipelines import doubles
from tests.pipelines.harness import (
    add_partitions,
    check_results,
    harvest,
    materialized,
    register,
)
from tests.pipelines.ui_status import partition_status

pytestmark = pytest.mark.slow


@pytest.fixture
def harvested(tmp_path, home, instance, resources):
    """A clean harvest of one source; yields its partition key."""
    key = register(home, "alpha", "chatgpt", write_chatgpt_export(tmp_path / "e" / "c.json", 2, 3), "gpt")
    add_partitions(instance, key)
    assert harvest(instance, resources, key).success
    return key


def run_check(instance, resources, key, check, **kwargs) -> dg.AssetCheckEvaluation:
    """Execute one check alone (no materialization) for a partition, as "Execute" in the UI does."""
    job = defs.resolve_job_def("mind_upkeep_job" if check is mind_indexes_consistent else "harvest_job")
    (check_key,) = check.check_keys
    result = job.execute_in_process(
        partition_key=key,
        op_selection=[f"{check_key.asset_key.to_python_identifier()}_{check_key.name}"],
        instance=instance,
        resources=resources,
        **kwargs,
    )
    assert materialized(result) == {}
    (evaluation,) = result.get_asset_check_evaluations()
    return evaluation


def break_mind(home, sql, params=()):
    with Mind.open(home.mind_path("alpha")) as mind:
        mind.db.execute(sql, params)


def first_frame_id(home):
    with Mind.open(home.mind_path("alpha"), readonly=True) as mind:
        return mind.db.scalar("SELECT MIN(id) FROM memory_frames")


def test_a_source_that_fails_to_parse_entirely_fails_its_scan_with_error_and_blocks_the_import(
    tmp_path, home, instance, resources
):
    export = tmp_path / "e" / "conversations.json"
    export.parent.mkdir()
    export.write_text("{ this is not json")
    key = register(home, "alpha", "chatgpt", export, "gpt")
    add_partitions(instance, key)
    result = harvest(instance, resources, key, raise_on_error=False)
    assert not result.success
    parsed = check_results(result)["source_parsed"]
    assert not parsed.passed and parsed.severity == dg.AssetCheckSeverity.ERROR
    assert parsed.description.startswith("failed: every record failed")
    assert "conversations.json" in parsed.metadata["first_errors"].value  # the located errors
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_key == "harvest_items"
    assert materialized(result) == {}  # the scan failed: nothing imported, cognified, embedded
    assert partition_status(instance, "harvest_items", key) == "failed"
    with Mind.open(home.mind_path("alpha"), readonly=True) as mind:
        assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames") == 0
    assert doubles.FAKE_EMBEDDER.calls == 0


def test_error_rate_above_the_threshold_warns_and_the_threshold_is_configurable(
    tmp_path, home, instance, resources
):
    export = tmp_path / "e" / "conversations.json"
    export.parent.mkdir()
    records = [chatgpt_conversation(f"c{i}", f"T{i}", [f"message {i}"]) for i in range(3)] + [
        {"id": "x", "mapping": 1}
    ]
    export.write_text(json.dumps(records))
    key = register(home, "alpha", "chatgpt", export, "gpt")
    add_partitions(instance, key)
    result = harvest(instance, resources, key)
    warned = check_results(result)["error_rate_below_threshold"]
    assert not warned.passed and warned.severity == dg.AssetCheckSeverity.WARN
    assert "25.0% of 4 record(s)" in warned.description
    assert set(materialized(result)) == {
        "harvest_items",
        "staged_vectors",
        "iframe_imports",
        "cognified_frames",
        "vector_index",
    }
    relaxed = run_check(
        instance,
        resources,
        key,
        error_rate_below_threshold,
        run_config={"ops": {"harvest_items_error_rate_below_threshold": {"config": {"max_error_rate": 0.3}}}},
    )
    assert relaxed.passed


def test_an_item_imported_twice_fails(home, instance, resources, harvested):
    with Mind.open(home.mind_path("alpha")) as mind:
        original = mind.frames.get_by_id(mind.db.scalar("SELECT MIN(id) FROM memory_frames"))
        mind.frames.create_i_frames(
            [
                NewFrame(
                    original.gop_id,
                    original.content + "!",
                    "normal",
                    "import",
                    original.created_at,
                    original.metadata,
                )
            ]
        )
    evaluation = run_check(instance, resources, harvested, no_item_imported_twice)
    assert not evaluation.passed and evaluation.metadata["failures"].value == 1


def test_a_lost_timestamp_fails(home, instance, resources, harvested):
    break_mind(
        home,
        "UPDATE memory_frames SET created_at = '2031-01-01T00:00:00.000Z' WHERE id = ?",
        (first_frame_id(home),),
    )
    evaluation = run_check(instance, resources, harvested, timestamps_kept)
    assert not evaluation.passed and "2031-01-01" in evaluation.metadata["examples"].value


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM memory_frames_fts WHERE rowid = ?",
        "DELETE FROM memory_frames_vec WHERE rowid = ?",
        "UPDATE memory_frames SET embedded_hash = 'stale' WHERE id = ?",
    ],
)
def test_a_frame_missing_from_an_index_fails(home, instance, resources, harvested, sql):
    break_mind(home, sql, (first_frame_id(home),))
    evaluation = run_check(instance, resources, harvested, indexes_cover_frames)
    assert not evaluation.passed and evaluation.metadata["failures"].value == 1
    consistent = run_check(instance, resources, "alpha", mind_indexes_consistent)
    assert not consistent.passed


def test_another_embedding_model_fails_the_fingerprint_check(instance, resources, harvested):
    assert run_check(instance, resources, harvested, embedding_fingerprint_matches).passed
    other = {**resources, "embedder": doubles.OtherModelEmbedderResource()}
    evaluation = run_check(instance, other, harvested, embedding_fingerprint_matches)
    assert not evaluation.passed and "another-model" in evaluation.description
