"""Intervals of the trial rates (pass@k, pass^k, avg@k): tasks resampled with all their trials."""

from __future__ import annotations

import numpy as np
import torch

from engine.stats import decisions as dc
from engine.stats.document import TrialIntervals, TrialRate
from engine.stats.settings import StatsSettings
from engine.stats.step import clean
from engine.trial_estimators import ESTIMATORS, rate
from kernels import bootstrap as bs


def trial_intervals(counts: list[tuple[int, int]], clusters: list[str], settings: StatsSettings,
                    device: torch.device | str = "cpu", resample: torch.Tensor | None = None) -> TrialIntervals:
    """Intervals of a model's pass@k, pass^k and avg@k (k = 1 .. its trials, losses as failures): each a
    plain mean over the tasks with n >= k of the task's estimator from its (n trials, c successes), so a
    task's trials move together with the task; tasks are resampled by `clusters` (each task's family,
    or the task itself) like the leaderboard's ids, and the interval is the settings' method's (a rate in
    [0, 1]). resample: the (B x C) count matrix to use (default: drawn from settings, clusters in sorted
    order). Per estimator and k: value, low, high, tasks, and the reason where there is no interval."""
    settings.check()
    device = torch.device(device)
    names = sorted(set(clusters))
    where = np.array([names.index(c) for c in clusters], dtype=np.int64)
    trials = max((n for n, _ in counts), default=0)
    columns = [(name, k) for name in ESTIMATORS for k in range(1, trials + 1)]
    num = np.zeros((len(names), len(columns)))
    den = np.zeros((len(names), len(columns)))
    for q, (name, k) in enumerate(columns):
        for t, (n, c) in enumerate(counts):
            if n >= k:
                num[where[t], q] += ESTIMATORS[name](n, c, k)
                den[where[t], q] += 1
    if resample is None:
        resample = bs.resample_counts(settings.resamples, len(names), settings.seed, settings.scheme)
    as_t = lambda a: torch.as_tensor(a, dtype=torch.float64, device=device)  # noqa: E731
    rows = bs.ratios(resample.to(device=device, dtype=torch.float64), as_t(num), as_t(den))
    point = bs.ratios(torch.ones(1, len(names), dtype=torch.float64, device=device), as_t(num), as_t(den))[:, 0]
    jack = bs.ratios(bs.leave_one_out(len(names), device=device), as_t(num), as_t(den)).T \
        if settings.method == "bca" else None
    clusters_of = as_t((den != 0).sum(0))
    effective = bs.effective_clusters(as_t(den / np.where(den.sum(0) != 0, den.sum(0), 1.0)))
    bounds = torch.zeros(len(columns), dtype=torch.float64, device=device)
    low, high, se = dc.model_intervals(rows, point, jack, clusters_of, effective, bounds, bounds + 1, settings)
    valid = bs.valid_counts(rows).tolist()
    out: TrialIntervals = {name: {} for name in ESTIMATORS}
    for q, (name, k) in enumerate(columns):
        value, tasks = rate(counts, k, name)
        why = dc.reason(None, int(clusters_of[q]), int(valid[q]), float(se[q]), settings.min_clusters)
        block: TrialRate = {"value": value, "low": None if why else clean(float(low[q])),
                            "high": None if why else clean(float(high[q])), "tasks": tasks}
        if why:
            block["reason"] = why
        out[name][str(k)] = block
    return out
