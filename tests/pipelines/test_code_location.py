"""The code location as Dagster's own tools load it: `dagster definitions validate` and the webserver."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import httpx
import pytest
from mind_harvest.pipelines.definitions import defs

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ASSETS = {
    "harvest_items",
    "iframe_imports",
    "cognified_frames",
    "vector_index",
    "reconciled_indexes",
    "compacted_frames",
    "memory_snapshots",
}
STARTUP_SECONDS = 90


def dagster_env(tmp_path) -> dict[str, str]:
    dagster_home = tmp_path / "dagster_home"
    dagster_home.mkdir()
    return {**os.environ, "DAGSTER_HOME": str(dagster_home), "MIND_HOME": str(tmp_path / "minds")}


def test_definitions_hold_every_asset_check_sensor_schedule_and_job():
    repository = defs.get_repository_def()
    assert {key.to_user_string() for key in repository.asset_graph.get_all_asset_keys()} >= ASSETS
    assert {key.name for key in repository.asset_graph.asset_check_keys} == {
        "source_parsed",
        "error_rate_below_threshold",
        "no_item_imported_twice",
        "timestamps_kept",
        "indexes_cover_frames",
        "embedding_fingerprint_matches",
        "mind_indexes_consistent",
        "scheduled_sources_fresh",
    }
    assert {s.name for s in repository.sensor_defs} == {
        "harvest_sources_sensor",
        "harvest_automation_sensor",
        "record_failed_sources",
        "failure_alert_sensor",
    }
    assert {s.name for s in repository.schedule_defs} == {
        "daily_mind_upkeep",
        "daily_memory_snapshot",
        "source_freshness_schedule",
    }
    assert {"harvest_job", "mind_upkeep_job", "memory_snapshot_job", "source_freshness_job"} <= {
        j.name for j in repository.get_all_jobs()
    }
    source_parsed = repository.asset_graph.get_check_spec(dg.AssetCheckKey(dg.AssetKey("harvest_items"), "source_parsed"))
    assert source_parsed.blocking  # what the README and the UI say


@pytest.mark.slow
def test_dagster_definitions_validate_passes(tmp_path):
    result = subprocess.run(
        [str(BIN / "dagster"), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO,
        env=dagster_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Validation successful for code location harvest" in result.stdout + result.stderr


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_the_webserver_serves_the_assets_over_graphql(tmp_path):
    port = free_port()
    server = subprocess.Popen(
        [str(BIN / "dagster-webserver"), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=REPO,
        env=dagster_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            assert server.poll() is None, server.stderr.read().decode()
            try:
                if httpx.get(f"{base}/server_info", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the webserver did not start"
            time.sleep(0.5)
        query = "{ assetNodes { assetKey { path } groupName isPartitioned } }"
        nodes = []
        while time.monotonic() < deadline and not nodes:  # the code location loads after start-up
            response = httpx.post(f"{base}/graphql", json={"query": query}, timeout=30)
            assert response.status_code == 200, response.text
            nodes = response.json()["data"]["assetNodes"]
            time.sleep(0 if nodes else 0.5)
        found = {"/".join(node["assetKey"]["path"]): node for node in nodes}
        assert set(found) >= ASSETS
        assert found["harvest_items"]["groupName"] == "harvest" and found["harvest_items"]["isPartitioned"]
        assert found["compacted_frames"]["groupName"] == "mind_upkeep"
        assert found["memory_snapshots"]["groupName"] == "analytics"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
