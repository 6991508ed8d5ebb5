"""The harvest split by what each stage needs: chunked embedding on any worker, writes at home."""

import uuid

import dagster as dg
import fsspec
import pytest
from mind_harvest.pipelines.assets import harvest_items
from mind_harvest.pipelines.definitions import STEP_OUTPUTS_URL_ENV, default_resources, defs
from mind_harvest.pipelines.resources import MindHomeResource
from mind_harvest.pipelines.routing import QUEUE_TAG, STAGE_TAG, WRITE_POOL

from mind_core.harvest.pipeline import harvest as engine_harvest
from mind_core.harvest.pipeline import register_source
from mind_core.harvest.staging import staged_scan_info
from mind_core.mind import Mind
from mind_core.testing.dump import canonical_dump
from mind_core.testing.exports import write_chatgpt_export
from mind_core.testing.fakes import HashingEmbedder
from tests.pipelines import doubles
from tests.pipelines.harness import add_partitions, harvest, materialized, register

SMALL_CHUNKS = {"ops": {"staged_vectors": {"ops": {"plan_vector_chunks": {"config": {"chunk_texts": 4}}}}}}


class FlakyEmbedder(HashingEmbedder):
    """Fails its first batch, as a worker killed mid-chunk would."""

    failed = False

    def embed_batch(self, texts):
        if not FlakyEmbedder.failed:
            FlakyEmbedder.failed = True
            raise RuntimeError("worker lost")
        return super().embed_batch(texts)


class FlakyEmbedderResource(doubles.FakeEmbedderResource):
    def build(self):
        return FLAKY


FLAKY = FlakyEmbedder()


def engine_dump(tmp_path, export):
    with Mind.open(tmp_path / "engine.mind", embedder=HashingEmbedder()) as engine:
        register_source(engine, "chatgpt", export, "gpt")
        engine_harvest(engine, "gpt")
        return canonical_dump(engine)


def test_a_chunked_harvest_writes_the_same_mind_as_the_engine(tmp_path, home, instance, resources):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 3, 5)
    key = register(home, "alpha", "chatgpt", export, "gpt")
    add_partitions(instance, key)
    result = harvest(instance, resources, key, run_config=SMALL_CHUNKS)
    assert result.success
    meta = materialized(result)
    assert meta["staged_vectors"]["chunks"] == 4 and meta["staged_vectors"]["texts_embedded"] == 15
    assert meta["vector_index"]["vectors_loaded"] == 15 and meta["vector_index"]["vectors_embedded_here"] == 0
    with Mind.open(home.mind_path("alpha"), readonly=True) as mind:
        assert canonical_dump(mind) == engine_dump(tmp_path, export)


@pytest.mark.slow
def test_a_failed_chunk_is_retried_and_the_mind_ends_identical(tmp_path, home, instance, resources):
    export = write_chatgpt_export(tmp_path / "e" / "conversations.json", 2, 4)
    key = register(home, "alpha", "chatgpt", export, "gpt")
    add_partitions(instance, key)
    FlakyEmbedder.failed = False
    result = harvest(instance, {**resources, "embedder": FlakyEmbedderResource()}, key, run_config=SMALL_CHUNKS)
    assert result.success and FlakyEmbedder.failed
    retried = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY]
    assert len(retried) == 1 and retried[0].step_key.startswith("staged_vectors.embed_vector_chunk[")
    with Mind.open(home.mind_path("alpha"), readonly=True) as mind:
        assert canonical_dump(mind) == engine_dump(tmp_path, export)


def test_an_unreachable_staging_store_fails_the_run_with_its_url_and_reason(tmp_path, home, instance, resources):
    key = register(home, "alpha", "chatgpt", write_chatgpt_export(tmp_path / "e" / "c.json", 1, 1), "gpt")
    add_partitions(instance, key)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the store should be")
    url = blocker.as_uri() + "/staging"
    mind_home = MindHomeResource(root=str(home.root), staging_url=url)
    result = harvest(instance, {**resources, "mind_home": mind_home}, key, raise_on_error=False)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    description = failure.step_failure_data.user_failure_data.description
    assert description.startswith(f"staging store {url} is unreachable: ")
    assert failure.step_failure_data.user_failure_data.metadata["staging_url"].value == url
    with Mind.open(home.mind_path("alpha"), readonly=True) as mind:
        assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames") == 0


def test_every_step_names_its_queue():
    job = defs.resolve_job_def("harvest_job")
    ops = {op.name: op for op in job.graph.iterate_op_defs()}
    stages = {name: (op.tags[STAGE_TAG], op.tags[QUEUE_TAG]) for name, op in ops.items() if STAGE_TAG in op.tags}
    assert stages["harvest_items"] == ("stateless", "any")
    assert stages["embed_vector_chunk"] == ("stateless", "any")
    assert stages["plan_vector_chunks"] == ("writing", "home")
    for name in ("iframe_imports", "cognified_frames", "vector_index"):
        assert stages[name] == ("writing", "home")
    assert ops["embed_vector_chunk"].retry_policy.max_retries == 3
    writing = {name for name, (stage, _queue) in stages.items() if stage == "writing"}
    assert {name for name, op in ops.items() if op.pool == WRITE_POOL} == writing  # every writer, only them


@pytest.mark.slow
def test_the_harvest_jobs_runs_carry_the_source_so_the_scan_opens_no_mind(
    tmp_path, home, instance, resources, monkeypatch
):
    """The run config is made where the code location runs (the home node); a worker without any
    mind scans from it into the shared staging store, and skips an unchanged source."""
    key = register(home, "alpha", "chatgpt", write_chatgpt_export(tmp_path / "e" / "c.json", 2, 3), "gpt")
    add_partitions(instance, key)
    monkeypatch.setenv("MIND_HOME", str(home.root))
    job = defs.resolve_job_def("harvest_job")
    registered = resources["mind_home"].registered_source("alpha", "gpt")
    made = job.partitioned_config.get_run_config_for_partition_key(key)
    assert made["ops"]["harvest_items"]["config"] == {
        "kind": "chatgpt", "source_path": registered.source_path, "last_fingerprint": None,
        "max_file_bytes": None, "follow_outside_links": False, "exclude": [],  # its reading rules (defaults)
        "redact": [],  # its redaction policy: none
    }
    staging_url = resources["mind_home"].staging().url
    any_node = {**resources, "mind_home": MindHomeResource(root=str(tmp_path / "any-node"), staging_url=staging_url)}

    without = dg.materialize([harvest_items], resources=any_node, instance=instance, partition_key=key,
                             raise_on_error=False)
    (failure,) = [e for e in without.all_events if e.is_step_failure]  # without it, the scan needs the mind
    assert "no mind for workspace 'alpha'" in failure.step_failure_data.error.cause.message
    scanned = dg.materialize([harvest_items], resources=any_node, instance=instance, partition_key=key, run_config=made)
    assert scanned.success and materialized(scanned)["harvest_items"]["items"] == 2
    assert staged_scan_info(resources["mind_home"].scan_url("alpha", "gpt")).items == 2
    assert not (tmp_path / "any-node").exists()

    assert harvest(instance, resources, key).success  # at home: records the fingerprint
    again = job.partitioned_config.get_run_config_for_partition_key(key)["ops"]["harvest_items"]["config"]
    assert again["last_fingerprint"] == resources["mind_home"].registered_source("alpha", "gpt").last_fingerprint
    assert again["last_fingerprint"]
    unchanged = dg.materialize([harvest_items], resources=any_node, instance=instance, partition_key=key,
                               run_config={"ops": {"harvest_items": {"config": again}}})
    assert unchanged.success and "harvest_items" not in materialized(unchanged)


@pytest.mark.slow
def test_step_outputs_go_to_the_url_every_worker_reaches(tmp_path, home, instance, resources, monkeypatch):
    """The values the chunk steps hand each other live under $MIND_HARVEST_STEP_OUTPUTS_URL
    (fsspec's in-memory file system standing in for an object store), not in one machine's folder."""
    folder = f"/step-outputs-{uuid.uuid4().hex}"
    monkeypatch.setenv(STEP_OUTPUTS_URL_ENV, f"memory://{folder}")
    io_manager = default_resources()["io_manager"]
    key = register(home, "alpha", "chatgpt", write_chatgpt_export(tmp_path / "e" / "c.json", 2, 4), "gpt")
    add_partitions(instance, key)
    result = harvest(instance, {**resources, "io_manager": io_manager}, key, run_config=SMALL_CHUNKS)
    assert result.success
    memory = fsspec.filesystem("memory")
    stored = {path.removeprefix(f"{folder}/{result.run_id}/") for path in memory.find(folder)}
    memory.rm(folder, recursive=True)
    assert {f"staged_vectors.plan_vector_chunks/result/chunk_{n}" for n in range(2)} <= stored
    assert {f"staged_vectors.embed_vector_chunk[chunk_{n}]/result" for n in range(2)} <= stored
