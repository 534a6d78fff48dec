"""The rollout's own resolver, ``${rollout_path:X}``: a path inside the rollout package, wherever the package
lives (the same path as ``${project_path:rollout/X}``, which the shipped configs use, so that conf/rollout
composes whatever was imported before). engine.apps.resolvers, the one place of the apps' resolvers, registers
it."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def rollout_path(rel: str) -> str:
    """The path of `rel` inside the rollout package."""
    return str(PACKAGE_DIR / rel)
