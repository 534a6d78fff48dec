"""Rollout: run tool-using multimodal agents against MCP servers, record their trajectories, and curate them.

The entry point is `rollout.cli:main`; rollout/README.md describes the layout.
"""
