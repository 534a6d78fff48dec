"""The statistics step (after metrics): intervals, paired comparisons, rank sets and power for every leaderboard
aggregate, by a cluster bootstrap (kernels.bootstrap; docs/statistics.md).

The ids' numerators and denominators (engine.stats.units) are summed per cluster (task family, or id), and every
resample of every model, metric and pair is one product of the (B x C) count matrix with those sums, then a
division; the Average Score of a resample is the mean of its components' resampled values. What is concluded
from the resamples is engine.stats.decisions'.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from engine.metricspec import AVERAGE, BY_KEY, alignment_keys
from engine.stats import decisions as dc
from engine.stats.document import MetricBlock, ModelRecord, PairBlock, PairRecord, StatsDocument
from engine.stats.settings import AVERAGE_KEY, PAIR_BLOCK, StatsSettings, check_memory
from engine.stats.units import JUDGED_KEYS, NEIGHBOUR_KEYS, ModelUnits, empty_value
from kernels import bootstrap as bs


def clean(value: float | None) -> float | None:
    """A float for JSON: None for a missing value or a NaN."""
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

    def sums(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-cluster numerator and denominator sums (C x E*K), the Average Score mask (E x K), and what each
        column reads a zero denominator as (E*K: the metric's 0/0, NaN where the model has no such metric)."""
        e, k, c = len(self.entities), len(self.keys), self.clusters
        num = np.zeros((c, e, k))
        den = np.zeros((c, e, k))
        avg = np.zeros((e, k), dtype=bool)
        empty = np.full((e, k), math.nan)
        for j, (m, ids) in enumerate(self.entities):
            unit = self.models[m]
            keep = np.array([i in ids for i in unit.ids], dtype=bool)
            where = np.array([self.cluster_of[i] for i in unit.ids], dtype=np.int64)[keep]
            for q, key in enumerate(self.keys):
                if key in unit.num:
                    np.add.at(num[:, j, q], where, unit.num[key][keep])
                    np.add.at(den[:, j, q], where, unit.den[key][keep])
                    avg[j, q] = key in unit.average
                    empty[j, q] = empty_value(key)
        as_t = lambda a: torch.as_tensor(a.reshape(c, e * k), dtype=torch.float64, device=self.device)  # noqa: E731
        return (as_t(num), as_t(den), torch.as_tensor(avg, device=self.device),
                torch.as_tensor(empty.reshape(-1), dtype=torch.float64, device=self.device))


def evaluate(weights: torch.Tensor, num: torch.Tensor, den: torch.Tensor, average: torch.Tensor,
             empty: torch.Tensor | None = None) -> torch.Tensor:
    """Every quantity at each row of weights (R x C), as rows: (E x K+1 x R), the last metric the Average
    Score (the mean of the entity's averaged metrics; NaN when one is NaN or it has none). A zero resampled
    denominator reads as `empty` (E*K; default NaN)."""
    e, k = average.shape
    values = bs.ratios(weights, num, den, empty).reshape(e, k, -1)
    count = average.sum(-1).to(values.dtype)
    total = torch.where(average[..., None], values, 0.0).sum(1)
    avg = torch.where(count[:, None] > 0, total / count.clamp(min=1)[:, None], math.nan)
    return torch.cat([values, avg[:, None]], dim=1)


def shares(den: torch.Tensor, average: torch.Tensor) -> torch.Tensor:
    """Each cluster's share of each quantity's denominator (C x E x K+1: a metric's per-cluster denominators over
    their sum; the Average Score's the mean of its components' shares), for the effective clusters."""
    c, (e, k) = den.shape[0], average.shape
    per = den.reshape(c, e, k)
    total = per.sum(0, keepdim=True)
    share = torch.where(total != 0, per / torch.where(total != 0, total, 1.0), 0.0)
    count = average.sum(-1).to(share.dtype)
    mean = torch.where(average[None], share, 0.0).sum(-1) / count.clamp(min=1)[None]
    return torch.cat([share, mean[..., None]], dim=-1)


def _pair_spread(rows: torch.Tensor, ia: torch.Tensor, ib: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per pair and metric (P x K+1): the standard deviation of the difference over the resamples and the win
    probability, one metric and PAIR_BLOCK pairs at a time (the differences are never all held at once)."""
    p, k1, b = len(ia), rows.shape[1], rows.shape[2]
    se = torch.empty(p, k1, dtype=rows.dtype, device=rows.device)
    win = torch.empty_like(se)
    for q in range(k1):
        x = rows[:, q]
        gaps = bs.has_nan(x)
        for start in range(0, p, PAIR_BLOCK):
            pick = slice(start, start + PAIR_BLOCK)
            d = x[ia[pick]] - x[ib[pick]]
            se[pick, q] = bs.standard_deviation(d)
            # without a missing value: share above 0 plus half the share at 0 = 1/2 + (above - below) / 2B
            win[pick, q] = bs.win_probability(d) if gaps else 0.5 + torch.sign(d).sum(-1) / (2 * b)
    return se, win


def bootstrap_stats(models: list[ModelUnits], settings: StatsSettings, device: torch.device | str = "cpu",
                    counts: torch.Tensor | None = None) -> StatsDocument:
    """The content of stats.json for these models: per model and metric value / low / high / se / clusters (or
    the reason it has no interval) and rank / rank_low / rank_high, per pair difference / low / high / p /
    p_holm / separable / win_probability / se / mde / clusters_needed (or the reason it is not tested), the
    models tied with the top, the power of adjacent pairs, warnings and the settings.

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
    c, k1, m = design.clusters, len(key_index), len(models)
    check_memory(settings, c, len(design.entities), len(pairs), k1, device)
    num, den, average, empty = design.sums()
    if counts is None:
        counts = bs.resample_counts(settings.resamples, c, settings.seed, settings.scheme)
    if counts.shape[1] != c:
        raise ValueError(f"the resample matrix has {counts.shape[1]} columns for {c} clusters")
    rows = evaluate(counts.to(device=device, dtype=torch.float64), num, den, average, empty)   # E x K+1 x B
    e, _, b = rows.shape
    point = evaluate(torch.ones(1, c, dtype=torch.float64, device=device), num, den, average, empty)[..., 0]
    present = (den != 0).reshape(c, e, k1 - 1)                          # the clusters each quantity has
    present = torch.cat([present, (present & average[None]).any(-1, keepdim=True)], dim=-1)
    weight = shares(den, average)                                        # C x E x K+1
    averaged = [k for k in keys if any(k in u.average for u in models)]
    ranges = torch.tensor([dc.value_range(k, averaged) for k in key_index], dtype=torch.float64, device=device)
    pub = torch.tensor([[u.published.get(k, math.nan) for k in key_index] for u in models], dtype=torch.float64,
                       device=device)
    jack = (evaluate(bs.leave_one_out(c, device=device), num, den, average, empty)[:m].reshape(m * k1, c).T
            if settings.method == "bca" else None)                      # C x M*(K+1)
    flat = rows[:m].reshape(m * k1, b)
    centre = point[:m].reshape(-1) if settings.method == "bca" else pub.reshape(-1)
    mclusters = present[:, :m].sum(0).reshape(-1)
    effective = bs.effective_clusters(weight[:, :m].reshape(c, -1))
    low, high, se = dc.model_intervals(flat, centre, jack, mclusters, effective, ranges[:, 0].repeat(m),
                                       ranges[:, 1].repeat(m), settings)
    valid = bs.valid_counts(flat)
    lows, highs, ses, valids, mcs = (t.reshape(m, k1).cpu().tolist() for t in (low, high, se, valid, mclusters))
    warnings = []
    if c < settings.min_clusters:
        warnings.append(f"the run has {c} {'families' if settings.cluster == 'family' else 'ids'} to resample; "
                        f"intervals and tests need at least {settings.min_clusters} (stats.min_clusters): none made")
    out_models: dict[str, ModelRecord] = {}
    excluded = np.zeros((m, k1), dtype=bool)
    for i, unit in enumerate(models):
        metrics: dict[str, MetricBlock] = {}
        for key, q in key_index.items():
            if key not in unit.published:
                excluded[i, q] = True
                continue
            why = dc.reason(unit.constant.get(key), int(mcs[i][q]), int(valids[i][q]), ses[i][q],
                            settings.min_clusters)
            excluded[i, q] = dc.excluded(why)
            block: MetricBlock = {"value": unit.published[key], "low": None if why else clean(lows[i][q]),
                                  "high": None if why else clean(highs[i][q]), "se": clean(ses[i][q]),
                                  "clusters": int(mcs[i][q]), "resamples_left_out": int(b - valids[i][q])}
            if why:
                block["reason"] = why
            metrics[key] = block
        out_models[unit.name] = {"ids": len(unit.ids), "clusters": len({cluster_of[x] for x in unit.ids}),
                                 "metrics": metrics}

    out_pairs = _pairs(models, out_models, pairs, rows, point, present, weight, excluded, key_index, settings)
    alpha = 1 - settings.level
    tied, adjacent = dc.ranks_and_ties(models, out_models, out_pairs, list(key_index), alpha)
    for record in out_models.values():
        if (average_block := record["metrics"].get(AVERAGE_KEY)) is not None:
            record["rank"] = average_block["rank"]
            record["rank_low"] = average_block["rank_low"]
            record["rank_high"] = average_block["rank_high"]
    return {"settings": {**settings.record(c), "device": str(device)},
            "metrics": {k: (AVERAGE if k == AVERAGE_KEY else BY_KEY[k].label) for k in key_index},
            "models": out_models, "pairs": out_pairs, "tied_with_top": tied, "power": adjacent,
            "warnings": warnings}


def _pairs(models: list[ModelUnits], out_models: dict[str, ModelRecord], pairs: list[tuple[int, int, int, int, int]],
           rows: torch.Tensor, point: torch.Tensor, present: torch.Tensor, weight: torch.Tensor, excluded: np.ndarray,
           key_index: dict[str, int], settings: StatsSettings) -> list[PairRecord]:
    """Every pair's record: per metric both models have, the difference on their shared ids and its t test, or
    the reason it is not tested (a model's quantity without an interval, too few clusters)."""
    if not pairs:
        return []
    device = rows.device
    ia = torch.tensor([p[2] for p in pairs], dtype=torch.long, device=device)
    ib = torch.tensor([p[3] for p in pairs], dtype=torch.long, device=device)
    dpoint = point[ia] - point[ib]                                       # P x K+1
    dclusters = (present[:, ia] | present[:, ib]).sum(0)                  # P x K+1
    effective = bs.effective_clusters((weight[:, ia] + weight[:, ib]).reshape(weight.shape[0], -1) / 2
                                      ).reshape(dclusters.shape)
    dse, win = _pair_spread(rows, ia, ib)
    models_a = torch.as_tensor(excluded[[p[0] for p in pairs]], device=device)
    models_b = torch.as_tensor(excluded[[p[1] for p in pairs]], device=device)
    testable = (~models_a & ~models_b & (dclusters >= settings.min_clusters) & ~torch.isnan(dpoint)
                & ~torch.isnan(dse))
    tests = dc.pair_tests(dpoint, dse, dclusters, effective, testable, settings)
    alpha = 1 - settings.level
    lists = {name: t.cpu().tolist() for name, t in (("difference", dpoint), ("se", dse), ("win", win),
                                                     ("clusters", dclusters), ("testable", testable), *tests.items())}
    out: list[PairRecord] = []
    for j, (a, bb, _, _, n_shared) in enumerate(pairs):
        metrics: dict[str, PairBlock] = {}
        for key, q in key_index.items():
            if key not in models[a].published or key not in models[bb].published:
                continue
            d, sd, n_c = clean(lists["difference"][j][q]), clean(lists["se"][j][q]), int(lists["clusters"][j][q])
            block: PairBlock = {"difference": d, "low": None, "high": None, "p": None, "p_holm": None,
                                     "separable": None, "win_probability": None, "se": sd,
                                     "clusters": n_c, "mde": None, "clusters_needed": None}
            if lists["testable"][j][q]:
                p_holm = lists["p_holm"][j][q]
                mde = clean(lists["mde"][j][q])
                block.update({"low": clean(lists["low"][j][q]), "high": clean(lists["high"][j][q]),
                              "win_probability": clean(lists["win"][j][q]),
                              "p": lists["p"][j][q], "p_holm": p_holm, "separable": p_holm < alpha, "mde": mde,
                              "clusters_needed": dc.clusters_needed(d, sd, mde, n_c)})
            else:
                block["reason"] = _untested(out_models, models[a].name, models[bb].name, key, n_c, settings)
            metrics[key] = block
        out.append({"a": models[a].name, "b": models[bb].name, "ids": n_shared, "metrics": metrics})
    return out


def _untested(out_models: dict[str, ModelRecord], a: str, b: str, key: str, clusters: int,
              settings: StatsSettings) -> str:
    """Why a pair is not tested on `key`: the first model's reason for having no interval, too few clusters
    on the shared ids, or no value."""
    for name in (a, b):
        why = out_models[name]["metrics"][key].get("reason")
        if dc.excluded(why):
            return f"{name}: {why}"
    if clusters < settings.min_clusters:
        return dc.too_few(clusters, settings.min_clusters)
    return dc.NO_VALUE
