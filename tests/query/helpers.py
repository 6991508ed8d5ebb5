"""Builders for the query tests: minds with given texts, a harvested conversation, and a fake
external search service (a real HTTP server on 127.0.0.1 whose behaviour a test chooses)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from mind_core.harvest.importer import import_items
from mind_core.harvest.items import HarvestItem, HarvestMessage
from mind_core.mind import Mind

CONVERSATION_TITLE = "Falcon planning"
CONVERSATION_KEY = "conv-42"
MESSAGE_TIME = "2024-03-05T14:02:00+01:00"
# the keys of a recall answer, the same on HTTP, MCP and `mind recall --json`
RECALL_ANSWER_KEYS = {
    "query",
    "results",
    "external_available",
    "external_skipped",
    "external_error",
    "has_conflict",
    "conflict_note",
    "confident",
}


def build_mind(path: str | Path, texts: Sequence[str], embedder: Any, gop: str = "notes") -> list[int]:
    """A mind file holding one indexed I-frame per text; returns the frame ids."""
    with Mind.open(path, embedder=embedder) as mind:
        mind.sessions.ensure(gop)
        frames = [mind.frames.create_i_frame(gop, text) for text in texts]
        mind.search.index_frames_batch(frames)
        return [f.id for f in frames]


def harvest_conversation(mind: Mind) -> list[int]:
    """One conversation imported through the harvest engine (so frames carry provenance), indexed."""
    item = HarvestItem(
        key="item-42",
        kind="conversation",
        title=CONVERSATION_TITLE,
        container_key=CONVERSATION_KEY,
        messages=[
            HarvestMessage(
                "m1", "Should we move Falcon billing to PostgreSQL?", "user", None, MESSAGE_TIME, {"message_id": "m1"}
            ),
            HarvestMessage(
                "m2",
                "Yes: the PostgreSQL migration plan was approved.",
                "assistant",
                None,
                MESSAGE_TIME,
                {"message_id": "m2"},  # the export's own id, as the chatgpt plugin keeps it
            ),
        ],
        metadata={"path": "/exports/conversations.json"},
    )
    summary = import_items(mind, "gpt", [item], kind="chatgpt")
    ids = summary.new_frame_ids
    mind.search.index_frames_batch([mind.frames.get_by_id(i) for i in ids])
    return ids


@dataclass
class FakeExternal:
    """Answers POST /search the way ``mode`` says: ok, error500, slow, badjson, shape."""

    mode: str = "ok"
    results: list[dict[str, Any]] = field(default_factory=list)
    delay: float = 2.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""


@contextmanager
def fake_external(mode: str = "ok", results: list[dict[str, Any]] | None = None) -> Iterator[FakeExternal]:
    state = FakeExternal(mode=mode, results=list(results or []))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"null")
            state.requests.append(
                {"path": self.path, "body": body, "authorization": self.headers.get("Authorization")}
            )
            if state.mode == "slow":
                time.sleep(state.delay)
            if state.mode == "error500":
                self._answer(500, b'{"error": "boom"}')
            elif state.mode == "badjson":
                self._answer(200, b"{not json")
            elif state.mode == "shape":
                self._answer(200, b'{"hits": []}')
            else:
                self._answer(200, json.dumps({"results": state.results}).encode())

        def _answer(self, status: int, data: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client gave up waiting (timeout test)
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
