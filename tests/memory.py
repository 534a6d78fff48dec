"""Score trajectories in memory with chosen embeddings (no encoder), for kernel-level tests."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from engine.align import candidate_pairs, match
from engine.contract import TrajectoryFile, parse_trajectories
from engine.metrics import task_scores
from engine.serialize import flatten_sweep


def trajectory_file(tasks: list[dict], name: str = "pred") -> TrajectoryFile:
    """A TrajectoryFile from task dicts, as the loader would build it."""
    return parse_trajectories(Path(f"/memory/{name}.json"), tasks)


def seeded_vector(text: str, dim: int = 8, spread: float = 0.8) -> np.ndarray:
    """A deterministic pseudo-embedding: a shared direction plus text-seeded noise (cosines mostly 0.3-1)."""
    rng = np.random.default_rng(int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little"))
    base = np.zeros(dim, dtype=np.float32)
    base[0] = 1.0
    return (base + spread * rng.standard_normal(dim).astype(np.float32) / np.sqrt(dim)).astype(np.float32)


def score_memory(gt: list[dict], preds: list[list[dict]], vector_of: Callable[[str], np.ndarray] = seeded_vector,
                 tau_weak: float = 0.6, tau_strong: float = 0.8, profile: str = "reference", device: str = "cpu"):
    """(tables, matches as numpy, scores) for the given trajectories and text embeddings."""
    tables = flatten_sweep(trajectory_file(gt, "gt"), [trajectory_file(p, f"p{i}") for i, p in enumerate(preds)],
                           profile)
    emb = np.stack([vector_of(t) for t in tables.texts]) if tables.texts else np.zeros((0, 8), np.float32)
    candidates = candidate_pairs(tables, emb, torch.device(device))
    matches = match(candidates, tau_weak)
    scores = task_scores(tables, matches, tau_strong, profile)
    return tables, matches.to_numpy(), scores
