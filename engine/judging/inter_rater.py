"""Agreement between the judges of a pool over the items they rated, at a level of measurement.

`agreement` takes a judges x items matrix (NaN where a judge gave no rating) and a level, as
Krippendorff's alpha does:

- ``interval`` (scores, e.g. the M3 judges' Task Completion): alpha interval, Spearman's rho of each
  pair of judges, and an item's disagreement the spread of its ratings (highest minus lowest);
- ``nominal`` (labels, e.g. VisualToolBench's Met / Not Met as 1 / 0): alpha nominal, the share of
  items each pair of judges rates alike, and an item's disagreement the number of its ratings that
  differ from its most common one.

Alpha comes from the krippendorff package; it is None when undefined (fewer than two judges or items,
or a single value throughout the items rated by two judges or more).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from engine.judging.reducers import mean_or_none

Level = Literal["interval", "nominal"]
LEVELS: tuple[str, ...] = ("interval", "nominal")


@dataclass(frozen=True)
class Pair:
    """Two judges (their rows), their agreement (rho or share alike; None when undefined) and the
    number of items both rated."""

    first: int
    second: int
    value: float | None
    items: int


@dataclass(frozen=True)
class Disagreed:
    """An item (its column) rated by two judges or more, and how much its judges disagree on it."""

    item: int
    disagreement: float


@dataclass(frozen=True)
class Agreement:
    """Alpha, every pair of judges (in row order), and the items rated by two judges or more, most
    disagreed first (ties in the order of their keys)."""

    alpha: float | None
    pairs: tuple[Pair, ...]
    ranked: tuple[Disagreed, ...]


def _number(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def krippendorff_alpha(matrix: np.ndarray, level: Level) -> float | None:
    """Alpha of a judges x items matrix (NaN where a judge has no rating); None when undefined.

    >>> krippendorff_alpha(np.array([[0.1, 0.9], [0.1, 0.9]]), "interval")
    1.0
    >>> krippendorff_alpha(np.array([[1.0, 1.0], [1.0, 1.0]]), "nominal") is None
    True
    >>> krippendorff_alpha(np.array([[1.0, np.nan], [np.nan, 0.0]]), "nominal") is None
    True
    """
    import krippendorff

    rated = ~np.isnan(matrix)
    pairable = matrix[:, rated.sum(axis=0) >= 2]
    if matrix.shape[0] < 2 or matrix.shape[1] < 2 or np.unique(pairable[~np.isnan(pairable)]).size < 2:
        return None
    return _number(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))


def _pair_value(x: np.ndarray, y: np.ndarray, level: Level) -> float | None:
    """Spearman's rho (interval; None unless both vary over two items or more) or the share of items
    rated alike (nominal; None for no item)."""
    if level == "nominal":
        return mean_or_none([float(a == b) for a, b in zip(x, y)])
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    from scipy.stats import spearmanr

    return _number(spearmanr(x, y).statistic)


def _disagreement(ratings: np.ndarray, level: Level) -> float:
    """The spread of an item's ratings (interval) or how many differ from the most common (nominal)."""
    if level == "nominal":
        return float(ratings.size - Counter(ratings.tolist()).most_common(1)[0][1])
    return float(ratings.max() - ratings.min())


def agreement(matrix: np.ndarray, level: Level, keys: Sequence[Any]) -> Agreement:
    """The judges' agreement over a judges x items matrix (NaN: no rating) at this level; `keys` (one
    per item, sortable) order the items that are disagreed on alike.

    Three judges, four items scored 0-1: alpha interval, each pair's rho, the widest spread first.

    >>> m = np.array([[0.1, 0.5, 0.9, 0.3], [0.3, 0.2, 1.0, 0.4], [0.1, 0.6, 0.7, np.nan]])
    >>> a = agreement(m, "interval", ["t1", "t2", "t3", "t4"])
    >>> round(a.alpha, 4), [round(p.value, 2) for p in a.pairs]
    (0.7596, [0.4, 1.0, 0.5])
    >>> [(d.item, round(d.disagreement, 2)) for d in a.ranked]
    [(1, 0.4), (2, 0.3), (0, 0.2), (3, 0.1)]

    The same judges' labels (1 Met, 0 Not Met): alpha nominal, the share each pair rates alike, and
    per item how many judges leave its majority.

    >>> m = np.array([[1, 1, 0, 1], [1, 0, 0, 1], [1, 1, 1, np.nan]], dtype=float)
    >>> a = agreement(m, "nominal", ["t1", "t2", "t3", "t4"])
    >>> round(a.alpha, 4), [p.value for p in a.pairs], [(d.item, d.disagreement) for d in a.ranked]
    (0.1667, [0.75, 0.6666666666666666, 0.3333333333333333], [(1, 1.0), (2, 1.0), (0, 0.0), (3, 0.0)])
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")
    rated = ~np.isnan(matrix)
    pairs = []
    for i, j in itertools.combinations(range(matrix.shape[0]), 2):
        both = rated[i] & rated[j]
        pairs.append(Pair(i, j, _pair_value(matrix[i][both], matrix[j][both], level), int(both.sum())))
    spread = [(_disagreement(matrix[:, k][rated[:, k]], level), k) for k in range(matrix.shape[1])
              if rated[:, k].sum() >= 2]
    spread.sort(key=lambda item: (-item[0], keys[item[1]]))
    return Agreement(krippendorff_alpha(matrix, level), tuple(pairs),
                     tuple(Disagreed(k, d) for d, k in spread))


def judges_matrix(ratings: Sequence[dict[str, float]]) -> tuple[list[str], np.ndarray]:
    """The judges (sorted names) and the judges x items matrix of per-item ratings judge -> value
    (NaN where a judge did not rate an item)."""
    names = sorted({name for per_item in ratings for name in per_item})
    matrix = np.array([[per_item.get(n, np.nan) for per_item in ratings] for n in names],
                      dtype=np.float64).reshape(len(names), len(ratings))
    return names, matrix
