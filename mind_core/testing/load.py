"""The query service under mixed, partly hostile load from concurrent clients (loopback only).

``mind serve`` runs as its own process over a home with a workspace and a personal mind. Clients
send a seeded mix of valid calls and abuse: malformed and hostile JSON (truncated, not UTF-8,
100,000-deep, lone surrogates), oversize and lying bodies, chunked bodies, invalid parameters,
path traversal in workspace names, unknown routes and methods, garbage request lines. Every
request must get an answer below 500, as JSON, without a traceback; the server's resident memory
is sampled before and after.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import psutil

from mind_core.embeddings.mock import MockEmbedder
from mind_core.harvest.pipeline import harvest, register_source
from mind_core.mind import Mind
from mind_core.store.home import MindHome
from mind_core.testing.crash import REPO, child_env
from mind_core.testing.exports import write_chatgpt_export

HOST = "127.0.0.1"  # loopback only
HTTP09 = 0  # the status of an answer without a status line (the stdlib's reply to a garbage request line)
WORKSPACE = "team"
TRAVERSALS = (
    "../../etc/passwd",
    "..",
    "../personal",
    "a/b",
    "..\\..\\windows",
    "/etc/passwd",
    "team/../../x",
    "%2e%2e%2f",
    "team\x00.mind",
    "x" * 300,
    ".hidden",
    "con",
    "ünïcode",
)
WORDS = ("falcon", "budget", "latency", "cache", "alice", "sprint", "berlin", "postgres", "roadmap")


@dataclass
class Request:
    """One request: either an HTTP call or raw bytes written to the socket."""

    kind: str
    method: str = "GET"
    path: str = "/health"
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    # The server answers 413 to a huge declared body without reading it and closes; the unread
    # bytes make the kernel reset the connection, which can discard that 413 before the client
    # reads it. Such a reset is counted (status None), not a failure.
    may_reset: bool = False


@dataclass
class Answer:
    kind: str
    status: int | None
    problem: str | None = None  # set when the answer breaks a rule
    seconds: float = 0.0  # from sending the request to the end of the answer
    size: int = 0  # bytes of the answer's body
    route: str = ""  # the request's path without its query ("" for raw bytes)


def _get(kind: str, path: str, **params: Any) -> Request:
    return Request(kind, "GET", f"{path}?{urlencode(params)}" if params else path)


def _post(kind: str, path: str, body: bytes, content_type: str = "application/json") -> Request:
    return Request(kind, "POST", path, body, {"Content-Type": content_type})


def _words(rng: random.Random, n: int = 2) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def valid_requests(rng: random.Random, frame_ids: list[int]) -> dict[str, Callable[[], Request]]:
    """The valid calls of the mix by name, each a maker of one request."""
    return {
        "GET /recall": lambda: _get("valid", "/recall", query=_words(rng), limit=rng.randint(1, 20)),
        "POST /recall": lambda: _post(
            "valid",
            "/recall",
            json.dumps(
                {"query": _words(rng, 3), "scope": rng.choice(["all", "personal", "workspace"])}
            ).encode(),
        ),
        "GET /search": lambda: _get("valid", "/search", query=_words(rng), workspace=WORKSPACE, explain="true"),
        "GET /entities": lambda: _get(
            "valid", "/entities", query=rng.choice(["Al", "Ber", "a", "Falcon"]), limit=5
        ),
        "GET /frames/{id}": lambda: _get("valid", f"/frames/{rng.choice(frame_ids)}", workspace=WORKSPACE),
        "GET /stats": lambda: _get("valid", "/stats"),
        "GET /sources": lambda: _get("valid", "/sources", workspace=WORKSPACE),
        "GET /health": lambda: _get("valid", "/health"),
        "GET /openapi.json": lambda: _get("valid", "/openapi.json"),
    }


def kinds_alone(rng: random.Random, frame_ids: list[int]) -> dict[str, Callable[[], Request]]:
    """What ``cpu_alone`` measures: every valid call, and two refusals that reach no mind (the
    cost of the HTTP layer alone)."""
    return {
        **valid_requests(rng, frame_ids),
        "refused: invalid limit (400)": lambda: _get(
            "invalid-params", "/recall", query=_words(rng), limit="abc"
        ),
        "refused: unknown route (404)": lambda: Request("unknown", "GET", "/nope"),
    }


def request_mix(rng: random.Random, count: int, frame_ids: list[int]) -> list[Request]:
    """``count`` requests: about half valid, the rest hostile, shuffled."""

    def words(n: int = 2) -> str:
        return _words(rng, n)

    valid = list(valid_requests(rng, frame_ids).values())
    makers = [
        *valid,
        lambda: _post(
            "malformed-json",
            "/recall",
            rng.choice(
                [b'{"query": ', b"{'query': 'x'}", b"[1, 2]", b"null", b'"query"', b"{", b'{"query": "x",}']
            ),
        ),
        lambda: _post("malformed-json", "/recall", b'{"query": "caf\xe9"}'),
        lambda: _post("oversize", "/search", b"[" * 100_000 + b"]" * 100_000),
        lambda: _post("malformed-json", "/recall", b'{"query": {"$ne": 1}, "limit": [1]}'),
        lambda: _get("hostile-text", "/recall", query="falcon\x00budget ' OR 1=1 -- NEAR( \"*"),
        lambda: _post("oversize", "/recall", b'{"query": "' + b"a" * (100 * 1024) + b'"}'),
        lambda: Request(
            "oversize",
            raw=b"POST /recall HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n"
            + b"a" * 65536,
            may_reset=True,
        ),
        lambda: Request(
            "oversize", raw=b'POST /recall HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n{"query"'
        ),
        lambda: Request(
            "oversize",
            raw=b"POST /recall HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        ),
        lambda: Request("oversize", raw=b"POST /recall HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"),
        lambda: _get(
            "invalid-params",
            "/recall",
            query=words(),
            limit=rng.choice(["0", "-1", "101", "abc", "1e9", "99999999999999999999", ""]),
        ),
        lambda: _get(
            "invalid-params", "/recall", query=words(), profile=rng.choice(["nope", "", "BALANCED"])
        ),
        lambda: _get("invalid-params", "/recall", query=words(), scope="everything"),
        lambda: _get(
            "invalid-params",
            "/recall",
            query=words(),
            since=rng.choice(["yesterday", "2024-13-45", "9" * 40]),
        ),
        lambda: _get("invalid-params", "/recall", query=words(), explain="maybe"),
        lambda: _get("invalid-params", "/recall", query="x" * 2_500),
        lambda: _get("invalid-params", "/recall", query="   "),
        lambda: _get("invalid-params", "/recall", query=words(), bogus="1"),
        lambda: Request("invalid-params", "GET", "/recall?query=a&query=b"),
        lambda: Request("invalid-params", "GET", "/recall?" + "&".join(f"p{i}=1" for i in range(100))),
        lambda: _get("invalid-params", "/entities", query="a", limit="100000"),
        lambda: _post("invalid-params", "/recall", json.dumps({"query": words(), "limit": True}).encode()),
        lambda: _get("traversal", "/recall", query=words(), workspace=rng.choice(TRAVERSALS)),
        lambda: _get("traversal", "/stats", workspace=rng.choice(TRAVERSALS)),
        lambda: _post(
            "traversal",
            "/search",
            json.dumps({"query": words(), "workspace": rng.choice(TRAVERSALS)}).encode(),
        ),
        lambda: Request("traversal", "GET", "/frames/1?workspace=" + quote("../../../etc/passwd")),
        lambda: Request("traversal", "GET", "/../../etc/passwd"),
        lambda: Request("traversal", "GET", "/frames/..%2f..%2fetc%2fpasswd"),
        lambda: Request("unknown", rng.choice(["PUT", "DELETE", "PATCH"]), "/recall"),
        lambda: Request(
            "unknown",
            "GET",
            rng.choice(["/nope", "/frames/abc", "/frames/99999999999", "/recall/", "//recall", "/RECALL"]),
        ),
        lambda: Request(
            "unknown",
            raw=rng.choice(
                [
                    b"GARBAGE\r\n\r\n",
                    b"GET /health HTTP/9.9\r\n\r\n",
                    b"GET " + b"/a" * 40000 + b" HTTP/1.1\r\n\r\n",
                    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
                ]
            ),
        ),
        lambda: _post("lone-surrogate", "/recall", b'{"query": "falcon \\ud800 budget"}'),
        lambda: _post(
            "lone-surrogate",
            "/search",
            json.dumps({"query": "cache \udfff", "workspace": WORKSPACE}).encode(),
        ),
        lambda: _post("deep-json", "/search", b"[" * 30_000 + b"]" * 30_000),
    ]
    hostile = makers[len(valid) :]
    return [rng.choice(valid)() if rng.random() < 0.45 else rng.choice(hostile)() for _ in range(count)]


def check_answer(kind: str, status: int | None, body: bytes) -> Answer:
    if status is None:
        return Answer(kind, None, "no answer")
    if status >= 500:
        return Answer(kind, status, f"{status}: {body[:200]!r}")
    if b"Traceback" in body or b'File "' in body:
        return Answer(kind, status, f"traceback in body: {body[:200]!r}")
    try:
        json.loads(body)
    except ValueError:
        return Answer(kind, status, f"not JSON: {body[:120]!r}")
    if kind == "valid" and status != 200:
        return Answer(kind, status, f"valid request refused: {body[:200]!r}")
    if (
        kind != "valid"
        and status == 200
        and kind in ("malformed-json", "deep-json", "oversize", "invalid-params", "unknown")
    ):
        return Answer(kind, status, f"hostile request accepted: {body[:120]!r}")
    return Answer(kind, status)


def _send_http(conn_holder: list, port: int, request: Request) -> Answer:
    for attempt in range(2):  # a server may close a kept-alive connection: reconnect once
        if conn_holder[0] is None:
            conn_holder[0] = http.client.HTTPConnection(HOST, port, timeout=60)
        conn = conn_holder[0]
        try:
            conn.request(request.method, request.path, body=request.body, headers=request.headers)
            response = conn.getresponse()
            body = response.read()
            if response.will_close:
                conn.close()
                conn_holder[0] = None
            answer = check_answer(request.kind, response.status, body)
            answer.size = len(body)
            return answer
        except (ConnectionError, http.client.HTTPException, OSError) as exc:
            conn.close()
            conn_holder[0] = None
            if attempt:
                return Answer(request.kind, None, f"{type(exc).__name__}: {exc}")
    raise AssertionError("unreachable")


def _send_raw(port: int, request: Request) -> Answer:
    assert request.raw is not None
    with socket.create_connection((HOST, port), timeout=60) as sock:
        try:
            sock.sendall(request.raw)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may answer and close before reading everything (413)
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except OSError:
            pass
    if not data:
        return Answer(
            request.kind, None, None if request.may_reset else "connection closed without an answer"
        )
    if not data.startswith(b"HTTP/"):  # a request line too broken to name a version: HTTP/0.9
        return check_answer(request.kind, HTTP09, data)
    head, _, body = data.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    status = int(status_line[1]) if len(status_line) > 1 and status_line[1].isdigit() else None
    answer = check_answer(request.kind, status, body)
    answer.size = len(body)
    return answer


@dataclass
class LoadResult:
    requests: int
    clients: int
    seconds: float
    statuses: Counter
    by_kind: Counter
    problems: list[str]
    rss_before: int
    rss_after: int
    server_tracebacks: int
    latencies: list[float] = field(default_factory=list)
    server_cpu_seconds: float = 0.0  # user + system CPU of the server process during the round
    answer_bytes: int = 0  # the bodies of every answer
    recall_answer_sizes: list[int] = field(default_factory=list)  # each 200 answer to /recall

    @property
    def server_errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status is not None and status >= 500)

    def summary(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "clients": self.clients,
            "seconds": round(self.seconds, 2),
            "requests_per_s": round(self.requests / self.seconds, 1),
            "statuses": {str(k): v for k, v in sorted(self.statuses.items(), key=lambda kv: str(kv[0]))},
            "by_kind": dict(self.by_kind),
            "p50_ms": round(_percentile(self.latencies, 50) * 1000, 1),
            "p95_ms": round(_percentile(self.latencies, 95) * 1000, 1),
            "server_cpu_ms_per_request": round(self.server_cpu_seconds * 1000 / max(self.requests, 1), 2),
            "bytes_per_answer": round(self.answer_bytes / max(self.requests, 1)),
            "bytes_per_recall_answer": round(
                sum(self.recall_answer_sizes) / max(len(self.recall_answer_sizes), 1)
            ),
            "server_errors_5xx": self.server_errors,
            "problems": len(self.problems),
            "server_log_tracebacks": self.server_tracebacks,
            "rss_before_mb": round(self.rss_before / 2**20, 1),
            "rss_after_mb": round(self.rss_after / 2**20, 1),
        }


def build_home(root: Path) -> tuple[Path, list[int]]:
    """A home with a harvested workspace mind and personal mind (mock vectors); frame ids."""
    home = MindHome(root / "home")
    frame_ids: list[int] = []
    for path, seed in ((home.workspace_path(WORKSPACE), 1), (home.personal_path, 2)):
        export = write_chatgpt_export(root / f"export-{seed}" / "conversations.json", 10, 20, seed=seed)
        with Mind.open(path, embedder=MockEmbedder(1024)) as mind:
            register_source(mind, "chatgpt", export, "gpt")
            harvest(mind, "gpt")
            if seed == 1:
                frame_ids = [r[0] for r in mind.db.query("SELECT id FROM memory_frames")]
    return home.root, frame_ids


def _percentile(values: list[float], percent: int) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(percent / 100 * (len(ordered) - 1)))]


class Server:
    """`mind serve` on 127.0.0.1 with an OS-chosen port, stopped with SIGTERM. ``tree`` is the
    source tree it runs from (another version's checkout to compare with), ``env`` is added to
    the child's environment, and the server's log is ``<label>.log`` next to the home."""

    def __init__(
        self, home: Path, tree: Path = REPO, env: dict[str, str] | None = None, label: str = "serve"
    ) -> None:
        self.log_path = home.parent / f"{label}.log"
        self.log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        port = _free_port()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mind_core.cli",
                "serve",
                "--home",
                str(home),
                "--workspace",
                WORKSPACE,
                "--embedder",
                "mock",
                "--host",
                HOST,
                "--port",
                str(port),
                "-q",
            ],
            cwd=tree,
            env={**child_env(), "PYTHONPATH": str(tree), **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        self.port = port
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((HOST, port), timeout=1):
                    return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"mind serve exited: {self.log_path.read_text()}") from None
                time.sleep(0.1)
        raise RuntimeError("mind serve did not start listening")

    def _processes(self) -> list[psutil.Process]:
        """The server's processes: ``mind serve`` and its worker processes."""
        main = psutil.Process(self.proc.pid)
        return [main, *main.children(recursive=True)]

    def rss(self) -> int:
        return sum(p.memory_info().rss for p in self._processes())

    def cpu_seconds(self) -> float:
        return sum(sum(p.cpu_times()[:2]) for p in self._processes())

    def thread_cpu_ns(self) -> dict[int, int]:
        """Each live thread's time on a CPU in nanoseconds (``/proc/<pid>/task/*/schedstat``), of
        every server process: precise, where the process's CPU times count 10 ms clock ticks, too
        coarse for a few cheap requests. Linux only."""
        times = {}
        for process in self._processes():
            for task in Path(f"/proc/{process.pid}/task").iterdir():
                try:
                    times[int(task.name)] = int((task / "schedstat").read_text().split()[0])
                except (OSError, ValueError, IndexError):
                    pass  # the thread ended while being read
        return times

    def stop(self) -> str:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        return self.log_path.read_text()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def run_load(server: Server, requests: list[Request], clients: int, rate: float | None = None) -> LoadResult:
    """Send ``requests`` from ``clients`` threads (each its own keep-alive connection). Each
    client sends its next request as soon as it has an answer; with ``rate`` (requests per
    second) the k-th request leaves no earlier than k / rate seconds after the start, so two
    servers get the same offered load as long as the clients keep up (a closed loop rewards a
    server whose cheap answers are slow: its clients send less)."""
    queue = list(enumerate(requests))
    lock = threading.Lock()
    answers: list[Answer] = []

    def client() -> None:
        holder: list[http.client.HTTPConnection | None] = [None]
        while True:
            with lock:
                if not queue:
                    break
                _, request = queue.pop()
                due = began + (len(requests) - len(queue) - 1) / rate if rate else 0.0
            if (wait := due - time.perf_counter()) > 0:
                time.sleep(wait)
            sent = time.perf_counter()
            try:
                answer = (
                    _send_raw(server.port, request)
                    if request.raw is not None
                    else _send_http(holder, server.port, request)
                )
            except Exception as exc:  # a client-side surprise is counted, never lost
                answer = Answer(request.kind, None, f"client error {type(exc).__name__}: {exc}")
            answer.seconds = time.perf_counter() - sent
            answer.route = "" if request.raw is not None else request.path.split("?", 1)[0]
            with lock:
                answers.append(answer)
        if holder[0] is not None:
            holder[0].close()

    rss_before = server.rss()
    cpu_before = server.cpu_seconds()
    began = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    seconds = time.perf_counter() - began
    cpu = server.cpu_seconds() - cpu_before
    rss_after = server.rss()
    return LoadResult(
        requests=len(answers),
        clients=clients,
        seconds=seconds,
        statuses=Counter(a.status for a in answers),
        by_kind=Counter(a.kind for a in answers),
        problems=[f"{a.kind}: {a.problem}" for a in answers if a.problem],
        rss_before=rss_before,
        rss_after=rss_after,
        server_tracebacks=0,
        latencies=[a.seconds for a in answers],
        server_cpu_seconds=cpu,
        answer_bytes=sum(a.size for a in answers),
        recall_answer_sizes=[a.size for a in answers if a.route == "/recall" and a.status == 200],
    )


def cpu_alone(server: Server, make: Callable[[], Request], count: int, warm_up: int = 5) -> float:
    """Server CPU milliseconds per request of ``count`` requests made by ``make``, sent one after
    another on one keep-alive connection: what one kind costs with nothing else in the server
    (no queueing, no other thread wanting the GIL). A thread that ends during the measurement
    would take its time with it; none does, since the connection stays open until the end."""
    holder: list[http.client.HTTPConnection | None] = [None]
    try:
        for _ in range(warm_up):
            _send_http(holder, server.port, make())
        before = server.thread_cpu_ns()
        for _ in range(count):
            answer = _send_http(holder, server.port, make())
            if answer.problem is not None:
                raise RuntimeError(f"{answer.kind} request broke a rule: {answer.problem}")
        after = server.thread_cpu_ns()
    finally:
        if holder[0] is not None:
            holder[0].close()
    return sum(ns - before.get(tid, 0) for tid, ns in after.items()) / count / 1e6


def serve_under_load(
    root: Path, count: int, clients: int, seed: int, rounds: int = 1, warm_up: int = 200
) -> list[LoadResult]:
    """Start a server, warm it up, then run ``rounds`` rounds of ``count`` mixed requests."""
    home, frame_ids = build_home(root)
    server = Server(home)
    rng = random.Random(seed)
    results = []
    try:
        run_load(server, request_mix(rng, warm_up, frame_ids), clients)  # warm-up: pools, caches
        for _ in range(rounds):
            results.append(run_load(server, request_mix(rng, count, frame_ids), clients))
    finally:
        log = server.stop()
    tracebacks = log.count("Traceback")
    for result in results:
        result.server_tracebacks = tracebacks
    return results
