"""A test MCP server (stdio, the low-level server API) whose answers change with every call: ``tick`` returns
``<label> #<n>``, n counting every call the server has answered, and writes n into ``file_path`` when given
(a path the host resolves into the task workspace), so identical calls have different results and files."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

COUNTER = itertools.count(1)
SCHEMA = {"type": "object", "properties": {"label": {"type": "string"}, "file_path": {"type": "string"}},
          "required": ["label"]}


async def list_tools(ctx, params) -> types.ListToolsResult:
    """The one tool."""
    return types.ListToolsResult(tools=[types.Tool(name="tick", description="Count a call.", input_schema=SCHEMA)])


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    """The next count, written to file_path when given."""
    arguments = params.arguments or {}
    n = next(COUNTER)
    if "file_path" in arguments:
        Path(arguments["file_path"]).write_text(f"count {n}\n", encoding="utf-8")
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{arguments['label']} #{n}")])


async def main() -> None:
    """Serve over stdio until the host closes the pipes."""
    server = Server("counter", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
