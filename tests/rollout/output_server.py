"""A test MCP server (stdio, the low-level server API) that writes where published servers write: it prints a
line on stdout at start (as ``print("Starting ...")`` does with ``PYTHONUNBUFFERED=1``); ``save_deck`` saves
under ``./media`` of its working directory and, like the published PowerPoint server, names a second file of
the same name ``<stem>-1<suffix>``; ``save_output`` saves at the relative path it is given and answers
with the file's absolute path; ``scratch`` writes a file into the system's temp folder, naming it only when
asked to (``tell``); ``write_at``
writes the absolute path it is given; ``work`` keeps a scratch file in the temp folder for `seconds` and removes
it before it answers, as OCR servers do with tesseract's files."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

print("output server: starting on stdio")

_TEXT = {"type": "string"}
TOOLS = {
    "save_deck": {"file_path": _TEXT, "title": _TEXT},
    "save_output": {"file_path": _TEXT, "text": _TEXT},
    "scratch": {"name": _TEXT, "text": _TEXT, "tell": {"type": "boolean"}},
    "write_at": {"target": _TEXT, "text": _TEXT},
    "work": {"name": _TEXT, "seconds": {"type": "number"}},
}


def _text(text: str, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


async def list_tools(ctx, params) -> types.ListToolsResult:
    """The five tools."""
    return types.ListToolsResult(tools=[types.Tool(name=name, description=f"{name}.", input_schema={
        "type": "object", "properties": props}) for name, props in TOOLS.items()])


def _free(target: Path) -> Path:
    """`target`, or `<stem>-1<suffix>`, `<stem>-2<suffix>`, ... whichever does not exist yet."""
    n, free = 0, target
    while free.exists():
        n += 1
        free = target.with_name(f"{target.stem}-{n}{target.suffix}")
    return free


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    """Each tool writes its file and says what it did."""
    arguments = params.arguments or {}
    if params.name == "save_deck":
        target = _free((Path.cwd() / arguments["file_path"]).resolve())
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"deck: {arguments['title']}", encoding="utf-8")
        return _text(f"Saved {target.relative_to(Path.cwd())}")
    if params.name == "save_output":
        target = Path.cwd() / arguments["file_path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(arguments["text"], encoding="utf-8")
        return _text(f"Saved to {target}")
    if params.name == "scratch":
        target = Path(tempfile.gettempdir()) / arguments["name"]
        target.write_text(arguments["text"], encoding="utf-8")
        return _text(f"Noted in {target}." if arguments.get("tell") else "Noted.")
    if params.name == "work":
        scratch = Path(tempfile.gettempdir()) / arguments["name"]
        scratch.write_text("scratch", encoding="utf-8")
        await asyncio.sleep(arguments["seconds"])
        scratch.unlink()
        return _text("Worked.")
    target = Path(arguments["target"])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(arguments["text"], encoding="utf-8")
    return _text("Written.")


async def main() -> None:
    """Serve over stdio until the host closes the pipes."""
    server = Server("output", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
