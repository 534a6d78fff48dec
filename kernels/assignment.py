"""Batched rectangular linear assignment over tool buckets, with the published scorer's semantics.

Cost = 1 - S, or 1e6 where S < tau_weak, in float64; each bucket is solved as SciPy's
``linear_sum_assignment`` would (min(rows, cols) pairs of minimum total cost) and
only pairs with S >= tau_weak are kept. Buckets of one row or one column are settled
with tensor ops (first minimum, SciPy's tie rule); the others are grouped by exact
shape, identical problems are solved once, and each group goes to
torch-linear-assignment in one batch (SciPy on CPU, Triton on CUDA), so every solved
problem is exactly the published scorer's problem and ties break the same way.
"""

from __future__ import annotations

import torch
from torch_linear_assignment import batch_linear_assignment

from kernels.buckets import Buckets
from kernels.segment import expand_segments, segment_first_argmin

PENALTY = 1e6


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
    assigned = batch_linear_assignment(unique.view(-1, rows, cols))[inverse]  # (n, rows)
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
