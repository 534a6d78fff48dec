"""A population shaped like a real run, with known aggregate values, to check the statistics step by simulation
(docs/statistics.md; scripts/stats_simulation.py).

The outcomes are a real run's: per scored id of a reference, its task family (the GT's ``type``; a repeated id
keeps its last copy) and, per prediction file (a "base model"), the numerator and denominator of every alignment
metric of the reference profile as the published scorer's results_eval.json gives them (recall = matched / n_gt,
precision = matched / n_pred, a ``*_cov`` metric = value x n_gt / n_gt). Nothing is invented: a population family
is a copy of a real family (its real size) whose tasks are drawn with replacement from that family's tasks, each
task carrying every metric of every base model together, so zero-inflated low rates (a weak model's Order
Consistency, 0 in half the families) stay as they are.

A simulated model is a mixture of base models: on each task of a drawn benchmark it takes base model m's outcome
with probability mix[m], independently per task and model. Its population value of a metric is the ratio of the
expected sums over the population's tasks (the limit of the benchmark's value as it grows), the Average Score the
mean of its components' values.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.contract import read_trajectories
from engine.metricspec import BY_KEY, alignment_keys

METRICS: tuple[str, ...] = alignment_keys("reference")
AVERAGED: tuple[int, ...] = tuple(q for q, k in enumerate(METRICS) if BY_KEY[k].in_average)
SHARED = Path(__file__).resolve().parents[3] / "shared"
GOLDEN = ("m2", "m1", "m0", "m3")
"""The golden cases of ../shared (the published scorer's outputs on four perturbed prediction files), weakest
first: the default base models."""


@dataclass
class Outcomes:
    """Per scored id of a real run: its family index and, per base model and metric, the numerator and
    denominator of the metric's ratio (N x M x Q each)."""

    family: np.ndarray
    families: list[str]
    num: np.ndarray
    den: np.ndarray
    models: list[str]


def real_outcomes(gt: Path | str | None = None, results: list[Path] | None = None,
                  names: list[str] | None = None) -> Outcomes:
    """The outcomes of results_eval.json files (default: the golden cases, weakest first) on the reference `gt`
    (default: ../shared/data/m3bench/test_mcp_GT.json): every scored id of the reference, each file's per_id."""
    gt = Path(gt) if gt is not None else SHARED / "data" / "m3bench" / "test_mcp_GT.json"
    if results is None:
        results = [SHARED / "golden" / name / "results_eval.json" for name in GOLDEN]
        names = list(GOLDEN) if names is None else names
    names = names if names is not None else [Path(p).parent.name for p in results]
    tasks = read_trajectories(gt).tasks
    ids = list(tasks)
    families = sorted({t.type or "unknown" for t in tasks.values()})
    family = np.array([families.index(tasks[i].type or "unknown") for i in ids])
    num = np.zeros((len(ids), len(results), len(METRICS)))
    den = np.zeros_like(num)
    for m, path in enumerate(results):
        per = {r["id"]: r for r in json.loads(Path(path).read_text(encoding="utf-8"))["per_id"]}
        for j, i in enumerate(ids):
            r = per[i]
            n_gt, n_pred, matched = r["total_gt_calls"], r["total_pred_calls"], r["matched"]
            for q, key in enumerate(METRICS):
                rule = BY_KEY[key].aggregation
                num[j, m, q] = matched if rule in ("matched/gt", "matched/pred") else r[key] * n_gt
                den[j, m, q] = n_pred if rule == "matched/pred" else n_gt
    return Outcomes(family, families, num, den, list(names))


def values(sums: np.ndarray) -> np.ndarray:
    """Each metric's value and the Average Score (... x R x Q+1) from summed numerators and denominators
    (... x R x Q x 2); a zero denominator reads as 0, as the published scorer reads it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(sums[..., 1] != 0, sums[..., 0] / sums[..., 1], 0.0)
    return np.concatenate([ratio, ratio[..., list(AVERAGED)].mean(-1, keepdims=True)], -1)


@dataclass
class Population:
    """Families (each a list of task indices into the outcomes, drawn from one real family) and the outcomes."""

    outcomes: Outcomes
    tasks: list[np.ndarray]

    def truth(self, mixes: np.ndarray) -> np.ndarray:
        """The population value (R x Q+1) of each mixture model (mixes: R x M, rows summing to 1)."""
        every = np.concatenate(self.tasks)
        num = np.einsum("rm,tmq->rq", mixes, self.outcomes.num[every])
        den = np.einsum("rm,tmq->rq", mixes, self.outcomes.den[every])
        return values(np.stack([num, den], -1))


def make_population(outcomes: Outcomes, families: int = 2000, seed: int = 0) -> Population:
    """`families` families, each of a real family chosen uniformly, its size, its tasks drawn with replacement
    from the real family's."""
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(outcomes.family == g) for g in range(len(outcomes.families))]
    kinds = rng.integers(0, len(members), families)
    return Population(outcomes, [rng.choice(members[g], len(members[g])) for g in kinds])


def ladder(models: int = 14, weak: int = 0, strong: int = 3, bases: int = 4) -> np.ndarray:
    """Mixtures of `models` models: model j takes the strong base model's outcome with probability j/(models-1),
    the weak one's otherwise (Table 2's spread of strengths)."""
    mixes = np.zeros((models, bases))
    share = np.arange(models) / max(models - 1, 1)
    mixes[:, strong], mixes[:, weak] = share, 1 - share
    return mixes


def exchangeable(models: int = 14, bases: int = 4) -> np.ndarray:
    """`models` models with equal population values: on each task each takes a base model's outcome uniformly."""
    return np.full((models, bases), 1.0 / bases)


def draw_sums(pop: Population, mixes: np.ndarray, clusters: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """Per-cluster sums (draws x C x R x Q x 2: numerator, denominator) of `draws` benchmarks of `clusters`
    families drawn without replacement, each mixture model's base outcome drawn afresh per task."""
    out = np.zeros((draws, clusters, len(mixes), len(METRICS), 2))
    cumulative = np.cumsum(mixes, 1)
    for d in range(draws):
        chosen = rng.choice(len(pop.tasks), clusters, replace=False)
        idx = np.concatenate([pop.tasks[f] for f in chosen])
        where = np.repeat(np.arange(clusters), [len(pop.tasks[f]) for f in chosen])
        base = (rng.random((len(idx), len(mixes), 1)) > cumulative[None, :, :-1]).sum(-1)   # T x R
        num = pop.outcomes.num[idx[:, None], base]                                           # T x R x Q
        den = pop.outcomes.den[idx[:, None], base]
        np.add.at(out[d, ..., 0], where, num)
        np.add.at(out[d, ..., 1], where, den)
    return out


def real_benchmark(outcomes: Outcomes, mixes: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One realization of the mixture models on the real ids: per id and model its metrics' numerators and
    denominators (N x R x Q each)."""
    rng = np.random.default_rng(seed)
    cumulative = np.cumsum(mixes, 1)
    base = (rng.random((len(outcomes.family), len(mixes), 1)) > cumulative[None, :, :-1]).sum(-1)
    rows = np.arange(len(outcomes.family))[:, None]
    return outcomes.num[rows, base], outcomes.den[rows, base]


def clustered_se(x: np.ndarray, cluster: np.ndarray) -> float:
    """The analytic clustered standard error of a plain mean (Miller 2024, "Adding Error Bars to
    Evals"): sqrt(sum over clusters of (sum of x - mean within the cluster)^2) / n."""
    dev = x - x.mean()
    per = np.bincount(cluster, weights=dev)
    return float(math.sqrt((per ** 2).sum()) / len(x))
