"""The statistics step (engine.stats, kernels.bootstrap): the batched bootstrap equals a plain per-resample loop
given the same resample matrix, with the t tests, Holm's decisions and the rank sets worked out independently;
degenerate cases are said, never concluded; the score app runs it for leaderboards."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from scipy import stats as sps

from engine.metricspec import metric_value
from engine.stats import AVERAGE_KEY, StatsSettings, bootstrap_stats, model_units
from kernels import bootstrap as bs

KEYS = ("recall", "precision", "avg_sim_all_cov", "avg_sim_strong_cov", "step_coherence_cov",
        "order_consistency_cov", "merge_purity_cov")


def _models(seed: int = 0, families: int = 5) -> list:
    """Three models on 14 ids in `families` families; the third misses two ids and some judge values, one id
    has no GT call (a zero denominator)."""
    rng = np.random.default_rng(seed)
    ids = [f"t{i:02d}" for i in range(14)]
    clusters = [f"f{i % families}" for i in range(14)]
    out = []
    for m in range(3):
        keep = [i for i in range(14) if not (m == 2 and i in (3, 9))]
        n_gt = rng.integers(1, 5, 14).astype(float)
        n_gt[5] = 0.0
        matched = np.minimum(n_gt, rng.integers(0, 5, 14)).astype(float)
        n_pred = matched + rng.integers(0, 3, 14)
        parts = {"recall": (matched, n_gt), "precision": (matched, n_pred)}
        for key in KEYS[2:]:
            parts[key] = (rng.random(14) * n_gt, n_gt)
        parts = {k: (a[keep], b[keep]) for k, (a, b) in parts.items()}
        judged = {ids[i]: {"task_completion": float(rng.random()), "information_grounding": float(rng.random())}
                  for i in keep if not (m == 1 and i % 4 == 0)}
        published = {k: float(a.sum() / b.sum()) for k, (a, b) in parts.items()}
        for key in ("task_completion", "information_grounding"):
            published[key] = float(np.mean([v[key] for v in judged.values()]))
        out.append(model_units(f"m{m}", [ids[i] for i in keep], [clusters[i] for i in keep], parts, judged,
                               published, "reference"))
    return out


def _loop_values(unit, weight_of: dict[str, float], ids: set[str]) -> dict[str, float]:
    """One resample's value of every metric of a model on `ids`, summed id by id (an alignment metric with no
    denominator reads 0, as the published scorer; a judged one has no value)."""
    out = {}
    for key in unit.num:
        top = bottom = 0.0
        for j, tid in enumerate(unit.ids):
            if tid in ids:
                top += weight_of[tid] * unit.num[key][j]
                bottom += weight_of[tid] * unit.den[key][j]
        out[key] = top / bottom if bottom != 0 else (0.0 if key in KEYS else math.nan)
    parts = [out[k] for k in unit.average]
    out[AVERAGE_KEY] = sum(parts) / len(parts)
    return out


def _present(unit, key: str, ids: set[str], key_of: dict[str, str]) -> set[str]:
    """The clusters in which the model has a nonzero denominator of `key` on `ids` (the Average Score:
    of any of its components)."""
    keys = unit.average if key == AVERAGE_KEY else (key,)
    return {key_of[i] for j, i in enumerate(unit.ids) if i in ids and any(unit.den[k][j] != 0 for k in keys)}


def _shares(unit, key: str, ids: set[str], key_of: dict[str, str]) -> dict[str, float]:
    """Each cluster's share of the model's denominator of `key` on `ids` (the Average Score: the mean of its
    components' shares)."""
    keys = unit.average if key == AVERAGE_KEY else (key,)
    out: dict[str, float] = {}
    for k in keys:
        per: dict[str, float] = {}
        for j, i in enumerate(unit.ids):
            if i in ids:
                per[key_of[i]] = per.get(key_of[i], 0.0) + unit.den[k][j]
        total = sum(per.values())
        for c, v in per.items():
            out[c] = out.get(c, 0.0) + (v / total if total else 0.0) / len(keys)
    return out


def _kish(*shares: dict[str, float]) -> float:
    """Kish's effective number of clusters of the mean of some share vectors: 1 / sum of squares."""
    clusters = set().union(*shares)
    return 1 / sum((sum(s.get(c, 0.0) for s in shares) / len(shares)) ** 2 for c in clusters)


def _crit(clusters: int, effective: float | None = None) -> float:
    """The expanded t interval's multiple of the SE: sqrt(C/(C-1)) t_{df, 0.975}, df the effective clusters less
    one (C - 1 by default), at least 1."""
    df = max(min(effective if effective is not None else clusters, clusters) - 1, 1)
    return math.sqrt(clusters / (clusters - 1)) * sps.t.ppf(0.975, df)


def _holm(ps: list[float]) -> list[float]:
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adjusted, running = [0.0] * len(ps), 0.0
    for r, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - r) * ps[i]))
        adjusted[i] = running
    return adjusted


@pytest.mark.parametrize("cluster", ["family", "sample"])
def test_batched_equals_loop(cluster: str) -> None:
    """Every model's value interval (a t interval on the logit scale, from the loop's standard deviation), every
    pair's difference, SE, t interval, p (Student's t over the pair's clusters), Holm, win probability, and every
    rank interval and tie (from Holm's decisions, closed under a > c > b) equal a plain loop's to 1e-12."""
    models = _models()
    settings = StatsSettings(resamples=200, cluster=cluster, seed=3, min_clusters=2)
    clusters = sorted({i if cluster == "sample" else c for m in models for i, c in zip(m.ids, m.clusters)})
    counts = bs.resample_counts(200, len(clusters), 3)
    out = bootstrap_stats(models, settings)
    assert out == bootstrap_stats(models, settings, counts=counts)  # the same seed draws the same matrix
    key_of = {i: (i if cluster == "sample" else c) for m in models for i, c in zip(m.ids, m.clusters)}
    col = {c: j for j, c in enumerate(clusters)}
    per_b = [{i: float(counts[b, col[key_of[i]]]) for i in key_of} for b in range(200)]
    draws = {m.name: [_loop_values(m, w, set(m.ids)) for w in per_b] for m in models}
    for m in models:
        for key, block in out["models"][m.name]["metrics"].items():
            series = [d[key] for d in draws[m.name]]
            kept = [v for v in series if not math.isnan(v)]
            se = float(np.std(kept, ddof=1))
            c = len(_present(m, key, set(m.ids), key_of))
            eff = _kish(_shares(m, key, set(m.ids), key_of))
            value = block["value"]
            assert block["se"] == pytest.approx(se, abs=1e-12) and block["clusters"] == c
            assert block["resamples_left_out"] == sum(math.isnan(v) for v in series)
            step = _crit(c, eff) * se / (value * (1 - value))
            logit = math.log(value / (1 - value))
            assert block["low"] == pytest.approx(1 / (1 + math.exp(-(logit - step))), abs=1e-12)
            assert block["high"] == pytest.approx(1 / (1 + math.exp(-(logit + step))), abs=1e-12)
    raw_p: dict[str, list[float]] = {}
    for record in out["pairs"]:
        a = next(m for m in models if m.name == record["a"])
        b_ = next(m for m in models if m.name == record["b"])
        shared = set(a.ids) & set(b_.ids)
        assert record["ids"] == len(shared)
        for key, block in record["metrics"].items():
            d = [_loop_values(a, w, shared)[key] - _loop_values(b_, w, shared)[key] for w in per_b]
            valid = [x for x in d if not math.isnan(x)]
            point = _loop_values(a, dict.fromkeys(key_of, 1.0), shared)[key] - \
                _loop_values(b_, dict.fromkeys(key_of, 1.0), shared)[key]
            se = float(np.std(valid, ddof=1))
            c = len(_present(a, key, shared, key_of) | _present(b_, key, shared, key_of))
            eff = _kish(_shares(a, key, shared, key_of), _shares(b_, key, shared, key_of))
            p = 2 * sps.t.sf(abs(point) / (math.sqrt(c / (c - 1)) * se), max(min(eff, c) - 1, 1))
            assert block["difference"] == pytest.approx(point, abs=1e-12)
            assert block["se"] == pytest.approx(se, abs=1e-12)
            assert block["p"] == pytest.approx(p, abs=1e-12)
            assert block["low"] == pytest.approx(point - _crit(c, eff) * se, abs=1e-12)
            assert block["high"] == pytest.approx(point + _crit(c, eff) * se, abs=1e-12)
            win = (sum(x > 0 for x in valid) + 0.5 * sum(x == 0 for x in valid)) / len(valid)
            assert block["win_probability"] == pytest.approx(win, abs=1e-12)
            assert block["mde"] == pytest.approx((_crit(c, eff) + sps.norm.ppf(0.8)) * se, abs=1e-12)
            raw_p.setdefault(key, []).append(p)
    for key, ps in raw_p.items():
        held = [r for r in out["pairs"] if key in r["metrics"]]
        adjusted = _holm(ps)
        assert [r["metrics"][key]["p_holm"] for r in held] == pytest.approx(adjusted, abs=1e-12)
        better = {(r["a"], r["b"]) if r["metrics"][key]["difference"] > 0 else (r["b"], r["a"])
                  for r, p in zip(held, adjusted) if p < 0.05}
        names = [m.name for m in models if key in out["models"][m.name]["metrics"]]
        for via in names:  # a > c > b: a > b
            better |= {(x, y) for x in names for y in names if x != y and (x, via) in better and (via, y) in better}
        for r in held:
            assert r["metrics"][key]["separable"] == ((r["a"], r["b"]) in better or (r["b"], r["a"]) in better)
        for name in names:
            block = out["models"][name]["metrics"][key]
            assert block["rank_low"] == 1 + sum((o, name) in better for o in names)
            assert block["rank_high"] == len(names) - sum((name, o) in better for o in names)
            values = [out["models"][o]["metrics"][key]["value"] for o in names]
            assert block["rank"] == 1 + sum(v > block["value"] for v in values)
        assert out["tied_with_top"][key] == sorted(
            (n for n in names if out["models"][n]["metrics"][key]["rank_low"] == 1),
            key=lambda n: (-out["models"][n]["metrics"][key]["value"], n))


def test_percentile_and_bca_intervals_are_the_resamples_quantiles() -> None:
    """stats.method=percentile: each end is the loop's quantile at the expanded levels; bca runs."""
    models = _models(families=14)
    settings = StatsSettings(resamples=300, seed=5, method="percentile", cluster="sample", min_clusters=2)
    out = bootstrap_stats(models, settings)
    counts = bs.resample_counts(300, 14, 5)
    ids = sorted({i for m in models for i in m.ids})
    for m in models:
        series = {k: [] for k in out["models"][m.name]["metrics"]}
        for b in range(300):
            values = _loop_values(m, {i: float(counts[b, ids.index(i)]) for i in ids}, set(m.ids))
            for k in series:
                series[k].append(values[k])
        for key, block in out["models"][m.name]["metrics"].items():
            c = block["clusters"]
            low = sps.norm.cdf(-_crit(c, _kish(_shares(m, key, set(m.ids), {i: i for i in ids}))))
            kept = [v for v in series[key] if not math.isnan(v)]
            assert block["low"] == pytest.approx(float(np.quantile(kept, low)), abs=1e-12)
            assert block["high"] == pytest.approx(float(np.quantile(kept, 1 - low)), abs=1e-12)
    bca = bootstrap_stats(models, StatsSettings(resamples=300, seed=5, method="bca", cluster="sample", min_clusters=2))
    block = bca["models"]["m0"]["metrics"]["recall"]
    assert block["low"] < block["value"] < block["high"]


def test_bootstrap_se_matches_clustered_se_and_scipy() -> None:
    """A plain mean over 31 clusters: the bootstrap SE is within 3% of the analytic clustered SE
    (Miller 2024), and with one id per cluster the plain percentile interval is scipy.stats.bootstrap's
    within Monte Carlo error."""
    from engine.synthetic.population import clustered_se

    rng = np.random.default_rng(7)
    sizes = rng.integers(3, 12, 31)
    cluster = np.repeat(np.arange(31), sizes)
    x = rng.beta(2, 3, 31)[cluster] + rng.normal(0, 0.1, len(cluster))
    ids = [f"i{j}" for j in range(len(x))]
    unit = model_units("m", ids, [f"c{c:02d}" for c in cluster], {"recall": (x, np.ones_like(x))}, {},
                       {"recall": float(x.mean())}, "reference")
    out = bootstrap_stats([unit], StatsSettings(resamples=20_000, seed=11))
    se = out["models"]["m"]["metrics"]["recall"]["se"]
    assert se == pytest.approx(clustered_se(x, cluster), rel=0.03)

    y = x[:120]
    flat = model_units("m", ids[:120], ids[:120], {"recall": (y, np.ones_like(y))}, {}, {"recall": float(y.mean())},
                       "reference")
    plain = StatsSettings(resamples=20_000, seed=5, cluster="sample", correction="none", method="percentile")
    ours = bootstrap_stats([flat], plain)["models"]["m"]
    ref = sps.bootstrap((y,), np.mean, n_resamples=20_000, method="percentile", confidence_level=0.95,
                        random_state=np.random.default_rng(3)).confidence_interval
    scale = ours["metrics"]["recall"]["se"]
    assert abs(ours["metrics"]["recall"]["low"] - ref.low) < 0.1 * scale
    assert abs(ours["metrics"]["recall"]["high"] - ref.high) < 0.1 * scale


@pytest.mark.parametrize("method", ["logit", "percentile"])
def test_trial_intervals_resample_tasks_with_their_trials(method: str) -> None:
    """pass@k, pass^k and avg@k intervals come from a per-resample loop over tasks (each task's trials
    counted with it) given the same resample matrix; the values are trials.json's."""
    from engine.stats import trial_intervals
    from engine.trial_estimators import ESTIMATORS, rate

    rng = np.random.default_rng(4)
    counts = [(4, int(c)) for c in rng.integers(0, 5, 17)] + [(3, 1), (2, 2)]   # two tasks lost trials
    clusters = [f"f{i % 9}" for i in range(len(counts))]
    settings = StatsSettings(resamples=300, seed=2, method=method)
    resample = bs.resample_counts(300, 9, 2)
    out = trial_intervals(counts, clusters, settings)
    assert out == trial_intervals(counts, clusters, settings, resample=resample)
    col = {c: j for j, c in enumerate(sorted(set(clusters)))}
    for name, fn in ESTIMATORS.items():
        for k in range(1, 5):
            series = []
            for b in range(300):
                weight = [float(resample[b, col[c]]) for c in clusters]
                top = sum(w * fn(n, c, k) for w, (n, c) in zip(weight, counts) if n >= k)
                bottom = sum(w for w, (n, _) in zip(weight, counts) if n >= k)
                series.append(top / bottom if bottom else math.nan)
            used = len({c for c, (n, _) in zip(clusters, counts) if n >= k})
            tasks_in = [c for c, (n, _) in zip(clusters, counts) if n >= k]
            eff = 1 / sum((tasks_in.count(c) / len(tasks_in)) ** 2 for c in set(tasks_in))
            block = out[name][str(k)]
            assert (block["value"], block["tasks"]) == rate(counts, k, name)
            kept = [v for v in series if not math.isnan(v)]
            if method == "percentile":
                low = sps.norm.cdf(-_crit(used, eff))
                assert block["low"] == pytest.approx(float(np.quantile(kept, low)), abs=1e-12)
                assert block["high"] == pytest.approx(float(np.quantile(kept, 1 - low)), abs=1e-12)
            elif 0 < block["value"] < 1:
                step = _crit(used, eff) * float(np.std(kept, ddof=1)) / (block["value"] * (1 - block["value"]))
                logit = math.log(block["value"] / (1 - block["value"]))
                assert block["low"] == pytest.approx(1 / (1 + math.exp(step - logit)), abs=1e-12)
                assert block["high"] == pytest.approx(1 / (1 + math.exp(-step - logit)), abs=1e-12)


def test_kernel_edge_cases() -> None:
    """A difference of exactly 0 has p = 1 and a win probability of 0.5; a resample with denominator 0 reads as
    its quantity's empty value (NaN without one); Holm keeps the order of the p-values and leaves a test not
    made (NaN) out of the count; the logit interval stays inside [0, 1]; CPU draws do not depend on the device."""
    zero = torch.zeros(2, 50, dtype=torch.float64)
    assert bs.t_p_value(torch.zeros(2), torch.zeros(2), torch.tensor([10, 10])).tolist() == [1.0, 1.0]
    assert bs.t_p_value(torch.tensor([0.1]), torch.tensor([0.0]), torch.tensor([10])).tolist() == [0.0]
    assert math.isnan(bs.t_p_value(torch.tensor([0.1]), torch.tensor([0.05]), torch.tensor([1])).item())
    assert bs.win_probability(zero).tolist() == [0.5, 0.5]
    counts = torch.tensor([[1, 0], [0, 1], [2, 0]])
    num, den = torch.tensor([[1.0], [2.0]], dtype=torch.float64), torch.tensor([[2.0], [0.0]], dtype=torch.float64)
    assert math.isnan(bs.ratios(counts.double(), num, den)[0, 1]) and bs.ratios(counts.double(), num, den)[0, 0] == 0.5
    assert bs.ratios(counts.double(), num, den, torch.tensor([0.0]))[0, 1] == 0.0
    assert bs.holm(torch.tensor([0.01, 0.04, 0.03])).tolist() == pytest.approx([0.03, 0.06, 0.06])
    held = bs.holm(torch.tensor([0.01, math.nan, 0.03]))
    assert held[0] == pytest.approx(0.02) and math.isnan(held[1]) and held[2] == pytest.approx(0.03)
    low, high = bs.scaled_interval(torch.tensor([0.02, 0.5]), torch.tensor([0.05, 0.1]), torch.tensor([2.0, 2.0]),
                                   torch.zeros(2), torch.ones(2))
    assert 0 < low[0] < 0.02 < high[0] < 1 and high[1] - 0.5 == pytest.approx(0.5 - low[1])
    assert torch.equal(bs.resample_counts(10, 4, 1), bs.resample_counts(10, 4, 1))
    assert bs.resample_counts(10, 4, 1).sum(1).tolist() == [4] * 10


def _units(name: str, ids: list[str], families: list[str], n_gt: np.ndarray, matched: np.ndarray,
           n_pred: np.ndarray, judged: dict | None = None):
    """A model's units from per-id counts (recall, precision and the *_cov metrics as matched / n_gt)."""
    parts = {"recall": (matched, n_gt), "precision": (matched, n_pred)}
    parts.update({k: (matched.copy(), n_gt) for k in KEYS[2:]})
    ratio = lambda a, b: float(a.sum() / b.sum()) if b.sum() else 0.0  # noqa: E731
    published = {k: ratio(a, b) for k, (a, b) in parts.items()}
    if judged:
        from engine.evaluators.tool_use import tool_use

        published["tool_use"] = tool_use([judged[i]["tool_use"] for i in ids])
    return model_units(name, ids, families, parts, judged or {}, published, "reference")


def test_an_empty_model_is_separable_from_the_best_and_ranked_last() -> None:
    """A prediction file with no calls (precision 0/0 read as 0) beside a near-perfect one: its precision is
    constant by construction (no interval, no test), its Average Score has no spread (no interval) but every
    resample reads 0 as its point does, so its difference with the best is tested: separable, win probability 0,
    rank 2-2, not tied with the top."""
    rng = np.random.default_rng(1)
    ids = [f"t{i:03d}" for i in range(60)]
    families = [f"f{i % 20}" for i in range(60)]
    n_gt = rng.integers(1, 6, 60).astype(float)
    best = _units("best", ids, families, n_gt, n_gt - (rng.random(60) < 0.05), n_gt)
    empty = _units("empty", ids, families, n_gt, np.zeros(60), np.zeros(60))
    out = bootstrap_stats([best, empty], StatsSettings(resamples=2000))
    blocks = out["models"]["empty"]["metrics"]
    assert blocks["precision"]["reason"].startswith("constant by construction") and blocks["precision"]["low"] is None
    assert blocks[AVERAGE_KEY]["value"] == 0.0 and blocks[AVERAGE_KEY]["reason"].startswith("no spread")
    pair = out["pairs"][0]["metrics"]
    assert pair[AVERAGE_KEY]["separable"] and pair[AVERAGE_KEY]["win_probability"] == 1.0
    assert pair["precision"]["separable"] is None and "constant by construction" in pair["precision"]["reason"]
    assert out["tied_with_top"][AVERAGE_KEY] == ["best"]
    assert (out["models"]["empty"]["rank_low"], out["models"]["empty"]["rank_high"]) == (2, 2)


@pytest.mark.parametrize("case", ["one family", "one id by sample"])
def test_one_cluster_says_so_and_concludes_nothing(case: str) -> None:
    """Fewer clusters than stats.min_clusters: no interval, no test, no rank, and one warning naming the count."""
    ids = ["a"] if case == "one id by sample" else ["a", "b", "c"]
    families = ["f"] * len(ids)
    n_gt = np.array([3.0, 2.0, 4.0])[:len(ids)]
    models = [_units("x", ids, families, n_gt, n_gt - 1, n_gt), _units("y", ids, families, n_gt, n_gt * 0, n_gt)]
    settings = StatsSettings(resamples=500, cluster="sample" if case == "one id by sample" else "family")
    out = bootstrap_stats(models, settings)
    assert len(out["warnings"]) == 1 and "has 1 " in out["warnings"][0] and "at least 5" in out["warnings"][0]
    for record in out["models"].values():
        for block in record["metrics"].values():
            assert block["low"] is None and block["rank"] is None and block["reason"].startswith("too few clusters: 1")
    for block in out["pairs"][0]["metrics"].values():
        assert block["p"] is None and block["separable"] is None and block["clusters_needed"] is None
    assert out["tied_with_top"] == {}


def test_directions_constant_by_construction_and_no_power_from_no_spread() -> None:
    """Tool-Call Volume is compared but never ranked; a Success Rate with no error flag anywhere is constant by
    construction (no interval, no test); a pair whose difference has no spread has no clusters_needed."""
    rng = np.random.default_rng(2)
    ids = [f"t{i:02d}" for i in range(40)]
    families = [f"f{i % 10}" for i in range(40)]
    n_gt = rng.integers(1, 4, 40).astype(float)
    models = []
    for m in range(3):
        judged = {i: {"tool_use": {"calls": int(rng.integers(0, 5)), "flagged": 0, "valid": 0}} for i in ids}
        models.append(_units(f"m{m}", ids, families, n_gt, np.minimum(n_gt, m + 1), n_gt, judged))
    out = bootstrap_stats(models, StatsSettings(resamples=1000))
    for record in out["models"].values():
        volume = record["metrics"]["tool_use.volume"]
        assert volume["low"] < volume["value"] < volume["high"] and volume["rank"] is None
        success = record["metrics"]["tool_use.success_rate"]
        assert success["value"] == 1.0 and success["low"] is None
        assert "no call carries an error flag" in success["reason"]
    assert "tool_use.volume" not in out["tied_with_top"] and "tool_use.volume" not in out["power"]
    for record in out["pairs"]:
        assert record["metrics"]["tool_use.volume"]["p"] is not None
        assert record["metrics"]["tool_use.success_rate"]["p"] is None
    same = [_units(n, ids, families, n_gt, n_gt, n_gt) for n in ("p", "q")]        # both perfect: no spread
    pair = bootstrap_stats(same, StatsSettings(resamples=500))["pairs"][0]["metrics"]["recall"]
    assert pair["se"] == 0.0 and pair["p"] == 1.0 and not pair["separable"] and pair["clusters_needed"] is None


def test_ties_and_rank_intervals_agree_on_the_demo_shape() -> None:
    """On a leaderboard of close models every model marked tied with the top has a rank interval reaching 1, and
    no two rank intervals are disjoint while their pair is not separable (the issue's 17 contradictions)."""
    rng = np.random.default_rng(8)
    ids = [f"t{i:03d}" for i in range(60)]
    families = [f"f{i % 12}" for i in range(60)]
    n_gt = rng.integers(1, 6, 60).astype(float)
    models = [_units(f"m{m}", ids, families, n_gt, rng.binomial(n_gt.astype(int), 0.55 + 0.05 * m).astype(float),
                     n_gt + rng.integers(0, 2, 60)) for m in range(7)]
    out = bootstrap_stats(models, StatsSettings())
    for key, tied in out["tied_with_top"].items():
        ranked = {n: r["metrics"][key] for n, r in out["models"].items() if r["metrics"][key]["rank"] is not None}
        assert set(tied) == {n for n, b in ranked.items() if b["rank_low"] == 1}
        for record in out["pairs"]:
            a, b = ranked.get(record["a"]), ranked.get(record["b"])
            if a and b and (a["rank_high"] < b["rank_low"] or b["rank_high"] < a["rank_low"]):
                assert record["metrics"][key]["separable"]


def _compose(*overrides: str):
    from hydra import compose, initialize_config_dir

    import engine.apps.score  # noqa: F401  (registers the config's resolvers)
    from tests.script_runs import ROOT

    with initialize_config_dir(version_base="1.3", config_dir=str(ROOT / "conf" / "score")):
        return compose(config_name="config", overrides=list(overrides))


def _score(capsys, *overrides: str) -> tuple[int, str, str]:
    from engine.apps.kit import run_config
    from engine.apps.score import SPEC, run

    code = run_config(SPEC, run, _compose(*overrides))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_leaderboards_get_statistics_by_default_and_change_no_other_file(tmp_path, capsys, embedding_cache) -> None:
    """The demo (five models) computes statistics by default: stats.json, the leaderboard with intervals and the
    pairwise table (md, csv, json: every pair's difference, interval, p_holm, separable), and the terminal table's
    `value [low, high]` cells, tie marks and the files named; stats=off skips them, and every other file is byte for
    byte the stats=off run's; one model alone gets none."""
    base = [f"demo.dir={tmp_path / 'demo'}", "demo.n_tasks=40", "device=cpu", "progress=false",
            f"encoder.cache_dir={embedding_cache}"]
    code, _, err = _score(capsys, *base, "stats=off", "stats.resamples=500", f"output_dir={tmp_path / 'off'}")
    assert code == 0, err
    code, printed, err = _score(capsys, *base, "stats.resamples=2000", f"output_dir={tmp_path / 'on'}")
    assert code == 0, err
    files = lambda root: {p.relative_to(root): p.read_bytes() for p in root.rglob("*")  # noqa: E731
                          if p.is_file() and p.suffix != ".png" and p.name not in ("score.log",
                                                                                   ".m3bench-outputs.json")}
    off, on = files(tmp_path / "off"), files(tmp_path / "on")
    added = {str(p) for p in set(on) - set(off)}
    assert added == {"stats.json", *(f"{stem}.{suffix}" for stem in ("leaderboard_intervals", "neighbour_intervals",
                                                                       "pairwise") for suffix in ("md", "csv", "json"))}
    assert {p: on[p] for p in off} == off
    stats = json.loads((tmp_path / "on" / "stats.json").read_text())
    assert stats["settings"]["resamples"] == 2000 and stats["settings"]["cluster"] == "family"
    tied = stats["tied_with_top"][AVERAGE_KEY]
    for name, record in stats["models"].items():
        block = record["metrics"][AVERAGE_KEY]
        cell = f"{block['value']:.4f} [{block['low']:.4f}, {block['high']:.4f}]"
        line = next(row for row in printed.splitlines() if row.startswith(name + " "))
        assert cell in line and (" * " in line) == (name in tied)
    assert "pairwise.{md,csv,json}" in printed and "stats.json" in printed
    pairwise = json.loads((tmp_path / "on" / "pairwise.json").read_text())
    assert len(pairwise["rows"]) == len(stats["pairs"]) == 10
    for row, record in zip(pairwise["rows"], stats["pairs"]):
        block = record["metrics"][AVERAGE_KEY]
        assert (row["A"], row["B"], row["p (Holm)"]) == (record["a"], record["b"], block["p_holm"])
        assert row["Separable"].startswith("yes" if block["separable"] else "no")
    one = tmp_path / "demo" / "demo_strong.json"
    code, _, err = _score(capsys, *base, f"inputs.file={one}", f"output_dir={tmp_path / 'one'}")
    assert code == 0, err
    assert not (tmp_path / "one" / "stats.json").exists()


@pytest.mark.parametrize(("setting", "message"), [
    ("stats.level=1.5", "stats.level=1.5: must be a number in [0, 1]"),
    ("stats.level=1", "stats.level=1.0: must lie strictly between 0 and 1"),
    ("stats.resamples=1", "stats.resamples"),
    ("stats.resamples=1000000000", "stats.resamples=1000000000: the statistics step would need about"),
])
def test_bad_stats_setting_is_one_line(tmp_path, capsys, setting: str, message: str) -> None:
    """A wrong setting, or resamples that would not fit in memory (estimated before anything is allocated): one
    line, exit 2."""
    code, _, err = _score(capsys, "stats=on", setting, f"demo.dir={tmp_path / 'demo'}", "demo.n_tasks=3",
                          f"output_dir={tmp_path / 'out'}")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("option", ["off", "on", "auto"])
def test_stats_settings_are_accepted_whatever_stats_is(option: str) -> None:
    """stats.resamples and the other settings compose with stats=off as with stats=on."""
    cfg = _compose(f"stats={option}", "stats.resamples=500", "stats.min_clusters=5")
    assert cfg.stats.resamples == 500 and cfg.stats.min_clusters == 5
    assert cfg.stats.enabled == option


def test_threshold_robustness_on_the_demo(tmp_path, capsys, embedding_cache) -> None:
    """stats=on with a grid: per grid point Kendall's tau-b of each metric's ranking with the default's
    (scipy's, on the grid's own values), 1 at the default's own point, where every pair's conclusion
    also holds; a pair whose better model changes at a point does not hold; the robustness table and
    the statistics plots are written."""
    out = tmp_path / "on"
    code, _, err = _score(capsys, f"demo.dir={tmp_path / 'demo'}", "demo.n_tasks=12", "device=cpu", "progress=false",
                          f"encoder.cache_dir={embedding_cache}", "stats=on", "stats.resamples=300",
                          "align.tau_weak_grid=[0.3,0.6]", "align.tau_strong_grid=[0.8]", f"output_dir={out}")
    assert code == 0, err
    stats = json.loads((out / "stats.json").read_text())
    grid = json.loads((out / "threshold_grid.json").read_text())
    robust = stats["robustness"]
    assert robust["default"] == {"tau_weak": 0.6, "tau_strong": 0.8}
    assert [(p["tau_weak"], p["tau_strong"]) for p in robust["points"]] == [(0.3, 0.8), (0.6, 0.8)]
    names = list(stats["models"])
    for point in robust["points"]:
        at = {r["model"]: r for r in grid if (r["tau_weak"], r["tau_strong"]) == (point["tau_weak"],
                                                                                  point["tau_strong"])}
        expected = sps.kendalltau([stats["models"][n]["metrics"]["recall"]["value"] for n in names],
                                  [at[n]["recall"] for n in names]).statistic
        assert point["kendall_tau"]["recall"] == pytest.approx(expected, abs=1e-12)
    assert all(t == pytest.approx(1.0) for t in robust["points"][1]["kendall_tau"].values() if t is not None)
    moved = 0
    for record in robust["pairs"]:
        for key, block in record["metrics"].items():
            assert [0.6, 0.8] not in block["changed_at"]
            assert block["holds"] == (not block["changed_at"])
            if key == "recall":
                low = {r["model"]: r["recall"] for r in grid if r["tau_weak"] == 0.3}
                d = low[record["a"]] - low[record["b"]]
                if d and (d > 0) != (block["better"] == record["a"]):
                    moved += 1
                    assert block["changed_at"] == [[0.3, 0.8]] and not block["holds"]
    assert moved >= 1  # on this demo demo_strong and demo_medium swap their recall at tau_weak 0.3
    assert robust["pairs_holding"]["recall"] == [sum(r["metrics"]["recall"]["holds"] for r in robust["pairs"]), 10]
    table = (out / "threshold_robustness.md").read_text()
    assert table.startswith("| Metric | Kendall tau (min) |") and "Recall" in table
    from matplotlib.image import imread

    for png in ("leaderboard_forest.png", "rank_intervals.png", "pairwise.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        height, width, _ = imread(out / png).shape  # decodes as a whole
        assert height > 200 and width > 400


def test_neighbour_aggregates_resample_as_their_evaluators_aggregate() -> None:
    """Tool use, MCPVerse's SR per level and TOBench's accuracy: the point is what each evaluator's own
    aggregate gives (answers and checks over every task of their file, scored or not), and every resample's
    value is that aggregate over the resampled tasks (each task repeated as often as its family is drawn),
    so the percentile interval's ends are the quantiles of those."""
    from engine.evaluators.answer_equivalence import success_rates
    from engine.evaluators.tool_use import tool_use
    from engine.evaluators.verifiers import accuracy
    from engine.stats import NEIGHBOUR_KEYS

    rng = np.random.default_rng(9)
    ids = [f"t{i:02d}" for i in range(16)]
    families = [f"f{i % 6}" for i in range(16)]
    extra = [("u0", "f1"), ("u1", "f4")]           # answered and checked, never scored
    units, published = [], {}
    for m in range(2):
        judged: dict = {}
        for j, tid in enumerate([*ids, "u0", "u1"]):
            calls = int(rng.integers(0, 4))
            flagged = int(rng.integers(0, calls + 1))
            block = {"answer_level": ["L1", "L2", "L3"][j % 3],
                     "answer_success": None if j % 7 == 3 else int(rng.integers(0, 2)),
                     "check_success": None if j % 5 == 2 else int(rng.integers(0, 2))}
            if tid in ids:
                block["tool_use"] = {"calls": calls, "flagged": flagged, "valid": int(rng.integers(0, flagged + 1))}
            judged[tid] = block
        every = list(judged)
        agg = {"tool_use": tool_use([judged[i]["tool_use"] for i in ids]),
               **success_rates({i: judged[i]["answer_level"] for i in every},
                               {i: judged[i]["answer_success"] for i in every}),
               **accuracy([judged[i]["check_success"] for i in every])}
        n_gt = rng.integers(1, 4, 16).astype(float)
        parts = {"recall": (np.minimum(n_gt, rng.integers(0, 4, 16)), n_gt)}
        units.append(model_units(f"m{m}", ids, families, parts, judged, {**agg, "recall": 0.5}, "reference", extra))
        published[f"m{m}"] = (judged, agg)
    for unit in units:
        assert set(NEIGHBOUR_KEYS) <= set(unit.num) and len(unit.ids) == 18
        for key in NEIGHBOUR_KEYS:
            assert unit.num[key].sum() / unit.den[key].sum() == pytest.approx(
                metric_value(published[unit.name][1], key), abs=1e-12)
    settings = StatsSettings(resamples=150, seed=4, correction="none", method="percentile", min_clusters=2)
    out = bootstrap_stats(units, settings)
    counts = bs.resample_counts(150, 6, 4)
    cluster_of = dict(zip([*ids, "u0", "u1"], [*families, "f1", "f4"]))
    col = {c: j for j, c in enumerate(sorted(set(families)))}
    for unit in units:
        judged = published[unit.name][0]
        draws = []
        for b in range(150):
            copies = {f"{i}#{r}": judged[i] for i in judged for r in range(int(counts[b, col[cluster_of[i]]]))}
            scored = [v for k, v in copies.items() if k.split("#")[0] in ids]
            draws.append({"tool_use": tool_use([v["tool_use"] for v in scored]),
                          **success_rates({k: v["answer_level"] for k, v in copies.items()},
                                          {k: v["answer_success"] for k, v in copies.items()}),
                          **accuracy([v["check_success"] for v in copies.values()])})
        for key in NEIGHBOUR_KEYS:
            block = out["models"][unit.name]["metrics"][key]
            series = [math.nan if metric_value(d, key) is None else float(metric_value(d, key)) for d in draws]
            kept = [v for v in series if not math.isnan(v)]
            assert block["value"] == metric_value(published[unit.name][1], key)
            if block.get("reason") is None:
                assert block["low"] == pytest.approx(float(np.quantile(kept, 0.025)), abs=1e-12)
                assert block["high"] == pytest.approx(float(np.quantile(kept, 0.975)), abs=1e-12)
    assert {"tool_use.volume", "answer_sr_l2", "check_accuracy"} <= set(out["pairs"][0]["metrics"])


def test_too_few_families_is_one_warning_with_stats_on(tmp_path, capsys, caplog, embedding_cache) -> None:
    """stats=on on a demo of 3 tasks (3 families): exit 0, one warning naming the count, no interval and no test
    in stats.json, and the terminal says so instead of showing intervals; by default (stats=auto) the same line is
    said at INFO level, not warned."""
    import logging

    base = [f"demo.dir={tmp_path / 'demo'}", "demo.n_tasks=3", "device=cpu", "progress=false", "reports=false",
            f"encoder.cache_dir={embedding_cache}"]
    with caplog.at_level(logging.INFO):
        code, printed, err = _score(capsys, *base, "stats=on", f"output_dir={tmp_path / 'on'}")
    assert code == 0, err
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == ["stats: the run has 3 families to resample; intervals and tests need at least 5 "
                      "(stats.min_clusters): none made"]
    stats = json.loads((tmp_path / "on" / "stats.json").read_text())
    assert all(b["low"] is None for r in stats["models"].values() for b in r["metrics"].values())
    assert all(b["p"] is None for r in stats["pairs"] for b in r["metrics"].values())
    assert "No intervals: the run has 3 families" in printed and "[" not in printed.split("Average Score")[1]
    caplog.clear()
    with caplog.at_level(logging.INFO):
        code, _, err = _score(capsys, *base, f"output_dir={tmp_path / 'auto'}")
    assert code == 0 and not [r for r in caplog.records if r.levelname == "WARNING"]
    assert any(r.getMessage().startswith("stats: the run has 3 families") for r in caplog.records)
