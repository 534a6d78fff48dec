"""The MCP side of a rollout, one concern per module.

- `rollout.mcp.config`: the servers config (published shape, plus environments, the environment policy, path
  modes and check calls) read into `ServerSpec`s;
- `rollout.mcp.environments`: install blocks, per-server environment folders, how a command launches from one;
- `rollout.mcp.install`: building those environments (uv or venv + pip, npm, Node builds);
- `rollout.mcp.paths`: path arguments into the task workspace, workspace paths out of results;
- `rollout.mcp.process`: one server's process and session (start, stop, restart, ping) and its stderr log;
- `rollout.mcp.protocol`: the workspace ``_meta`` key, tools as the model sees them, call outcomes, and the
  rendering of result content;
- `rollout.mcp.host`: `MCPHost`, the servers of a run: their tool catalogue and calls;
- `rollout.mcp.envhints`: the environment variables a server that failed to start read and did not get;
- `rollout.mcp.check`: the servers' health table;
- `rollout.mcp.derive`: a servers config derived from a folder of server folders, for review;
- `rollout.mcp.complete`: an existing servers config completed with install blocks derived from the server folders
  and files it runs (`rollout.mcp.launch`: what an entry's command runs, and from where).

The ``scripts/servers.py`` command line (install, check, bench, init) is `rollout.servers_command` (its bench:
`rollout.servers_bench`), above
this package and the rollout's record, tool runner and workspace it drives; nothing here imports them.
"""
