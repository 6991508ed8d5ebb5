"""How soon `mind mcp` answers an MCP client: initialize (name, version) and tools/list, then the
first recall (which waits for the embedder), through the SDK's own stdio client, per embedder.

"spawn -> initialize" includes starting Python and importing the MCP SDK; "initialize" alone is
the request sent once the process is up (the client waits --settle seconds first), which is what
the embedding model used to delay by its whole load time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio
from _common import ROOT, write_results


async def measure(embedder: str, home: Path, settle: float) -> dict[str, float | str]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    server = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "mind_core.cli",
            "mcp",
            "--home",
            str(home),
            "--workspace",
            "bench",
            "--embedder",
            embedder,
        ],
        cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
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
        began = time.perf_counter()
        await session.call_tool("save_memory", {"content": "Alice approved the Falcon budget"})
        figures["first_tool_call_s"] = time.perf_counter() - began
        began = time.perf_counter()
        await session.call_tool("recall_memory", {"query": "Falcon budget", "snippet_chars": 80})
        figures["recall_s"] = time.perf_counter() - began
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embedder", nargs="+", default=["mock", "inprocess"])
    parser.add_argument("--settle", type=float, default=3.0, help="seconds between spawn and initialize")
    args = parser.parse_args()
    runs = []
    print(f"load average: {os.getloadavg()[0]:.2f}")
    for embedder in args.embedder:
        for settle in (0.0, args.settle):
            with tempfile.TemporaryDirectory() as home:
                figures = anyio.run(measure, embedder, Path(home), settle)
            figures["settle_s"] = settle
            runs.append(figures)
            print(
                f"{embedder:10s} settle {settle:3.1f}s: initialize {figures['initialize_s']:.3f} s "
                f"(spawn->initialize {figures['spawn_to_initialize_s']:.3f} s, version "
                f"{figures['version']}), tools/list {figures['tools_list_s']:.3f} s, first tool call "
                f"{figures['first_tool_call_s']:.3f} s, recall {figures['recall_s']:.3f} s"
            )
    write_results("mcp_initialize", {"runs": runs})


if __name__ == "__main__":
    main()
