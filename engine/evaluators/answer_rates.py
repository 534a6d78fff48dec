"""Answer equivalence's Success Rates (engine.evaluators.answer_equivalence), summed as MCPVerse's runner.py and
stats.py sum them, to the last digit: per complexity level, their macro mean over the level groups present and
the micro mean."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from engine.contract import JsonObject

LEVELS: tuple[str, ...] = ("L1", "L2", "L3")
NO_LEVEL = "(no level)"
"""The group of the tasks without a level in the published reading's macro mean."""


def _group_mean(values: Sequence[float]) -> float:
    """A level's mean as MCPVerse's statistics take it (pandas' ``groupby(...).mean()``): the values summed in
    task order with Kahan's compensation, divided by their count."""
    total = compensation = 0.0
    for value in values:
        y = value - compensation
        t = total + y
        compensation = (t - total) - y
        total = t
    return total / len(values)


def _column_mean(values: Sequence[float], count: int) -> float:
    """A column's mean as pandas' ``Series.mean()`` takes it: NumPy's (pairwise) sum of the column, an
    unscored row counting 0, over the `count` scored rows."""
    return float(np.sum(np.asarray(values, dtype=np.float64))) / count


def success_rates(levels: Mapping[str, str | None], scores: Mapping[str, float | None]) -> JsonObject:
    """SR per level, their macro mean over the level groups present (L1, L2, L3, and any other label or
    no level, each its own group), the micro mean, and the counts, of tasks given by id -> level and
    id -> score (None: skipped). The means are summed as MCPVerse's runner.py and stats.py sum them, to the
    last digit: per level in task order (compensated), the micro mean over the column in task order, the
    macro mean over the levels' rates from the highest down."""
    judged = {i: s for i, s in scores.items() if s is not None}
    groups: dict[str, list[float]] = {}
    for i, s in judged.items():
        groups.setdefault(NO_LEVEL if levels[i] is None else str(levels[i]), []).append(s)
    rates = level_rates(groups)
    out: JsonObject = {f"answer_sr_{level.lower()}": rates.get(level) for level in LEVELS}
    ranked = sorted(rates.values(), reverse=True)
    out["answer_sr"] = _column_mean(ranked, len(ranked)) if ranked else None
    out["answer_sr_micro"] = (_column_mean([0.0 if s is None else s for s in scores.values()], len(judged))
                              if judged else None)
    out["answer_judged"] = len(judged)
    out["answer_skipped"] = len(scores) - len(judged)
    return out


def level_rates(groups: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """SR of each level group with a judged task (level -> its scores in task order)."""
    return {level: _group_mean(values) for level, values in groups.items() if values}
