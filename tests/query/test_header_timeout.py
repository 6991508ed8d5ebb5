"""``mind serve`` against clients that never finish a request head (slowloris): each such
connection is closed within the header timeout, and hundreds of them do not keep an ordinary
request from its answer. Real servers on free 127.0.0.1 ports, raw sockets."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from mind_core.query.http_server import QueryServer
from mind_core.query.service import ServiceConfig
from mind_core.store.home import MindHome
from mind_core.testing.fakes import HashingEmbedder

TIMEOUT = 1.0  # the servers' header timeout here
SLACK = 2.0  # how much later than the timeout a close may come on a loaded machine
SLOW_CLIENTS = 200


@pytest.fixture
def serve(tmp_path) -> Iterator[Callable[[float], tuple[str, int]]]:
    servers: list[tuple[QueryServer, threading.Thread]] = []

    def start(header_timeout: float) -> tuple[str, int]:
        config = ServiceConfig(home=MindHome(tmp_path / "home"), default_workspace="team", embedder=HashingEmbedder())
        server = QueryServer(config, "127.0.0.1", 0, header_timeout=header_timeout)
        thread = threading.Thread(target=server.serve, daemon=True)
        thread.start()
        servers.append((server, thread))
        return server.host, server.port

    yield start
    for server, thread in servers:
        server.stop()
        thread.join(timeout=10)
        server.close()


def read_until_closed(sock: socket.socket, bound: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and when that was (seconds
    from now); fails if it is still open after ``bound`` seconds."""
    began = time.monotonic()
    sock.settimeout(bound)
    reply = b""
    while chunk := sock.recv(65536):
        reply += chunk
    return reply, time.monotonic() - began


def partial_head(address: tuple[str, int]) -> socket.socket:
    sock = socket.create_connection(address, timeout=5)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    return sock


def test_a_partial_head_is_answered_408_and_closed_within_the_timeout(serve):
    address = serve(TIMEOUT)
    with partial_head(address) as sock:
        reply, waited = read_until_closed(sock, TIMEOUT + SLACK)
    head, _, body = reply.decode().partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 408") and "connection: close" in head
    assert json.loads(body) == {"error": "invalid HTTP request: the request head did not arrive within 1 seconds"}
    assert TIMEOUT * 0.9 <= waited <= TIMEOUT + SLACK


def test_a_connection_that_sends_nothing_is_closed_within_the_timeout(serve):
    address = serve(TIMEOUT)
    with socket.create_connection(address, timeout=5) as sock:
        reply, waited = read_until_closed(sock, TIMEOUT + SLACK)
    assert reply == b"" and TIMEOUT * 0.9 <= waited <= TIMEOUT + SLACK


def test_a_trickled_head_is_cut_at_the_timeout_whatever_arrives(serve):
    """Bytes that keep coming do not restart the clock: the head as a whole has the timeout."""
    address = serve(TIMEOUT)
    with socket.create_connection(address, timeout=5) as sock:
        began = time.monotonic()
        sock.sendall(b"GET /health HTTP/1.1\r\n")
        # a header line every 0.1 s until the server answers (then stop: a line sent after its
        # close would be answered with a reset)
        while not select.select([sock], [], [], 0.1)[0] and time.monotonic() - began < TIMEOUT + SLACK:
            sock.sendall(b"X-Drip: 1\r\n")
        reply, _ = read_until_closed(sock, SLACK)
        closed = time.monotonic() - began
    assert reply.startswith(b"HTTP/1.1 408") and closed <= TIMEOUT + 2 * SLACK


def test_the_next_request_on_a_kept_alive_connection_has_the_timeout_too(serve):
    address = serve(TIMEOUT)
    with socket.create_connection(address, timeout=5) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        first = b""
        while b'"status"' not in first:
            first += sock.recv(65536)
        time.sleep(TIMEOUT * 1.5)  # idle between requests: keep-alive's time, not the head's
        sock.sendall(b"GET /health HTTP/1.1\r\nHo")
        reply, waited = read_until_closed(sock, TIMEOUT + SLACK)
    assert first.startswith(b"HTTP/1.1 200") and reply.startswith(b"HTTP/1.1 408")
    assert TIMEOUT * 0.9 <= waited <= TIMEOUT + SLACK


def test_hundreds_of_slow_clients_do_not_keep_a_request_from_its_answer(serve):
    timeout = 4.0  # long enough that the request below is answered while all of them hang
    address = serve(timeout)
    began = time.monotonic()
    slow = [partial_head(address) for _ in range(SLOW_CLIENTS)]
    try:
        host, port = address
        answered = httpx.get(f"http://{host}:{port}/health", timeout=timeout)
        assert answered.status_code == 200 and answered.json()["status"] == "ok"
        assert time.monotonic() - began < timeout  # answered before any slow client was let go
        deadline = began + timeout + SLACK
        replies = [read_until_closed(sock, max(0.1, deadline - time.monotonic()))[0] for sock in slow]
    finally:
        for sock in slow:
            sock.close()
    assert all(reply.startswith(b"HTTP/1.1 408") for reply in replies)
