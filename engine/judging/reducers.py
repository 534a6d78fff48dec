"""Named reducers: how the answers of several judges to one question become one value.

Each reducer is a small pure function over the judges' values in judge order, looked up by name
(`reducer("trimmed_mean")`); an evaluator, or the profile it runs under, names the one it uses:

- ``trimmed_mean``: the M3 judges' Task Completion and Information Grounding;
- ``majority``: 0/1 votes, a tie is 0 (answer equivalence's and VisualToolBench's ``strict``
  readings; each evaluator first reads its judges' replies as votes and leaves out those that are none);
- ``first``: the first judge's value (the ``published`` readings of answer equivalence and
  VisualToolBench, which take the pool's first judge).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def mean(values: Sequence[float]) -> float:
    """The plain mean, summed in order as the published scripts sum (sum / count)."""
    return float(sum(values)) / len(values)


def mean_or_none(values: Sequence[float]) -> float | None:
    """The plain mean, or None for no values."""
    return mean(values) if values else None


def trimmed_mean(values: Sequence[float]) -> float:
    """Sorted values without the lowest and the highest when there are three or more, averaged
    (summed in order, as the published script sums).

    >>> trimmed_mean([1.0, 0.25, 0.5, 0.75])
    0.625
    >>> trimmed_mean([0.5, 0.75])
    0.625
    >>> trimmed_mean([0.3, 0.3, 0.9])
    0.3
    """
    if not values:
        raise ValueError("no scores to average")
    ordered = sorted(values)
    return mean(ordered[1:-1] if len(ordered) >= 3 else ordered)


def majority(votes: Sequence[int | bool]) -> int:
    """1 when more votes are 1 (true) than 0 (false), else 0: a tie, and no vote at all, is 0.

    >>> majority([1, 1, 0]), majority([1, 0]), majority([True, False, True, False]), majority([])
    (1, 0, 0, 0)
    """
    return int(2 * sum(votes) > len(votes))


def first(values: Sequence[T]) -> T:
    """The first judge's value (the others are not read).

    >>> first(["Met", "Not Met", "Not Met"])
    'Met'
    """
    if not values:
        raise ValueError("no value to take the first of")
    return values[0]


REDUCERS: dict[str, Callable[[Sequence[Any]], Any]] = {
    "trimmed_mean": trimmed_mean, "majority": majority, "first": first}
"""Every reducer by name."""


def reducer(name: str) -> Callable[[Sequence[Any]], Any]:
    """The reducer of this name; ValueError naming the choices otherwise.

    >>> reducer("trimmed_mean")([0.0, 0.5, 1.0])
    0.5
    """
    try:
        return REDUCERS[name]
    except KeyError:
        raise ValueError(f"unknown reducer {name!r}; expected one of {', '.join(REDUCERS)}") from None
