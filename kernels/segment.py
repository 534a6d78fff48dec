"""Segment reductions over flat tensors (one segment per task, step, bucket...)."""

from __future__ import annotations

import torch


def segment_sum(values: torch.Tensor, segment: torch.Tensor, n: int) -> torch.Tensor:
    """Sum of `values` per segment id in [0, n)."""
    out = torch.zeros(n, dtype=values.dtype, device=values.device)
    return out.index_add_(0, segment, values)


def segment_count(segment: torch.Tensor, n: int) -> torch.Tensor:
    """Number of entries per segment id in [0, n) (int64)."""
    return torch.bincount(segment, minlength=n)[:n] if segment.numel() else torch.zeros(
        n, dtype=torch.long, device=segment.device)


def segment_first_argmin(values: torch.Tensor, segment: torch.Tensor, n: int) -> torch.Tensor:
    """Position (into `values`) of the first minimum of each segment; -1 for empty segments."""
    big = torch.finfo(values.dtype).max
    minimum = torch.full((n,), big, dtype=values.dtype, device=values.device)
    minimum.scatter_reduce_(0, segment, values, reduce="amin", include_self=True)
    positions = torch.arange(values.numel(), device=values.device)
    at_min = values == minimum[segment]
    none = values.numel()
    candidate = torch.where(at_min, positions, torch.full_like(positions, none))
    first = torch.full((n,), none, dtype=torch.long, device=values.device)
    first.scatter_reduce_(0, segment, candidate, reduce="amin", include_self=True)
    return torch.where(first == none, torch.full_like(first, -1), first)


def exclusive_cumsum(counts: torch.Tensor) -> torch.Tensor:
    """Start offsets of consecutive segments of the given lengths."""
    out = torch.zeros_like(counts)
    if counts.numel() > 1:
        torch.cumsum(counts[:-1], 0, out=out[1:])
    return out


def expand_segments(sizes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For consecutive segments of the given sizes: each position's segment and its index within it."""
    segment = torch.repeat_interleave(torch.arange(sizes.numel(), device=sizes.device), sizes)
    local = torch.arange(segment.numel(), device=sizes.device) - exclusive_cumsum(sizes)[segment]
    return segment, local


def segment_cumsum(values: torch.Tensor, starts: torch.Tensor, segment: torch.Tensor) -> torch.Tensor:
    """Inclusive prefix sums restarting at each segment (segments are contiguous runs).

    `starts[k]` is the first position of segment k and `segment[i]` the segment of entry i.
    """
    total = torch.cumsum(values, 0)
    before = torch.zeros(starts.numel(), dtype=values.dtype, device=values.device)
    nonzero = starts > 0
    before[nonzero] = total[starts[nonzero] - 1]
    return total - before[segment]
