"""Statistics step (after metrics): intervals, paired comparisons, rank intervals and power for every
leaderboard aggregate, by a cluster bootstrap (kernels.bootstrap; docs/statistics.md).

Each aggregate is a ratio of sums over scored ids (engine.metricspec's rules): recall = sum matched /
sum n_gt, precision = sum matched / sum n_pred, a ``*_cov`` metric = sum(value x n_gt) / sum n_gt, the
paper's Argument Similarity = sum of strong similarities / strong matches, a judged mean (Task
Completion, Information Grounding, ARS, APR) = sum of values / ids judged. The ids' numerators and
denominators are summed per cluster (task family, or id), and every resample of every model, metric
and pair is one product of the (B x C) count matrix with those sums, then a division; the Average
Score of a resample is the mean of its components' resampled values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from engine.contract import ConfigError
from engine.evaluators.answer_equivalence import LEVELS
from engine.evaluators.tool_use import KEY as TOOL_USE
from engine.metrics import TaskScores
from engine.metricspec import AVERAGE, BY_KEY, EVALUATOR_KEYS, alignment_keys, metric_value
from engine.trial_estimators import ESTIMATORS, rate
from kernels import bootstrap as bs

STATS_FILE = "stats.json"
AVERAGE_KEY = "average_score"
CLUSTERINGS = ("family", "sample")
METHODS = ("percentile", "bca")
CORRECTIONS = bs.CORRECTIONS


@dataclass(frozen=True)
class StatsSettings:
    """How the bootstrap runs: resamples, interval level and method, seed, clustering, scheme, power."""

    resamples: int = 10_000
    level: float = 0.95
    seed: int = 0
    cluster: str = "family"        # family | sample
    method: str = "percentile"     # percentile | bca
    correction: str = "expanded"   # expanded (small-sample: sqrt(C/(C-1)) and Student's t) | none
    scheme: str = "multinomial"    # multinomial | poisson
    shared_rank: bool = False      # also each model's LMArena rank: 1 + models significantly better
    power: float = 0.8

    def check(self) -> StatsSettings:
        """The settings, or a ConfigError naming the one that is wrong."""
        if self.resamples < 2:
            raise ConfigError(f"stats.resamples={self.resamples}: need at least 2 resamples")
        for key, value in (("level", self.level), ("power", self.power)):
            if not 0.0 < value < 1.0:
                raise ConfigError(f"stats.{key}={value}: must lie strictly between 0 and 1")
        for key, choice, choices in (("cluster", self.cluster, CLUSTERINGS), ("method", self.method, METHODS),
                                     ("correction", self.correction, CORRECTIONS),
                                     ("scheme", self.scheme, bs.SCHEMES)):
            if choice not in choices:
                raise ConfigError(f"stats.{key}={choice!r}: expected one of {', '.join(choices)}")
        return self


@dataclass
class ModelUnits:
    """One model's scored ids: each id's cluster, its numerator and denominator of every metric, the
    published aggregate values and the metrics its Average Score averages."""

    name: str
    ids: list[str]
    clusters: list[str]
    num: dict[str, np.ndarray]
    den: dict[str, np.ndarray]
    published: dict[str, float]
    average: tuple[str, ...] = field(default_factory=tuple)


def alignment_parts(scores: TaskScores, samples: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per alignment metric of the profile, the per-sample numerator and denominator of its ratio."""
    n_gt = scores.n_gt[samples].astype(np.float64)
    matched = scores.matched[samples].astype(np.float64)
    out = {}
    for key in scores.names:
        rule = BY_KEY[key].aggregation
        if rule == "matched/gt":
            out[key] = matched, n_gt
        elif rule == "matched/pred":
            out[key] = matched, scores.n_pred[samples].astype(np.float64)
        elif rule == "gt_weighted":
            out[key] = scores.values[key][samples] * n_gt, n_gt
        elif rule == "strong_mean":
            out[key] = (scores.strong_similarity[samples].astype(np.float64),
                        scores.strong_matches[samples].astype(np.float64))
        else:  # a new alignment rule must say its ratio here
            raise ValueError(f"no ratio for the aggregation {rule!r} of {key}")
    return out


JUDGED_KEYS: tuple[str, ...] = tuple(k for k in EVALUATOR_KEYS
                                     if BY_KEY[k].aggregation == "judged_mean" and BY_KEY[k].column)
"""The evaluators' plain means over the judged ids that the leaderboards show."""


NEIGHBOUR_KEYS: tuple[str, ...] = (*(f"{TOOL_USE}.{k}" for k in ("proactivity", "success_rate", "success_rate_flagged",
                                                                  "volume")),
                                   *(f"answer_sr_{level.lower()}" for level in LEVELS), "answer_sr_micro",
                                   "check_accuracy_evaluated", "check_accuracy")
"""The neighbour benchmarks' aggregates resampled as ratios: tool use (VisualToolBench), MCPVerse's SR per level
and over every judged answer, TOBench's accuracy (evaluated tasks, and errors counted as failures)."""
WHOLE_FILE_KEYS = ("answer_level", "check_success")
"""The per-task keys of the evaluators that judge every task of their file (their aggregates count every
task of it, scored or not)."""


def neighbour_parts(ids: list[str], judged: dict[str, dict[str, Any]], scored: int) -> dict[str, tuple[np.ndarray,
                                                                                                    np.ndarray]]:
    """Per neighbour aggregate some id has (NEIGHBOUR_KEYS), the per-id numerator and denominator of its
    ratio from the joined values (`judged`: id -> values), over the first `scored` ids for tool use (the
    scored ids) and over every id for answers and checks:

    - Proactivity: calls > 0 over 1; Success Rate: calls not reporting an error over calls; Success Rate
      (flagged calls): valid over flagged; Volume: calls over 1 (an id without counts has no call);
    - SR of a level: the answer's score over 1, for the judged answers of that level; SR (micro): over
      every judged answer;
    - Accuracy: the check's success over 1 for the tasks without an evaluator error; Accuracy (errors as
      failures): over every checked task.
    """
    n = len(ids)
    values = [judged.get(i, {}) for i in ids]
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if any(isinstance(v.get(TOOL_USE), dict) for v in values[:scored]):
        counts = np.zeros((n, 3))
        for j, v in enumerate(values[:scored]):
            block = v.get(TOOL_USE) or {}
            counts[j] = [block.get("calls", 0), block.get("flagged", 0), block.get("valid", 0)]
        calls, flagged, valid = counts.T
        one = np.r_[np.ones(scored), np.zeros(n - scored)]
        for name, num, den in (("proactivity", (calls > 0).astype(np.float64), one),
                               ("success_rate", calls - (flagged - valid), calls),
                               ("success_rate_flagged", valid, flagged), ("volume", calls, one)):
            out[f"{TOOL_USE}.{name}"] = num, den
    scores = np.array([0.0 if (success := v.get("answer_success")) is None else float(success) for v in values])
    judged_answer = np.array(["answer_level" in v and v.get("answer_success") is not None for v in values])
    if judged_answer.any():
        for level in LEVELS:
            at = judged_answer & np.array([v.get("answer_level") == level for v in values])
            if at.any():
                out[f"answer_sr_{level.lower()}"] = np.where(at, scores, 0.0), at.astype(np.float64)
        out["answer_sr_micro"] = np.where(judged_answer, scores, 0.0), judged_answer.astype(np.float64)
    checked = np.array(["check_success" in v for v in values])
    if checked.any():
        success = np.array([float(v.get("check_success") or 0) for v in values])
        evaluated = checked & np.array([v.get("check_success") is not None for v in values])
        out["check_accuracy_evaluated"] = np.where(evaluated, success, 0.0), evaluated.astype(np.float64)
        out["check_accuracy"] = np.where(checked, success, 0.0), checked.astype(np.float64)
    return out


def model_units(name: str, ids: list[str], clusters: list[str], parts: dict[str, tuple[np.ndarray, np.ndarray]],
                judged: dict[str, dict[str, Any]], published: dict[str, Any], profile: str,
                extra: Sequence[tuple[str, str]] = ()) -> ModelUnits:
    """One model's units: alignment `parts` (alignment_parts) and the joined values per id (`judged`: id ->
    {key: value}); a judged key counts where the id has it (denominator 1), nowhere else; the neighbour
    aggregates by neighbour_parts. extra: (id, cluster) of the tasks that only the evaluators judging every
    task of their file count (answers, checks), beyond the scored `ids`."""
    scored = len(ids)
    ids = [*ids, *(i for i, _ in extra)]
    clusters = [*clusters, *(c for _, c in extra)]
    pad = np.zeros(len(ids) - scored)
    num = {k: np.r_[np.asarray(v[0], dtype=np.float64), pad] for k, v in parts.items()}
    den = {k: np.r_[np.asarray(v[1], dtype=np.float64), pad] for k, v in parts.items()}
    for key in JUDGED_KEYS:
        has = np.array([key in judged.get(i, {}) and j < scored for j, i in enumerate(ids)], dtype=bool)
        if has.any():
            num[key] = np.array([float(judged[i][key]) if h else 0.0 for i, h in zip(ids, has)])
            den[key] = has.astype(np.float64)
    for key, (top, bottom) in neighbour_parts(ids, judged, scored).items():
        num[key], den[key] = top, bottom
    average = tuple(k for k in (*alignment_keys(profile), *JUDGED_KEYS) if BY_KEY[k].in_average and k in num)
    values = {k: float(metric_value(published, k)) for k in num if metric_value(published, k) is not None}
    if average and all(k in values for k in average):
        values[AVERAGE_KEY] = sum(values[k] for k in average) / len(average)
    return ModelUnits(name, list(ids), list(clusters), num, den, values, average)


def _clean(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


class _Design:
    """The tensors of one run: entities (a model on its ids, or on the ids it shares with another) x
    metrics, summed per cluster."""

    def __init__(self, models: list[ModelUnits], keys: list[str], cluster_of: dict[str, int], device: torch.device):
        self.keys = keys
        self.clusters = len(set(cluster_of.values()))
        self.models = models
        self.cluster_of = cluster_of
        self.device = device
        self.entities: list[tuple[int, frozenset[str]]] = []
        self.index: dict[tuple[int, frozenset[str]], int] = {}
        self.id_sets = [frozenset(m.ids) for m in models]
        for i, s in enumerate(self.id_sets):
            self.entity(i, s)

    def entity(self, model: int, ids: frozenset[str]) -> int:
        """The index of model `model` restricted to `ids` (added when new)."""
        key = (model, ids)
        if key not in self.index:
            self.index[key] = len(self.entities)
            self.entities.append(key)
        return self.index[key]

    def sums(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-cluster numerator and denominator sums (C x E*K) and the Average Score mask (E x K)."""
        e, k, c = len(self.entities), len(self.keys), self.clusters
        num = np.zeros((c, e, k))
        den = np.zeros((c, e, k))
        avg = np.zeros((e, k), dtype=bool)
        for j, (m, ids) in enumerate(self.entities):
            unit = self.models[m]
            keep = np.array([i in ids for i in unit.ids], dtype=bool)
            where = np.array([self.cluster_of[i] for i in unit.ids], dtype=np.int64)[keep]
            for q, key in enumerate(self.keys):
                if key in unit.num:
                    np.add.at(num[:, j, q], where, unit.num[key][keep])
                    np.add.at(den[:, j, q], where, unit.den[key][keep])
                    avg[j, q] = key in unit.average
        as_t = lambda a: torch.as_tensor(a.reshape(c, e * k), dtype=torch.float64, device=self.device)  # noqa: E731
        return as_t(num), as_t(den), torch.as_tensor(avg, device=self.device)


def evaluate(weights: torch.Tensor, num: torch.Tensor, den: torch.Tensor, average: torch.Tensor) -> torch.Tensor:
    """Every quantity at each row of weights (R x C), as rows: (E x K+1 x R), the last metric the Average
    Score (the mean of the entity's averaged metrics; NaN when one is NaN or it has none)."""
    e, k = average.shape
    values = bs.ratios(weights, num, den).reshape(e, k, -1)
    count = average.sum(-1).to(values.dtype)
    total = torch.where(average[..., None], values, 0.0).sum(1)
    avg = torch.where(count[:, None] > 0, total / count.clamp(min=1)[:, None], math.nan)
    return torch.cat([values, avg[:, None]], dim=1)


def _interval(rows: torch.Tensor, point: torch.Tensor, jack: torch.Tensor | None, clusters: torch.Tensor,
              settings: StatsSettings) -> tuple[torch.Tensor, torch.Tensor]:
    """The interval of each row (K x B) by the settings' method and correction (clusters: each row's)."""
    per_row = clusters if settings.correction == "expanded" else None
    if settings.method == "bca":
        assert jack is not None
        return bs.bca_interval(rows, point, jack, settings.level, per_row)
    return bs.percentile_interval(rows, settings.level, per_row)


def bootstrap_stats(models: list[ModelUnits], settings: StatsSettings, device: torch.device | str = "cpu",
                    counts: torch.Tensor | None = None) -> dict[str, Any]:
    """The content of stats.json for these models: per model and metric value / low / high, per pair
    difference / low / high / p / p_holm / win_probability, per model and metric rank / rank_low /
    rank_high, the models tied with the top, the power of adjacent pairs, and the settings.

    counts: the (B x C) resample matrix to use (default: drawn from settings, clusters in sorted order).
    """
    settings.check()
    device = torch.device(device)
    if not models:
        raise ValueError("no model to compute statistics for")
    cluster_names: dict[str, str] = {}
    for unit in models:
        for ident, cluster in zip(unit.ids, unit.clusters):
            cluster_names.setdefault(ident, cluster if settings.cluster == "family" else ident)
    names = sorted(set(cluster_names.values()))
    position = {c: j for j, c in enumerate(names)}
    cluster_of = {i: position[c] for i, c in cluster_names.items()}
    keys = [k for k in (*alignment_keys("reference"), *alignment_keys("paper"), *JUDGED_KEYS, *NEIGHBOUR_KEYS)
            if any(k in m.num for m in models)]
    keys = list(dict.fromkeys(keys))
    key_index = {k: q for q, k in enumerate([*keys, AVERAGE_KEY])}
    # leaderboard order: published Average Score, best first (then name)
    order = sorted(range(len(models)), key=lambda i: (-models[i].published.get(AVERAGE_KEY, -math.inf),
                                                     models[i].name))
    design = _Design(models, keys, cluster_of, device)
    pairs = []
    for x, a in enumerate(order):
        for b in order[x + 1:]:
            shared = design.id_sets[a] & design.id_sets[b]
            pairs.append((a, b, design.entity(a, shared), design.entity(b, shared), len(shared)))
    num, den, average = design.sums()
    c = design.clusters
    if counts is None:
        counts = bs.resample_counts(settings.resamples, c, settings.seed, settings.scheme)
    if counts.shape[1] != c:
        raise ValueError(f"the resample matrix has {counts.shape[1]} columns for {c} clusters")
    weights = counts.to(device=device, dtype=torch.float64)
    rows = evaluate(weights, num, den, average)                         # E x K+1 x B
    e, k1, b = rows.shape
    point = evaluate(torch.ones(1, c, dtype=torch.float64, device=device), num, den, average)[..., 0]  # E x K+1
    jack = (evaluate(bs.leave_one_out(c, device=device), num, den, average).reshape(e * k1, c).T
            if settings.method == "bca" else None)                      # C x E*(K+1)
    present = (den != 0).reshape(c, e, k1 - 1)                          # the clusters each quantity has
    present = torch.cat([present, (present & average[None]).any(-1, keepdim=True)], dim=-1)
    m = len(models)
    flat = rows[:m].reshape(m * k1, b)
    low, high = _interval(flat, point[:m].reshape(-1), None if jack is None else jack[:, :m * k1],
                          present[:, :m].sum(0).reshape(-1), settings)
    low, high = low.reshape(m, k1), high.reshape(m, k1)
    left_out = (b - bs.valid_counts(flat)).reshape(m, k1)
    se = bs.standard_deviation(flat).reshape(m, k1)

    # pairs: differences on the same resamples, every pair at once
    ia = torch.tensor([p[2] for p in pairs], dtype=torch.long, device=device)
    ib = torch.tensor([p[3] for p in pairs], dtype=torch.long, device=device)
    npairs = len(pairs)
    if npairs:
        diff = (rows[ia] - rows[ib]).reshape(npairs * k1, b)            # P*(K+1) x B
        dpoint = (point[ia] - point[ib]).reshape(-1)
        djack = None if jack is None else (jack.reshape(c, e, k1)[:, ia] - jack.reshape(c, e, k1)[:, ib]).reshape(c, -1)
        dclusters = (present[:, ia] | present[:, ib]).sum(0).reshape(-1)
        dlow, dhigh = _interval(diff, dpoint, djack, dclusters, settings)
        dlow, dhigh = dlow.reshape(npairs, k1), dhigh.reshape(npairs, k1)
        signs = bs.sign_counts(diff)
        p = bs.two_sided_p(diff, signs)
        if settings.correction == "expanded":
            p = bs.expanded_p(p, dclusters)
        p = p.reshape(npairs, k1)
        p_holm = bs.holm(p.T).T
        win = bs.win_probability(diff, signs).reshape(npairs, k1)
        dse = bs.standard_deviation(diff).reshape(npairs, k1)
    # ranks per metric over the models, in every resample
    rank_b = bs.ranks(rows[:m]).to(torch.float64)                      # M x K+1 x B
    levels = bs.interval_levels(settings.level, present[:, :m].sum(0).reshape(-1)
                                if settings.correction == "expanded" else None)
    rq = bs.quantiles(rank_b.reshape(m * k1, b), levels).reshape(m, k1, 2)
    rank_low, rank_high = rq[..., 0].floor().T, rq[..., 1].ceil().T      # K+1 x M
    pub = torch.tensor([[m_.published.get(k, math.nan) for k in key_index] for m_ in models], dtype=torch.float64)
    point_rank = bs.ranks(pub).T                                          # K+1 x M

    alpha = 1 - settings.level
    z_power = float(bs._normal().icdf(torch.tensor(settings.power, dtype=torch.float64)))
    lows, highs, ses, left_outs = (t.cpu().tolist() for t in (low, high, se, left_out))
    rank_lows, rank_highs, point_ranks = (t.cpu().tolist() for t in (rank_low, rank_high, point_rank))
    out_models: dict[str, Any] = {}
    for i, unit in enumerate(models):
        metrics = {}
        for key, q in key_index.items():
            if key not in unit.published:
                continue
            metrics[key] = {"value": unit.published[key], "low": _clean(lows[i][q]), "high": _clean(highs[i][q]),
                            "se": _clean(ses[i][q]), "rank": int(point_ranks[q][i]),
                            "rank_low": _rank(rank_lows[q][i]), "rank_high": _rank(rank_highs[q][i]),
                            "resamples_left_out": int(left_outs[i][q])}
        record: dict[str, Any] = {"ids": len(unit.ids), "clusters": len({cluster_of[x] for x in unit.ids}),
                                  "metrics": metrics}
        if AVERAGE_KEY in metrics:
            record.update({r: metrics[AVERAGE_KEY][r] for r in ("rank", "rank_low", "rank_high")})
        out_models[unit.name] = record
    out_pairs = []
    if npairs:
        # the test's critical value: z_{1-alpha/2}, or the expanded interval's sqrt(C/(C-1)) t_{C-1}
        crit = -bs._normal().icdf(bs.interval_levels(settings.level, dclusters if settings.correction == "expanded"
                                                     else None)[0]).expand(npairs * k1).reshape(npairs, k1)
        dpoints, dlows, dhighs, ps, p_holms, wins, dses, crits = (
            t.cpu().reshape(npairs, k1).tolist() for t in (dpoint, dlow, dhigh, p, p_holm, win, dse, crit))
    for j, (a, bb, _, _, n_shared) in enumerate(pairs):
        metrics = {}
        for key, q in key_index.items():
            if key not in models[a].published or key not in models[bb].published:
                continue
            d, sd = dpoints[j][q], dses[j][q]
            mde = (crits[j][q] + z_power) * sd if not math.isnan(sd) else math.nan
            metrics[key] = {"difference": _clean(d), "low": _clean(dlows[j][q]), "high": _clean(dhighs[j][q]),
                            "p": float(ps[j][q]), "p_holm": float(p_holms[j][q]),
                            "win_probability": float(wins[j][q]),
                            "se": _clean(sd), "mde": _clean(mde),
                            "clusters_needed": (None if d == 0 or math.isnan(mde) or math.isnan(d)
                                                else math.ceil(c * (mde / abs(d)) ** 2))}
        out_pairs.append({"a": models[a].name, "b": models[bb].name, "ids": n_shared, "metrics": metrics})
    tied, adjacent = _tied_and_adjacent(models, out_pairs, key_index, alpha)
    if settings.shared_rank:
        _shared_ranks(models, out_models, out_pairs, key_index, alpha)
    return {"settings": {**asdict(settings), "clusters": c, "device": str(device)},
            "metrics": {k: (AVERAGE if k == AVERAGE_KEY else BY_KEY[k].label) for k in key_index},
            "models": out_models, "pairs": out_pairs, "tied_with_top": tied, "power": adjacent}


def trial_intervals(counts: list[tuple[int, int]], clusters: list[str], settings: StatsSettings,
                    device: torch.device | str = "cpu", resample: torch.Tensor | None = None) -> dict[str, Any]:
    """Intervals of a model's pass@k, pass^k and avg@k (k = 1 .. its trials, losses as failures): each a
    plain mean over the tasks with n >= k of the task's estimator from its (n trials, c successes), so a
    task's trials move together with the task; tasks are resampled by `clusters` (each task's family,
    or the task itself) like the leaderboard's ids. resample: the (B x C) count matrix to use (default:
    drawn from settings, clusters in sorted order). Per estimator and k: value, low, high, tasks."""
    settings.check()
    device = torch.device(device)
    names = sorted(set(clusters))
    where = np.array([names.index(c) for c in clusters], dtype=np.int64)
    trials = max((n for n, _ in counts), default=0)
    columns = [(name, k) for name in ESTIMATORS for k in range(1, trials + 1)]
    num = np.zeros((len(names), len(columns)))
    den = np.zeros((len(names), len(columns)))
    for q, (name, k) in enumerate(columns):
        for t, (n, c) in enumerate(counts):
            if n >= k:
                num[where[t], q] += ESTIMATORS[name](n, c, k)
                den[where[t], q] += 1
    if resample is None:
        resample = bs.resample_counts(settings.resamples, len(names), settings.seed, settings.scheme)
    as_t = lambda a: torch.as_tensor(a, dtype=torch.float64, device=device)  # noqa: E731
    rows = bs.ratios(resample.to(device=device, dtype=torch.float64), as_t(num), as_t(den))
    clusters_of = as_t((den != 0).sum(0))
    low, high = bs.percentile_interval(rows, settings.level, clusters_of if settings.correction == "expanded" else None)
    out: dict[str, Any] = {name: {} for name in ESTIMATORS}
    for q, (name, k) in enumerate(columns):
        value, tasks = rate(counts, k, name)
        out[name][str(k)] = {"value": value, "low": _clean(float(low[q])), "high": _clean(float(high[q])),
                             "tasks": tasks}
    return out


def _conclusion(document: dict[str, Any], a: str, b: str, key: str) -> tuple[str | None, bool] | None:
    """Which of a and b is better by `key` in a stats document (None for no difference) and whether the
    difference is significant (p_holm < 1 - level); None when the document has no such pair."""
    found = _pair_of(document["pairs"], a, b)
    if found is None or key not in found[0]["metrics"]:
        return None
    block, sign = found[0]["metrics"][key], found[1]
    d = block["difference"]
    better = None if not d else (a if sign * d > 0 else b)
    return better, block["p_holm"] < 1 - document["settings"]["level"]


def _kendall(x: list[float], y: list[float]) -> float | None:
    """Kendall's tau-b of two rankings' values (None with fewer than two models or a constant one)."""
    from scipy.stats import kendalltau

    if len(x) < 2:
        return None
    return _clean(float(kendalltau(x, y).statistic))


def threshold_robustness(document: dict[str, Any], default: tuple[float, float],
                         points: list[tuple[tuple[float, float], list[ModelUnits]]], settings: StatsSettings,
                         device: torch.device | str = "cpu") -> dict[str, Any]:
    """How the run's conclusions (`document`, bootstrap_stats at the `default` thresholds) hold over a grid
    of (tau_weak, tau_strong) `points`, each with its models' units: per point and metric Kendall's
    tau-b of the models' values with the default's; per pair and metric the default conclusion (which
    model is better, significant or not), whether it holds at every point, and the points where it
    does not. Every point uses the same resamples (the settings' seed over the same clusters)."""
    keys = list(document["metrics"])
    at_points = []
    out_points: list[dict[str, Any]] = []
    for (tau_weak, tau_strong), units in points:
        doc = bootstrap_stats(units, settings, device)
        at_points.append(((tau_weak, tau_strong), doc))
        taus = {}
        for key in keys:
            shared = [n for n, r in document["models"].items()
                      if key in r["metrics"] and key in doc["models"].get(n, {}).get("metrics", {})]
            taus[key] = _kendall([document["models"][n]["metrics"][key]["value"] for n in shared],
                                 [doc["models"][n]["metrics"][key]["value"] for n in shared])
        out_points.append({"tau_weak": tau_weak, "tau_strong": tau_strong, "kendall_tau": taus})
    pairs = []
    holding: dict[str, list[int]] = {key: [0, 0] for key in keys}
    for record in document["pairs"]:
        a, b = record["a"], record["b"]
        metrics = {}
        for key in record["metrics"]:
            expected = _conclusion(document, a, b, key)
            assert expected is not None, "a pair of the document has its own conclusion"
            changed = [[w, s] for (w, s), doc in at_points if _conclusion(doc, a, b, key) != expected]
            better, significant = expected
            metrics[key] = {"better": better, "significant": significant, "holds": not changed, "changed_at": changed}
            holding[key][0] += not changed
            holding[key][1] += 1
        pairs.append({"a": a, "b": b, "metrics": metrics})
    minimum = {key: min((t for p in out_points if (t := p["kendall_tau"][key]) is not None), default=None)
               for key in keys}
    return {"default": {"tau_weak": default[0], "tau_strong": default[1]}, "points": out_points,
            "kendall_tau_min": minimum, "pairs_holding": holding, "pairs": pairs}


def _rank(value: float) -> int | None:
    v = float(value)
    return None if math.isnan(v) or math.isinf(v) else int(v)


def _pair_of(out_pairs: list[dict], a: str, b: str) -> tuple[dict, int] | None:
    """The record of the pair (a, b) and the sign that turns its difference into a - b."""
    for record in out_pairs:
        if record["a"] == a and record["b"] == b:
            return record, 1
        if record["a"] == b and record["b"] == a:
            return record, -1
    return None


def _tied_and_adjacent(models: list[ModelUnits], out_pairs: list[dict], key_index: dict[str, int], alpha: float
                       ) -> tuple[dict[str, list[str]], dict[str, list[dict]]]:
    """Per metric: the models tied with the point-best one (p_holm >= alpha), and each adjacent pair's
    difference, SE, minimum detectable difference and clusters needed, in point order."""
    tied, power = {}, {}
    for key in key_index:
        ranked = sorted((m for m in models if key in m.published), key=lambda m: (-m.published[key], m.name))
        if not ranked:
            continue
        top = ranked[0].name
        group = [top]
        for other in ranked[1:]:
            found = _pair_of(out_pairs, top, other.name)
            if found and key in found[0]["metrics"] and found[0]["metrics"][key]["p_holm"] >= alpha:
                group.append(other.name)
        tied[key] = group
        rows = []
        for upper, lower in zip(ranked, ranked[1:]):
            found = _pair_of(out_pairs, upper.name, lower.name)
            if not found or key not in found[0]["metrics"]:
                continue
            record, sign = found
            block = record["metrics"][key]
            rows.append({"a": upper.name, "b": lower.name,
                         "difference": None if block["difference"] is None else sign * block["difference"],
                         "se": block["se"], "mde": block["mde"], "clusters_needed": block["clusters_needed"]})
        power[key] = rows
    return tied, power


def _shared_ranks(models: list[ModelUnits], out_models: dict, out_pairs: list[dict], key_index: dict[str, int],
                  alpha: float) -> None:
    """LMArena's shared rank: 1 + the number of models significantly better (p_holm < alpha, d > 0)."""
    for key in key_index:
        for unit in models:
            block = out_models[unit.name]["metrics"].get(key)
            if block is None:
                continue
            better = 0
            for other in models:
                found = _pair_of(out_pairs, other.name, unit.name) if other is not unit else None
                if found and key in found[0]["metrics"]:
                    rec, sign = found
                    d = rec["metrics"][key]["difference"]
                    if d is not None and sign * d > 0 and rec["metrics"][key]["p_holm"] < alpha:
                        better += 1
            block["rank_shared"] = 1 + better
        if key == AVERAGE_KEY:
            for unit in models:
                if key in out_models[unit.name]["metrics"]:
                    out_models[unit.name]["rank_shared"] = out_models[unit.name]["metrics"][key]["rank_shared"]


def sweep_units(result: Any, names: list[str], joined: list[Any], aggregates: list[dict]) -> list[ModelUnits]:
    """Each scored prediction file of a sweep (engine.pipeline.SweepScores) as ModelUnits: its scored
    ids, their task families (the GT's ``type``, else the prediction's, as by_type groups them), the
    alignment metrics' ratios, the joined judged values and the published aggregate; the tasks of an answer
    or check file that were not scored count for those aggregates alone (in the GT's family, else "unknown")."""
    tables = result.tables
    units = []
    for f, name in enumerate(names):
        samples = result.samples_of(f)
        ids = [tables.task_ids[tables.sample_task[s]] for s in samples.tolist()]
        families = [tables.task_types[tables.sample_task[s]] or tables.sample_pred[s].type or "unknown"
                    for s in samples.tolist()]
        judged = joined[f].per_id if joined[f] is not None else {}
        scored = set(ids)
        extra = [(i, (result.gt.tasks[i].type if i in result.gt.tasks else None) or "unknown") for i in judged
                 if i not in scored and any(k in judged[i] for k in WHOLE_FILE_KEYS)]
        units.append(model_units(name, ids, families, alignment_parts(result.scores, samples), judged,
                                 aggregates[f], result.settings.profile, extra))
    return units
