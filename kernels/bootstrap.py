"""Batched cluster bootstrap: one (B x C) matrix of cluster counts, aggregates as ratios of resampled
sums, and the quantiles, p-values, win probabilities and ranks over the (B x K) result.

Every function works on whole tensors (no loop over resamples); a quantity whose resampled
denominator is 0 has no value in that resample (NaN) and is left out of what is computed over it.
"""

from __future__ import annotations

import math

import torch

SCHEMES = ("multinomial", "poisson")


def resample_counts(resamples: int, clusters: int, seed: int, scheme: str = "multinomial") -> torch.Tensor:
    """The (resamples x clusters) int64 matrix of how often each cluster is drawn in each resample,
    drawn on the CPU generator seeded with `seed` (the same numbers whatever device uses them).

    multinomial: each row draws `clusters` clusters uniformly with replacement; poisson: each count
    is Poisson(1), independently.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown resampling scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    if resamples < 1 or clusters < 1:
        raise ValueError(f"need at least one resample and one cluster, got {resamples} x {clusters}")
    generator = torch.Generator(device="cpu").manual_seed(int(seed))
    if scheme == "poisson":
        return torch.poisson(torch.ones(resamples, clusters, dtype=torch.float64), generator=generator).long()
    drawn = torch.randint(0, clusters, (resamples, clusters), generator=generator)
    counts = torch.zeros(resamples, clusters, dtype=torch.long)
    return counts.scatter_add_(1, drawn, torch.ones_like(drawn))


def leave_one_out(clusters: int, dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu"
                  ) -> torch.Tensor:
    """The jackknife's weights: row c counts every cluster once but cluster c."""
    return torch.ones(clusters, clusters, dtype=dtype, device=device) - torch.eye(clusters, dtype=dtype,
                                                                                 device=device)


def cluster_sums(values: torch.Tensor, cluster: torch.Tensor, clusters: int) -> torch.Tensor:
    """Per-cluster sums (C x K) of per-unit values (N x K), `cluster` giving each unit's cluster."""
    out = torch.zeros(clusters, values.shape[1], dtype=values.dtype, device=values.device)
    return out.index_add_(0, cluster, values)


def ratios(weights: torch.Tensor, num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """(weights @ num) / (weights @ den): each row of weights (R x C) gives a value of every quantity
    (columns of the C x K sums); NaN where the resampled denominator is 0."""
    top = weights @ num
    bottom = weights @ den
    return torch.where(bottom != 0, top / torch.where(bottom != 0, bottom, torch.ones_like(bottom)),
                       torch.full_like(top, math.nan))


def quantiles(values: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Quantiles of each column of values (B x K) over its non-NaN entries, by linear interpolation
    (numpy's default); q is (Q,) for every column or (Q x K) per column. NaN for a column with no value."""
    b, k = values.shape
    q = q.to(values.dtype).to(values.device)
    if q.dim() == 1:
        q = q[:, None].expand(-1, k)
    rows = _rows(values)  # K x B: each quantity's resamples contiguous
    ordered, _ = torch.sort(torch.where(torch.isnan(rows), torch.full_like(rows, math.inf), rows), dim=1)
    count = (~torch.isnan(rows)).sum(1)
    pos = q.T * (count - 1).clamp(min=0).to(values.dtype)[:, None]       # K x Q
    lower = pos.floor().long().clamp(0, b - 1)
    upper = pos.ceil().long().clamp(0, b - 1)
    frac = pos - lower.to(values.dtype)
    lo = ordered.gather(1, lower)
    hi = ordered.gather(1, upper)
    out = torch.where(frac == 0, lo, lo + (hi - lo) * frac)  # an exact order statistic needs no neighbour
    return torch.where(count[:, None] > 0, out, torch.full_like(out, math.nan)).T


def _rows(values: torch.Tensor) -> torch.Tensor:
    """values (B x K) as K contiguous rows of B resamples (reductions over resamples run along rows)."""
    return values.T.contiguous()


def percentile_interval(values: torch.Tensor, level: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The (1 - level)/2 and (1 + level)/2 quantiles of each column."""
    alpha = 1.0 - level
    qs = quantiles(values, torch.tensor([alpha / 2, 1 - alpha / 2], dtype=torch.float64))
    return qs[0], qs[1]


def _normal() -> torch.distributions.Normal:
    return torch.distributions.Normal(torch.tensor(0.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))


def bca_interval(values: torch.Tensor, point: torch.Tensor, jackknife: torch.Tensor, level: float
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Bias-corrected and accelerated interval of each column of values (B x K).

    point: the estimates (K); jackknife: the leave-one-cluster-out estimates (C x K). The bias z0 is
    Phi^-1 of the share of resamples below the point (ties counted half, the share kept inside
    (0, 1)); the acceleration is sum(d^3) / (6 sum(d^2)^1.5) with d the jackknife's deviations from
    their mean. A column whose resamples all equal the point gets [point, point].
    """
    normal = _normal()
    rows = _rows(values)
    valid = ~torch.isnan(rows)
    n = valid.sum(1).to(values.dtype)
    below = (rows < point[:, None]).sum(1).to(values.dtype)
    equal = (rows == point[:, None]).sum(1).to(values.dtype)
    share = ((below + 0.5 * equal) / n.clamp(min=1)).clamp(1.0 / (n + 1), n / (n + 1))
    z0 = normal.icdf(share)
    jk_ok = ~torch.isnan(jackknife)
    jk_mean = torch.where(jk_ok, jackknife, 0.0).sum(0) / jk_ok.sum(0).clamp(min=1)
    d = torch.where(jk_ok, jk_mean - jackknife, 0.0)
    spread = (d ** 2).sum(0)
    accel = torch.where(spread > 0, (d ** 3).sum(0) / (6 * spread.clamp(min=1e-300) ** 1.5), 0.0)
    alpha = 1.0 - level
    z = normal.icdf(torch.tensor([alpha / 2, 1 - alpha / 2], dtype=values.dtype, device=values.device))[:, None]
    levels = normal.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z)))
    qs = quantiles(values, levels)
    constant = equal == n
    return torch.where(constant, point, qs[0]), torch.where(constant, point, qs[1])


def two_sided_p(diff: torch.Tensor) -> torch.Tensor:
    """p = min(1, 2 min(#(d <= 0) + 1, #(d >= 0) + 1) / (B + 1)) per column of diff (B x K), over its
    non-NaN resamples; 1 where every resample's difference is exactly 0 (or none has a value)."""
    rows = _rows(diff)
    n = (~torch.isnan(rows)).sum(1).to(diff.dtype)
    le = (rows <= 0).sum(1).to(diff.dtype)  # NaN compares false
    ge = (rows >= 0).sum(1).to(diff.dtype)
    p = (2 * torch.minimum(le + 1, ge + 1) / (n + 1)).clamp(max=1.0)
    zero = ((rows != 0) & ~torch.isnan(rows)).sum(1) == 0
    return torch.where(zero, torch.ones_like(p), p)


def win_probability(diff: torch.Tensor) -> torch.Tensor:
    """Share of the non-NaN resamples with d > 0, plus half the share with d = 0, per column."""
    rows = _rows(diff)
    n = (~torch.isnan(rows)).sum(1).to(diff.dtype).clamp(min=1)
    return ((rows > 0).sum(1) + 0.5 * (rows == 0).sum(1)).to(diff.dtype) / n


def standard_deviation(values: torch.Tensor) -> torch.Tensor:
    """Standard deviation (n - 1) of each column of values (B x K) over its non-NaN entries; NaN below 2."""
    rows = _rows(values)
    valid = ~torch.isnan(rows)
    n = valid.sum(1).to(values.dtype)
    mean = torch.where(valid, rows, 0.0).sum(1) / n.clamp(min=1)
    sq = torch.where(valid, (rows - mean[:, None]) ** 2, 0.0).sum(1)
    return torch.where(n > 1, (sq / (n - 1).clamp(min=1)).sqrt(), torch.full_like(mean, math.nan))


def holm(p: torch.Tensor) -> torch.Tensor:
    """Holm's step-down adjustment of the p-values of the last dimension (each row one family of tests)."""
    m = p.shape[-1]
    if m == 0:
        return p.clone()
    order = torch.argsort(p, dim=-1, stable=True)
    ranked = p.gather(-1, order)
    factor = torch.arange(m, 0, -1, dtype=p.dtype, device=p.device)
    adjusted = torch.cummax((ranked * factor).clamp(max=1.0), dim=-1).values
    return torch.empty_like(p).scatter_(-1, order, adjusted)


def ranks(values: torch.Tensor) -> torch.Tensor:
    """Per row of values (R x M, higher is better) each column's rank: 1 + the number of columns with a
    strictly higher value (ties share the smaller rank); a NaN ranks below every value."""
    filled = torch.where(torch.isnan(values), torch.full_like(values, -math.inf), values)
    better = filled[:, None, :] > filled[:, :, None]  # [r, i, j]: j beats i
    return 1 + better.sum(-1)
