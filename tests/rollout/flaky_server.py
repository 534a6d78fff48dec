"""A test MCP server (stdio) whose tools can crash the process, hang, or return an image inline."""

from __future__ import annotations

import io
import os
import time

from mcp.server.mcpserver import Image, MCPServer
from PIL import Image as PILImage

server = MCPServer("flaky", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def crash() -> str:
    """Exit the server process at once."""
    os._exit(3)


@server.tool()
def hang(seconds: float) -> str:
    """Sleep for the given seconds, then answer."""
    time.sleep(seconds)
    return "awake"


@server.tool()
def picture(width: int, height: int) -> Image:
    """A blank PNG of the given size, returned inline."""
    buffer = io.BytesIO()
    PILImage.new("RGB", (width, height), "green").save(buffer, "PNG")
    return Image(data=buffer.getvalue(), format="png")


if __name__ == "__main__":
    server.run()
