"""A backfill with a failed run is not green: launched through a real webserver (as the UI's
"Launch backfill" does) over a good and a broken source, run by a real daemon, it ends
COMPLETED_FAILED ("Failed" in the UI); the broken source's partition is red, linked to its own
run, the good one's green; the failure sensor records the broken source's outcome in its mind."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from mind_harvest.pipelines.backfill import BackfillError, backfill_status, launch_backfill, main
from mind_harvest.pipelines.instance import prepare_dagster_home

from mind_core.mind import Mind
from mind_core.testing.exports import write_chatgpt_export
from tests.pipelines.harness import add_partitions, register
from tests.pipelines.ui_status import CheckStatus, check_status, partition_status

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
LOCATION = ["-m", "tests.pipelines.queued_location", "-a", "defs"]
DONE_SECONDS = 420


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(command: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def _stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _launch_when_loaded(url: str, partitions: list[str]) -> str:
    """The backfill's id, once the webserver serves the code location."""
    deadline = time.monotonic() + 180
    while True:
        try:
            return launch_backfill("harvest_job", partitions, url=url)
        except BackfillError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def test_a_backfill_with_a_failed_run_ends_failed_and_its_partition_is_red(tmp_path, home, monkeypatch):
    monkeypatch.setenv("MIND_HOME", str(home.root))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    broken = tmp_path / "broken" / "conversations.json"
    broken.parent.mkdir()
    broken.write_text("{ this is not json")
    good = register(home, "alpha", "chatgpt", write_chatgpt_export(tmp_path / "g" / "c.json", 2, 3), "good")
    bad = register(home, "alpha", "chatgpt", broken, "broken")
    monkeypatch.setenv("DAGSTER_HOME", str(prepare_dagster_home(home)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with dg.DagsterInstance.get() as instance:
        add_partitions(instance, good, bad)
        webserver = _start([str(BIN / "dagster-webserver"), *LOCATION, "-h", "127.0.0.1", "-p", str(port)], env)
        daemon = _start([str(BIN / "dagster-daemon"), "run", *LOCATION], env)
        try:
            backfill_id = _launch_when_loaded(url, [good, bad])
            deadline = time.monotonic() + DONE_SECONDS
            status = backfill_status(backfill_id, url=url)
            while status == "REQUESTED" and time.monotonic() < deadline:
                time.sleep(2)
                status = backfill_status(backfill_id, url=url)
            recorded = None
            while recorded is None and time.monotonic() < deadline:  # the failure sensor's tick
                with Mind.open(home.mind_path("alpha"), readonly=True) as mind:
                    recorded = dict(mind.db.query("SELECT source, last_status FROM harvest_sources"))["broken"]
                time.sleep(0 if recorded else 2)
        finally:
            _stop(daemon)
            _stop(webserver)
        assert status == "COMPLETED_FAILED"  # "Failed" in the UI, not a green "Completed"
        assert instance.get_backfill(backfill_id).status.value == "COMPLETED_FAILED"
        runs = {r.tags["dagster/partition"]: r for r in instance.get_runs(dg.RunsFilter.for_backfill(backfill_id))}
        assert runs[good].status == dg.DagsterRunStatus.SUCCESS
        assert runs[bad].status == dg.DagsterRunStatus.FAILURE
        assert partition_status(instance, "harvest_items", bad) == "failed"
        assert partition_status(instance, "vector_index", good) == "materialized"
        assert check_status(instance, "harvest_items", "source_parsed", bad) == CheckStatus("FAILED", runs[bad].run_id)
    assert recorded == "failed"


def test_the_backfill_command_says_when_the_webserver_is_not_there(capsys):
    assert main(["--partitions", "a/b", "--url", f"http://127.0.0.1:{_free_port()}"]) == 1
    assert "could not be reached" in capsys.readouterr().err
