"""Segment reductions over flat tensors (one segment per task, step, bucket...)."""

from __future__ import annotations

import torch


def segment_sum(values: torch.Tensor, segment: torch.Tensor, n: int) -> torch.Tensor:
    """Sum of `values` per segment id in [0, n)."""
    out = torch.zeros(n, dtype=values.dtype, device=values.device)
    return out.index_add_(0, segment, values)


def segment_count(segment: torch.Tensor, n: int) -> torch.Tensor:
    """Number of entries per segment id in [0, n) (int64), with no read to the host (a CUDA
    ``bincount`` reads the largest id first)."""
    return segment_sum(torch.ones_like(segment), segment, n)


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


def expand_segments(sizes: torch.Tensor, total: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """For consecutive segments of the given sizes: each position's segment and its index within it.

    `total` (the sum of sizes) spares the read of that sum to the host when the caller knows it.
    """
    segment = torch.repeat_interleave(torch.arange(sizes.numel(), device=sizes.device), sizes,
                                      output_size=total)
    local = torch.arange(segment.numel(), device=sizes.device) - exclusive_cumsum(sizes)[segment]
    return segment, local


def segment_cumsum(values: torch.Tensor, starts: torch.Tensor, segment: torch.Tensor) -> torch.Tensor:
    """Inclusive prefix sums restarting at each segment (segments are contiguous runs).

    `starts[k]` is the first position of segment k and `segment[i]` the segment of entry i.
    """
    total = torch.cumsum(values, 0)
    if total.numel() == 0:
        return total
    previous = total[(starts - 1).clamp(min=0)]
    before = torch.where(starts > 0, previous, torch.zeros_like(previous))
    return total - before[segment]
