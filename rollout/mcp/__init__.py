"""The MCP side of a rollout, one concern per module.

- `rollout.mcp.config`: the servers config (published shape) read into `ServerSpec`s, ``${VAR}`` expanded;
- `rollout.mcp.process`: one server's process and session (start, stop, restart) and the servers' stderr log;
- `rollout.mcp.protocol`: the workspace ``_meta`` key, tools as the model sees them, call outcomes, and the
  rendering of result content;
- `rollout.mcp.host`: `MCPHost`, the servers of a run: their tool catalogue and calls.
"""
