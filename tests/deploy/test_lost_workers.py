"""A harvest survives a lost worker, on a real cluster (``make cluster``'s pieces, marker
``cluster``): the "any" worker's pool process is killed (SIGKILL, as the OOM killer would) while it
embeds a chunk, and, in a second run, the whole "any" worker is (main process and pool, as a
machine lost). Both runs end in success, the killed chunk ran again, and the mind equals the same
source harvested in one process. The embedder is the deterministic fake, slowed down per text so
a chunk is still running when it is killed; its vectors do not depend on the batch, so the minds
are compared whole, vectors included, byte for byte.

The cluster's Celery workers use a visibility timeout of VISIBILITY_TIMEOUT_S (deploy/celery.yaml
ships an hour) so that the lost worker's task comes back within the test; the time from the kill
to the chunk's second success and the chunks redone are printed (``pytest -s``)."""

import dagster as dg
import pytest

from deploy.local_cluster import ClusterSettings
from deploy.lost_worker_trial import POOL, WORKER, await_recovery, kill_mid_chunk
from deploy.mind_comparison import compare_minds, mind_dump
from mind_core.store.home import MindHome
from mind_core.testing.exports import write_chatgpt_export
from tests.deploy.cluster_harness import harvest_in_one_process, running_cluster
from tests.deploy.recovery_location import CHUNK_CONFIG
from tests.pipelines.harness import add_partitions, register

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

LOCATION = ("-m", "tests.deploy.recovery_location", "-a", "defs")
VISIBILITY_TIMEOUT_S = 30
RESTORE_INTERVAL_S = 2
TIMEOUT_S = 300


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cluster")
    settings = ClusterSettings(
        folder=folder, minds=folder / "minds", location=LOCATION, webserver=False, ephemeral=True,
        visibility_timeout_s=VISIBILITY_TIMEOUT_S, restore_interval_s=RESTORE_INTERVAL_S,
    )
    with running_cluster(settings) as running:
        yield running


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    return write_chatgpt_export(tmp_path_factory.mktemp("exports") / "conversations.json", 4, 6, seed=21)


@pytest.fixture(scope="module")
def one_process_mind(tmp_path_factory, export) -> dict:
    """The source harvested by one in-process run (the dump names no workspace)."""
    home = MindHome(tmp_path_factory.mktemp("reference"))
    harvest_in_one_process(home, [register(home, "solo", "chatgpt", export, "chats")], CHUNK_CONFIG)
    return mind_dump(home.mind_path("solo"))


def test_runs_outlive_a_pool_process_and_a_worker_lost_mid_chunk_and_the_minds_equal_one_process(
    cluster, export, one_process_mind
):
    """Two runs of the same source in two minds, queued together: the first chunk either runs on
    the "any" worker loses its pool process, a later chunk of the other run there the whole worker."""
    running, instance = cluster
    minds = MindHome(running.settings.minds)
    keys = [register(minds, workspace, "chatgpt", export, "chats") for workspace in ("first", "second")]
    add_partitions(instance, *keys)
    running.launch_backfill("harvest_job", keys)
    pool_kill = kill_mid_chunk(running, instance, keys, POOL, "any", TIMEOUT_S)
    other = [key for key in keys if key != pool_kill[0]]
    worker_kill = kill_mid_chunk(running, instance, other, WORKER, "any", TIMEOUT_S)
    recoveries = [
        await_recovery(running, instance, kind, killed, TIMEOUT_S)
        for kind, killed in ((POOL, pool_kill), (WORKER, worker_kill))
    ]
    print("".join(f"\n{recovery.describe()}" for recovery in recoveries))

    for recovery, (key, _, _) in zip(recoveries, (pool_kill, worker_kill), strict=True):
        assert recovery.status == dg.DagsterRunStatus.SUCCESS, (recovery, running.logs)
        assert recovery.killed_on == "any" and recovery.ran_again_on != "-", recovery  # the chunk ran again
        assert recovery.chunks == 3 and recovery.chunks_redone >= 1, recovery
        workspace = key.split("/")[0]
        comparison = compare_minds(mind_dump(minds.mind_path(workspace)), one_process_mind)
        assert comparison.same_content and comparison.vectors == comparison.reference_vectors == 24, comparison
        assert comparison.min_cosine == pytest.approx(1.0), comparison
    # the whole worker's task came back after the visibility timeout, not before
    assert recoveries[1].recovery_seconds >= VISIBILITY_TIMEOUT_S, recoveries[1]
