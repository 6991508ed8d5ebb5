"""`mind serve` under concurrent mixed and hostile requests (loopback only)."""

import json
import urllib.request

import pytest

from mind_core.testing.load import Server, build_home, serve_under_load


@pytest.mark.slow
def test_mixed_hostile_requests_get_clean_answers_and_bounded_memory(tmp_path):
    first, second = serve_under_load(tmp_path, count=200, clients=16, seed=9, rounds=2)
    for result in (first, second):
        assert result.requests == 200
        assert result.problems == [], result.problems[:10]
        assert result.server_errors == 0
        assert (
            result.statuses[200] > 50
            and sum(n for s, n in result.statuses.items() if s and 400 <= s < 500) > 50
        )
    assert first.server_tracebacks == 0
    # Each pooled read-only handle fills its page cache and memory map once (steps of up to ~50 MB
    # while concurrency reaches new highs), then memory stays flat: bounded, not growing per request.
    assert second.rss_after - first.rss_before < 128 * 2**20


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    home, _ = build_home(tmp_path_factory.mktemp("serve"))
    running = Server(home)
    yield running
    running.stop()


def post(server, path, body: bytes) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}{path}", data=body, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_a_lone_surrogate_in_a_body_gets_an_answer(server):
    status, body = post(server, "/recall", b'{"query": "falcon \\ud800 budget"}')
    assert status == 200 and json.loads(body)["query"] == "falcon \ufffd budget"


def test_json_nested_deeper_than_the_recursion_limit_is_a_400(server):
    status, body = post(server, "/search", b"[" * 30_000 + b"]" * 30_000)
    assert status == 400 and "error" in json.loads(body)
