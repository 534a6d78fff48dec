"""Rollout: run tool-using multimodal agents against MCP servers and record their trajectories."""
