"""The unbiased estimators of repeated runs (engine.trials), for k <= n: n trials of a task, c of
them successful."""

from __future__ import annotations

import math
from collections.abc import Sequence


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k trials drawn from n succeeds: 1 - C(n-c, k) / C(n, k)."""
    _check_k(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that all k trials drawn from n succeed: C(c, k) / C(n, k)."""
    _check_k(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def avg_at_k(n: int, c: int, k: int) -> float:
    """Mean success of one trial, c / n (the same for every k <= n)."""
    _check_k(n, c, k)
    return c / n


def _check_k(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


ESTIMATORS = {"pass_at_k": pass_at_k, "pass_hat_k": pass_hat_k, "avg_at_k": avg_at_k}


def rate(counts: Sequence[tuple[int, int]], k: int, estimator: str) -> tuple[float | None, int]:
    """(mean of the estimator over the tasks with n >= k, number of those tasks); None when none."""
    fn = ESTIMATORS[estimator]
    values = [fn(n, c, k) for n, c in counts if n >= k]
    return (sum(values) / len(values) if values else None), len(values)
