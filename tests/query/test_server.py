"""The HTTP service against real running servers on free 127.0.0.1 ports: endpoints, validation,
limits, path traversal, tokens, read-only access, and no stack traces in any answer."""

from __future__ import annotations

import http.client
import json
import logging
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path

import httpx
import psutil
import pytest

from mind_core.embeddings import create_embedding_provider
from mind_core.embeddings.mock import MockEmbedder
from mind_core.errors import InvalidInputError
from mind_core.harvest.importer import import_items
from mind_core.harvest.items import HarvestItem, HarvestMessage
from mind_core.harvest.stores import HarvestSourceStore
from mind_core.limits import MAX_BODY_BYTES, MAX_QUERY_CHARS, MAX_REQUEST_HEAD_BYTES
from mind_core.mind import Mind
from mind_core.query.app import ENDPOINT_THREADS
from mind_core.query.http_server import QueryServer, is_loopback
from mind_core.query.service import QueryService, ServiceConfig
from mind_core.store.home import MindHome
from mind_core.testing.fakes import HashingEmbedder
from tests.conftest import query_servers
from tests.query.helpers import (
    CONVERSATION_TITLE,
    RECALL_ANSWER_KEYS,
    build_mind,
    fake_external,
    harvest_conversation,
)

REPO = Path(__file__).resolve().parents[2]
TOKEN = "t0ps3cret-token"


def no_trace(response: httpx.Response) -> httpx.Response:
    """Every answer is JSON, never cached or sniffed, and none carries a stack trace."""
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "Traceback" not in response.text and 'File "' not in response.text
    response.json()
    return response


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> MindHome:
    home = MindHome(tmp_path_factory.mktemp("home"))
    embedder = HashingEmbedder()
    with Mind.open(home.workspace_path("team"), embedder=embedder) as mind:
        harvest_conversation(mind)
        mind.sessions.ensure("notes")
        for text in ("Falcon budget approved", "Falcon launch approved", "Falcon vendors approved"):
            frame = mind.frames.create_i_frame("notes", text)
            mind.search.index_frame(frame.id, frame.content)
        entity = mind.knowledge.create_entity("project", "Falcon")
        mind.knowledge.link_entity_to_frame(entity.id, 1)
        HarvestSourceStore(mind.db).upsert("gpt", "ChatGPT export", "/exports/conversations.json", "chatgpt")
    build_mind(home.personal_path, ["My own Falcon notes", "Grocery list"], embedder)
    return home


@pytest.fixture(scope="module")
def base(home) -> Iterator[str]:
    """The module's one shared server (the other tests start their own through ``running``)."""
    with query_servers(home) as start:
        yield start()


@pytest.fixture(scope="module")
def client():
    with httpx.Client(timeout=10) as c:
        yield c


def get(client, url, **params):
    return no_trace(client.get(url, params=params))


# -- endpoints ------------------------------------------------------------------------------------
def test_health_and_openapi(client, base):
    health = get(client, base + "/health").json()
    assert health["status"] == "ok" and health["workspaces"] == ["team"] and health["personal"] is True
    assert health["version"] == version("mind-harvest")
    spec = get(client, base + "/openapi.json").json()
    assert spec["openapi"].startswith("3.") and spec["info"]["version"] == version("mind-harvest")
    assert set(spec["paths"]) == {
        "/health",
        "/recall",
        "/search",
        "/frames/{frame_id}",
        "/sources",
        "/entities",
        "/kg/entities",
        "/kg/relations",
        "/kg/neighbours",
        "/stats",
        "/ingest",
        "/admin/forget",
    }
    recall_params = {p["name"]: p["schema"] for p in spec["paths"]["/recall"]["get"]["parameters"]}
    assert recall_params["limit"]["maximum"] == 100 and recall_params["scope"]["enum"] == [
        "all",
        "personal",
        "workspace",
        "current",
    ]
    schemas = spec["components"]["schemas"]
    body = spec["paths"]["/recall"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert schemas[body["$ref"].rsplit("/", 1)[1]]["required"] == ["query"]
    for path, operations in spec["paths"].items():  # every answer has a schema, errors included
        for operation in operations.values():
            for status, response in operation["responses"].items():
                assert response["content"]["application/json"]["schema"], (path, status)
    answer = spec["paths"]["/recall"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert set(schemas[answer["$ref"].rsplit("/", 1)[1]]["properties"]) >= {"results", "confident"}
    assert "400" in spec["paths"]["/recall"]["get"]["responses"]


def test_docs_page_is_served_without_network(client, base):
    page = client.get(base + "/docs")
    assert page.status_code == 200 and "swagger-ui" in page.text and "/openapi.json" in page.text
    assets = re.findall(r'(?:src|href)="(/[^"]+)"', page.text)
    assert len(assets) >= 2 and all(not a.startswith("//") for a in assets)  # no CDN
    for asset in assets:
        assert client.get(base + asset).status_code == 200, asset
    assert client.get(base + "/", follow_redirects=False).headers["location"] == "/docs"


def test_head_is_answered_without_a_body(client, base):
    head = client.head(base + "/health")
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) == len(client.get(base + "/health").content)


def test_recall_get_and_post(client, base):
    found = get(client, base + "/recall", query="Falcon approved", limit=5).json()
    assert set(found) == RECALL_ANSWER_KEYS
    assert len(found["results"]) == 5  # limit is the whole answer, across both minds
    assert {r["workspace"] for r in found["results"]} == {"team", "personal"}
    assert all(0 <= r["score"] <= 1 for r in found["results"])
    posted = no_trace(
        client.post(base + "/recall", json={"query": "Falcon", "scope": "personal", "explain": True})
    )
    mine = posted.json()["results"][0]
    assert mine["workspace"] == "personal" and mine["source"] == "user_stated"
    assert mine["attribution"] == "personal/user_stated"
    assert "keyword_rank" in mine["explain"]


def test_recall_provenance_round_trip(client, base):
    found = get(client, base + "/recall", query="PostgreSQL migration plan", scope="workspace").json()
    top = found["results"][0]
    assert (top["workspace"], top["source"]) == ("team", "gpt")
    assert top["attribution"] == f"team/gpt: {CONVERSATION_TITLE}"
    provenance = top["metadata"]["provenance"]
    assert provenance["source"] == "gpt" and provenance["title"] == CONVERSATION_TITLE
    assert provenance["message_id"] == "m2" and provenance["event_time"] == "2024-03-05T13:02:00.000Z"
    frame = get(client, base + f"/frames/{top['metadata']['frame_id']}").json()
    assert frame["provenance"] == provenance and frame["frame"]["content"] == top["content"]


def test_search_frame_sources_entities_stats(client, base):
    searched = get(client, base + "/search", query="Falcon", limit=2, explain="true").json()
    results = searched["results"]
    assert len(results) == 2 and searched["confident"] is True
    assert set(results[0]) == {"frame", "score", "match_score", "confident", "provenance", "explain"}
    assert {"rrf_score", "relevance_score", "final_score"} <= set(results[0]["explain"])
    personal = get(client, base + "/search", query="Grocery", workspace="personal").json()
    assert personal["results"][0]["frame"]["content"] == "Grocery list" and personal["confident"]
    whole = {r["frame"]["id"]: r["frame"]["content"] for r in results}
    cut = get(client, base + "/search", query="Falcon", limit=2, snippet_chars=20).json()["results"]
    assert [r["frame"]["id"] for r in cut] == list(whole)  # the same hits, their text as snippets
    assert all("Falcon" in r["frame"]["content"] and len(r["frame"]["content"]) <= 22 for r in cut)
    assert any(len(r["frame"]["content"]) < len(whole[r["frame"]["id"]]) for r in cut)
    default = get(client, base + "/health").json()["default_workspace"]
    assert personal["workspace"] == "personal" and searched["workspace"] == default  # the mind searched
    frame = get(client, base + "/frames/1").json()
    assert frame["entities"] == [{"id": 1, "type": "project", "name": "Falcon"}]
    missing = get(client, base + "/frames/9999")
    assert missing.status_code == 404
    sources = get(client, base + "/sources").json()["sources"]
    assert [s["source"] for s in sources] == ["gpt"]
    entities = get(client, base + "/entities", query="fal").json()["entities"]
    assert [e["name"] for e in entities] == ["Falcon"]
    assert get(client, base + "/entities", query="fal", type="person").json()["entities"] == []
    stats = get(client, base + "/stats").json()["minds"]
    assert {m["workspace"]: m["frames"] for m in stats} == {"personal": 2, "team": 5}
    team = get(client, base + "/stats", workspace="team").json()["minds"][0]
    assert team["vectors"] == 5 and team["entities"] == 1 and team["sources"] == 1


def test_concurrent_requests(client, base):
    def one(i: int) -> int:
        return client.get(base + "/recall", params={"query": f"Falcon {i}"}).status_code

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(one, range(32))) == {200}


# -- validation -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"query": ""},
        {"query": "x" * (MAX_QUERY_CHARS + 1)},
        {"query": "x", "limit": "0"},
        {"query": "x", "limit": "101"},
        {"query": "x", "limit": "ten"},
        {"query": "x", "profile": "loudest"},
        {"query": "x", "scope": "everything"},
        {"query": "x", "since": "last tuesday"},
        {"query": "x", "since": "2011-01-01", "until": "2010-01-01"},
        {"query": "x", "explain": "maybe"},
        {"query": "x", "colour": "red"},
    ],
)
def test_invalid_recall_input_is_a_400(client, base, params):
    response = get(client, base + "/recall", **params)
    assert response.status_code == 400 and response.json()["error"]


def test_a_query_string_number_is_quoted_as_typed_like_the_cli_and_mcp_say_it(client, base):
    answer = get(client, base + "/recall", query="x", limit="0").json()
    assert answer["error"] == "limit must be between 1 and 100 (got 0)"
    assert get(client, base + "/recall", query="x", limit="ten").json()["error"].endswith("(got ten)")
    # a text parameter keeps its quotes, as on the other surfaces
    assert get(client, base + "/recall", query="x", scope="all2").json()["error"].endswith("(got 'all2')")
    assert no_trace(client.get(base + "/frames/0")).json()["error"].endswith("(got 0)")
    # a JSON body says what was sent: a string "5" where a number belongs
    posted = no_trace(client.post(base + "/recall", json={"query": "x", "limit": "0"}))
    assert posted.status_code == 400 and "(got '0')" in posted.json()["error"]


def test_lone_surrogates_and_deep_nesting(client, base):
    json_type = {"Content-Type": "application/json"}
    posted = no_trace(
        client.post(base + "/recall", content=b'{"query": "Falcon \\ud800 budget"}', headers=json_type)
    )
    assert posted.status_code == 200 and posted.json()["query"] == "Falcon \ufffd budget"
    deep = no_trace(client.post(base + "/search", content=b"[" * 30_000 + b"]" * 30_000, headers=json_type))
    assert deep.status_code == 400 and "nested too deeply" in deep.json()["error"]


def test_invalid_bodies(client, base):
    for body in (
        b"{not json",
        b"[1, 2]",
        b"\xff\xfe",
        json.dumps({"query": "x", "limit": "5"}).encode(),
        b"",
    ):
        response = no_trace(
            client.post(base + "/recall", content=body, headers={"Content-Type": "application/json"})
        )
        assert response.status_code == 400
    repeated = no_trace(client.get(base + "/recall?query=a&query=b"))
    assert repeated.status_code == 400 and "more than once" in repeated.json()["error"]


def test_a_list_parameter_in_the_query_string(client, base):
    assert get(client, base + "/recall", query="Falcon").json()["results"]
    assert get(client, base + "/recall", query="Falcon", tags="no-such-tag").json()["results"] == []


def serve(home: MindHome, embedder) -> QueryServer:
    server = QueryServer(ServiceConfig(home=home, default_workspace="default", embedder=embedder), "127.0.0.1", 0)
    threading.Thread(target=server.serve, daemon=True).start()
    return server


def stop(server: QueryServer) -> None:
    server.stop()
    server.close()


def test_a_list_parameter_is_repeated_as_openapi_says_and_a_scalar_is_refused(client, tmp_path):
    """``tags=a&tags=b`` (OpenAPI's form of a query array, what Swagger UI sends) is two tags that
    must both be on a frame, as the CLI's --tag a --tag b and MCP's tags: [a, b]."""
    home = MindHome(tmp_path)
    notes = [
        HarvestItem(f"note-{n}", "note", title, f"{title}.md", [HarvestMessage(f"m{n}", text)], {"tags": tags})
        for n, (title, text, tags) in enumerate(
            (
                ("Tags", "case styles: camelCase and snake_case", ["camelcase", "snake_case"]),
                ("Camel", "case styles: camelCase only", ["camelcase"]),
            )
        )
    ]
    with Mind.open(home.workspace_path("default"), embedder=HashingEmbedder()) as mind:
        ids = import_items(mind, "vault", notes, kind="markdown").new_frame_ids
        mind.search.index_frames_batch([mind.frames.get_by_id(i) for i in ids])
    server = serve(home, HashingEmbedder())
    try:
        both = no_trace(client.get(server.url + "/recall?query=case+styles&tags=camelcase&tags=snake_case"))
        assert both.status_code == 200, both.text
        assert [r["attribution"] for r in both.json()["results"]] == ["default/vault: Tags"]
        one = get(client, server.url + "/recall", query="case styles", tags="camelcase").json()["results"]
        assert len(one) == 2
        repeated = no_trace(client.get(server.url + "/recall?query=case&limit=5&limit=50"))
        assert repeated.status_code == 400 and repeated.json()["error"] == "parameter(s) given more than once: limit"
    finally:
        stop(server)


def test_a_mind_registered_but_never_harvested_answers_empty(client, tmp_path):
    """``mind sources add`` makes a mind at the default width without vectors; the server's
    embedder makes another width. Nothing is refused: the mind holds no vectors to compare."""
    home = MindHome(tmp_path)
    with Mind.open(home.workspace_path("default")) as mind:  # no embedder, as `sources add` opens it
        HarvestSourceStore(mind.db).upsert("gemini", "Gemini", "/exports/gemini", "gemini")
    for embedder in (MockEmbedder(384), HashingEmbedder(384)):  # fitted or not
        server = serve(home, embedder)
        try:
            recalled = get(client, server.url + "/recall", query="hello")
            assert recalled.status_code == 200 and recalled.json()["results"] == []
            [stats] = get(client, server.url + "/stats").json()["minds"]
            assert stats["workspace"] == "default" and "error" not in stats and stats["sources"] == 1
        finally:
            stop(server)


def test_a_mind_holding_vectors_of_another_width_is_refused_with_the_fix(client, tmp_path):
    home = MindHome(tmp_path)
    build_mind(home.workspace_path("default"), ["hello world"], HashingEmbedder(1024))
    server = serve(home, HashingEmbedder(384))  # an embedder that cannot be fitted to 1024 values
    try:
        refused = get(client, server.url + "/recall", query="hello")
        assert refused.status_code == 409
        assert "stores 1024-dimensional vectors but the embedder makes 384" in refused.json()["error"]
        assert "mind reindex" in refused.json()["error"]
    finally:
        stop(server)


@pytest.mark.parametrize(
    "workspace", ["../team", "..", "../../etc/passwd", "a/b", "team/../../x", ".hidden", "x" * 65, "a\\b"]
)
def test_path_traversal_in_workspace_names_is_a_400(client, base, workspace):
    for path in ("/recall", "/search"):
        response = get(client, base + path, query="Falcon", workspace=workspace)
        assert response.status_code == 400 and "workspace" in response.json()["error"]
    assert get(client, base + "/stats", workspace=workspace).status_code == 400


def test_encoded_traversal_and_unknown_minds(client, base):
    encoded = no_trace(client.get(base + "/stats?workspace=%2e%2e%2f%2e%2e%2fetc"))
    assert encoded.status_code == 400
    assert get(client, base + "/stats", workspace="ghost").status_code == 404
    ghost = get(client, base + "/recall", query="Falcon", workspace="ghost")
    assert ghost.status_code == 404
    assert ghost.json()["error"] == "no mind for workspace 'ghost' (minds: team, personal)"
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    conn.request("GET", "/frames/../stats")  # sent literally, not normalized by the client
    answer = conn.getresponse()
    assert answer.status == 404 and b"Traceback" not in answer.read()
    conn.close()
    assert no_trace(client.get(base + "/nowhere")).status_code == 404


def test_oversize_bodies_are_a_413(client, base):
    big = json.dumps({"query": "x" * (MAX_BODY_BYTES + 10)}).encode()
    response = no_trace(
        client.post(base + "/recall", content=big, headers={"Content-Type": "application/json"})
    )
    assert response.status_code == 413 and response.headers["connection"] == "close"
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    conn.putrequest("POST", "/recall")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(10 * 1024 * 1024 * 1024))  # declared, never sent
    conn.endheaders()
    answer = conn.getresponse()
    assert answer.status == 413 and b"Traceback" not in answer.read()
    conn.close()


def raw_exchange(base: str, request: bytes) -> str:
    """Send ``request`` as is, half-close, and read the whole answer."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        raw.sendall(request)
        raw.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := raw.recv(65536):
            reply += chunk
    return reply.decode()


def test_protocol_errors_are_json(client, base):
    method = no_trace(client.put(base + "/recall"))
    assert method.status_code == 405 and method.headers["allow"] == "GET, HEAD, POST"
    chunked = no_trace(
        client.post(
            base + "/recall", content=iter([b'{"query": "Falcon"}']), headers={"Content-Type": "application/json"}
        )
    )
    assert chunked.status_code == 200 and chunked.json()["query"] == "Falcon"
    too_big = no_trace(
        client.post(
            base + "/recall",
            content=iter([b'{"query": "', b"x" * MAX_BODY_BYTES, b'"}']),
            headers={"Content-Type": "application/json"},
        )
    )
    assert too_big.status_code == 413  # the limit holds for chunked bodies too
    for request, status in (
        (b"BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n", "400"),  # a method HTTP does not define
        (b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n", "400"),
        (b"GARBAGE\r\n\r\n", "400"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", "400"),  # TLS hello to a plain port
        (b"POST /recall HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n{\"query\"", "400"),  # body cut
        # two conflicting lengths: which one frames the next request is ambiguous (smuggling)
        (b"POST /recall HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 14\r\n\r\n{}", "400"),
        (b"POST /recall HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}", "400"),
        (b"GET /health HTTP/1.1\r\nHo", "400"),  # headers cut
        (b"GET /health HTTP/1.1\r\nX: " + b"a" * MAX_REQUEST_HEAD_BYTES + b"\r\n\r\n", "431"),
        (b"GET /" + b"a" * MAX_REQUEST_HEAD_BYTES + b" HTTP/1.1\r\n\r\n", "431"),
    ):
        reply = raw_exchange(base, request)
        head, _, body = reply.partition("\r\n\r\n")
        assert head.startswith(f"HTTP/1.1 {status}"), (request, reply)
        assert "Traceback" not in reply and json.loads(body)["error"], (request, reply)
    answered = raw_exchange(
        base, b"GET /recall?query=Falcon HTTP/1.1\r\nHost: x\r\n\r\n"
    )  # half-closed right after a complete request: still answered
    assert answered.startswith("HTTP/1.1 200") and '"results"' in answered
    refused = raw_exchange(
        base, b"POST /recall HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    )  # answered at once, as the end of input arrives: the answer still leaves before the close
    assert refused.startswith("HTTP/1.1 400") and "application/json" in refused


def test_unexpected_errors_are_a_generic_500_with_an_error_id(client, base, monkeypatch, caplog):
    def explode(self, workspace):
        raise RuntimeError("secret internal detail /var/lib/x")

    monkeypatch.setattr(QueryService, "stats", explode)
    with caplog.at_level(logging.ERROR, logger="mind_core.query.guard"):
        response = get(client, base + "/stats")
    body = response.json()
    assert response.status_code == 500 and set(body) == {"error", "error_id"}
    assert "secret" not in response.text and "RuntimeError" not in response.text
    assert body["error_id"] in caplog.text and "secret internal detail" in caplog.text


# -- authentication -------------------------------------------------------------------------------
def test_token_is_required_when_configured(client, running):
    url = running(token=TOKEN)
    probe = get(client, url + "/health")
    assert probe.status_code == 200  # probes stay open, but learn no mind's name
    assert probe.json()["workspaces"] is None and probe.json()["default_workspace"] is None
    assert probe.json()["auth"] is True and probe.json()["status"] == "ok"
    named = no_trace(client.get(url + "/health", headers={"Authorization": f"Bearer {TOKEN}"})).json()
    assert named["workspaces"] == ["team"] and named["default_workspace"] is not None
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": TOKEN},
        {"Authorization": "Basic x"},
    ):
        response = no_trace(client.get(url + "/recall", params={"query": "Falcon"}, headers=headers))
        assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
    ok = no_trace(
        client.get(url + "/recall", params={"query": "Falcon"}, headers={"Authorization": f"Bearer {TOKEN}"})
    )
    assert ok.status_code == 200


def test_with_a_token_the_api_docs_need_it_too_as_a_header_or_in_a_browser_s_url(client, running):
    url = running(token=TOKEN)
    for path in ("/docs", "/openapi.json"):
        for params in ({}, {"token": "wrong"}, {"token": ""}):
            refused = no_trace(client.get(url + path, params=params))
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer", (path, params)
            assert refused.json()["error"] == f"a valid bearer token is required (in a browser: {path}?token=TOKEN)"
        assert client.get(url + path, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200, path
    page = client.get(url + "/docs", params={"token": TOKEN})
    assert page.status_code == 200 and "swagger-ui" in page.text
    # the page fetches the document with the token it was opened with, escaped for the URL
    assert f"'/openapi.json?token={TOKEN}'" in page.text
    assert get(client, url + "/openapi.json", token=TOKEN).json()["paths"]
    by_header = client.get(url + "/docs", headers={"Authorization": f"Bearer {TOKEN}"})
    assert "'/openapi.json'" in by_header.text and TOKEN not in by_header.text
    # the query parameter opens the docs only: the API itself takes the header alone
    assert no_trace(client.get(url + "/recall", params={"query": "Falcon", "token": TOKEN})).status_code == 401
    # Swagger UI's own files are the same on every server and stay open, as does the redirect
    assets = re.findall(r'(?:src|href)="(/docs/assets/[^"]+)"', page.text)
    assert assets and all(client.get(url + asset).status_code == 200 for asset in assets)
    redirect = client.get(url + "/", params={"token": TOKEN}, follow_redirects=False)
    assert redirect.headers["location"] == f"/docs?token={TOKEN}"


def test_a_token_in_the_docs_url_is_escaped_in_the_page(client, running):
    token = "it's<b>&\"x"
    url = running(token=token)
    page = client.get(url + "/docs", params={"token": token})
    assert page.status_code == 200 and token not in page.text
    assert "'/openapi.json?token=it%27s%3Cb%3E%26%22x'" in page.text


def test_the_document_names_the_routes_that_need_the_token(client, running):
    spec = get(client, running(token=TOKEN) + "/openapi.json", token=TOKEN).json()
    assert spec["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    for path, operations in spec["paths"].items():
        for operation in operations.values():
            expected = None if path == "/health" else [{"bearerAuth": []}]
            assert operation.get("security") == expected, path
            assert ("401" in operation["responses"]) == (path != "/health"), path


def test_without_a_token_the_document_asks_for_none(client, base):
    """No Authorize button or lock icons in Swagger UI when the server needs no token."""
    spec = get(client, base + "/openapi.json").json()
    assert "securitySchemes" not in spec["components"]
    for path, operations in spec["paths"].items():
        for operation in operations.values():
            assert "security" not in operation and "401" not in operation["responses"], path


def test_the_search_description_names_the_fusion_the_server_uses(client, base):
    spec = get(client, base + "/openapi.json").json()
    summary = spec["paths"]["/search"]["get"]["summary"]
    fusion = get(client, base + "/search", query="Falcon", explain="true").json()["results"][0]["explain"]["fusion"]
    assert "RRF" not in summary and fusion in summary


def test_non_loopback_binding_needs_a_token(home):
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.10") and not is_loopback("example.org")
    config = ServiceConfig(home=home, default_workspace="team")
    with pytest.raises(InvalidInputError, match="needs a bearer token"):
        QueryServer(config, "0.0.0.0", 0)
    config.token = TOKEN
    server = QueryServer(config, "0.0.0.0", 0)
    server.close()
    with pytest.raises(InvalidInputError):
        QueryServer(ServiceConfig(home=home, default_workspace="../x"), "127.0.0.1", 0)


# -- read-only access -----------------------------------------------------------------------------
def access_counts(path: Path) -> list[int]:
    with Mind.open(path, readonly=True) as mind:
        return [r[0] for r in mind.db.query("SELECT access_count FROM memory_frames ORDER BY id")]


def test_queries_do_not_write_unless_access_recording_is_on(client, home, base, running):
    before = access_counts(home.workspace_path("team"))
    get(client, base + "/recall", query="Falcon budget approved")
    assert access_counts(home.workspace_path("team")) == before
    recording = running(record_access=True)
    found = get(client, recording + "/recall", query="Falcon budget approved", scope="workspace").json()
    after = access_counts(home.workspace_path("team"))
    touched = {r["metadata"]["frame_id"] for r in found["results"]}
    assert [i + 1 for i, (a, b) in enumerate(zip(before, after, strict=True)) if b == a + 1] == sorted(
        touched
    )


def test_recall_with_a_failing_external_source(client, running):
    with fake_external("error500") as service:
        from mind_core.retrieval import HttpRetriever

        url = running(retrievers=[HttpRetriever(service.url)])
        found = get(client, url + "/recall", query="Grocery").json()
    assert found["external_available"] and "HTTP 500" in found["external_error"]
    assert [r["workspace"] for r in found["results"]][:1] == ["personal"]


def test_recalls_waiting_on_an_external_source_do_not_hold_up_other_requests(running):
    waiting = threading.Condition()
    entered: list[str] = []
    released = threading.Event()

    class SlowSource:
        name = "slow"

        def search(self, query: str, limit: int) -> list[dict]:
            with waiting:
                entered.append(query)
                waiting.notify_all()
            released.wait(10)
            return []

    url = running(retrievers=[SlowSource()])
    recalls = ENDPOINT_THREADS + 1  # more than a server without external sources runs at once
    with httpx.Client(timeout=20) as client, ThreadPoolExecutor(recalls) as pool:
        answers = [pool.submit(client.get, url + "/recall", params={"query": "Grocery"}) for _ in range(recalls)]
        with waiting:
            all_waiting = waiting.wait_for(lambda: len(entered) == recalls, timeout=10)
        frame = client.get(url + "/frames/1", timeout=5) if all_waiting else None
        released.set()
        assert all_waiting and frame is not None and frame.status_code == 200
        assert all(a.result().json()["external_available"] for a in answers)


def test_readonly_open_reads_a_wal_mind_while_a_writer_is_active(tmp_path):
    path = tmp_path / "live.mind"
    writer = Mind.open(path, embedder=HashingEmbedder())
    writer.sessions.ensure("g")
    writer.frames.create_i_frame("g", "first")
    assert Path(str(path) + "-wal").exists()
    with Mind.open(path, readonly=True) as reader:
        assert reader.frames.get_stats()["total"] == 1
        writer.frames.create_i_frame("g", "second")
        assert reader.frames.get_stats()["total"] == 2  # sees the writer's later commit
        with pytest.raises(reader.db.errors.OperationalError, match="readonly"):
            reader.db.execute("DELETE FROM memory_frames")
    writer.close()
    assert not Path(str(path) + "-wal").exists()  # clean close: no WAL left
    with Mind.open(path, readonly=True) as reader:
        assert reader.frames.get_stats()["total"] == 2


READ_FROM_READONLY_FOLDER = """
import sys
from mind_core.mind import Mind
with Mind.open(sys.argv[1], readonly=True) as mind:
    print(mind.frames.get_stats()["total"])
"""


def test_readonly_open_of_a_mind_in_a_read_only_folder(tmp_path):
    """Without -wal/-shm and no right to create them, mode=ro alone fails; we fall back to immutable."""
    folder = tmp_path / "ro"
    folder.mkdir()
    build_mind(folder / "team.mind", ["one", "two", "three"], HashingEmbedder())
    script = [sys.executable, "-c", READ_FROM_READONLY_FOLDER]
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            out = subprocess.run(
                [*script, str(folder / "team.mind")], capture_output=True, text=True, cwd=REPO
            )
        finally:
            folder.chmod(0o755)
    else:  # root ignores permissions: mount the folder read-only in a private mount namespace
        target = tmp_path / "mounted"
        target.mkdir()
        mount = shlex.join(["mount", "-o", "bind,ro", str(folder), str(target)])
        command = mount + " && " + shlex.join([*script, str(target / "team.mind")])
        out = subprocess.run(["unshare", "-m", "sh", "-c", command], capture_output=True, text=True, cwd=REPO)
        if "mount" in out.stderr or "unshare" in out.stderr:
            pytest.skip(f"cannot make a read-only folder here: {out.stderr.strip()}")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3"
    assert not (folder / "team.mind-wal").exists()


# -- the `mind serve` command ---------------------------------------------------------------------
@pytest.mark.slow
def test_mind_serve_command(tmp_path):
    home = MindHome(tmp_path / "home")
    build_mind(home.personal_path, ["Falcon notes"], create_embedding_provider("mock"))
    cli = [sys.executable, "-m", "mind_core.cli", "serve", "--home", str(home.root), "--embedder", "mock"]
    refused = subprocess.run(
        [*cli, "--host", "0.0.0.0"], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert (
        refused.returncode == 2
        and "needs a bearer token" in refused.stderr
        and "Traceback" not in refused.stderr
    )
    process = subprocess.Popen(
        [*cli, "--port", "0", "--workers", "2"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "MIND_HARVEST_SERVE_HEADER_TIMEOUT": "1"},
    )
    workers: list[psutil.Process] = []
    try:
        line = ""
        while "listening on" not in line:
            line = process.stderr.readline()
            assert line, "server exited before listening"
        assert "2 worker processes" in line
        url = line.split("listening on ")[1].split()[0]
        for _ in range(200):  # uvicorn's supervisor starts the workers, on the same socket, after the line
            workers = [
                child
                for child in psutil.Process(process.pid).children()
                if "resource_tracker" not in " ".join(child.cmdline())  # multiprocessing's own helper
            ]
            if len(workers) == 2:
                break
            time.sleep(0.05)
        assert len(workers) == 2
        for _ in range(8):
            recalled = httpx.get(url + "/recall", params={"query": "Falcon"}, timeout=30).json()
            assert recalled["results"][0]["content"] == "Falcon notes"
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as slow:
            began = time.monotonic()
            slow.sendall(b"GET /health HTTP/1.1\r\nHo")  # the worker's header timeout: 1 s
            assert slow.recv(65536).startswith(b"HTTP/1.1 408") and time.monotonic() - began < 5
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
        log = process.stderr.read()
        process.stderr.close()
    assert code == 0
    finished = set(re.findall(r"Finished server process \[(\d+)\]", log))
    assert finished == {str(worker.pid) for worker in workers}  # each worker stopped cleanly
    assert not any(worker.is_running() for worker in workers)


def test_the_openapi_document_describes_every_parameter_and_answer_field(client, base):
    spec = get(client, base + "/openapi.json").json()
    undescribed = [
        f"{path} {method} {parameter['name']}"
        for path, methods in spec["paths"].items()
        for method, operation in methods.items()
        for parameter in operation.get("parameters", [])
        if not parameter.get("description") and not parameter["schema"].get("description")
    ]
    assert undescribed == []
    schemas = spec["components"]["schemas"]
    bare = [
        f"{model}.{field}"
        for model, schema in schemas.items()
        for field, field_schema in schema.get("properties", {}).items()
        if not field_schema.get("description")
    ]
    assert bare == []


def test_the_openapi_document_reads_well_in_swagger_ui(client, base):
    """What Swagger UI shows: a description and a meaningful 200 per endpoint, only the errors an
    endpoint can give, query parameters without a null alternative (whose anyOf hid the
    description of since/until), realistic examples."""
    spec = get(client, base + "/openapi.json").json()
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            assert operation["description"] and operation["responses"]["200"]["description"] != "Successful Response"
            assert ("413" in operation["responses"]) == (method == "post"), (path, method)
            for parameter in operation.get("parameters", []):
                assert "anyOf" not in parameter["schema"] and parameter["description"], (path, parameter["name"])
    assert "404" not in spec["paths"]["/health"]["get"]["responses"]
    assert "409" not in spec["paths"]["/stats"]["get"]["responses"]  # an unreadable mind is listed
    recall = {p["name"]: p for p in spec["paths"]["/recall"]["get"]["parameters"]}
    assert "year-month (2024-05)" in recall["since"]["description"] and recall["query"]["example"]
    kg = {p["name"]: p for p in spec["paths"]["/kg/entities"]["get"]["parameters"]}
    assert "transaction time" in kg["known_at"]["description"] and "event time" not in kg["known_at"]["description"]
    schemas = spec["components"]["schemas"]
    [example] = schemas["RecallResponse"]["examples"]
    assert example["results"][0]["score"] > 0 and "@" in example["results"][0]["metadata"]["provenance"]["message_id"]
    assert schemas["RecallRequest"]["examples"] and schemas["HealthResponse"]["examples"]


def test_stats_gives_the_embedding_width_as_a_number(client, base):
    minds = get(client, base + "/stats").json()["minds"]
    widths = [m["embedding"]["embedding_dim"] for m in minds if m.get("embedding")]
    assert widths and all(isinstance(width, int) and width > 0 for width in widths)


def test_the_documented_examples_are_valid_answers_and_requests():
    """Swagger UI shows these as the example values: each must be what the model accepts."""
    from pydantic import BaseModel

    from mind_core.query.models import frames, graph, recall, requests, service, sources, tools

    documented = [
        (model, example)
        for module in (frames, graph, recall, requests, service, sources, tools)
        for model in vars(module).values()
        if isinstance(model, type) and issubclass(model, BaseModel)
        for example in (model.model_config.get("json_schema_extra") or {}).get("examples", [])
    ]
    assert {model.__name__ for model, _ in documented} >= {"RecallRequest", "RecallResponse", "SourcesResponse"}
    for model, example in documented:
        model.model_validate(example)
