"""MCP servers shipped with the project (offline): images, math and statistics, spreadsheets.

Each runs over stdio with ``python -m rollout.servers.<name>``. Paths are confined to the task
workspace that the host sends in each request's ``_meta`` (key ``m3bench/workspace``); without it,
to $M3BENCH_WORKSPACE, else to the working directory.
"""
