"""What the host and the servers agree on, and what a call gives back to the rest of the rollout.

Importable without the MCP client (the shipped servers import the workspace key from here).
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup
if TYPE_CHECKING:
    from mcp.types import ContentBlock

WORKSPACE_META_KEY = "m3bench/workspace"
"""Request ``_meta`` key carrying the task workspace; the shipped servers confine paths to it."""


@dataclass(frozen=True)
class ToolInfo:
    """A tool as the model sees it: "server/tool", its description and its input schema."""

    name: str
    description: str
    input_schema: dict[str, object]

    @property
    def server(self) -> str:
        """The server part of the name."""
        return self.name.split("/", 1)[0]

    @property
    def tool(self) -> str:
        """The tool part of the name."""
        return self.name.split("/", 1)[1]

    def to_json(self) -> dict[str, object]:
        """A JSON object of this tool."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}

    @classmethod
    def from_json(cls, data: object) -> ToolInfo:
        """The tool of a JSON object made by to_json; ValueError when it is not one."""
        if not isinstance(data, dict):
            raise ValueError("a tool must be an object")
        name, description, schema = data.get("name"), data.get("description"), data.get("input_schema")
        if not isinstance(name, str) or not isinstance(description, str) or not isinstance(schema, dict):
            raise ValueError("a tool must have a name and a description (strings) and an input_schema (an object)")
        return cls(name, description, schema)


@dataclass
class ToolOutcome:
    """What one call gave back: its text rendering, whether it failed, and the images it returned."""

    text: str
    is_error: bool
    images: list[tuple[str, bytes]] = field(default_factory=list)


def render_content(blocks: Sequence[ContentBlock], structured: object) -> tuple[str, list[tuple[str, bytes]]]:
    """Text of an MCP result's content blocks, and the images among them as (mime type, bytes)."""
    parts: list[str] = []
    images: list[tuple[str, bytes]] = []
    for block in blocks:
        if block.type == "text":
            parts.append(block.text)
        elif block.type == "image":
            images.append((block.mime_type, base64.b64decode(block.data)))
        elif block.type == "audio":
            parts.append(f"[audio {block.mime_type}, {len(block.data) * 3 // 4} bytes]")
        elif block.type == "resource_link":
            parts.append(f"[resource {block.uri}]")
        elif block.type == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if text is not None else f"[resource {resource.uri}, binary]")
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, sort_keys=True))
    return "\n".join(parts), images


def describe_error(exc: BaseException) -> str:
    """One line for an exception from the SDK or a server process."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_error(e) for e in exc.exceptions)
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
