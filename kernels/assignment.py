"""Batched rectangular linear assignment over tool buckets, with the published scorer's semantics.

Cost = 1 - S, or 1e6 where S < tau_weak, in float64; each bucket is solved as SciPy's
``linear_sum_assignment`` would (min(rows, cols) pairs of minimum total cost) and
only pairs with S >= tau_weak are kept. Buckets of one row or one column are settled
with tensor ops (first minimum, SciPy's tie rule); the others are grouped by exact
shape, identical problems are solved once, and each group goes to
SciPy's solver on CPU, or to torch-linear-assignment in one batch on CUDA (Triton), so every
solved problem is exactly the published scorer's problem and ties break the same way.
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from kernels.buckets import Buckets
from kernels.segment import expand_segments, segment_first_argmin

PENALTY = 1e6


@functools.cache
def scipy_linear_sum_assignment() -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """SciPy's ``linear_sum_assignment``, from its extension module alone when it can be loaded
    (else, or with scipy.optimize already imported, through the public import).

    Importing ``scipy.optimize`` whole costs 0.3-0.5 s of a run's start (linalg, special, fft...)
    and scoring needs only this one solver: the same compiled function either way.
    """
    if "scipy.optimize" not in sys.modules and (scipy := importlib.util.find_spec("scipy")) is not None:
        folder = Path(next(iter(scipy.submodule_search_locations or ["."]))) / "optimize"
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = folder / f"_lsap{suffix}"
            if path.is_file():
                name = "scipy.optimize._lsap"
                loader = importlib.machinery.ExtensionFileLoader(name, str(path))
                try:
                    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(
                        name, path, loader=loader))
                    loader.exec_module(module)
                    return module.linear_sum_assignment
                except (ImportError, AttributeError, OSError):
                    break  # another SciPy layout: the public import below
    from scipy.optimize import linear_sum_assignment

    return linear_sum_assignment


def batch_assignment(cost: torch.Tensor) -> torch.Tensor:
    """Column assigned to each row of each (rows, cols) problem of `cost` (-1 for none), as SciPy's
    ``linear_sum_assignment`` assigns it: SciPy itself on CPU, torch-linear-assignment on CUDA."""
    if cost.device.type == "cuda":
        from torch_linear_assignment import batch_linear_assignment

        return batch_linear_assignment(cost)
    solve = scipy_linear_sum_assignment()
    assigned = torch.full(cost.shape[:2], -1, dtype=torch.long)
    for problem, block in enumerate(cost.numpy()):
        rows, cols = solve(block)
        assigned[problem, torch.from_numpy(rows)] = torch.from_numpy(cols)
    return assigned


def bucket_costs(similarity: torch.Tensor, tau_weak: float) -> torch.Tensor:
    """Float64 cost of every pair: 1 - S, or the penalty where S < tau_weak."""
    s = similarity.to(torch.float64)
    return torch.where(similarity < tau_weak, torch.full_like(s, PENALTY), 1.0 - s)


def _solve_vectors(cost: torch.Tensor, buckets: Buckets, which: torch.Tensor) -> torch.Tensor:
    """Chosen pair of each 1 x c or r x 1 bucket in `which`: its first minimum-cost pair."""
    seg, local = expand_segments(buckets.rows[which] * buckets.cols[which])
    pairs = buckets.pair_start[which][seg] + local
    first = segment_first_argmin(cost[pairs], seg, which.numel())
    return pairs[first]


def _solve_shape(cost: torch.Tensor, starts: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """Chosen pairs of all buckets with exactly this (rows, cols) shape, via batched LSAP."""
    offsets = starts[:, None] + torch.arange(rows * cols, device=cost.device)
    blocks = cost[offsets]
    unique, inverse = torch.unique(blocks, dim=0, return_inverse=True)
    assigned = batch_assignment(unique.view(-1, rows, cols))[inverse]  # (n, rows)
    row = torch.arange(rows, device=cost.device).expand_as(assigned)
    keep = assigned >= 0
    return (starts[:, None] + row * cols + assigned)[keep]


def solve_buckets(similarity: torch.Tensor, buckets: Buckets, tau_weak: float) -> torch.Tensor:
    """Indices (ascending: bucket by bucket, GT-row order) of the pairs that become matches."""
    device = similarity.device
    if buckets.rows.numel() == 0:
        return torch.zeros(0, dtype=torch.long, device=device)
    cost = bucket_costs(similarity, tau_weak)
    vector = (buckets.rows == 1) | (buckets.cols == 1)
    chosen = [_solve_vectors(cost, buckets, torch.nonzero(vector).squeeze(1))]
    general = torch.nonzero(~vector).squeeze(1)
    if general.numel():
        width = int(buckets.cols.max()) + 1
        keys, group = torch.unique(buckets.rows[general] * width + buckets.cols[general], return_inverse=True)
        for k, key in enumerate(keys.tolist()):
            members = general[group == k]
            chosen.append(_solve_shape(cost, buckets.pair_start[members], key // width, key % width))
    pairs = torch.cat(chosen)
    pairs = pairs[similarity[pairs] >= tau_weak]
    return torch.sort(pairs).values
