"""The rollout's own resolver, ``${rollout_path:X}``: a path inside the rollout package, wherever the package
lives (the same path as ``${project_path:rollout/X}``, which the shipped configs use, so that conf/rollout
composes whatever was imported before). `register_resolvers` registers it; rollout.cli calls it, and the app
kit's one place of resolvers may call it too (it imports nothing but OmegaConf)."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

PACKAGE_DIR = Path(__file__).resolve().parent


def rollout_path(rel: str) -> str:
    """The path of `rel` inside the rollout package."""
    return str(PACKAGE_DIR / rel)


def register_resolvers() -> None:
    """Register the rollout's resolvers (``rollout_path``) with OmegaConf; calling it again changes nothing."""
    OmegaConf.register_new_resolver("rollout_path", rollout_path, replace=True)
