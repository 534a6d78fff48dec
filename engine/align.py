"""Alignment step: tool-bucketed assignment of predicted calls to GT calls, for a whole sweep."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from engine.serialize import SweepTables
from kernels.assignment import AssignmentPlan, plan_assignment, solve_buckets
from kernels.buckets import Buckets, build_buckets
from kernels.similarity import pair_similarity


@dataclass
class Candidates:
    """All bucket pairs of a sweep with their similarities (independent of thresholds)."""

    buckets: Buckets
    similarity: torch.Tensor  # (P,) float32
    plan: AssignmentPlan = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.plan = plan_assignment(self.buckets)


@dataclass
class Matches:
    """Matched call pairs of a sweep, ordered by sample, then bucket, then GT row."""

    sample: torch.Tensor      # (M,) sample index
    gt: torch.Tensor          # (M,) flat GT call index
    pred: torch.Tensor        # (M,) flat predicted call index
    similarity: torch.Tensor  # (M,) float32

    def to_numpy(self) -> dict[str, np.ndarray]:
        """The match arrays on the host."""
        return {k: getattr(self, k).cpu().numpy() for k in ("sample", "gt", "pred", "similarity")}


def candidate_pairs(tables: SweepTables, embeddings: np.ndarray | torch.Tensor,
                    device: torch.device) -> Candidates:
    """Build every bucket of every sample and the similarity of each GT x prediction pair."""
    def t(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(a, device=device)

    buckets = build_buckets(t(tables.gt_task), t(tables.gt_rank), len(tables.task_ids),
                            t(tables.pred_sample), t(tables.pred_rank), t(tables.sample_task),
                            int(tables.gt_rank.max()) + 1 if len(tables.gt_rank) else 1)
    gt_text = t(tables.gt_text)
    pred_text = t(tables.pred_text)
    similarity = pair_similarity(torch.as_tensor(embeddings, device=device), gt_text[buckets.pair_gt],
                                 pred_text[buckets.pair_pred])
    return Candidates(buckets=buckets, similarity=similarity)


def match(candidates: Candidates, tau_weak: float) -> Matches:
    """Solve every bucket at threshold tau_weak and return the kept pairs."""
    pairs = solve_buckets(candidates.similarity, candidates.buckets, tau_weak, candidates.plan)
    b = candidates.buckets
    bucket_of_pair = torch.searchsorted(b.pair_start, pairs, right=True) - 1
    return Matches(sample=b.sample[bucket_of_pair], gt=b.pair_gt[pairs], pred=b.pair_pred[pairs],
                   similarity=candidates.similarity[pairs])
