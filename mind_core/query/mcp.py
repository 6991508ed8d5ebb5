"""``mind mcp``: the minds as MCP tools over stdio, with the original's tool names (reference §13).

Tools act on the server's current workspace mind unless a call names another
(``workspace="personal"`` is the personal mind). Reads of the server's workspace or the personal
mind before they exist answer empty, while a read naming any other workspace without a mind is an
error (as the command line's exit 2 and the HTTP service's 404, in the same words); a write to a
workspace without a mind is an error too: MCP never creates a mind (``mind sources add`` does).
Recalls read only, unless the server was started with ``--record-access``. Minds stay open for the
session and calls are serialized (the SDK runs sync tools in worker threads; one SQLite
connection per mind must not be shared concurrently).

``initialize`` does not wait for the embedding model: ``mind mcp`` builds the embedder when the
first tool call opens a mind (``OnFirstUse``), so a client sees the server (name, package
version, tools) as soon as the process is up. For the same reason this module imports only what
the tool signatures need (the request and answer models); the engine (minds, search, retrieval,
numpy, the HTTP client) is imported inside the tools, by the first call that uses it.

Differences from the original server, on purpose:
- ``save_memory`` runs cognify (frame, knowledge graph, entity links, vector), so saved memories
  are connected and findable at once; the original only wrote a frame.
- ``recall_memory`` is CombinedRetrieval (workspace + personal + external; scopes all, personal,
  workspace, and the original's ``current``, which every surface reads as workspace) with scores
  on the 0..1 match scale; it takes the same RecallRequest as ``mind serve`` and ``mind recall
  --json`` and answers the same RecallResponse (each result once, naming its workspace and
  source), and ``snippet_chars`` cuts each text to a snippet to save tokens.
- ``kg_entities``, ``kg_relations`` and ``kg_neighbours`` (not in the original) read the knowledge
  graph on both time axes (``valid_at``, ``known_at``) and answer what ``/kg/...`` and
  ``mind kg ... --json`` answer.
- ``list_sources`` (the original's ``harvest_sources``) lists the registered harvest sources; it
  starts no harvest, so its name says what it does.
- ``cleanup_frames`` offers only the modes ``reconcile`` and ``compact`` (which deletes old
  temporary and deprecated frames, so the tool is marked destructive).

Every tool declares what it does to a mind (MCP tool annotations: ``readOnlyHint``, and for a
write ``destructiveHint`` and ``idempotentHint``), every argument is described with its range,
and every answer is a model, so its output schema is exact. The SDK advertises the prompts and
resources capabilities although this server has neither (``MCPServer`` registers their list
handlers unconditionally); their lists are empty.
"""
from __future__ import annotations

import difflib
import functools
import inspect
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from mind_core.errors import MindError
from mind_core.query.mcp_arguments import TOOL_NAMES, TOOLS
from mind_core.query.mcp_tools import MindTools
from mind_core.query.models.fields import package_version
from mind_core.query.models.validation import describe_errors

log = logging.getLogger(__name__)

SERVER_NAME = "mind-harvest"
_T = TypeVar("_T", bound=Callable[..., Any])


def _serialized(tools: MindTools, method: _T) -> _T:
    """One call at a time; errors we raise on purpose reach the client with their message."""

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        with tools._lock:
            try:
                return method(*args, **kwargs)
            except MindError as exc:
                raise ToolError(str(exc)) from exc

    return call  # type: ignore[return-value]


def _readable(error: ToolError) -> str:
    """What a refused call tells the client: the arguments' faults in the words of the HTTP API
    (``describe_errors``), or the message of the error a tool raised on purpose, without the SDK's
    "Error executing tool ..." prefix and pydantic's multi-line dump."""
    cause = error.__cause__
    while cause is not None:
        if isinstance(cause, ValidationError):
            return describe_errors(cause.errors())
        if isinstance(cause, MindError):
            return str(cause)
        cause = cause.__cause__
    return str(error)


class MindServer(MCPServer):
    """The SDK's server, answering a refused tool call with one readable sentence (an error
    result, ``isError``): an unknown argument is refused like the HTTP API's unknown parameter
    instead of ignored, and a crash stays the SDK's generic message (details only in the log).
    An answer's text block (what a client without structured output reads, beside
    ``structuredContent``) is compact JSON: the SDK indents it, which made a recall's text a
    third longer, every space a token a model pays for."""

    def __init__(self, *args: Any, parameters: Mapping[str, frozenset[str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._parameters = parameters

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if name not in self._parameters:
            return _error_result(f"unknown tool {name!r}{_did_you_mean(name, self._parameters)}")
        known = self._parameters[name]
        unknown = sorted(arguments.keys() - known)
        if unknown:
            return _error_result("; ".join(f"unknown parameter {key!r}{_did_you_mean(key, known)}" for key in unknown))
        try:
            result = await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            return _error_result(_readable(exc))
        if isinstance(result, CallToolResult) and not result.is_error:
            result.content = [_compact(block) for block in result.content]
        return result


def _did_you_mean(word: str, choices: Collection[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest of ``choices``, as the command line suggests."""
    close = difflib.get_close_matches(word, sorted(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class WarmUpWhenInitialized:
    """Server middleware: once the client confirms the handshake (``notifications/initialized``),
    ``warm`` runs in a background thread. Started any earlier, it would hold the interpreter while
    the server still imports and answers initialize; started then, it overlaps the time a client
    spends before its first tool call (often the whole wait for a user's question)."""

    def __init__(self, warm: Callable[[], None]) -> None:
        self._warm = warm
        self._started = False

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await call_next(ctx)
        if ctx.method == "notifications/initialized" and not self._started:
            self._started = True
            threading.Thread(target=self._run, name="mind-mcp-warm-up", daemon=True).start()
        return result

    def _run(self) -> None:
        try:
            self._warm()
        except Exception:  # the first tool call that needs the part that failed reports it
            log.info("warming up for the first tool call failed", exc_info=True)


def _compact(block: Any) -> Any:
    """A text block holding JSON, without the indentation; any other block as it is."""
    if not isinstance(block, TextContent):
        return block
    try:
        data = json.loads(block.text)
    except ValueError:
        return block
    return TextContent(type="text", text=json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def _error_result(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def build_mcp_server(tools: MindTools) -> MindServer:
    """The MCP server exposing TOOL_NAMES; ``.run("stdio")`` serves it."""
    methods = {name: getattr(tools, name) for name in TOOL_NAMES}
    server = MindServer(
        SERVER_NAME,
        version=package_version(),
        instructions=(
            "Long-term memory. recall_memory before answering questions about past work; "
            "save_memory for facts worth keeping. Scores are 0..1."
        ),
        log_level="WARNING",
        middleware=[WarmUpWhenInitialized(tools.warm_up)],
        parameters={name: frozenset(inspect.signature(m).parameters) for name, m in methods.items()},
    )
    for name, method in methods.items():
        title, annotations = TOOLS[name]
        server.add_tool(
            _serialized(tools, method),
            name=name,
            title=title,
            description=inspect.cleandoc(method.__doc__ or ""),
            annotations=annotations,
        )
    return server
