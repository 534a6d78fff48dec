"""Batched rectangular linear assignment over tool buckets, with the published scorer's semantics.

Cost = 1 - S, or 1e6 where S < tau_weak, in float64; each bucket is solved as SciPy's
``linear_sum_assignment`` would (min(rows, cols) pairs of minimum total cost) and
only pairs with S >= tau_weak are kept. Buckets of one row or one column are settled
with tensor ops (first minimum, SciPy's tie rule). The others are grouped by exact shape
once per sweep (`plan_assignment`, independent of the thresholds). At each threshold the
costs of every group solved on the host travel there in one transfer and SciPy itself
solves each distinct problem; on CUDA a shape group of at least `DEVICE_MIN_PROBLEMS`
problems goes to torch-linear-assignment in one batch instead (Triton compiles its kernel
once per shape: the shapes compiled are counted and logged). Every solved problem is
exactly the published scorer's problem and ties break the same way.
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from kernels.buckets import Buckets
from kernels.segment import segment_first_argmin

log = logging.getLogger(__name__)

PENALTY = 1e6

DEVICE_MIN_PROBLEMS = 20_000
"""Problems a shape group needs on CUDA before it is solved on the device rather than by SciPy on
the host. A Triton compile of the device solver for a new shape costs about 0.3-1 s; SciPy solves
a small problem (the buckets hold a few calls a side) in 5-20 us with the loop around it, so a
group of fewer problems is solved sooner on the host than the compile alone takes."""

_COMPILED_SHAPES: set[tuple[int, int, torch.dtype]] = set()


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
                spec = importlib.util.spec_from_file_location(name, path, loader=loader)
                if spec is None:
                    break  # no module there: the public import below
                try:
                    module = importlib.util.module_from_spec(spec)
                    loader.exec_module(module)
                    return module.linear_sum_assignment
                except (ImportError, AttributeError, OSError):
                    break  # another SciPy layout: the public import below
    from scipy.optimize import linear_sum_assignment

    return linear_sum_assignment


def compiled_shapes() -> int:
    """Distinct (rows, cols, dtype) problems this process has sent to the device solver (one Triton
    compile each, unless Triton's on-disk cache already held it)."""
    return len(_COMPILED_SHAPES)


def _device_assignment(cost: torch.Tensor) -> torch.Tensor:
    """torch-linear-assignment's batched solver on CUDA, each new shape counted and logged."""
    from torch_linear_assignment import batch_linear_assignment

    shape = (int(cost.shape[1]), int(cost.shape[2]), cost.dtype)
    if shape not in _COMPILED_SHAPES:
        _COMPILED_SHAPES.add(shape)
        log.info("assignment: device solver for %d x %d problems (%d shapes compiled in this process)",
                 shape[0], shape[1], len(_COMPILED_SHAPES))
    return batch_linear_assignment(cost)


def host_assignment(blocks: np.ndarray) -> np.ndarray:
    """Column assigned to each row of each (rows, cols) problem of `blocks` (-1 for none), by SciPy;
    identical problems are solved once."""
    solve = scipy_linear_sum_assignment()
    n, rows, cols = blocks.shape
    unique, inverse = np.unique(blocks.reshape(n, rows * cols), axis=0, return_inverse=True)
    assigned = np.full((len(unique), rows), -1, dtype=np.int64)
    for problem, block in enumerate(unique.reshape(-1, rows, cols)):
        r, c = solve(block)
        assigned[problem, r] = c
    return assigned[inverse.reshape(-1)]


def bucket_costs(similarity: torch.Tensor, tau_weak: float) -> torch.Tensor:
    """Float64 cost of every pair: 1 - S, or the penalty where S < tau_weak."""
    s = similarity.to(torch.float64)
    return torch.where(similarity < tau_weak, torch.full_like(s, PENALTY), 1.0 - s)


@dataclass
class ShapeGroup:
    """Buckets of one (rows, cols) shape: their first pairs, on the host and on the device."""

    rows: int
    cols: int
    starts: np.ndarray
    device_starts: torch.Tensor | None = None  # set for a group solved on the device


@dataclass
class AssignmentPlan:
    """How a sweep's buckets are solved, whatever the threshold (built once by `plan_assignment`)."""

    vector_pairs: torch.Tensor      # pairs of the 1 x c and r x 1 buckets, bucket by bucket
    vector_segment: torch.Tensor    # the bucket (0..vector_buckets-1) of each of those pairs
    vector_buckets: int
    host_pairs: torch.Tensor        # pairs of the host-solved groups, group by group, row-major
    host_groups: list[ShapeGroup] = field(default_factory=list)
    device_groups: list[ShapeGroup] = field(default_factory=list)


def _pair_ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The pair indices start..start+size-1 of each bucket, concatenated."""
    total = int(sizes.sum())
    first = np.repeat(starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
    return first + np.arange(total, dtype=np.int64)


def plan_assignment(buckets: Buckets, device_min_problems: int = DEVICE_MIN_PROBLEMS) -> AssignmentPlan:
    """Group the buckets by shape (one read of their shapes to the host), each group to the host or
    (on CUDA, with at least device_min_problems problems) to the device solver."""
    device = buckets.rows.device
    shapes = torch.stack([buckets.rows, buckets.cols, buckets.pair_start]).numpy(force=True)
    rows, cols, starts = shapes[0], shapes[1], shapes[2]
    vector = (rows == 1) | (cols == 1)
    sizes = rows * cols
    vector_sizes = sizes[vector]
    vector_pairs = _pair_ranges(starts[vector], vector_sizes)
    vector_segment = np.repeat(np.arange(len(vector_sizes), dtype=np.int64), vector_sizes)
    host_groups, device_groups, host_pairs = [], [], []
    general = np.flatnonzero(~vector)
    if len(general):
        width = int(cols.max()) + 1
        keys, group = np.unique(rows[general] * width + cols[general], return_inverse=True)
        for k, key in enumerate(keys.tolist()):
            members = general[group.reshape(-1) == k]
            shape = ShapeGroup(rows=key // width, cols=key % width, starts=starts[members])
            if device.type == "cuda" and len(members) >= device_min_problems:
                shape.device_starts = torch.as_tensor(shape.starts, device=device)
                device_groups.append(shape)
            else:
                host_groups.append(shape)
                host_pairs.append(_pair_ranges(shape.starts, sizes[members]))
    pairs = np.concatenate(host_pairs) if host_pairs else np.zeros(0, dtype=np.int64)

    def t(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(a, dtype=torch.long, device=device)

    return AssignmentPlan(vector_pairs=t(vector_pairs), vector_segment=t(vector_segment),
                          vector_buckets=int(vector.sum()), host_pairs=t(pairs),
                          host_groups=host_groups, device_groups=device_groups)


def _solve_host_groups(cost: torch.Tensor, plan: AssignmentPlan) -> np.ndarray:
    """Chosen pairs of every host-solved group: their costs read to the host at once, SciPy on each."""
    if not plan.host_groups:
        return np.zeros(0, dtype=np.int64)
    flat = cost[plan.host_pairs].numpy(force=True)
    chosen, offset = [], 0
    for g in plan.host_groups:
        n, size = len(g.starts), g.rows * g.cols
        assigned = host_assignment(flat[offset:offset + n * size].reshape(n, g.rows, g.cols))
        offset += n * size
        pairs = g.starts[:, None] + np.arange(g.rows)[None, :] * g.cols + assigned
        chosen.append(pairs[assigned >= 0])
    return np.concatenate(chosen)


def _solve_device_group(cost: torch.Tensor, g: ShapeGroup) -> torch.Tensor:
    """Chosen pair (-1 for none) of each row of each bucket of a device-solved group, in one batch."""
    starts = g.device_starts
    if starts is None:
        raise ValueError(f"a {g.rows} x {g.cols} group planned for the host cannot be solved on the device")
    offsets = starts[:, None] + torch.arange(g.rows * g.cols, device=cost.device)
    assigned = _device_assignment(cost[offsets].view(-1, g.rows, g.cols))
    row = torch.arange(g.rows, device=cost.device)
    pairs = starts[:, None] + row * g.cols + assigned
    return torch.where(assigned >= 0, pairs, torch.full_like(pairs, -1)).reshape(-1)


def solve_buckets(similarity: torch.Tensor, buckets: Buckets, tau_weak: float,
                  plan: AssignmentPlan | None = None) -> torch.Tensor:
    """Indices (ascending: bucket by bucket, GT-row order) of the pairs that become matches.

    With a plan, two reads to the host whatever the number of buckets and shapes: the host
    groups' costs and the size of the result (plus the device solver's own, per device group).
    """
    device = similarity.device
    if buckets.rows.numel() == 0:
        return torch.zeros(0, dtype=torch.long, device=device)
    plan = plan_assignment(buckets) if plan is None else plan
    cost = bucket_costs(similarity, tau_weak)
    first = segment_first_argmin(cost[plan.vector_pairs], plan.vector_segment, plan.vector_buckets)
    chosen = [plan.vector_pairs[first],
              torch.as_tensor(_solve_host_groups(cost, plan), dtype=torch.long, device=device)]
    chosen += [_solve_device_group(cost, g) for g in plan.device_groups]
    pairs = torch.cat(chosen)
    keep = (pairs >= 0) & (similarity[pairs.clamp(min=0)] >= tau_weak)
    return torch.sort(pairs[keep]).values
