"""Structural metrics of matched calls, for all samples at once.

Matches are reduced to per-sample step matrices over the *active* steps (GT steps and
predicted steps that hold at least one match): C counts matches and W sums their
similarities (float32) per (GT step, predicted step). Inactive steps add nothing to
any structural metric, so the compressed blocks give the same values as full ones
while their size stays bounded by the matches. Blocks of all samples are laid out
back to back (row-major), and every metric is a segment reduction over them.

`step_matrices` computes C and W of one sample on the host, over all its steps, in match order:
the published per-id details (engine.results: ``W``, ``per_step_fragmentation``) come from it, and
it is the reference the kernel is tested against (tests/test_step_matrices.py). The kernel sums W
with float32 scatter-adds, whose order on CUDA is not fixed, so its blocks may differ from the
host's W in the last bits; they feed only the merge entropy, never a published W.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from kernels.segment import exclusive_cumsum, expand_segments, segment_count, segment_cumsum, segment_sum


@dataclass
class StepStructure:
    """Per-sample structural quantities (float64 unless noted)."""

    coherent_matches: torch.Tensor  # sum over GT steps of m_g / k_g
    inversions: torch.Tensor        # int64: discordant pairs across steps
    comparable: torch.Tensor        # int64: pairs whose GT steps and predicted steps both differ
    same_gt_step_sq: torch.Tensor   # int64: sum over GT steps of m_g^2
    merge_entropy: torch.Tensor     # normalized column entropy of W (0 when <= 1 active row)


@dataclass(frozen=True)
class StepMatrices:
    """One sample's step matrices over all its steps (GT steps x predicted steps)."""

    counts: np.ndarray   # int64: C, the matches of each pair of steps
    weights: np.ndarray  # float32: W, their similarities summed in match order

    @property
    def fragmentation(self) -> list[float]:
        """Per GT step (k - 1) / k, k the predicted steps its matches fall in (0.0 for k <= 1); step
        coherence counts each of the step's matches with weight 1 - fragmentation = 1 / k."""
        return [(k - 1) / k if k > 1 else 0.0 for k in np.count_nonzero(self.counts, axis=1).tolist()]

    @property
    def primary(self) -> list[int | None]:
        """Per GT step the predicted step holding most of its W (the first on a tie; None for none)."""
        return [int(np.argmax(row)) if (row != 0).any() else None for row in self.weights]


def step_matrices(gt_step: np.ndarray, pred_step: np.ndarray, similarity: np.ndarray, gt_steps: int,
                  pred_steps: int) -> StepMatrices:
    """C and W of one sample's matches (their GT step, predicted step and similarity), on the host."""
    counts = np.zeros((gt_steps, pred_steps), dtype=np.int64)
    np.add.at(counts, (gt_step, pred_step), 1)
    weights = np.zeros((gt_steps, pred_steps), dtype=np.float32)
    np.add.at(weights, (gt_step, pred_step), similarity)
    return StepMatrices(counts, weights)


def _compress(sample: torch.Tensor, step: torch.Tensor, num_samples: int,
              width: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Dense ids of distinct (sample, step) pairs, their count per sample and first id.

    Ids follow (sample, step) order; every step is below `width`. A presence table is used
    when the key space is small (the usual case; no read to the host), a sort otherwise.
    """
    key = sample * width + step
    space = num_samples * width
    if space <= 8 * key.numel() + 1024:
        present = torch.zeros(space, dtype=torch.long, device=key.device)
        present[key] = 1
        dense = torch.cumsum(present, 0) - 1
        inverse = dense[key]
        per_sample = present.view(num_samples, width).sum(dim=1)
    else:
        keys, inverse = torch.unique(key, return_inverse=True)
        per_sample = segment_count(torch.div(keys, width, rounding_mode="floor"), num_samples)
    return inverse, per_sample, exclusive_cumsum(per_sample)


def step_structure(sample: torch.Tensor, gt_step: torch.Tensor, pred_step: torch.Tensor,
                   similarity: torch.Tensor, num_samples: int,
                   step_widths: tuple[int, int] | None = None) -> StepStructure:
    """Step coherence, order inversions and merge entropy ingredients per sample.

    step_widths: bounds (exclusive) of the GT and predicted step ids, when the caller knows them
    (else read from the steps). With them, one read to the host (the sizes of the step blocks).
    """
    n = num_samples
    if step_widths is None:
        gt_max, pred_max = torch.stack([gt_step.max(), pred_step.max()]).tolist() if sample.numel() else (0, 0)
        step_widths = (int(gt_max) + 1, int(pred_max) + 1)
    row, rows_per, row_first = _compress(sample, gt_step, n, step_widths[0])
    col, cols_per, col_first = _compress(sample, pred_step, n, step_widths[1])
    block = rows_per * cols_per
    block_start = exclusive_cumsum(block)
    local_r = row - row_first[sample]
    local_c = col - col_first[sample]
    entry = block_start[sample] + local_r * cols_per[sample] + local_c
    size, num_rows, num_cols = torch.stack([block.sum(), rows_per.sum(), cols_per.sum()]).tolist()
    counts = segment_sum(torch.ones_like(entry), entry, size)
    mass = segment_sum(similarity.to(torch.float32), entry, size)

    pos_sample, local = expand_segments(block, size)
    ncols = cols_per[pos_sample]
    nrows = rows_per[pos_sample]
    pr = torch.div(local, ncols, rounding_mode="floor")
    pc = local - pr * ncols
    pos_row = row_first[pos_sample] + pr
    pos_col = col_first[pos_sample] + pc

    # step coherence: sum_g m_g / k_g
    m_g = segment_sum(counts, pos_row, num_rows)
    k_g = segment_sum((counts > 0).long(), pos_row, num_rows)
    row_sample, row_local = expand_segments(rows_per, num_rows)
    coherent = segment_sum(m_g.double() / k_g.clamp(min=1).double(), row_sample, n)
    m_g_sq = segment_sum(m_g * m_g, row_sample, n)

    # order: discordant pairs via prefix sums on the count blocks
    row_start = block_start[row_sample] + row_local * cols_per[row_sample]
    left = segment_cumsum(counts, row_start, pos_row) - counts  # sum over p' < p in the row
    colmajor = block_start[pos_sample] + pc * nrows + pr
    by_col = torch.empty_like(left)
    by_col[colmajor] = left
    col_sample, col_local = expand_segments(cols_per, num_cols)
    col_start = block_start[col_sample] + col_local * rows_per[col_sample]
    by_col_seg = torch.empty_like(pos_col)
    by_col_seg[colmajor] = pos_col
    below = segment_sum(by_col, by_col_seg, num_cols)[by_col_seg] - segment_cumsum(by_col, col_start, by_col_seg)
    inversions = segment_sum(counts * below[colmajor], pos_sample, n)

    m = segment_sum(counts, pos_sample, n)
    m_p = segment_sum(counts, pos_col, num_cols)
    pairs = m * (m - 1) // 2
    same_g = segment_sum(m_g * (m_g - 1) // 2, row_sample, n)
    same_p = segment_sum(m_p * (m_p - 1) // 2, col_sample, n)
    same_gp = segment_sum(counts * (counts - 1) // 2, pos_sample, n)
    comparable = pairs - same_g - same_p + same_gp

    # merge: entropy of each predicted step's mass over GT steps
    w = mass.double()
    row_mass = segment_sum(mass, pos_row, num_rows)
    active_rows = segment_sum((row_mass > 0).long(), row_sample, n)
    col_mass = segment_sum(mass, pos_col, num_cols).double()
    positive_col = col_mass > 0
    total = segment_sum(torch.where(positive_col, col_mass, torch.zeros_like(col_mass)), col_sample, n)
    q = w / torch.where(positive_col, col_mass, torch.ones_like(col_mass))[pos_col]
    terms = torch.where((q > 0) & positive_col[pos_col], -q * torch.log(q + 1e-12), torch.zeros_like(q))
    h_col = segment_sum(terms, pos_col, num_cols)
    share = torch.where(positive_col, col_mass / total[col_sample].clamp(min=1e-300), torch.zeros_like(col_mass))
    h = segment_sum(share * h_col, col_sample, n)
    log_g = torch.log(active_rows.double().clamp(min=1))
    entropy = torch.where(active_rows > 1, h / torch.where(active_rows > 1, log_g, torch.ones_like(log_g)),
                          torch.zeros_like(h))
    return StepStructure(coherent_matches=coherent, inversions=inversions, comparable=comparable,
                         same_gt_step_sq=m_g_sq, merge_entropy=entropy)
