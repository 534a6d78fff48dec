"""What the statistics step concludes from the resamples: each quantity's interval or the reason it has none,
each pair's t test, Holm's decisions, and the rank sets and the models tied with the top that follow from those
decisions (docs/statistics.md).

One procedure decides everything a leaderboard says about order: per metric, the pairs whose Holm-adjusted
p-value is below 1 - level are separable, in the direction of their difference; a model's rank interval is
[1 + the models separably better, n - the models separably worse] (Mogstad, Romano, Shaikh and Wilhelm 2024,
"Inference for Ranks": simultaneous rank sets from simultaneous pairwise decisions; LMArena's shared rank is
the interval's lower end), and the models tied with the top are those whose interval reaches 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from engine.metricspec import BY_KEY
from engine.stats.document import ModelRecord, PairRecord, PowerRow
from engine.stats.settings import AVERAGE_KEY, StatsSettings

if TYPE_CHECKING:
    from engine.stats.units import ModelUnits
from kernels import bootstrap as bs

NO_VALUE = "no value in any resample"
NO_SPREAD = ("no spread: the same value in every resample (every cluster gives it), so the bootstrap cannot "
             "measure how much it varies; it is still compared, the other model's spread measuring the difference")


def too_few(clusters: int, minimum: int) -> str:
    """The reason of a quantity or a pair with fewer clusters than an interval or a test needs."""
    return (f"too few clusters: {clusters} (an interval or a test needs at least {minimum}; "
            "stats.min_clusters)")


def direction(key: str) -> str:
    """Which way a quantity is better: the metric table's direction (the Average Score: higher)."""
    return "higher" if key == AVERAGE_KEY else BY_KEY[key].direction


def value_range(key: str, average_keys: Sequence[str]) -> tuple[float, float]:
    """The range a quantity's values lie in (-inf and inf where unbounded): the metric table's, and for the
    Average Score the hull of its components' ranges."""
    keys = average_keys if key == AVERAGE_KEY else (key,)
    lows = [BY_KEY[k].low for k in keys]
    highs = [BY_KEY[k].high for k in keys]
    low = -math.inf if not keys or any(v is None for v in lows) else min(v for v in lows if v is not None)
    high = math.inf if not keys or any(v is None for v in highs) else max(v for v in highs if v is not None)
    return low, high


def model_intervals(rows: torch.Tensor, point: torch.Tensor, jack: torch.Tensor | None, clusters: torch.Tensor,
                    effective: torch.Tensor, low: torch.Tensor, high: torch.Tensor, settings: StatsSettings
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each quantity's interval (rows: K x B resamples; point, clusters, effective clusters, low, high: K; jack:
    C x K) by the settings' method, and its standard error (the resamples' standard deviation).

    logit: point -/+ sqrt(C/(C-1)) t_df se, df its effective clusters less one, on the scale its range makes
    symmetric (the logit of a score in [0, 1], the log of a volume; bs.scaled_interval); percentile and bca:
    the (expanded) quantiles."""
    se = bs.standard_deviation(rows)
    per_row = clusters if settings.correction == "expanded" else None
    if settings.method == "logit":
        crit = bs.critical_value(settings.level, clusters, settings.correction, effective).to(rows.device)
        lo, hi = bs.scaled_interval(point, se, crit, low, high)
    elif settings.method == "bca":
        assert jack is not None
        lo, hi = bs.bca_interval(rows, point, jack, settings.level, per_row, effective)
    else:
        lo, hi = bs.percentile_interval(rows, settings.level, per_row, effective)
    return lo, hi, se


def reason(constant: str | None, clusters: int, valid: int, se: float, minimum: int) -> str | None:
    """Why a model's quantity has no interval (None: it has one): constant by construction, too few
    clusters, no value in any resample, or no spread over the resamples."""
    if constant is not None:
        return constant
    if clusters < minimum:
        return too_few(clusters, minimum)
    if valid == 0 or math.isnan(se):
        return NO_VALUE
    if se == 0:
        return NO_SPREAD
    return None


def excluded(why: str | None) -> bool:
    """Whether a quantity with this reason takes no part in pairs, ranks and ties (every reason but no spread:
    a pair's difference can still vary through the other model)."""
    return why is not None and why != NO_SPREAD


def pair_tests(difference: torch.Tensor, se: torch.Tensor, clusters: torch.Tensor, effective: torch.Tensor,
               testable: torch.Tensor, settings: StatsSettings) -> dict[str, torch.Tensor]:
    """Per pair and metric (P x K each): the t interval of the difference, its p-value (bs.t_p_value, Student's t
    on the pair's effective clusters less one: no floor set by the resamples), Holm's adjustment over the
    testable pairs of each metric, and the minimum detectable difference at the settings' power (the test's
    critical value plus z_power, times SE). Where a pair is not testable (or its SE is not known) p, p_holm and
    the interval are NaN."""
    crit = bs.critical_value(settings.level, clusters.reshape(-1), settings.correction,
                             effective.reshape(-1)).reshape(clusters.shape).to(difference.device)
    p = bs.t_p_value(difference.reshape(-1), se.reshape(-1), clusters.reshape(-1), settings.correction,
                     effective.reshape(-1)).reshape(difference.shape).to(difference.device)
    p = torch.where(testable, p, math.nan)
    z_power = float(bs._normal().icdf(torch.tensor(settings.power, dtype=torch.float64)))
    return {"low": torch.where(testable, difference - crit * se, math.nan),
            "high": torch.where(testable, difference + crit * se, math.nan),
            "p": p, "p_holm": bs.holm(p.T).T, "mde": torch.where(testable, (crit + z_power) * se, math.nan)}


def clusters_needed(difference: float | None, se: float | None, mde: float | None, clusters: int) -> int | None:
    """Clusters needed to detect the observed difference at the settings' power: C (MDE / |d|)^2 rounded up;
    None without a difference, a test, or any spread (an SE of 0 measures nothing)."""
    if difference is None or se is None or mde is None or difference == 0 or se == 0:
        return None
    return math.ceil(clusters * (mde / abs(difference)) ** 2)


def implied(names: list[str], better: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The transitive closure of the separable order (better: (a, b) for a separably better than b): a > c and
    c > b imply a > b. Whenever every Holm decision is right (95% jointly) the implied ones are right too, so
    the closure keeps the family-wise level, and no two rank intervals are disjoint without their pair separable."""
    closed = set(better)
    for via in names:
        for a in names:
            if (a, via) in closed:
                for b in names:
                    if (via, b) in closed and a != b:
                        closed.add((a, b))
    return closed


def rank_sets(names: list[str], values: list[float], sign: int, better: set[tuple[str, str]]
              ) -> dict[str, tuple[int, int, int]]:
    """Per model (names, with their values; sign +1 when higher is better, -1 when lower): its point rank (1 +
    the models strictly better), and its rank interval [1 + the models separably better, n - the models
    separably worse] (better: the separable order, closed)."""
    n = len(names)
    out = {}
    for name, value in zip(names, values):
        ahead = sum(1 for v in values if sign * v > sign * value)
        above = sum(1 for other in names if (other, name) in better)
        below = sum(1 for other in names if (name, other) in better)
        out[name] = (1 + ahead, 1 + above, n - below)
    return out


def ranks_and_ties(models: Sequence[ModelUnits], out_models: dict[str, ModelRecord], out_pairs: list[PairRecord],
                   keys: Sequence[str], alpha: float) -> tuple[dict[str, list[str]], dict[str, list[PowerRow]]]:
    """Fill every ranked quantity's rank, rank_low and rank_high (None for the others) in out_models, from the
    pairs' Holm decisions; return per ranked metric the models tied with the top (rank interval reaching 1, in
    point order) and the power of the adjacent pairs (point order: difference, SE, minimum detectable
    difference, clusters needed)."""
    by_pair = {(r["a"], r["b"]): r for r in out_pairs}
    tied: dict[str, list[str]] = {}
    power: dict[str, list[PowerRow]] = {}
    for key in keys:
        blocks = {u.name: out_models[u.name]["metrics"][key] for u in models if key in out_models[u.name]["metrics"]}
        for block in blocks.values():
            block.update({"rank": None, "rank_low": None, "rank_high": None})
        way = direction(key)
        if way == "none":
            continue
        sign = 1 if way == "higher" else -1
        ranked = sorted((n for n, b in blocks.items() if not excluded(b.get("reason"))),
                        key=lambda n: (-sign * blocks[n]["value"], n))
        held = [(a, b, r["metrics"][key]) for (a, b), r in by_pair.items() if a in blocks and b in blocks
                and key in r["metrics"] and not excluded(blocks[a].get("reason"))
                and not excluded(blocks[b].get("reason"))]
        better: set[tuple[str, str]] = set()
        for a, b, m in held:
            if m["separable"] and (d := m["difference"]) is not None:  # a separable pair has a difference
                better.add((a, b) if sign * d > 0 else (b, a))
        closed = implied(ranked, better)
        for a, b, m in held:
            if m["separable"] is False and ((a, b) in closed or (b, a) in closed):
                m.update({"separable": True, "implied": True})
        if not ranked:
            continue
        sets = rank_sets(ranked, [blocks[n]["value"] for n in ranked], sign, closed)
        for name, (rank, low, high) in sets.items():
            blocks[name].update({"rank": rank, "rank_low": low, "rank_high": high})
        tied[key] = [n for n in ranked if sets[n][1] == 1]
        rows: list[PowerRow] = []
        for upper, lower in zip(ranked, ranked[1:]):
            record, flip = (by_pair[(upper, lower)], 1) if (upper, lower) in by_pair else (by_pair[(lower, upper)], -1)
            pair = record["metrics"][key]
            rows.append({"a": upper, "b": lower,
                         "difference": None if pair["difference"] is None else flip * pair["difference"],
                         "se": pair["se"], "mde": pair["mde"], "clusters_needed": pair["clusters_needed"]})
        power[key] = rows
    return tied, power
