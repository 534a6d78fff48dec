"""A test MCP server (stdio, the low-level server API) that keeps its own output folder, as some published
servers do: ``save_deck`` writes only under ``./media`` of its working directory and refuses any other
path (an absolute path into a task workspace included), and reads its ``picture`` from its working
directory; ``measure`` reports the length of a text and
whether it holds a NUL byte, for arguments that are no paths at all."""

from __future__ import annotations

import asyncio
from pathlib import Path

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOLS = {
    "save_deck": {"description": "Save a slide deck under ./media.",
                  "schema": {"type": "object", "properties": {"file_path": {"type": "string"},
                                                              "title": {"type": "string"},
                                                              "picture": {"type": "string"}},
                             "required": ["file_path", "title"]}},
    "measure": {"description": "Length of a text.",
                "schema": {"type": "object", "properties": {"text": {"type": "string"},
                                                            "file_path": {"type": "string"}}}},
}


def _text(text: str, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


async def list_tools(ctx, params) -> types.ListToolsResult:
    """The two tools with their schemas."""
    return types.ListToolsResult(tools=[types.Tool(name=name, description=t["description"], input_schema=t["schema"])
                                        for name, t in TOOLS.items()])


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    """save_deck confines saves to ./media; measure answers for any text."""
    arguments = params.arguments or {}
    if params.name == "measure":
        texts = [v for v in arguments.values() if isinstance(v, str)]
        return _text(f"{sum(map(len, texts))} characters, NUL: {any(chr(0) in t for t in texts)}")
    media = (Path.cwd() / "media").resolve()
    target = (Path.cwd() / arguments["file_path"]).resolve()
    if not target.is_relative_to(media):
        return _text(f"Error: saves are confined to ./media, refused {arguments['file_path']}", is_error=True)
    picture = ""
    if "picture" in arguments:  # read from the server's own working directory, as the path is written
        try:
            picture = f", picture of {(Path.cwd() / arguments['picture']).stat().st_size} bytes"
        except OSError:
            return _text(f"Error: no picture at {arguments['picture']}", is_error=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"deck: {arguments['title']}{picture}", encoding="utf-8")
    return _text("Saved.")


async def main() -> None:
    """Serve over stdio until the host closes the pipes."""
    server = Server("media", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
