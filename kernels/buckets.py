"""Tool buckets and their (GT row x predicted column) pairs, built for a whole sweep at once.

A bucket is one (sample, tool) with calls on both sides; its pairs are laid out
row-major (GT row i, predicted column j) and buckets follow each other in
(sample, rank of the tool's first appearance in the GT task) order, which is the
published scorer's bucket order.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kernels.segment import exclusive_cumsum, expand_segments


@dataclass
class Buckets:
    """Flat description of all buckets of a sweep and of their candidate pairs."""

    sample: torch.Tensor      # (B,) sample of each bucket
    rows: torch.Tensor        # (B,) GT calls in the bucket
    cols: torch.Tensor        # (B,) predicted calls in the bucket
    pair_start: torch.Tensor  # (B,) offset of the bucket's first pair
    pair_gt: torch.Tensor     # (P,) GT call (flat GT index) of each pair
    pair_pred: torch.Tensor   # (P,) predicted call (flat prediction index) of each pair

    @property
    def num_pairs(self) -> int:
        """Total number of candidate pairs."""
        return int(self.pair_gt.numel())


def build_buckets(gt_task: torch.Tensor, gt_rank: torch.Tensor, num_tasks: int,
                  pred_sample: torch.Tensor, pred_rank: torch.Tensor,
                  sample_task: torch.Tensor, num_ranks: int | None = None) -> Buckets:
    """Group calls into tool buckets and enumerate each bucket's GT x prediction pairs.

    gt_task/gt_rank: per GT call (flat, in global order within each task), its task and
    the rank of its tool's first appearance in that task. pred_sample/pred_rank: per
    predicted call (flat, in global order within each sample), its sample and the rank
    of its tool in the sample's GT task (-1 when the GT task lacks the tool). num_ranks: a bound
    (exclusive) of the ranks when the caller knows it, sparing a read to the host.
    """
    if num_ranks is None:
        num_ranks = int(gt_rank.max()) + 1 if gt_rank.numel() else 1
    gt_key = gt_task * num_ranks + gt_rank
    gt_order = torch.sort(gt_key, stable=True).indices
    gt_count = torch.bincount(gt_key, minlength=num_tasks * num_ranks)
    gt_start = exclusive_cumsum(gt_count)

    valid = torch.nonzero(pred_rank >= 0).squeeze(1)
    pred_key = pred_sample[valid] * num_ranks + pred_rank[valid]
    sort = torch.sort(pred_key, stable=True)
    pred_order = valid[sort.indices]
    bucket_key, cols = torch.unique_consecutive(sort.values, return_counts=True)
    pred_start = exclusive_cumsum(cols)
    sample = torch.div(bucket_key, num_ranks, rounding_mode="floor")
    rank = bucket_key - sample * num_ranks
    group = sample_task[sample] * num_ranks + rank
    rows = gt_count[group]
    group_start = gt_start[group]

    sizes = rows * cols
    pair_start = exclusive_cumsum(sizes)
    bucket_of_pair, local = expand_segments(sizes)
    c = cols[bucket_of_pair]
    i = torch.div(local, c, rounding_mode="floor")
    j = local - i * c
    pair_gt = gt_order[group_start[bucket_of_pair] + i]
    pair_pred = pred_order[pred_start[bucket_of_pair] + j]
    return Buckets(sample=sample, rows=rows, cols=cols, pair_start=pair_start,
                   pair_gt=pair_gt, pair_pred=pair_pred)
