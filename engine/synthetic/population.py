"""A synthetic population of task families with known aggregate values, to check the statistics step's
intervals and paired test by simulation (docs/statistics.md; scripts/stats_simulation.py).

Families copy the shape of real ones (their ids' GT call counts n_gt); each family has a rate drawn
from Beta(a, b), shared by its ids: an id's matches are Binomial(n_gt, rate) (recall = sum matched /
sum n_gt, a ratio) and its judge score is Beta-distributed with mean rate (a plain mean).
The Average Score is the mean of the two. A draw is a benchmark of C families taken from the population
without replacement; its intervals come from kernels.bootstrap exactly as the statistics step makes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from engine.contract import read_trajectories
from kernels import bootstrap as bs


@dataclass
class Population:
    """Per id: its family, n_gt and its family's rate; the models share the rates (equal population values)
    and draw their id-level outcomes independently in every benchmark drawn."""

    family: np.ndarray
    n_gt: np.ndarray
    rate: np.ndarray
    families: int
    concentration: float = 4.0

    def truth(self) -> dict[str, float]:
        """The population values of recall (sum n_gt x rate / sum n_gt), the judge mean (mean rate) and
        the Average Score (their mean): the expected values of every model."""
        recall = float((self.n_gt * self.rate).sum() / self.n_gt.sum())
        judge = float(self.rate.mean())
        return {"recall": recall, "judge": judge, "average": (recall + judge) / 2}


def family_shapes(gt_path: str | Path | None = None) -> list[np.ndarray]:
    """Each family's n_gt per id: of the reference file at gt_path (grouped by ``type``), else 31
    invented families of 2 to 12 ids with 1 to 8 calls each."""
    if gt_path is not None and Path(gt_path).is_file():
        groups: dict[str, list[int]] = {}
        for task in read_trajectories(gt_path).tasks.values():
            groups.setdefault(task.type or "unknown", []).append(len(task.calls))
        return [np.asarray(v, dtype=np.int64) for _, v in sorted(groups.items())]
    rng = np.random.default_rng(12345)
    return [rng.integers(1, 9, rng.integers(2, 13)) for _ in range(31)]


def make_population(shapes: list[np.ndarray], families: int = 2000, seed: int = 0,
                    beta: tuple[float, float] = (2.0, 3.0)) -> Population:
    """`families` families, each the shape of a random one of `shapes`, with Beta(*beta) rates."""
    rng = np.random.default_rng(seed)
    picked = rng.integers(0, len(shapes), families)
    n_gt = np.concatenate([shapes[i] for i in picked]).astype(np.float64)
    family = np.repeat(np.arange(families), [len(shapes[i]) for i in picked])
    return Population(family, n_gt, rng.beta(*beta, families)[family], families)


def draw_sums(pop: Population, clusters: int, draws: int, seed: int, models: int = 2) -> torch.Tensor:
    """Per-cluster sums (draws x C x models x 4: matched, n_gt, judge score, ids) of `draws` benchmarks of
    `clusters` families each, drawn without replacement; each model's matches are Binomial(n_gt, rate)
    and its judge scores Beta with mean rate, drawn afresh for every benchmark."""
    rng = np.random.default_rng(seed)
    starts = np.searchsorted(pop.family, np.arange(pop.families + 1))
    out = np.zeros((draws, clusters, models, 4))
    k = pop.concentration
    for d in range(draws):
        chosen = rng.choice(pop.families, clusters, replace=False)
        idx = np.concatenate([np.arange(starts[f], starts[f + 1]) for f in chosen])
        where = np.repeat(np.arange(clusters), starts[chosen + 1] - starts[chosen])
        n_gt, rate = pop.n_gt[idx], pop.rate[idx]
        for m in range(models):
            matched = rng.binomial(n_gt.astype(np.int64), rate).astype(np.float64)
            score = rng.beta(np.maximum(rate * k, 1e-9), np.maximum((1 - rate) * k, 1e-9))
            for j, column in enumerate((matched, n_gt, score, np.ones_like(n_gt))):
                out[d, :, m, j] = np.bincount(where, weights=column, minlength=clusters)
    return torch.as_tensor(out)


def resampled(sums: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Values (draws x B x models x 3: recall, judge mean, Average Score) of every resample of every draw."""
    w = counts.to(torch.float64)
    top = torch.einsum("bc,dcmj->dbmj", w, sums)
    recall = top[..., 0] / top[..., 1]
    judge = top[..., 2] / top[..., 3]
    return torch.stack([recall, judge, (recall + judge) / 2], dim=-1)


def point(sums: torch.Tensor) -> torch.Tensor:
    """Each draw's estimates (draws x models x 3)."""
    return resampled(sums, torch.ones(1, sums.shape[1]))[:, 0]


@dataclass
class SimulationResult:
    """Coverage of each metric's interval (recall, judge mean, Average Score), and the paired test's
    false positive rate on the Average Score and on recall, over the draws."""

    coverage: dict[str, float]
    false_positive: dict[str, float]
    draws: int


def simulate(pop: Population, clusters: int = 31, draws: int = 2000, resamples: int = 2000, level: float = 0.95,
             method: str = "percentile", correction: str = "expanded", seed: int = 0, chunk: int = 50
             ) -> SimulationResult:
    """Coverage and false positive rate over `draws` benchmarks, each with its own resample matrix;
    `method` and `correction` as the statistics step's settings."""
    truth = pop.truth()
    names = ("recall", "judge", "average")
    target = torch.tensor([truth[k] for k in names], dtype=torch.float64)
    per_row = torch.full((3,), clusters) if correction == "expanded" else None
    covered = torch.zeros(3)
    rejected = torch.zeros(3)
    done = 0
    for start in range(0, draws, chunk):
        n = min(chunk, draws - start)
        sums = draw_sums(pop, clusters, n, seed * 1_000_003 + start)
        for d in range(n):
            counts = bs.resample_counts(resamples, clusters, seed * 1_000_003 + start + d)
            values = resampled(sums[d:d + 1], counts)[0]                  # B x models x 3
            a = values[:, 0].T.contiguous()                               # 3 x B
            if method == "bca":
                est = point(sums[d:d + 1])[0, 0]
                jack = resampled(sums[d:d + 1], bs.leave_one_out(clusters))[0][:, 0]
                low, high = bs.bca_interval(a, est, jack, level, per_row)
            else:
                low, high = bs.percentile_interval(a, level, per_row)
            covered += ((low <= target) & (target <= high)).double()
            p = bs.two_sided_p((values[:, 0] - values[:, 1]).T.contiguous())
            if per_row is not None:
                p = bs.expanded_p(p, per_row)
            rejected += (p < 1 - level).double()
            done += 1
    cover = (covered / done).tolist()
    fp = (rejected / done).tolist()
    return SimulationResult(dict(zip(names, cover)), dict(zip(names, fp)), done)


def clustered_se(x: np.ndarray, cluster: np.ndarray) -> float:
    """The analytic clustered standard error of a plain mean (Miller 2024, "Adding Error Bars to
    Evals"): sqrt(sum over clusters of (sum of x - mean within the cluster)^2) / n."""
    dev = x - x.mean()
    per = np.bincount(cluster, weights=dev)
    return float(math.sqrt((per ** 2).sum()) / len(x))
