"""A corrupt or foreign `.mind` file in the mind home is one broken workspace: `mind serve` and
`mind stats --all-workspaces` list it with its error and keep answering for the others; a client
that disconnects early costs one debug line in the server log, never a traceback."""

from __future__ import annotations

import json
import logging
import socket
import sqlite3
import struct
import threading
import time

import httpx
import pytest

from mind_core.cli import EXIT_FAILED, EXIT_OK, main
from mind_core.embeddings import create_embedding_provider
from mind_core.query.http_server import QueryServer
from mind_core.query.service import QueryService, ServiceConfig
from mind_core.store.home import MindHome
from tests.query.helpers import build_mind

BROKEN = ("corrupt", "foreign", "empty")
ASKED = (
    ("/recall", {"query": "Falcon"}),
    ("/search", {"query": "Falcon"}),
    ("/sources", {}),
    ("/frames/1", {}),
    ("/stats", {}),
)


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> MindHome:
    home = MindHome(tmp_path_factory.mktemp("home"))
    embedder = create_embedding_provider("mock")  # what `--embedder mock` opens the minds with
    build_mind(home.workspace_path("team"), ["Falcon budget approved", "Falcon launch"], embedder)
    build_mind(home.personal_path, ["My Falcon notes"], embedder)
    folder = home.root / "workspaces"
    (folder / "corrupt.mind").write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 64)
    with sqlite3.connect(folder / "foreign.mind") as other:  # another program's database
        other.execute("CREATE TABLE bookmarks (url TEXT)")
    (folder / "empty.mind").write_bytes(b"")
    return home


@pytest.fixture(scope="module")
def base(home):
    server = QueryServer(
        ServiceConfig(home=home, default_workspace="team", embedder=create_embedding_provider("mock")),
        "127.0.0.1",
        0,
    )
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    yield server.url
    server.stop()
    thread.join(timeout=10)
    server.close()


def test_stats_lists_broken_minds_with_their_error_and_counts_the_others(base, home):
    answer = httpx.get(base + "/stats", timeout=10)
    assert answer.status_code == 200
    minds = {m["workspace"]: m for m in answer.json()["minds"]}
    assert set(minds) == {"personal", "team", *BROKEN}
    assert minds["team"]["frames"] == 2 and minds["personal"]["frames"] == 1
    assert "not a database" in minds["corrupt"]["error"]
    assert "not a mind" in minds["foreign"]["error"] and "not a mind" in minds["empty"]["error"]
    assert str(home.root) not in answer.text  # errors name workspaces, not server paths


def test_requests_to_a_broken_mind_are_a_clear_409_and_the_others_still_answer(base):
    for workspace in BROKEN:
        for path, params in ASKED:
            answer = httpx.get(base + path, params={"workspace": workspace, **params}, timeout=10)
            if path == "/stats":
                assert answer.status_code == 200 and answer.json()["minds"][0]["error"]
                continue
            assert answer.status_code == 409, (workspace, path, answer.text)
            assert f"workspace {workspace!r} cannot be read" in answer.json()["error"]
    recalled = httpx.get(base + "/recall", params={"query": "Falcon"}, timeout=10).json()
    assert sorted(r["workspace"] for r in recalled["results"]) == ["personal", "team", "team"]
    assert set(httpx.get(base + "/health", timeout=10).json()["workspaces"]) == {"team", *BROKEN}


def test_stats_command_lists_broken_minds_and_does_not_abort(home, capsys):
    code = main(["stats", "--all-workspaces", "--home", str(home.root), "--json"])
    out = capsys.readouterr()
    assert code == EXIT_FAILED and "Traceback" not in out.err
    minds = {m["workspace"]: m for m in json.loads(out.out)}
    assert set(minds) == {"personal", "team", *BROKEN}
    assert minds["team"]["frames"] == 2 and "not a database" in minds["corrupt"]["error"]
    code = main(["stats", "--all-workspaces", "--home", str(home.root)])
    table = capsys.readouterr().out.splitlines()
    assert code == EXIT_FAILED and table[0].split()[-1] == "error"
    assert any(line.startswith("team ") and " 2 " in line for line in table)
    assert any(line.startswith("corrupt ") and "not a database" in line for line in table)
    assert main(["stats", "--workspace", "team", "--home", str(home.root)]) == EXIT_OK
    capsys.readouterr()


def wait_for(predicate, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_client_disconnects_are_one_debug_line_without_a_traceback(base, caplog, monkeypatch):
    host, port = base.removeprefix("http://").split(":")
    caplog.set_level(logging.DEBUG)
    client_gone = threading.Event()
    recall = QueryService.recall

    def recall_once_the_client_is_gone(self, request):  # a recall can take less than a reset
        client_gone.wait(10)
        return recall(self, request)

    monkeypatch.setattr(QueryService, "recall", recall_once_the_client_is_gone)
    with socket.create_connection((host, int(port)), timeout=5) as sock:  # leaves mid-body
        sock.sendall(b"POST /recall HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
        sock.sendall(b"Content-Length: 100\r\n\r\n" + b'{"query": ')
    with socket.create_connection((host, int(port)), timeout=5) as sock:  # resets before its answer
        sock.sendall(b"GET /recall?query=Falcon+budget HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def lines() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "mind_core.query.http_protocol"]

    assert wait_for(lambda: len(lines()) >= 2), caplog.text
    client_gone.set()
    assert all(r.levelno == logging.DEBUG and r.exc_info is None for r in lines())
    assert "stopped sending in the body of POST /recall" in lines()[0].getMessage()
    assert any("went away before its answer to GET /recall" in r.getMessage() for r in lines())
    assert httpx.get(base + "/health", timeout=10).status_code == 200
    assert "Traceback" not in caplog.text and not [r for r in caplog.records if r.levelno >= logging.ERROR]
