"""Metrics step: per-task metrics of every sample at once, and their aggregates."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from engine.align import Matches
from engine.metricspec import BY_KEY, alignment_keys, metrics_of
from engine.serialize import SweepTables
from kernels.segment import segment_count, segment_sum
from kernels.structure import StepStructure, step_structure


@dataclass
class TaskScores:
    """Per-sample counts and metrics (numpy arrays of length num_samples)."""

    profile: str
    n_gt: np.ndarray
    n_pred: np.ndarray
    n_pred_steps: np.ndarray
    matched: np.ndarray
    strong_matches: np.ndarray
    strong_similarity: np.ndarray
    values: dict[str, np.ndarray]

    @property
    def names(self) -> tuple[str, ...]:
        """Metric names of this profile, in output order."""
        return alignment_keys(self.profile)


def _safe_div(num: torch.Tensor, den: torch.Tensor, empty: float) -> torch.Tensor:
    return torch.where(den > 0, num / torch.where(den > 0, den, torch.ones_like(den)),
                       torch.full_like(num, empty))


def _width(steps: np.ndarray) -> int:
    return int(steps.max()) + 1 if len(steps) else 1


def match_structure(tables: SweepTables, matches: Matches) -> StepStructure:
    """The step structure of the matches (it depends on tau_weak only, not on tau_strong)."""
    device = matches.sample.device
    gt_step = torch.as_tensor(tables.gt_step, device=device)[matches.gt]
    pred_step = torch.as_tensor(tables.pred_step, device=device)[matches.pred]
    return step_structure(matches.sample, gt_step, pred_step, matches.similarity, tables.num_samples,
                          (_width(tables.gt_step), _width(tables.pred_step)))


def task_scores(tables: SweepTables, matches: Matches, tau_strong: float,
                profile: str = "reference", structure: StepStructure | None = None) -> TaskScores:
    """Every per-task metric of the spec for all samples, with segment reductions.

    `structure` (from `match_structure` of the same matches) is computed when not given. The
    results come to the host in one read.
    """
    device = matches.sample.device
    n = tables.num_samples
    st = torch.as_tensor(tables.sample_task, device=device)
    n_gt = torch.as_tensor(tables.task_calls, device=device)[st].double()
    n_pred = torch.as_tensor(tables.sample_calls, device=device).double()
    sq_steps = torch.as_tensor(tables.task_sq_step_calls, device=device)[st].double()
    sim = matches.similarity
    sim64 = sim.double()
    strong = sim >= tau_strong
    m = segment_count(matches.sample, n).double()
    sum_sim = segment_sum(sim64, matches.sample, n)
    m_strong = segment_sum(strong.long(), matches.sample, n).double()
    sum_strong = segment_sum(torch.where(strong, sim64, torch.zeros_like(sim64)), matches.sample, n)

    structure = match_structure(tables, matches) if structure is None else structure

    empty = (n_gt == 0) & (n_pred == 0)
    recall = torch.where(empty, torch.ones_like(m), _safe_div(m, n_gt, 0.0))
    precision = torch.where(empty, torch.ones_like(m), _safe_div(m, n_pred, 0.0))
    comparable = structure.comparable.double()
    order = torch.where(comparable > 0, 1.0 - structure.inversions.double() / comparable.clamp(min=1),
                        torch.ones_like(comparable))
    purity = (1.0 - structure.merge_entropy).clamp(0.0, 1.0)

    values: dict[str, torch.Tensor] = {"recall": recall, "precision": precision}
    if profile == "paper":
        values["arg_sim"] = _safe_div(sum_strong, m_strong, 0.0)
        values["step_coherence_cov"] = recall * _safe_div(structure.coherent_matches, m, 0.0)
        values["order_consistency_cov"] = recall * order
        values["merge_purity_cov"] = recall * purity
    else:
        values["avg_sim_all_cov"] = _safe_div(sum_sim, n_gt, 0.0)
        values["avg_sim_strong_cov"] = _safe_div(sum_strong, n_gt, 0.0)
        values["step_coherence_cov"] = structure.coherent_matches / torch.where(n_gt > 0, n_gt, torch.ones_like(n_gt))
        pair_num = (m * m - structure.same_gt_step_sq.double()) / 2
        pair_den = (n_gt * n_gt - sq_steps) / 2
        coverage = _safe_div(pair_num, pair_den, 0.0)
        values["order_consistency_cov"] = order * coverage
        values["merge_purity_cov"] = purity * recall
    for key in ("step_coherence_cov", "order_consistency_cov", "merge_purity_cov"):
        values[key] = torch.where(empty, torch.ones_like(m), values[key])
    read = torch.stack([*values.values(), m, m_strong, sum_strong]).numpy(force=True)
    host = dict(zip(values, read))
    return TaskScores(profile=profile, n_gt=np.asarray(tables.task_calls)[tables.sample_task].astype(np.int64),
                      n_pred=np.asarray(tables.sample_calls).astype(np.int64), n_pred_steps=tables.sample_steps,
                      matched=read[-3].astype(np.int64), strong_matches=read[-2].astype(np.int64),
                      strong_similarity=read[-1], values=host)


def aggregate(scores: TaskScores, select: np.ndarray | None = None) -> dict:
    """Counts and every alignment and budget metric over the selected samples, by the metric table's rules."""
    idx = np.arange(len(scores.n_gt)) if select is None else np.asarray(select)
    n_gt = scores.n_gt[idx].astype(np.float64)
    total_gt = float(n_gt.sum())
    total_pred = int(scores.n_pred[idx].sum())
    matched = int(scores.matched[idx].sum())
    tasks = len(idx)

    def ratio(num: float, den: float) -> float:
        return float(num / den) if den else 0.0

    rules = {
        "matched/gt": lambda key: ratio(matched, total_gt),
        "matched/pred": lambda key: ratio(matched, total_pred),
        "gt_weighted": lambda key: ratio((scores.values[key][idx] * n_gt).sum(), total_gt),
        "strong_mean": lambda key: ratio(scores.strong_similarity[idx].sum(), scores.strong_matches[idx].sum()),
        "mean_pred_steps": lambda key: float(scores.n_pred_steps[idx].mean()) if tasks else 0.0,
        "pred_calls_per_task": lambda key: ratio(total_pred, tasks),
    }
    out: dict = {"num_ids": tasks, "total_gt_calls": int(total_gt), "total_pred_calls": total_pred,
                 "matched": matched}
    for key in (*scores.names, *(m.key for m in metrics_of("budget"))):
        out[key] = rules[BY_KEY[key].aggregation](key)
    return out
