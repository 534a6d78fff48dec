"""The frontier membership rule (engine.cost.frontier_call) against known truth: a population of task families
whose sizes are the real reference's, models whose per-task score and cost share their family's difficulty and
price level, benchmarks of C families drawn from it, and how often each model is called on, off or uncertain.

Each model m has a mean score mu_m and a cost scale k_m; a family f has a difficulty u_f ~ N(0, 0.8) and a cost
level v_f ~ N(0, 0.5) shared by every model, so that models move together as on the real benchmark. A task's score
is Beta with mean logistic(logit(mu_m) + u_f) (concentration 5), its cost lognormal, log k_m + v_f + N(0, 0.6). The
truth is each model's mean score and cost over the whole population (2,000 families), and its frontier membership
from those.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from engine import cost as ct
from kernels import bootstrap as bs


@dataclass
class CostPopulation:
    """Per family its tasks' scores and costs for every model (lists of M x n_f arrays), and the truth."""

    scores: list[np.ndarray]
    costs: list[np.ndarray]
    true_score: np.ndarray
    true_cost: np.ndarray

    @property
    def truly_on(self) -> list[bool]:
        """Each model's frontier membership by the population's values."""
        return ct.frontier(self.true_score.tolist(), self.true_cost.tolist())


def make_cost_population(sizes: list[int], mean_score: list[float], cost_scale: list[float], families: int = 2000,
                         seed: int = 0) -> CostPopulation:
    """A population of `families` families, sizes drawn from `sizes` (the real reference's family sizes)."""
    rng = np.random.default_rng(seed)
    mu = np.log(np.asarray(mean_score) / (1 - np.asarray(mean_score)))
    scores, costs = [], []
    for size in rng.choice(sizes, families):
        u, v = rng.normal(0, 0.8), rng.normal(0, 0.5)
        mean = 1 / (1 + np.exp(-(mu + u)))[:, None]
        scores.append(rng.beta(5 * mean, 5 * (1 - mean), (len(mu), size)))
        costs.append(np.exp(np.log(cost_scale)[:, None] + v + rng.normal(0, 0.6, (len(mu), size))))
    all_s, all_c = np.concatenate(scores, axis=1), np.concatenate(costs, axis=1)
    return CostPopulation(scores, costs, all_s.mean(1), all_c.mean(1))


def frontier_calls(pop: CostPopulation, clusters: int, draws: int, resamples: int, level: float = 0.95,
                   seed: int = 1) -> dict[str, np.ndarray]:
    """Over `draws` benchmarks of `clusters` families drawn from the population: per model the share of draws
    called on, off and uncertain (engine.cost.frontier_call on the shares of frontier_shares)."""
    rng = np.random.default_rng(seed)
    m = len(pop.true_score)
    tally = {ct.ON: np.zeros(m), ct.OFF: np.zeros(m), ct.UNCERTAIN: np.zeros(m)}
    for d in range(draws):
        picked = rng.choice(len(pop.scores), clusters, replace=False)
        counts = bs.resample_counts(resamples, clusters, seed=d)
        s_rows, c_rows = [], []
        for model in range(m):
            score = np.array([pop.scores[f][model].sum() for f in picked])[:, None]
            spend = np.array([pop.costs[f][model].sum() for f in picked])[:, None]
            size = np.array([pop.scores[f].shape[1] for f in picked], dtype=np.float64)[:, None]
            s_rows.append(ct.resample_rows(counts, score, size)[0])
            c_rows.append(ct.resample_rows(counts, spend, size)[0])
        shares, _ = ct.frontier_shares(torch.stack(s_rows).numpy(), torch.stack(c_rows).numpy())
        for model, share in enumerate(shares):
            tally[str(ct.frontier_call(float(share), level, clusters))][model] += 1
    return {call: counts / draws for call, counts in tally.items()}
