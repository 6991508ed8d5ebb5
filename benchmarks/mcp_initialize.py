"""How soon `mind mcp` answers an MCP client: initialize (name, version) and tools/list, then the
first recall (which waits for the embedder), through the SDK's own stdio client, per embedder.

"spawn -> initialize" includes starting Python and importing the MCP SDK; "initialize" alone is
the request sent once the process is up (the client waits --settle seconds first), which is what
the embedding model used to delay by its whole load time. Each embedder runs twice: a client that
sends everything at once, and one that waits --settle seconds before initialize and again before
its first tool call (the server warms up for that call once initialized: engine imports, model).

Before those, --cold new processes are sent a bare initialize line on stdin: the wall time to the
answer, and the CPU seconds the server process had used by then, which a busy shared machine
inflates far less than the wall time. --source starts another source tree's `mind` (e.g. an
export of main: `git archive main | tar -x -C /tmp/main-src`) for a before/after in one run.
Servers run with Python's bytecode cache on, as an installed package does (one start first writes
it), even when this shell sets PYTHONDONTWRITEBYTECODE: compiling the sources at every start is
not what a user's `mind mcp` pays.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import psutil
from _common import ROOT, write_results

from mind_core.mind import Mind
from mind_core.store.home import MindHome

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def server_env(source: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(source)}


def server_argv(embedder: str, home: Path) -> list[str]:
    return [sys.executable, "-m", "mind_core.cli", "mcp", "--home", str(home), "-w", "bench", "--embedder", embedder]


def cold_initialize(embedder: str, source: Path) -> tuple[float, float]:
    """A new server process sent one initialize line: (wall s to the answer, server CPU s by then)."""
    with tempfile.TemporaryDirectory() as home:
        process = subprocess.Popen(
            server_argv(embedder, Path(home)),
            cwd=source,
            env=server_env(source),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert process.stdin and process.stdout
        started = time.perf_counter()
        process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        wall = time.perf_counter() - started
        times = psutil.Process(process.pid).cpu_times()
        process.stdin.close()
        process.wait(timeout=60)
    assert answer["result"]["serverInfo"]["name"] == "mind-harvest", answer
    return wall, times.user + times.system


async def spawn_to_initialize(embedder: str, source: Path) -> float:
    """Seconds from spawning `mind mcp` to its initialize answer, through the SDK's stdio client
    (what a client such as Claude Desktop waits before it lists the tools)."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    with tempfile.TemporaryDirectory() as home:
        argv = server_argv(embedder, Path(home))
        server = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(source), env=server_env(source))
        spawned = time.perf_counter()
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return time.perf_counter() - spawned


async def measure(embedder: str, home: Path, settle: float, source: Path) -> dict[str, float | str]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    Mind.open(MindHome(home).workspace_path("bench")).close()  # as `mind sources add` leaves it: MCP creates none
    argv = server_argv(embedder, home)
    server = StdioServerParameters(
        command=argv[0], args=argv[1:], cwd=str(source), env=server_env(source)
    )
    figures: dict[str, float | str] = {"embedder": embedder}
    spawned = time.perf_counter()
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        if settle:
            await anyio.sleep(settle)
        began = time.perf_counter()
        info = await session.initialize()
        answered = time.perf_counter()
        figures["version"] = info.server_info.version
        figures["initialize_s"] = answered - began
        figures["spawn_to_initialize_s"] = answered - spawned
        await session.list_tools()
        figures["tools_list_s"] = time.perf_counter() - answered
        if settle:
            await anyio.sleep(settle)
        began = time.perf_counter()
        saved = await session.call_tool("save_memory", {"content": "Alice approved the Falcon budget"})
        assert not saved.is_error, saved.content
        figures["first_tool_call_s"] = time.perf_counter() - began
        began = time.perf_counter()
        await session.call_tool("recall_memory", {"query": "Falcon budget", "snippet_chars": 80})
        figures["recall_s"] = time.perf_counter() - began
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embedder", nargs="+", default=["mock", "inprocess"])
    parser.add_argument(
        "--settle", type=float, default=3.0, help="seconds before initialize and before the first tool call"
    )
    parser.add_argument("--cold", type=int, default=3, help="bare initialize cold starts per embedder")
    parser.add_argument("--source", type=Path, default=ROOT, help="source tree whose `mind mcp` is started")
    parser.add_argument(
        "--initialize-only",
        type=int,
        metavar="N",
        help="only N spawn -> initialize runs through the SDK client per embedder (each figure printed)",
    )
    args = parser.parse_args()
    source = args.source.resolve()
    runs, cold = [], {}
    print(f"load average: {os.getloadavg()[0]:.2f}; source {source}")
    cold_initialize(args.embedder[0], source)  # writes the bytecode cache; not counted
    if args.initialize_only:
        for embedder in args.embedder:
            times = [anyio.run(spawn_to_initialize, embedder, source) for _ in range(args.initialize_only)]
            cold[embedder] = {"spawn_to_initialize_s": times}
            print(
                f"{embedder:10s} spawn -> initialize over {len(times)} runs: "
                + ", ".join(f"{t:.2f}" for t in times)
                + f" s (median {statistics.median(times):.2f}, max {max(times):.2f})"
            )
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
        write_results("mcp_initialize", {"source": str(source), "spawn_to_initialize": cold})
        return
    for embedder in args.embedder:
        starts = [cold_initialize(embedder, source) for _ in range(args.cold)]
        walls, cpus = [s[0] for s in starts], [s[1] for s in starts]
        cold[embedder] = {"wall_s": walls, "cpu_s": cpus}
        print(
            f"{embedder:10s} cold initialize: best {min(walls):.3f} s, median {statistics.median(walls):.3f} s "
            f"(server CPU by the answer: best {min(cpus):.2f} s, median {statistics.median(cpus):.2f} s)"
        )
        for settle in (0.0, args.settle):
            with tempfile.TemporaryDirectory() as home:
                figures = anyio.run(measure, embedder, Path(home), settle, source)
            figures["settle_s"] = settle
            runs.append(figures)
            print(
                f"{embedder:10s} settle {settle:3.1f}s: initialize {figures['initialize_s']:.3f} s "
                f"(spawn->initialize {figures['spawn_to_initialize_s']:.3f} s, version "
                f"{figures['version']}), tools/list {figures['tools_list_s']:.3f} s, first tool call "
                f"{figures['first_tool_call_s']:.3f} s, recall {figures['recall_s']:.3f} s"
            )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    write_results("mcp_initialize", {"source": str(source), "cold": cold, "runs": runs})


if __name__ == "__main__":
    main()
