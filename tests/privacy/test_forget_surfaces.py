"""Forgetting over HTTP (POST /admin/forget on a real server on 127.0.0.1) and MCP (the tool
forget_memory through the SDK's client and the real server object): the same engine call as
`mind forget`, a dry run unless asked, the token required, the audit log naming the surface."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from mcp import Client

from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.query.mcp import build_mcp_server
from mind_core.query.mcp_tools import MindTools
from mind_core.store.home import MindHome
from mind_core.testing.fakes import HashingEmbedder
from tests.privacy.conftest import ADDRESS, NAME, raw_bytes

TOKEN = "forget-t0ken"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TRACES = (NAME.lower().encode(), ADDRESS.encode(), b"quarlesworth", b"zephyrine")


@pytest.fixture
def home(tmp_path, mailbox) -> MindHome:
    home = MindHome(tmp_path / "home")
    with Mind.open(home.mind_path("team"), embedder=HashingEmbedder()) as mind:
        register_source(mind, "email", mailbox, "mail")
        assert harvest(mind, "mail").imported.frames_new == 5
    (home.root / "snapshots").mkdir()
    return home


def _frames(home: MindHome) -> list[str]:
    with Mind.open(home.mind_path("team"), readonly=True) as mind:
        return [row[0] for row in mind.db.query("SELECT content FROM memory_frames ORDER BY id")]


def _audit(home: MindHome) -> list[dict]:
    with Mind.open(home.mind_path("team"), readonly=True) as mind:
        return [dict(row) for row in mind.db.query("SELECT actor, action, counts FROM privacy_audit ORDER BY id")]


def test_the_admin_route_needs_the_token_and_shows_before_it_forgets(home, running):
    url = running(token=TOKEN)
    with httpx.Client(timeout=60) as client:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            refused = client.post(url + "/admin/forget", json={"person": NAME, "yes": True}, headers=headers)
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        open_server = running()  # no token: nobody may forget through it
        refused = client.post(open_server + "/admin/forget", json={"person": NAME})
        assert refused.status_code == 403 and "--token" in refused.json()["error"]
        for body, status, words in (
            ({}, 400, "say what to forget"),
            ({"person": NAME, "source": "mail"}, 400, "give it alone"),
            ({"query": "kite", "frist": 1}, 400, "frist"),
            ({"since": "2024", "until": "2023"}, 400, "after until"),
            ({"person": NAME, "workspace": "tema"}, 404, "no mind for workspace 'tema'"),
        ):
            answer = client.post(url + "/admin/forget", json=body, headers=AUTH)
            assert answer.status_code == status and words in answer.json()["error"], (body, answer.text)
        assert not home.mind_path("tema").exists() and len(_frames(home)) == 5

        # a recall first, so the server holds read handles on the mind while it forgets
        found = client.get(url + "/recall", params={"query": NAME, "scope": "workspace"}, headers=AUTH)
        assert any("Quarlesworth" in r["content"] for r in found.json()["results"])
        shown = client.post(url + "/admin/forget", json={"person": ADDRESS}, headers=AUTH)
        assert shown.status_code == 200, shown.text
        dry = shown.json()
        assert (dry["workspace"], dry["action"], dry["applied"]) == ("team", "forget", False)
        assert dry["counts"]["frames_deleted"] == 1 and dry["counts"]["frames_redacted"] == 2
        assert "would replace their name and address" in dry["redaction"] and "2 other frames" in dry["redaction"]
        assert "Here is the budget draft" in dry["frames"][0]["snippet"]
        assert len(_frames(home)) == 5 and _audit(home) == []

        done = client.post(url + "/admin/forget", json={"person": ADDRESS, "yes": True, "by": "dpo"}, headers=AUTH)
        assert done.status_code == 200, done.text
        applied = done.json()
        assert applied["applied"] and applied["counts"]["frames_deleted"] == 1
        assert applied["counts"]["frames_redacted"] == 2 and applied["scrub"] == {"vacuumed": True, "wal_busy": False}
        assert applied["snapshot_marker"].endswith("_forgotten.json")
        again = client.get(url + "/recall", params={"query": NAME, "scope": "workspace"}, headers=AUTH)
        assert again.status_code == 200 and "quarlesworth" not in json.dumps(again.json()["results"]).lower()
    texts = _frames(home)
    assert len(texts) == 4 and not any("quarlesworth" in t.lower() for t in texts)
    assert not [trace for trace in TRACES if trace in raw_bytes(home.mind_path("team"))]
    [entry] = _audit(home)
    assert (entry["actor"], entry["action"]) == ("http:dpo", "forget")
    assert json.loads(entry["counts"])["frames_deleted"] == 1


async def _mcp_session(tools: MindTools, home: MindHome) -> dict:
    seen: dict = {}
    async with Client(build_mcp_server(tools)) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        seen["tool"] = listed["forget_memory"]
        seen["nothing"] = await client.call_tool("forget_memory", {})
        seen["dry"] = (await client.call_tool("forget_memory", {"query": "kite festival"})).structured_content
        seen["frames_after_dry"] = len(_frames(home))
        seen["done"] = (
            await client.call_tool("forget_memory", {"query": "kite festival", "yes": True, "by": "agent"})
        ).structured_content
        seen["again"] = (await client.call_tool("forget_memory", {"query": "kite festival"})).structured_content
        seen["lift"] = (
            await client.call_tool("forget_memory", {"query": "kite festival", "allow_return": True})
        ).structured_content
        seen["person"] = (await client.call_tool("forget_memory", {"person": NAME})).structured_content
    return seen


def _all(tools: MindTools) -> list[str]:
    return [row[0] for row in tools._mind("team").db.query("SELECT content FROM memory_frames")]


def test_the_mcp_tool_is_the_same_forget_dry_run_first(home):
    tools = MindTools(home, "team", HashingEmbedder())
    try:
        seen = anyio.run(_mcp_session, tools, home)
        texts = _all(tools)
    finally:
        tools.close()
    tool = seen["tool"]
    assert tool.annotations.destructive_hint and not tool.annotations.read_only_hint
    assert set(tool.input_schema["properties"]) == {
        "source", "frames", "query", "person", "since", "until", "yes", "allow_return", "by", "workspace",
    }  # fmt: skip
    assert seen["nothing"].is_error and "say what to forget" in seen["nothing"].content[0].text
    dry = seen["dry"]
    assert (dry["applied"], dry["counts"]["frames_deleted"]) == (False, 1) and seen["frames_after_dry"] == 5
    assert "northern beach" in dry["frames"][0]["snippet"]
    done = seen["done"]
    assert done["applied"] and done["counts"]["frames_deleted"] == 1 and done["audit_id"] >= 1
    assert done["snapshot_marker"].endswith("_forgotten.json")
    assert seen["again"]["counts"]["frames_deleted"] == 0
    assert (seen["lift"]["action"], seen["lift"]["applied"], seen["lift"]["tombstones_removed"]) == (
        "allow_return",
        False,
        2,
    )
    assert seen["person"]["counts"]["frames_redacted"] == 2 and "2 other frames" in seen["person"]["redaction"]
    assert len(texts) == 4 and not any("northern beach" in t for t in texts)
    assert [(e["actor"], e["action"]) for e in _audit(home)] == [("mcp:agent", "forget")]
