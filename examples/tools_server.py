#!/usr/bin/env python3
"""An MCP server over stdio built on the Python MCP SDK's low-level Server, offering many
tools; for benchmarks only (scripts/bench_tools --python). The same tools as
examples/tools_server.rs: N tools named <name>_t0000, ..., each a name, a description and an
inputSchema with one string property; with --page P, tools/list answers P tools a page.

Usage: tools_server.py [--tools N] [--page P] [--name S]
Needs the `mcp` package (the pinned one in .tools/venv).
"""

import argparse

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=1000)
    parser.add_argument("--page", type=int, default=0)
    parser.add_argument("--name", default="srv")
    args = parser.parse_args()
    tools = [
        types.Tool(
            name=f"{args.name}_t{i:04d}",
            description=f"Benchmark tool {i}.",
            input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        )
        for i in range(args.tools)
    ]

    async def list_tools(_ctx, params):
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = len(tools) if args.page <= 0 else min(len(tools), start + args.page)
        more = str(end) if end < len(tools) else None
        return types.ListToolsResult(tools=tools[start:end], next_cursor=more)

    async def call_tool(_ctx, params):
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"called {params.name}")]
        )

    server = Server(args.name, on_list_tools=list_tools, on_call_tool=call_tool)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
