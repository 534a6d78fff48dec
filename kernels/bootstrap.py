"""Batched cluster bootstrap: one (B x C) matrix of cluster counts, aggregates as ratios of resampled
sums, and the standard errors, t intervals and p-values, quantiles and win probabilities over the
result, held as rows (K x B: each quantity's resamples along the last dimension), and Holm's adjustment.

Every function works on whole tensors (no loop over resamples); a resample in which a quantity has no
value (NaN) is left out of what is computed over it.
"""

from __future__ import annotations

import math

import numpy as np
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


def ratios(weights: torch.Tensor, num: torch.Tensor, den: torch.Tensor, empty: torch.Tensor | None = None
           ) -> torch.Tensor:
    """(weights @ num) / (weights @ den) as rows (K x R): each row of weights (R x C) gives a value of
    every quantity (columns of the C x K sums). Where the resampled denominator is 0 the value is the
    quantity's `empty` one (K: what its point reads 0/0 as), NaN (no value) without it."""
    top = num.T @ weights.T
    bottom = den.T @ weights.T
    fill = torch.full_like(top, math.nan) if empty is None else empty.to(top)[:, None].expand_as(top)
    return torch.where(bottom != 0, top / torch.where(bottom != 0, bottom, torch.ones_like(bottom)), fill)


CORRECTIONS = ("expanded", "none")


def _df(c: np.ndarray, effective: torch.Tensor | None) -> np.ndarray:
    """Student's degrees of freedom: the effective clusters less one (C - 1 without them), at least 1."""
    e = c if effective is None else effective.detach().cpu().to(torch.float64).numpy()
    return np.maximum(np.minimum(e, c) - 1, 1)


def interval_levels(level: float, clusters: torch.Tensor | None, effective: torch.Tensor | None = None
                    ) -> torch.Tensor:
    """The quantile levels (2 x K) of each quantity's interval at `level`.

    clusters None: the percentile interval's (1 - level)/2 and (1 + level)/2. Else, per quantity, the
    expanded percentile interval's (Hesterberg 2015, "What teachers should know about the bootstrap"):
    Phi(-/+ sqrt(C/(C-1)) t_{df, (1+level)/2}) with C its clusters and df = its effective clusters less one
    (C - 1 by default), which widens the interval by the small-sample factor sqrt(C/(C-1)) of the clustered
    variance and by Student's t in place of the normal (plain levels where C < 2).
    """
    from scipy.special import ndtr, stdtrit

    alpha = 1.0 - level
    if clusters is None:
        return torch.tensor([[alpha / 2], [1 - alpha / 2]], dtype=torch.float64)
    c = clusters.detach().cpu().to(torch.float64).numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.sqrt(c / (c - 1)) * stdtrit(_df(c, effective), 1 - alpha / 2)
    low = np.where(c >= 2, ndtr(-z), alpha / 2)
    return torch.as_tensor(np.stack([low, 1 - low]), dtype=torch.float64)


def effective_clusters(shares: torch.Tensor) -> torch.Tensor:
    """Kish's effective number of clusters, 1 / sum_c w_c^2, of each quantity's shares (C x K: each cluster's share
    of the quantity's denominator, summing to 1; C for equal shares, fewer the more a few clusters weigh). NaN
    for a quantity with no share."""
    square = (shares ** 2).sum(0)
    return torch.where(square > 0, 1 / torch.where(square > 0, square, 1.0), math.nan)


def critical_value(level: float, clusters: torch.Tensor, correction: str = "expanded",
                   effective: torch.Tensor | None = None) -> torch.Tensor:
    """Per quantity (K), the multiple of its standard error that its t interval at `level` spans on each side:
    sqrt(C/(C-1)) t_{df, (1+level)/2} with C its clusters and df its effective clusters (effective_clusters) less
    one, C - 1 without them (expanded: the clustered variance's small-sample factor and Student's t), or the normal
    z_{(1+level)/2} (none). NaN where C < 2 (no interval)."""
    from scipy.special import ndtri, stdtrit

    c = clusters.detach().cpu().to(torch.float64).numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        if correction == "expanded":
            out = np.sqrt(c / (c - 1)) * stdtrit(_df(c, effective), (1 + level) / 2)
        else:
            out = np.full_like(c, ndtri((1 + level) / 2))
    return torch.as_tensor(np.where(c >= 2, out, np.nan), dtype=torch.float64, device=clusters.device)


def t_p_value(difference: torch.Tensor, se: torch.Tensor, clusters: torch.Tensor, correction: str = "expanded",
              effective: torch.Tensor | None = None) -> torch.Tensor:
    """Two-sided p-values of differences (K) from their bootstrap standard errors: 2 T_df(-|d| / (sqrt(C/(C-1))
    se)) with df as critical_value's (expanded; the normal's tail with `none`), the test whose acceptance region
    is the t interval of critical_value, with no floor set by the number of resamples. 1 where d is 0 (se 0
    included); 0 where se is 0 and d is not; NaN where C < 2 or d or se is NaN."""
    from scipy.special import ndtr, stdtr

    d = difference.detach().cpu().to(torch.float64).numpy()
    s = se.detach().cpu().to(torch.float64).numpy()
    c = clusters.detach().cpu().to(torch.float64).numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        if correction == "expanded":
            t = np.abs(d) / (s * np.sqrt(c / (c - 1)))
            p = 2 * stdtr(_df(c, effective), -t)
        else:
            p = 2 * ndtr(-np.abs(d) / s)
    p = np.where(d == 0, 1.0, np.where(s == 0, 0.0, p))
    p = np.where((c >= 2) & ~np.isnan(d) & ~np.isnan(s), np.minimum(p, 1.0), np.nan)
    return torch.as_tensor(p, dtype=torch.float64, device=difference.device)


def scaled_interval(point: torch.Tensor, se: torch.Tensor, crit: torch.Tensor, low: torch.Tensor, high: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """t intervals point -/+ crit x se (K each) on the scale that the quantity's range [low, high] (K; -inf and
    inf for no bound) makes symmetric: logit((v - low) / (high - low)) for a bounded one, log(v - low) for one
    bounded below, v itself otherwise; se enters through the transform's derivative (the delta method) and the
    ends are mapped back, so they stay inside the range. A point on a bound of its range falls back to the
    plain scale."""
    bounded_low, bounded_high = torch.isfinite(low), torch.isfinite(high)
    width = torch.where(bounded_low & bounded_high, high - low, torch.ones_like(point))
    u = (point - low) / width
    both = bounded_low & bounded_high & (u > 0) & (u < 1)
    below = bounded_low & ~bounded_high & (point > low)
    half = crit * se
    safe_u = torch.where(both, u, torch.full_like(u, 0.5))
    logit = torch.logit(safe_u)
    step = half / (width * safe_u * (1 - safe_u))
    log_v = torch.log(torch.where(below, point - low, torch.ones_like(point)))
    step_log = half / torch.where(below, point - low, torch.ones_like(point))
    lo = torch.where(both, low + width * torch.sigmoid(logit - step),
                     torch.where(below, low + torch.exp(log_v - step_log), point - half))
    hi = torch.where(both, low + width * torch.sigmoid(logit + step),
                     torch.where(below, low + torch.exp(log_v + step_log), point + half))
    return lo, hi


def has_nan(rows: torch.Tensor) -> bool:
    """Whether rows may hold a NaN (its sum is NaN: one reduction, no mask; +inf beside -inf also says yes)."""
    return bool(torch.isnan(rows.sum()))


def valid_counts(rows: torch.Tensor) -> torch.Tensor:
    """The number of non-NaN resamples of each row (K x B: a quantity's resamples along the last dim)."""
    if not has_nan(rows):
        return torch.full(rows.shape[:-1], rows.shape[-1], dtype=torch.long, device=rows.device)
    return rows.shape[-1] - torch.count_nonzero(torch.isnan(rows), dim=-1)


def order_statistics(rows: torch.Tensor, index: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """Per row of rows (K x B), the values at the ascending positions `index` (K x J) among its `count`
    non-NaN values. Positions in the lower half come from the row's smallest values and the others from
    its largest (two partial selections); a full sort when they reach far into the row."""
    b = rows.shape[-1]
    if has_nan(rows):
        high_filled = torch.where(torch.isnan(rows), math.inf, rows)
        low_filled = torch.where(torch.isnan(rows), -math.inf, rows)
    else:
        high_filled = low_filled = rows
    low_side = 2 * index < count[:, None]
    from_top = (count[:, None] - 1 - index).clamp(min=0)
    k_low = int(torch.where(low_side, index + 1, 0).max()) if index.numel() else 0
    k_high = int(torch.where(low_side, 0, from_top + 1).max()) if index.numel() else 0
    if 4 * (k_low + k_high) > b:
        ordered = torch.sort(high_filled, dim=-1).values
        return ordered.gather(-1, index.clamp(0, b - 1))
    out = torch.zeros(index.shape, dtype=rows.dtype, device=rows.device)
    if k_low:
        smallest = torch.topk(high_filled, k_low, dim=-1, largest=False).values
        out = torch.where(low_side, smallest.gather(-1, index.clamp(0, k_low - 1)), out)
    if k_high:
        largest = torch.topk(low_filled, k_high, dim=-1, largest=True).values
        out = torch.where(low_side, out, largest.gather(-1, from_top.clamp(max=k_high - 1)))
    return out


def quantiles(rows: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Quantiles (K x Q) of each row of rows (K x B) over its non-NaN entries, by linear interpolation
    (numpy's default); q is (Q,) for every row or (Q x K) per row. NaN for a row with no value."""
    k, b = rows.shape
    q = q.to(dtype=rows.dtype, device=rows.device)
    q = (q[:, None].expand(-1, k) if q.dim() == 1 else q).T            # K x Q
    count = valid_counts(rows)
    pos = q * (count - 1).clamp(min=0).to(rows.dtype)[:, None]
    lower = pos.floor().long().clamp(0, b - 1)
    upper = pos.ceil().long().clamp(0, b - 1)
    frac = pos - lower.to(rows.dtype)
    both = order_statistics(rows, torch.cat([lower, upper], dim=1), count)
    lo, hi = both[:, :q.shape[1]], both[:, q.shape[1]:]
    out = torch.where(frac == 0, lo, lo + (hi - lo) * frac)  # an exact order statistic needs no neighbour
    return torch.where(count[:, None] > 0, out, torch.full_like(out, math.nan))


def percentile_interval(rows: torch.Tensor, level: float, clusters: torch.Tensor | None = None,
                        effective: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's interval at `level`: its percentile interval, or with `clusters` (K) the expanded one
    (interval_levels)."""
    qs = quantiles(rows, interval_levels(level, clusters, effective))
    return qs[:, 0], qs[:, 1]


def _normal() -> torch.distributions.Normal:
    return torch.distributions.Normal(torch.tensor(0.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))


def bca_interval(rows: torch.Tensor, point: torch.Tensor, jackknife: torch.Tensor, level: float,
                 clusters: torch.Tensor | None = None, effective: torch.Tensor | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Bias-corrected and accelerated interval of each row of rows (K x B).

    point: the estimates (K); jackknife: the leave-one-cluster-out estimates (C x K). The bias z0 is
    Phi^-1 of the share of resamples below the point (ties counted half, the share kept inside
    (0, 1)); the acceleration is sum(d^3) / (6 sum(d^2)^1.5) with d the jackknife's deviations from
    their mean. With `clusters`, the normal quantiles are the expanded interval's (interval_levels).
    A row whose resamples all equal the point gets [point, point].
    """
    normal = _normal()
    n = valid_counts(rows).to(rows.dtype)
    below = (rows < point[:, None]).sum(1).to(rows.dtype)
    equal = (rows == point[:, None]).sum(1).to(rows.dtype)
    share = ((below + 0.5 * equal) / n.clamp(min=1)).clamp(1.0 / (n + 1), n / (n + 1))
    share = torch.where(n > 0, share, 0.5)  # a row with no value has no interval (its quantiles are NaN)
    z0 = normal.icdf(share)
    jk_ok = ~torch.isnan(jackknife)
    jk_mean = torch.where(jk_ok, jackknife, 0.0).sum(0) / jk_ok.sum(0).clamp(min=1)
    d = torch.where(jk_ok, jk_mean - jackknife, 0.0)
    spread = (d ** 2).sum(0)
    accel = torch.where(spread > 0, (d ** 3).sum(0) / (6 * spread.clamp(min=1e-300) ** 1.5), 0.0)
    z = normal.icdf(interval_levels(level, clusters, effective).to(rows.device))      # 2 x 1 or 2 x K
    levels = normal.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z)))
    qs = quantiles(rows, levels)
    constant = equal == n
    return torch.where(constant, point, qs[:, 0]), torch.where(constant, point, qs[:, 1])


def sign_counts(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per row of rows (K x B): how many non-NaN resamples are below 0, exactly 0 and above 0."""
    below = torch.count_nonzero(rows < 0, dim=-1)
    above = torch.count_nonzero(rows > 0, dim=-1)  # NaN compares false
    return below, valid_counts(rows) - below - above, above


def win_probability(rows: torch.Tensor, counts: tuple[torch.Tensor, ...] | None = None) -> torch.Tensor:
    """Share of the non-NaN resamples with d > 0, plus half the share with d = 0, per row (NaN for a row
    with no value)."""
    below, equal, above = sign_counts(rows) if counts is None else counts
    n = (below + equal + above).to(rows.dtype)
    return torch.where(n > 0, (above + 0.5 * equal).to(rows.dtype) / n.clamp(min=1), math.nan)


def standard_deviation(rows: torch.Tensor) -> torch.Tensor:
    """Standard deviation (n - 1) of each row of rows (K x B) over its non-NaN entries; NaN below 2."""
    if not has_nan(rows):
        return rows.std(-1) if rows.shape[-1] > 1 else torch.full(rows.shape[:1], math.nan, dtype=rows.dtype,
                                                                   device=rows.device)
    valid = ~torch.isnan(rows)
    n = valid.sum(-1).to(rows.dtype)
    mean = torch.nansum(rows, -1) / n.clamp(min=1)
    sq = torch.where(valid, (rows - mean[:, None]) ** 2, 0.0).sum(-1)
    return torch.where(n > 1, (sq / (n - 1).clamp(min=1)).sqrt(), torch.full_like(mean, math.nan))


def holm(p: torch.Tensor) -> torch.Tensor:
    """Holm's step-down adjustment of the p-values of the last dimension (each row one family of tests); a NaN
    (a test not made) stays NaN and is not counted in its family."""
    m = p.shape[-1]
    if m == 0:
        return p.clone()
    valid = ~torch.isnan(p)
    filled = torch.where(valid, p, math.inf)
    order = torch.argsort(filled, dim=-1, stable=True)
    ranked = filled.gather(-1, order)
    position = torch.arange(m, dtype=p.dtype, device=p.device)
    factor = (valid.sum(-1, keepdim=True).to(p.dtype) - position).clamp(min=1)
    adjusted = torch.cummax((ranked * factor).clamp(max=1.0), dim=-1).values
    out = torch.empty_like(p).scatter_(-1, order, adjusted)
    return torch.where(valid, out, math.nan)
