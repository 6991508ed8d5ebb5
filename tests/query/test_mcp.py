"""The MCP server: tool bodies directly, and a round trip through the SDK's stdio client against
the real `mind mcp` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest

from mind_core.errors import InvalidInputError, NotFoundError
from mind_core.mind import Mind
from mind_core.query.mcp import WarmUpWhenInitialized
from mind_core.query.mcp_arguments import TOOL_NAMES
from mind_core.query.mcp_tools import MindTools, OnFirstUse
from mind_core.query.models.recall import RecallResponse
from mind_core.query.models.requests import RecallRequest, parse_request
from mind_core.store.home import MindHome
from mind_core.testing.fakes import HashingEmbedder

REPO = Path(__file__).resolve().parents[2]


def existing_mind(home: MindHome, workspace: str = "team") -> None:
    """A mind for ``workspace`` with nothing in it, as `mind sources add` leaves one (MCP makes
    none)."""
    Mind.open(home.mind_path(workspace)).close()


@pytest.fixture
def tools(tmp_path):
    home = MindHome(tmp_path / "home")
    existing_mind(home)
    tools = MindTools(home, "team", HashingEmbedder())
    yield tools
    tools.close()


@pytest.fixture
def tools_on_an_empty_home(tmp_path):
    tools = MindTools(MindHome(tmp_path / "home"), "team", HashingEmbedder())
    yield tools
    tools.close()


def test_save_memory_cognifies_and_recall_finds_it(tools):
    saved = tools.save_memory("Alice Johnson decided to migrate Project Falcon to PostgreSQL", "important").model_dump()
    assert saved["entities_extracted"] >= 2 and saved["workspace"] == "team"
    mind = tools._mind("team")
    assert mind.frames.get_by_id(saved["frame_id"]).importance == "important"
    assert mind.db.scalar("SELECT COUNT(*) FROM memory_frames_vec") == 1  # indexed for the vector lane
    assert {e.name for e in mind.knowledge.entities_for_frame(saved["frame_id"])} >= {
        "Alice Johnson",
        "PostgreSQL",
    }
    recalled = tools.recall_memory("Falcon PostgreSQL migration", scope="current").model_dump()
    top = recalled["results"][0]
    assert top["metadata"]["frame_id"] == saved["frame_id"] and top["metadata"]["match_score"] > 0.9
    assert (top["workspace"], top["source"]) == ("team", "user_stated")
    assert all(r["workspace"] == "team" for r in recalled["results"])


WRITES = {
    "save_memory": lambda tools, ws: tools.save_memory("Alice approved the Falcon budget", workspace=ws),
    "save_entity": lambda tools, ws: tools.save_entity("person", "Alice", workspace=ws),
    "create_relation": lambda tools, ws: tools.create_relation(1, 2, "knows", workspace=ws),
    "set_identity": lambda tools, ws: tools.set_identity(name="Mnemo", workspace=ws),
    "set_awareness": lambda tools, ws: tools.set_awareness("task", "review the budget", workspace=ws),
}


def test_no_tool_creates_a_mind(tools_on_an_empty_home):
    tools = tools_on_an_empty_home
    home = tools.home
    assert tools.get_identity().model_dump() == {"identity": None}
    assert tools.get_awareness().items == [] and tools.list_sources().sources == []
    assert tools.search_entities("x").entities == [] and tools.clear_awareness().removed == 0
    assert tools.recall_memory("anything").results == []
    assert tools.recall_memory("anything", workspace="personal").results == []
    assert tools.cleanup_frames("reconcile").skipped == "no such mind"
    for name, write in WRITES.items():
        for workspace, shown in ((None, "team"), ("personal", "personal"), ("nosuch", "nosuch")):
            with pytest.raises(NotFoundError) as refused:
                write(tools, workspace)
            assert str(refused.value) == (
                f"no mind for workspace {shown!r} (minds: none yet); MCP creates no mind: "
                f"`mind sources add PATH -w {shown}` does"
            ), (name, workspace)
    assert not home.root.exists()  # not a file, not a folder
    existing_mind(home, "personal")
    tools.set_identity(name="Mnemo", role="archivist", workspace="personal")
    assert tools.get_identity(workspace="personal").identity.role == "archivist"
    with pytest.raises(NotFoundError, match=r"minds: personal\); MCP creates no mind"):
        tools.save_memory("Falcon budget approved", workspace="nosuch")
    assert sorted(p.name for p in home.root.rglob("*.mind")) == ["personal.mind"]


def test_knowledge_awareness_and_cleanup_tools(tools):
    alice = tools.save_entity("person", "Alice Johnson", {"team": "infra"})
    again = tools.save_entity("person", "alice johnson")
    falcon = tools.save_entity("project", "Falcon")
    assert alice.created and again.model_dump() == {"id": alice.id, "created": False}
    relation = tools.create_relation(falcon.id, alice.id, "led_by", 0.9)
    assert relation.created and not tools.create_relation(falcon.id, alice.id, "led_by").created
    assert [e.name for e in tools.search_entities("ali", entity_type="person").entities] == ["Alice Johnson"]
    assert tools.search_entities("ali", entity_type="project").entities == []

    item = tools.set_awareness("task", "review Falcon budget", priority=2).item
    tools.set_awareness("flag", "on call this week")
    assert [i.id for i in tools.get_awareness("task").items] == [item.id]
    assert tools.clear_awareness("flag").removed == 1 and len(tools.get_awareness().items) == 1

    tools.save_memory("A scratch note about lunch")
    mind = tools._mind("team")
    mind.sessions.ensure("old")
    mind.frames.create_i_frame("old", "stale scratch", "temporary", created_at="2020-01-01T00:00:00Z")
    assert tools.cleanup_frames("reconcile").model_dump()["reconciled"] == {
        "fts_fixed": 0,
        "vectors_fixed": 1,
        "orphans_removed": 0,
    }
    compacted = tools.cleanup_frames("compact").model_dump()
    assert compacted["mode"] == "compact" and compacted["temporary_pruned"] == 1
    assert compacted["reconciled"]["orphans_removed"] == 0
    assert mind.frames.find_duplicate("stale scratch") is None
    with pytest.raises(InvalidInputError):
        tools.cleanup_frames("wipe_all")  # type: ignore[arg-type]


def test_recall_as_short_snippets(tools):
    filler = "Unrelated words about the weather and lunch plans. " * 20
    tools.save_memory(filler + "Then Alice approved the Falcon budget on Monday. " + filler)
    whole = tools.recall_memory("Falcon budget").results[0].content
    snippet = tools.recall_memory("Falcon budget", snippet_chars=80).results[0].content
    assert len(whole) > 1000 and len(snippet) <= 82 and "Falcon budget" in snippet
    with pytest.raises(InvalidInputError, match="snippet_chars"):
        tools.recall_memory("Falcon", snippet_chars=5)


def test_recall_has_the_same_shape_as_http_and_cli(tools):
    tools.save_memory("Falcon budget approved")
    answer = tools.recall_memory("Falcon", snippet_chars=40)
    assert RecallResponse.model_validate(answer.model_dump(mode="json")) == answer


def test_a_workspace_without_a_mind_is_an_error_like_on_the_other_surfaces(tools):
    tools.save_memory("Falcon budget approved")  # the team mind
    with pytest.raises(NotFoundError) as refused:
        tools.recall_memory("Falcon", workspace="nosuch")
    assert str(refused.value) == "no mind for workspace 'nosuch' (minds: team)"
    for read in (
        lambda: tools.kg_entities(workspace="nosuch"),
        lambda: tools.list_sources(workspace="nosuch"),
        lambda: tools.get_identity(workspace="nosuch"),
    ):
        with pytest.raises(NotFoundError, match="no mind for workspace 'nosuch'"):
            read()
    assert not tools.home.workspace_path("nosuch").exists()


def test_recall_reads_only_unless_the_server_records_access(tmp_path):
    def recalled_counts(tools: MindTools) -> list[int]:
        tools.recall_memory("Falcon budget")
        return [r.metadata.access_count for r in tools.recall_memory("Falcon budget").results]

    home = MindHome(tmp_path / "home")
    existing_mind(home)
    reading = MindTools(home, "team", HashingEmbedder())
    reading.save_memory("Falcon budget approved")
    assert recalled_counts(reading) == [0]
    reading.close()
    recording = MindTools(home, "team", HashingEmbedder(), record_access=True)
    assert recalled_counts(recording) == [1]  # the first recall counted, the second shows it
    recording.close()


def test_bad_input_is_refused(tools):
    with pytest.raises(InvalidInputError):
        tools.save_memory("   ")
    with pytest.raises(InvalidInputError):
        tools.recall_memory("Falcon", workspace="../etc")
    with pytest.raises(InvalidInputError, match="longer than 2000"):
        tools.recall_memory("x" * 2_001)
    with pytest.raises(InvalidInputError):
        tools.search_entities("x", limit=0)
    with pytest.raises(InvalidInputError):
        MindTools(tools.home, "../x", None)


async def _round_trip(home: Path) -> dict:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mind_core.cli", "mcp", "--home", str(home), "--workspace", "team", "--embedder", "mock"],
        cwd=str(REPO),
    )
    seen: dict = {}
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        began = time.perf_counter()
        seen["init"] = await session.initialize()
        print(f"MCP initialize answered in {time.perf_counter() - began:.3f} s (mock embedder)")
        seen["tools"] = {tool.name: tool for tool in (await session.list_tools()).tools}
        saved = await session.call_tool("save_memory", {"content": "Bob Smith approved the Falcon budget"})
        seen["saved"] = saved.structured_content
        recalled = await session.call_tool("recall_memory", {"query": "Falcon budget", "limit": 3})
        seen["recalled"] = recalled.structured_content
        seen["recalled_text"] = [block.text for block in recalled.content]
        missing = await session.call_tool("recall_memory", {"query": "Falcon", "workspace": "nosuch"})
        seen["missing"] = missing
        seen["save_nosuch"] = await session.call_tool("save_memory", {"content": "x", "workspace": "nosuch"})
        filler = "Unrelated words about the weather and lunch plans. " * 20
        long = await session.call_tool(
            "save_memory",
            {"content": f"{filler}Carol signed the Osprey lease. {filler}", "workspace": "personal"},
        )
        asked = {"query": "Osprey lease", "snippet_chars": 80, "scope": "personal"}
        short = await session.call_tool("recall_memory", asked)
        seen["snippets"] = {
            r["metadata"]["frame_id"]: r["content"] for r in short.structured_content["results"]
        }
        seen["long_frame"] = long.structured_content["frame_id"]
        before = await session.call_tool("kg_entities", {"valid_at": "2000-01-01"})
        seen["kg_before"] = before.structured_content
        seen["kg_now"] = (await session.call_tool("kg_entities", {"limit": 50})).structured_content
        seen["kg_bad_instant"] = await session.call_tool(
            "kg_neighbours", {"name": "Bob Smith", "known_at": "soon"}
        )
        seen["bad_scope"] = await session.call_tool("recall_memory", {"query": "x", "scope": "bogus"})
        seen["traversal"] = await session.call_tool("recall_memory", {"query": "x", "workspace": "../etc"})
        await session.call_tool("set_identity", {"name": "Mnemo"})
        seen["identity"] = (await session.call_tool("get_identity", {})).structured_content
        seen["cleanup"] = (
            await session.call_tool("cleanup_frames", {"mode": "reconcile"})
        ).structured_content
    return seen


@pytest.mark.slow
def test_mcp_tool_call_round_trip_over_stdio(tmp_path):
    home = MindHome(tmp_path / "home")
    existing_mind(home)
    existing_mind(home, "personal")
    seen = anyio.run(_round_trip, home.root)
    info = seen["init"].server_info
    assert info.name == "mind-harvest" and info.version == version("mind-harvest")
    assert set(seen["tools"]) == set(TOOL_NAMES)
    # the same request fields as GET/POST /recall and `mind recall --json`
    assert set(seen["tools"]["recall_memory"].input_schema["properties"]) == set(RecallRequest.model_fields)
    for tool in seen["tools"].values():  # every argument described, every answer a model's schema
        bare = [name for name, schema in tool.input_schema["properties"].items() if not schema.get("description")]
        assert bare == [], f"{tool.name}: {bare}"
        assert tool.output_schema["properties"] and tool.output_schema.get("additionalProperties") is not True
        assert tool.title and tool.annotations is not None
    hints = {name: tool.annotations for name, tool in seen["tools"].items()}
    assert {name for name, hint in hints.items() if hint.read_only_hint} == {
        "recall_memory", "search_entities", "kg_entities", "kg_relations", "kg_neighbours", "get_identity",
        "get_awareness", "list_sources",
    }  # fmt: skip
    assert hints["cleanup_frames"].destructive_hint and hints["clear_awareness"].destructive_hint
    assert hints["save_memory"].destructive_hint is False and hints["save_entity"].idempotent_hint
    confidence = seen["tools"]["create_relation"].input_schema["properties"]["confidence"]
    assert (confidence["minimum"], confidence["maximum"]) == (0, 1)
    assert "results" in seen["tools"]["recall_memory"].output_schema["properties"]
    schema = seen["tools"]["recall_memory"].input_schema
    assert schema["required"] == ["query"] and schema["properties"]["scope"]["enum"][:3] == [
        "all",
        "personal",
        "workspace",
    ]
    assert seen["saved"]["workspace"] == "team" and seen["saved"]["frame_id"] >= 1
    assert set(seen["recalled"]) >= {"results", "confident"} and "workspace_results" not in seen["recalled"]
    [text] = seen["recalled_text"]  # the same answer once more, for clients without structured output
    assert json.loads(text) == seen["recalled"] and "\n" not in text and '": ' not in text  # compact
    top = seen["recalled"]["results"][0]
    assert top["content"] == "Bob Smith approved the Falcon budget" and top["workspace"] == "team"
    assert top["metadata"]["frame_id"] == seen["saved"]["frame_id"] and 0 < top["score"] <= 1
    assert top["metadata"]["provenance"]["event_time"] == top["metadata"]["created_at"]
    assert "Bob Smith" in {e["name"] for e in seen["kg_now"]["entities"]}
    assert (
        seen["kg_before"]["entities"] == [] and seen["kg_before"]["valid_at"] == "2000-01-01"
    )  # saved today
    assert "entities" in seen["tools"]["kg_entities"].output_schema["properties"]
    assert seen["kg_bad_instant"].is_error and "known_at" in seen["kg_bad_instant"].content[0].text
    assert seen["bad_scope"].is_error and seen["traversal"].is_error
    assert "invalid workspace name" in seen["traversal"].content[0].text
    assert "Traceback" not in seen["traversal"].content[0].text
    assert seen["identity"]["identity"]["name"] == "Mnemo"
    assert seen["missing"].is_error
    assert [block.text for block in seen["missing"].content] == ["no mind for workspace 'nosuch' (minds: team, personal)"]
    assert seen["save_nosuch"].is_error and [block.text for block in seen["save_nosuch"].content] == [
        "no mind for workspace 'nosuch' (minds: team, personal); MCP creates no mind: "
        "`mind sources add PATH -w nosuch` does"
    ]
    assert not home.workspace_path("nosuch").exists()
    assert seen["cleanup"]["reconciled"]["fts_fixed"] == 0
    snippet = seen["snippets"][seen["long_frame"]]  # of a 2,000-character text
    assert len(snippet) <= 82 and "Osprey lease" in snippet
    assert all(len(text) <= 82 for text in seen["snippets"].values())
    with Mind.open(MindHome(tmp_path / "home").workspace_path("team"), readonly=True) as mind:
        assert mind.frames.get_by_id(seen["saved"]["frame_id"]).access_count == 0  # recall read only


BAD_CALLS = [
    ("recall_memory", {"query": "Falcon", "limit": 0}, "limit must be between 1 and 100 (got 0)"),
    ("recall_memory", {"limit": 5}, "query is required"),
    ("recall_memory", {"query": "   "}, "query must not be blank (got '   ')"),
    ("recall_memory", {"query": ""}, "query must not be empty"),
    ("recall_memory", {"query": "x" * 2_001}, "query is longer than 2000 characters (got 2001)"),
    ("recall_memory", {"query": "Falcon", "limit": 5.5}, "limit must be an integer (got 5.5)"),
    (
        "recall_memory",
        {"query": "Falcon", "snippet_chars": 5},
        "snippet_chars must be between 20 and 2000 (got 5)",
    ),
    ("recall_memory", {"query": "Falcon", "tags": "a"}, "tags must be a list (got 'a')"),
    ("recall_memory", {"query": "Falcon", "max_results": 3}, "unknown parameter 'max_results'"),
    ("recall_memory", {"query": "Falcon", "limt": 3}, "unknown parameter 'limt' (did you mean 'limit'?)"),
    ("recal_memory", {"query": "Falcon"}, "unknown tool 'recal_memory' (did you mean 'recall_memory'?)"),
    (
        "recall_memory",
        {"query": "Falcon", "since": "last tuesday"},
        "since must be an ISO-8601 date or date/time, e.g. 2024, 2024-05, 2024-05-01 or 2024-05-01T09:30:00Z "
        "(got 'last tuesday')",
    ),
    (
        "recall_memory",
        {"query": "Falcon", "since": "2011-01-01", "until": "2010-01-01"},
        "since '2011-01-01' is after until '2010-01-01'",
    ),
    ("search_entities", {"query": "Ali", "limit": 0}, "limit must be between 1 and 200 (got 0)"),
    ("kg_entities", {"limit": 10_001}, "limit must be between 1 and 10000 (got 10001)"),
    ("cleanup_frames", {"mode": "wipe"}, "mode must be one of 'reconcile' or 'compact' (got 'wipe')"),
    (
        "create_relation",
        {"source_id": "a", "target_id": 1, "relation_type": "r"},
        "source_id must be an integer (got 'a')",
    ),
    ("save_memory", {"content": " "}, "content must be a non-empty string"),
    (
        "create_relation",
        {"source_id": 1, "target_id": 2, "relation_type": "r", "confidence": 7},
        "confidence must be between 0 and 1 (got 7)",
    ),
    (
        "kg_entities",
        {"entity_type": "nosuchtype"},
        "unknown entity type 'nosuchtype'; known types: concept, organization, person, project, technology, tool",
    ),
]


async def _refused_calls(home: Path) -> list:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mind_core.cli", "mcp", "--home", str(home), "--embedder", "mock"],
        cwd=str(REPO),
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return [await session.call_tool(name, arguments) for name, arguments, _ in BAD_CALLS]


def test_refused_arguments_are_one_plain_sentence_over_stdio(tmp_path):
    answers = anyio.run(_refused_calls, tmp_path / "home")
    for (name, arguments, expected), answer in zip(BAD_CALLS, answers, strict=True):
        assert answer.is_error, (name, arguments)
        assert [block.text for block in answer.content] == [expected], (name, arguments)
    assert not (tmp_path / "home").exists()  # no refused call wrote anything


def test_mcp_and_the_other_surfaces_word_a_broken_rule_alike(tools):
    """One validation layer: the request models' wording, whoever checks the argument first (the
    SDK's argument model over stdio, or the shared request model)."""
    with pytest.raises(InvalidInputError) as refused:
        parse_request(RecallRequest, {"query": "Falcon", "limit": 0})
    assert str(refused.value) == BAD_CALLS[0][2]
    with pytest.raises(InvalidInputError) as refused:
        tools.kg_entities(limit=10_001)
    assert str(refused.value) == "limit must be between 1 and 10000 (got 10001)"


# What answering initialize and tools/list must not wait for: the model runtimes, the engine
# (numpy, the search and retrieval modules, sqlite-vec), the plugins, the HTTP clients of the
# embedding providers and external sources, the HTTP service, Dagster and the analytics.
NOT_AT_STARTUP = (
    "onnxruntime",
    "tokenizers",
    "torch",
    "sentence_transformers",
    "dagster",
    "pyarrow",
    "duckdb",
    "numpy",
    "sqlite_vec",
    "pluggy",
    "httpx",
    "tenacity",
    "fastapi",
    "mind_core.mind",
    "mind_core.search.hybrid",
    "mind_core.retrieval",
    "mind_core.plugins",
)

_SERVE_UNTIL_STARTED = """
import anyio, json, sys
from mind_core.cli import main
from mind_core.query.mcp import MindServer

def loaded():
    return sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in {heavy!r}))

def started(server, transport):
    seen = {{"tools": [t.name for t in anyio.run(server.list_tools)], "at_start": loaded()}}
    anyio.run(server.call_tool, "save_memory", {{"content": "Alice approved the Falcon budget"}})
    seen["after_first_call"] = loaded()
    print(json.dumps(seen))

MindServer.run = started  # stop where `mind mcp` would start serving stdio
sys.exit(main(["mcp", "--home", sys.argv[1], "--embedder", "mock"]))
"""


def test_mind_mcp_starts_without_the_engine_and_loads_it_on_the_first_call(tmp_path):
    existing_mind(MindHome(tmp_path / "home"), "default")
    done = subprocess.run(
        [sys.executable, "-c", _SERVE_UNTIL_STARTED.format(heavy=NOT_AT_STARTUP), str(tmp_path / "home")],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert set(seen["tools"]) == set(TOOL_NAMES)
    assert seen["at_start"] == []
    # the first call that opens a mind brings the engine in (and still no model runtime: mock)
    assert {"numpy", "mind_core.mind", "mind_core.search.hybrid"} <= set(seen["after_first_call"])
    assert not {"torch", "dagster", "pyarrow"} & {m.split(".")[0] for m in seen["after_first_call"]}


def test_recall_takes_the_as_of_instant_and_source_filters(tools):
    saved = tools.save_memory("Alice Johnson moved Project Falcon to PostgreSQL", "important")
    everything = tools.recall_memory("Falcon PostgreSQL", scope="current")
    assert [r.metadata.frame_id for r in everything.results] == [saved.frame_id]
    before = tools.recall_memory("Falcon PostgreSQL", scope="current", as_of="2001-01-01")
    assert before.results == []  # nothing was known yet
    assert tools.recall_memory("Falcon PostgreSQL", scope="current", tags=["meeting"]).results == []
    with pytest.raises(InvalidInputError):
        tools.recall_memory("Falcon", as_of="not a date")


def test_warm_up_starts_once_the_client_is_initialized_and_builds_once(tmp_path):
    built: list[str] = []
    warmed = threading.Event()

    def make_embedder() -> HashingEmbedder:
        built.append("embedder")
        return HashingEmbedder()

    home = MindHome(tmp_path / "home")
    existing_mind(home)
    tools = MindTools(home, "team", OnFirstUse(make_embedder), OnFirstUse(list))
    middleware = WarmUpWhenInitialized(lambda: (tools.warm_up(), warmed.set()))

    async def handshake(method: str) -> str:
        async def call_next(ctx: SimpleNamespace) -> str:
            return f"answered {ctx.method}"

        return await middleware(SimpleNamespace(method=method), call_next)

    assert anyio.run(handshake, "initialize") == "answered initialize"
    assert not warmed.is_set() and built == []  # nothing competes with the answer to initialize
    anyio.run(handshake, "notifications/initialized")
    anyio.run(handshake, "notifications/initialized")
    assert warmed.wait(60) and built == ["embedder"]
    tools.save_memory("Alice approved the Falcon budget")  # the first call finds the embedder built
    assert built == ["embedder"]
    tools.close()
