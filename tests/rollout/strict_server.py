"""A test MCP server (stdio, the low-level server API) that answers like many published servers do:
arguments checked against the input schema with protocol errors -32602 (the TypeScript SDK's
"Invalid arguments for tool X" and "Tool X not found"), missing records as an in-band
``{"error": "404 ..."}`` result, and a tool that does not check its arguments before failing."""

from __future__ import annotations

import asyncio
import json

import jsonschema
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

TOOLS = {
    "lookup": {"description": "Look a record up by its name.",
               "schema": {"type": "object", "properties": {"record": {"type": "string"}}, "required": ["record"],
                          "additionalProperties": False}},
    "convert": {"description": "Convert an amount of money.",
                "schema": {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}},
}
RECORDS = {"alpha": 1, "beta": 2}


def _text(text: str, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


async def list_tools(ctx, params) -> types.ListToolsResult:
    """The two tools with their schemas."""
    return types.ListToolsResult(tools=[types.Tool(name=name, description=t["description"], input_schema=t["schema"])
                                        for name, t in TOOLS.items()])


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    """lookup checks its arguments (-32602), convert does not; unknown tools are -32602 too."""
    arguments = params.arguments or {}
    if params.name not in TOOLS:
        raise MCPError(code=types.INVALID_PARAMS, message=f"MCP error -32602: Tool {params.name} not found")
    if params.name == "lookup":
        errors = sorted(e.message for e in jsonschema.Draft202012Validator(TOOLS["lookup"]["schema"])
                        .iter_errors(arguments))
        if errors:
            raise MCPError(code=types.INVALID_PARAMS,
                           message=f"MCP error -32602: Invalid arguments for tool lookup: {'; '.join(errors)}")
        record = arguments["record"]
        if record not in RECORDS:
            return _text(json.dumps({"error": f"404 Not Found: no record '{record}'"}))
        return _text(json.dumps({"record": record, "value": RECORDS[record]}))
    try:
        return _text(json.dumps({"amount": float(arguments["amount"]) * 1.1}))
    except (KeyError, TypeError, ValueError):
        return _text("Error: the conversion service gave up on this request", is_error=True)


async def main() -> None:
    """Serve over stdio until the host closes the pipes."""
    server = Server("strict", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
