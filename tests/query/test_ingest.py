"""POST /ingest against a real server on 127.0.0.1, and the MCP tool ingest_items: items in the
Universal JSON shape become memories recall finds; a repeat writes nothing; a bad item is
reported by its index; the token, a writable server and an existing mind are required."""

from __future__ import annotations

import httpx
import pytest

from mind_core.errors import NotFoundError
from mind_core.mind import Mind
from mind_core.query.mcp_tools import MindTools
from mind_core.query.routes.ingest import ALLOW_INGEST_ENV
from mind_core.store.home import MindHome
from mind_core.testing.fakes import HashingEmbedder

TOKEN = "ingest-t0ken"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ITEMS = [
    {"id": "standup-1", "source": "notes-app", "type": "conversation", "title": "Stand-up", "content": "",
     "messages": [{"role": "user", "text": "We moved the Osprey launch to April.", "timestamp": "2024-03-05T09:00:00Z"},
                  {"role": "assistant", "text": "Noted: Osprey launches in April.", "timestamp": "2024-03-05T09:00:05Z"}],
     "timestamp": "2024-03-05T09:00:00Z", "metadata": {"tags": ["standup"]}},
    {"source": "notes-app", "type": "memory", "title": "broken", "messages": "not a list"},
    {"source": "notes-app", "type": "decision", "title": "Database", "content": "Kestrel stores its data in Postgres.",
     "timestamp": "2024-03-06T10:00:00+01:00"},
    "not an object",
]


@pytest.fixture
def home(tmp_path) -> MindHome:
    home = MindHome(tmp_path / "home")
    Mind.open(home.mind_path("team"), embedder=HashingEmbedder()).close()
    return home


@pytest.fixture
def client():
    with httpx.Client(timeout=30) as c:
        yield c


def test_ingest_then_recall_finds_them_and_a_repeat_writes_nothing(client, running, monkeypatch):
    monkeypatch.setenv(ALLOW_INGEST_ENV, "1")
    url = running(token=TOKEN)
    posted = client.post(url + "/ingest", json={"items": ITEMS}, headers=AUTH)
    assert posted.status_code == 200, posted.text
    answer = posted.json()
    assert (answer["workspace"], answer["source"], answer["status"]) == ("team", "ingest:http", "partial")
    assert (answer["items"], answer["items_read"], answer["frames_new"]) == (4, 2, 3)
    assert [e["item"] for e in answer["errors"]] == [1, 3] and "'messages' is a str" in answer["errors"][0]["reason"]
    found = client.get(url + "/recall", params={"query": "Osprey launch April", "scope": "workspace"}, headers=AUTH)
    top = found.json()["results"][0]
    assert "Osprey" in top["content"] and top["source"] == "ingest:http"
    assert top["metadata"]["provenance"]["event_time"] == "2024-03-05T09:00:00.000Z"
    again = client.post(url + "/ingest", json={"items": ITEMS}, headers=AUTH).json()
    assert (again["frames_new"], again["frames_updated"], again["frames_unchanged"]) == (0, 0, 3)
    sources = client.get(url + "/sources", headers=AUTH).json()["sources"]
    assert [s["source"] for s in sources] == ["ingest:http"]


def test_ingest_needs_the_token_a_writable_server_and_an_existing_mind(client, running, monkeypatch, home):
    monkeypatch.setenv(ALLOW_INGEST_ENV, "1")
    url = running(token=TOKEN)
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        refused = client.post(url + "/ingest", json={"items": ITEMS}, headers=headers)
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    missing = client.post(url + "/ingest", json={"items": ITEMS, "workspace": "tema"}, headers=AUTH)
    assert missing.status_code == 404 and "no mind for workspace 'tema'" in missing.json()["error"]
    assert not home.mind_path("tema").exists()
    empty = client.post(url + "/ingest", json={"items": []}, headers=AUTH)
    assert empty.status_code == 400
    open_server = running()  # no token: nobody may write through it
    assert client.post(open_server + "/ingest", json={"items": ITEMS}).status_code == 403
    monkeypatch.delenv(ALLOW_INGEST_ENV)
    read_only = client.post(url + "/ingest", json={"items": ITEMS}, headers=AUTH)
    assert read_only.status_code == 403 and ALLOW_INGEST_ENV in read_only.json()["error"]
    with Mind.open(home.mind_path("team"), readonly=True) as mind:
        assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames") == 0


def test_the_mcp_tool_ingests_like_the_route(home):
    tools = MindTools(home, "team", HashingEmbedder())
    try:
        answer = tools.ingest_items(ITEMS).model_dump()
        assert (answer["source"], answer["frames_new"], [e["item"] for e in answer["errors"]]) == ("ingest:mcp", 3, [1, 3])
        recalled = tools.recall_memory("Kestrel Postgres", scope="current").model_dump()
        assert "Kestrel" in recalled["results"][0]["content"] and recalled["results"][0]["source"] == "ingest:mcp"
        again = tools.ingest_items(ITEMS).model_dump()
        assert (again["frames_new"], again["frames_unchanged"]) == (0, 3)
        with pytest.raises(NotFoundError, match="tema"):
            tools.ingest_items(ITEMS, workspace="tema")
        assert not home.mind_path("tema").exists()
    finally:
        tools.close()
    fresh = MindTools(home, "nothing-yet", HashingEmbedder())
    try:
        with pytest.raises(NotFoundError, match="nothing-yet"):
            fresh.ingest_items(ITEMS)
        assert not home.mind_path("nothing-yet").exists()
    finally:
        fresh.close()


@pytest.mark.slow
def test_mind_serve_allow_ingest_opens_the_route_in_its_worker(home, tmp_path, monkeypatch):
    import subprocess
    import sys

    monkeypatch.delenv(ALLOW_INGEST_ENV, raising=False)
    command = [sys.executable, "-m", "mind_core.cli", "serve", "--home", str(home.root), "-w", "team",
               "--embedder", "mock", "--token", TOKEN, "--port", "0", "--workers", "1", "--allow-ingest"]  # fmt: skip
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        while "listening on" not in line:
            line = process.stderr.readline()
            assert line, "server exited before listening"
        url = line.split("listening on ")[1].split()[0]
        answer = httpx.post(url + "/ingest", json={"items": ITEMS[:1]}, headers=AUTH, timeout=60)
        assert answer.status_code == 200 and answer.json()["frames_new"] == 2
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()
