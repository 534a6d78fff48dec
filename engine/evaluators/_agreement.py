"""Agreement between the judges of a pool, per metric: Krippendorff's alpha (interval), pairwise
Spearman correlations, and the tasks whose judges disagree most (largest spread of their scores)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from engine.evaluators._ensemble import entry_scores
from engine.evaluators._prompts import INFORMATION_GROUNDING, TASK_COMPLETION


def _number(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def krippendorff_alpha(matrix: np.ndarray) -> float | None:
    """Interval alpha of a judges x tasks matrix (NaN where a judge has no score); None when undefined
    (fewer than two judges or tasks, or a single value throughout)."""
    import krippendorff

    values = matrix[~np.isnan(matrix)]
    if matrix.shape[0] < 2 or matrix.shape[1] < 2 or np.unique(values).size < 2:
        return None
    return _number(krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval"))


def pairwise_spearman(names: list[str], matrix: np.ndarray) -> list[dict[str, Any]]:
    """Spearman's rho of each pair of judges over the tasks both scored (null when undefined)."""
    from scipy.stats import spearmanr

    out = []
    for (i, a), (j, b) in itertools.combinations(enumerate(names), 2):
        both = ~np.isnan(matrix[i]) & ~np.isnan(matrix[j])
        x, y = matrix[i][both], matrix[j][both]
        rho = None
        if both.sum() >= 2 and np.ptp(x) > 0 and np.ptp(y) > 0:
            rho = _number(spearmanr(x, y).statistic)
        out.append({"judges": [a, b], "rho": rho, "tasks": int(both.sum())})
    return out


def metric_agreement(scores: dict[str, dict[str, float]], top: int) -> dict[str, Any]:
    """Agreement of one metric from task id -> {judge: score}."""
    ids = sorted(scores)
    names = sorted({name for per_task in scores.values() for name in per_task})
    matrix = np.array([[scores[t].get(n, np.nan) for t in ids] for n in names], dtype=np.float64).reshape(
        len(names), len(ids))
    spread = [(max(s.values()) - min(s.values()), t) for t, s in scores.items() if len(s) >= 2]
    spread.sort(key=lambda item: (-item[0], item[1]))
    return {"judges": names, "tasks": len(ids), "krippendorff_alpha": krippendorff_alpha(matrix),
            "spearman": pairwise_spearman(names, matrix),
            "most_disagreed": [{"id": t, "spread": s, "scores": scores[t]} for s, t in spread[:top]]}


def agreement(entries: Mapping[str, Mapping[str, Any]], top: int = 10) -> dict[str, Any]:
    """Per metric (task_completion, information_grounding), the agreement of the judges of these entries."""
    out = {}
    for purpose in (TASK_COMPLETION, INFORMATION_GROUNDING):
        scores = {tid: s for tid, e in entries.items() if (s := entry_scores(e, purpose))}
        out[purpose] = metric_agreement(scores, top)
    return out
