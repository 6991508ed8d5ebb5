"""What ``mind_core.query.http_protocol`` relies on in uvicorn's httptools protocol, which is not
a public API: the exact versions pyproject pins, and each upstream member the subclass overrides
or reads. An upgrade that moves one fails here, not in a client's face."""

from __future__ import annotations

import inspect
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from mind_core.query.http_protocol import JSONHttpToolsProtocol

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
OVERRIDDEN = (
    "connection_made",
    "data_received",
    "send_400_response",
    "on_message_begin",
    "on_url",
    "on_header",
    "on_headers_complete",
    "on_message_complete",
    "eof_received",
    "connection_lost",
)
CALLED = ("_unset_keepalive_if_required",)  # an upstream method the subclass calls
# what the subclass reads on the protocol and on a request's cycle
PROTOCOL_ATTRIBUTES = ("parser", "cycle", "transport", "client", "loop")
CYCLE_ATTRIBUTES = ("response_started", "response_complete", "disconnected", "message_event", "keep_alive", "scope")


def test_the_versions_it_was_written_for_are_pinned_exactly():
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    pins = dict(re.fullmatch(r"([a-z]+)==(.+)", d).groups() for d in dependencies if d.startswith(("uvicorn", "httptools")))
    assert pins == {"uvicorn": version("uvicorn"), "httptools": version("httptools")}


def test_the_upstream_members_it_relies_on_exist():
    assert issubclass(JSONHttpToolsProtocol, HttpToolsProtocol)
    for name in OVERRIDDEN:
        assert callable(getattr(HttpToolsProtocol, name)) and name in vars(JSONHttpToolsProtocol), name
    for name in CALLED:
        assert callable(getattr(HttpToolsProtocol, name)), name
    init = inspect.getsource(HttpToolsProtocol.__init__) + inspect.getsource(HttpToolsProtocol.connection_made)
    for name in PROTOCOL_ATTRIBUTES:
        assert f"self.{name} =" in init or f"self.{name}:" in init, name
    cycle = inspect.getsource(RequestResponseCycle.__init__)
    for name in CYCLE_ATTRIBUTES:
        assert f"self.{name} =" in cycle or f"self.{name}:" in cycle, name
    assert all(issubclass(error, Exception) for error in (httptools.HttpParserUpgrade, httptools.HttpParserError))
