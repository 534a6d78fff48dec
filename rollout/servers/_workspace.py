"""Path confinement shared by the shipped servers."""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from rollout.mcp.protocol import WORKSPACE_META_KEY


def workspace(ctx: Context) -> Path:
    """The task workspace of the current request."""
    meta = ctx.request_context.meta or {}
    given = meta.get(WORKSPACE_META_KEY)
    root = given if isinstance(given, str) and given else os.environ.get("M3BENCH_WORKSPACE") or os.getcwd()
    return Path(root).resolve()


def resolve(ctx: Context, path: str, *, must_exist: bool = False,
            suffixes: tuple[str, ...] = ()) -> tuple[Path, str]:
    """(absolute path, workspace-relative path) of a path argument; ToolError if it leaves the workspace."""
    if not isinstance(path, str) or not path.strip():
        raise ToolError("a path must be a non-empty string")
    root = workspace(ctx)
    given = Path(path.strip()).expanduser()
    full = (given if given.is_absolute() else root / given).resolve()
    if not full.is_relative_to(root):
        raise ToolError(f"path '{path}' is outside the task workspace; use a path relative to it")
    if suffixes and full.suffix.lower() not in suffixes:
        raise ToolError(f"path '{path}' must end with {' or '.join(suffixes)}")
    if must_exist and not full.is_file():
        raise ToolError(f"file '{path}' not found in the task workspace")
    return full, full.relative_to(root).as_posix()
