"""The statistics step checked against known truth on a real-shaped population (engine.synthetic.population):
coverage of each interval method, the paired test's false positives under a global null, and the 14-model
leaderboard of Table 2 (docs/statistics.md; scripts/stats_simulation.py).

Every benchmark drawn gets its own resample matrix; the intervals and tests are the statistics step's own
functions (engine.stats.decisions) applied to the draws' resamples, so what is measured is what a run computes.
The studentized bootstrap (bootstrap-t) is measured here only, for comparison.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from engine.stats import decisions as dc
from engine.stats.settings import StatsSettings
from engine.stats.units import ModelUnits, model_units
from engine.synthetic.population import AVERAGED, METRICS, Outcomes, Population, draw_sums, real_benchmark
from kernels import bootstrap as bs

METHODS: tuple[tuple[str, str], ...] = (("logit", "expanded"), ("percentile", "expanded"), ("bca", "expanded"),
                                        ("studentized", "expanded"), ("percentile", "none"))
"""The interval methods compared: (stats.method, stats.correction); studentized is the bootstrap-t."""


def resampled(sums: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Values (n x B x R x Q+1: every metric, then the Average Score) of each draw's resamples (sums: n x C x R x
    Q x 2; counts: n x B x C); a zero denominator reads as 0."""
    n, c = sums.shape[:2]
    top = torch.bmm(counts, sums.reshape(n, c, -1)).reshape(n, counts.shape[1], *sums.shape[2:])
    ratio = torch.where(top[..., 1] != 0, top[..., 0] / torch.where(top[..., 1] != 0, top[..., 1], 1.0), 0.0)
    return torch.cat([ratio, ratio[..., list(AVERAGED)].mean(-1, keepdim=True)], -1)


def _studentized(sums: torch.Tensor, counts: torch.Tensor, rows: torch.Tensor, point: torch.Tensor,
                 level: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Bootstrap-t intervals (n x R x Q+1) of the models: t*_b = (v_b - v) / s_b with s_b the linearized SE of
    resample b (the ratio's influence (a_c - v_b d_c) / D_b per cluster, the Average Score's the mean of its
    components'), the interval [v - t*_{1-a/2} s, v - t*_{a/2} s]."""
    w = counts[..., None, None]                                          # n x B x C x 1 x 1
    a, d = sums[..., 0], sums[..., 1]                                    # n x C x R x Q
    top = torch.einsum("nbc,ncrq->nbrq", counts, d)
    ratio = rows[..., :-1]                                               # n x B x R x Q
    safe = torch.where(top != 0, top, 1.0)
    u = (a[:, None] - ratio[:, :, None] * d[:, None]) / safe[:, :, None]  # n x B x C x R x Q
    u = torch.cat([u, u[..., list(AVERAGED)].mean(-1, keepdim=True)], -1)
    s_b = (w * u ** 2).sum(2).sqrt()                                     # n x B x R x Q+1
    total = d.sum(1)
    uh = (a - point[:, None, :, :-1] * d) / torch.where(total != 0, total, 1.0)[:, None]
    uh = torch.cat([uh, uh[..., list(AVERAGED)].mean(-1, keepdim=True)], -1)
    s = (uh ** 2).sum(1).sqrt()                                          # n x R x Q+1
    t = torch.where(s_b > 0, (rows - point[:, None]) / s_b, 0.0)
    q = bs.quantiles(t.permute(0, 2, 3, 1).reshape(-1, t.shape[1]),
                     torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64)).reshape(*s.shape, 2)
    return point - q[..., 1] * s, point - q[..., 0] * s


@dataclass
class Coverage:
    """Per method: the share of draws whose interval holds the truth (R x Q+1 models, then P x Q+1 pairs), and
    the shares with the truth below the interval and above it."""

    models: dict[str, np.ndarray]
    below: dict[str, np.ndarray]
    above: dict[str, np.ndarray]
    pairs: np.ndarray
    draws: int


def coverage(pop: Population, mixes: np.ndarray, clusters: int, draws: int = 2000, resamples: int = 1000,
             methods: tuple[tuple[str, str], ...] = METHODS, level: float = 0.95, seed: int = 1, chunk: int = 20
             ) -> Coverage:
    """Coverage of each method's interval of every model's metrics and Average Score, and of the pairs' t
    intervals of the differences (every pair of the models), over `draws` benchmarks of `clusters` families."""
    truth = torch.as_tensor(pop.truth(mixes))
    r, k1 = truth.shape
    pairs = [(i, j) for i in range(r) for j in range(i + 1, r)]
    ia, ib = [p[0] for p in pairs], [p[1] for p in pairs]
    names = [f"{m}/{c}" for m, c in methods]
    hits = {n: torch.zeros(r, k1, dtype=torch.float64) for n in names}
    below = {n: torch.zeros(r, k1, dtype=torch.float64) for n in names}
    above = {n: torch.zeros(r, k1, dtype=torch.float64) for n in names}
    pair_hits = torch.zeros(len(pairs), k1, dtype=torch.float64)
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    ranges = torch.tensor([dc.value_range(k, [METRICS[q] for q in AVERAGED]) for k in (*METRICS, "average_score")],
                          dtype=torch.float64)
    for start in range(0, draws, chunk):
        n = min(chunk, draws - start)
        sums = torch.as_tensor(draw_sums(pop, mixes, clusters, n, rng))
        counts = _counts(n, resamples, clusters, generator)
        rows = resampled(sums, counts)                                     # n x B x R x Q+1
        point = resampled(sums, torch.ones(n, 1, clusters, dtype=torch.float64))[:, 0]
        flat = rows.permute(0, 2, 3, 1).reshape(-1, resamples)
        jack = resampled(sums, bs.leave_one_out(clusters)[None].expand(n, -1, -1).contiguous())
        jack = jack.permute(1, 0, 2, 3).reshape(clusters, -1)
        target = truth[None].expand(n, -1, -1)
        has, weight = present(sums), shares(sums)
        model_clusters = has.sum(1).reshape(-1)
        model_effective = _effective(weight).reshape(-1)
        for name, (method, correction) in zip(names, methods):
            if method == "studentized":
                low, high = _studentized(sums, counts, rows, point, level)
            else:
                settings = StatsSettings(method=method, correction=correction, level=level)
                lo, hi, _ = dc.model_intervals(flat, point.reshape(-1), jack, model_clusters, model_effective,
                                               ranges[:, 0].repeat(n * r), ranges[:, 1].repeat(n * r), settings)
                low, high = lo.reshape(n, r, k1), hi.reshape(n, r, k1)
            hits[name] += ((low <= target) & (target <= high)).sum(0)
            below[name] += (target < low).sum(0)
            above[name] += (target > high).sum(0)
        diff = rows[:, :, ia] - rows[:, :, ib]                              # n x B x P x Q+1
        tests = _pair_tests(diff, point[:, ia] - point[:, ib], (has[:, :, ia] | has[:, :, ib]).sum(1),
                            _effective((weight[:, :, ia] + weight[:, :, ib]) / 2), StatsSettings(level=level))
        dtruth = (truth[ia] - truth[ib])[None]
        pair_hits += ((tests["low"] <= dtruth) & (dtruth <= tests["high"])).sum(0)
    share = lambda counts: {k: (v / draws).numpy() for k, v in counts.items()}  # noqa: E731
    return Coverage(share(hits), share(below), share(above), (pair_hits / draws).numpy(), draws)


def present(sums: torch.Tensor) -> torch.Tensor:
    """The clusters each quantity has, as the step counts them (n x C x R x Q+1: a nonzero denominator; the
    Average Score: some averaged component's)."""
    has = sums[..., 1] != 0
    return torch.cat([has, has[..., list(AVERAGED)].any(-1, keepdim=True)], -1)


def shares(sums: torch.Tensor) -> torch.Tensor:
    """Each cluster's share of each quantity's denominator, as the step takes them (n x C x R x Q+1)."""
    total = sums[..., 1].sum(1, keepdim=True)
    share = torch.where(total != 0, sums[..., 1] / torch.where(total != 0, total, 1.0), 0.0)
    return torch.cat([share, share[..., list(AVERAGED)].mean(-1, keepdim=True)], -1)


def _effective(weight: torch.Tensor) -> torch.Tensor:
    """Kish's effective clusters of shares n x C x ... (n x ...)."""
    return bs.effective_clusters(weight.transpose(0, 1).reshape(weight.shape[1], -1)).reshape(
        weight.shape[0], *weight.shape[2:])


def _counts(n: int, resamples: int, clusters: int, generator: torch.Generator) -> torch.Tensor:
    """n multinomial resample matrices (n x B x C, float64)."""
    drawn = torch.randint(0, clusters, (n, resamples, clusters), generator=generator)
    return torch.zeros(n, resamples, clusters, dtype=torch.float64).scatter_add_(
        2, drawn, torch.ones(n, resamples, clusters, dtype=torch.float64))


def _pair_tests(diff: torch.Tensor, dpoint: torch.Tensor, clusters: torch.Tensor, effective: torch.Tensor,
                settings: StatsSettings) -> dict[str, torch.Tensor]:
    """The step's t tests of every draw's pairs (diff: n x B x P x Q+1 resampled differences; dpoint, clusters,
    effective clusters: n x P x Q+1), Holm within each draw and metric: low, high, p, p_holm (n x P x Q+1)."""
    se = diff.std(1)
    out = [dc.pair_tests(dpoint[i], se[i], clusters[i], effective[i], torch.ones(se[i].shape, dtype=torch.bool),
                         settings) for i in range(len(se))]
    return {k: torch.stack([o[k] for o in out]) for k in ("low", "high", "p", "p_holm")}


@dataclass
class NullRates:
    """Under a global null: per metric (Q+1) the share of pairs with p < alpha (unadjusted, over pairs and draws)
    and the family-wise rate: the share of draws with some pair separable after Holm."""

    per_pair: np.ndarray
    family_wise: np.ndarray
    draws: int


def null_rates(pop: Population, mixes: np.ndarray, clusters: int, draws: int = 2000, resamples: int = 1000,
               level: float = 0.95, seed: int = 2, chunk: int = 20) -> NullRates:
    """The paired test's false positives over `draws` benchmarks of exchangeable mixture models."""
    r = len(mixes)
    pairs = [(i, j) for i in range(r) for j in range(i + 1, r)]
    ia, ib = [p[0] for p in pairs], [p[1] for p in pairs]
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    unadjusted = torch.zeros(len(METRICS) + 1, dtype=torch.float64)
    family = torch.zeros_like(unadjusted)
    settings = StatsSettings(level=level)
    for start in range(0, draws, chunk):
        n = min(chunk, draws - start)
        sums = torch.as_tensor(draw_sums(pop, mixes, clusters, n, rng))
        rows = resampled(sums, _counts(n, resamples, clusters, generator))
        point = resampled(sums, torch.ones(n, 1, clusters, dtype=torch.float64))[:, 0]
        has, weight = present(sums), shares(sums)
        effective = _effective((weight[:, :, ia] + weight[:, :, ib]) / 2)
        tests = _pair_tests(rows[:, :, ia] - rows[:, :, ib], point[:, ia] - point[:, ib],
                            (has[:, :, ia] | has[:, :, ib]).sum(1), effective, settings)
        unadjusted += (tests["p"] < 1 - level).double().mean(1).sum(0)
        family += (tests["p_holm"] < 1 - level).any(1).double().sum(0)
    return NullRates((unadjusted / draws).numpy(), (family / draws).numpy(), draws)



def benchmark_units(outcomes: Outcomes, mixes: np.ndarray, seed: int = 0, prefix: str = "model") -> list[ModelUnits]:
    """The mixture models on the real ids (one realization, population.real_benchmark) as the statistics step's
    units: named `<prefix>_<j>` (two digits), every alignment metric of the reference profile, the published
    values their ratios of sums (0/0 read as 0)."""
    num, den = real_benchmark(outcomes, mixes, seed)
    ids = [f"{i:04d}" for i in range(len(outcomes.family))]
    clusters = [outcomes.families[f] for f in outcomes.family]
    units = []
    for r in range(len(mixes)):
        parts = {k: (num[:, r, q], den[:, r, q]) for q, k in enumerate(METRICS)}
        published = {k: float(a.sum() / b.sum()) if b.sum() else 0.0 for k, (a, b) in parts.items()}
        units.append(model_units(f"{prefix}_{r:02d}", ids, clusters, parts, {}, published, "reference"))
    return units
