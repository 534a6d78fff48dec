"""The statistics step (engine.statistics, kernels.bootstrap): the batched bootstrap equals a plain
per-resample loop given the same resample matrix, and its intervals and tests are valid by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from engine.metricspec import metric_value
from engine.statistics import AVERAGE_KEY, StatsSettings, bootstrap_stats, model_units
from kernels import bootstrap as bs

KEYS = ("recall", "precision", "avg_sim_all_cov", "avg_sim_strong_cov", "step_coherence_cov",
        "order_consistency_cov", "merge_purity_cov")


def _models(seed: int = 0) -> list:
    """Three models on 14 ids in 5 families; the third misses two ids and some judge values, one id
    has no GT call (a zero denominator)."""
    rng = np.random.default_rng(seed)
    ids = [f"t{i:02d}" for i in range(14)]
    families = [f"f{i % 5}" for i in range(14)]
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
        out.append(model_units(f"m{m}", [ids[i] for i in keep], [families[i] for i in keep], parts, judged,
                               published, "reference"))
    return out


def _loop_values(unit, weight_of: dict[str, float], ids: set[str]) -> dict[str, float]:
    """One resample's value of every metric of a model on `ids`, summed id by id."""
    out = {}
    for key in unit.num:
        top = bottom = 0.0
        for j, tid in enumerate(unit.ids):
            if tid in ids:
                top += weight_of[tid] * unit.num[key][j]
                bottom += weight_of[tid] * unit.den[key][j]
        out[key] = top / bottom if bottom != 0 else math.nan
    parts = [out[k] for k in unit.average]
    out[AVERAGE_KEY] = sum(parts) / len(parts)
    return out


def _quantile(values: list[float], q: float) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return float(np.quantile(kept, q)) if kept else math.nan


def _present(unit, key: str, ids: set[str], key_of: dict[str, str]) -> set[str]:
    """The clusters in which the model has a nonzero denominator of `key` on `ids` (the Average Score:
    of any of its components)."""
    keys = unit.average if key == AVERAGE_KEY else (key,)
    return {key_of[i] for j, i in enumerate(unit.ids) if i in ids and any(unit.den[k][j] != 0 for k in keys)}


def _levels(clusters: int, correction: str) -> tuple[float, float]:
    """The interval's quantile levels: 2.5% and 97.5%, or the expanded percentile interval's."""
    from scipy import stats

    if correction == "none":
        return 0.025, 0.975
    low = stats.norm.cdf(-math.sqrt(clusters / (clusters - 1)) * stats.t.ppf(0.975, clusters - 1))
    return low, 1 - low


@pytest.mark.parametrize("correction", ["expanded", "none"])
@pytest.mark.parametrize("cluster", ["family", "sample"])
def test_batched_equals_loop(cluster: str, correction: str) -> None:
    from scipy import stats

    models = _models()
    settings = StatsSettings(resamples=200, cluster=cluster, seed=3, correction=correction)
    clusters = sorted({i if cluster == "sample" else c for m in models for i, c in zip(m.ids, m.clusters)})
    counts = bs.resample_counts(200, len(clusters), 3)
    out = bootstrap_stats(models, settings)
    assert out == bootstrap_stats(models, settings, counts=counts)  # the same seed draws the same matrix
    key_of = {i: (i if cluster == "sample" else c) for m in models for i, c in zip(m.ids, m.clusters)}
    col = {c: j for j, c in enumerate(clusters)}
    per_b = []
    for b in range(200):
        weight_of = {i: float(counts[b, col[key_of[i]]]) for i in key_of}
        per_b.append(weight_of)
    # per model intervals and ranks
    draws = {m.name: [_loop_values(m, w, set(m.ids)) for w in per_b] for m in models}
    for m in models:
        for key, block in out["models"][m.name]["metrics"].items():
            lo, hi = _levels(len(_present(m, key, set(m.ids), key_of)), correction)
            series = [d[key] for d in draws[m.name]]
            assert block["low"] == pytest.approx(_quantile(series, lo), abs=1e-12, nan_ok=True)
            assert block["high"] == pytest.approx(_quantile(series, hi), abs=1e-12, nan_ok=True)
            assert block["resamples_left_out"] == sum(math.isnan(v) for v in series)
            ranks = []
            for b in range(200):
                mine = draws[m.name][b][key]
                mine = -math.inf if math.isnan(mine) else mine
                others = [draws[o.name][b][key] for o in models if key in o.published]
                ranks.append(1 + sum((-math.inf if math.isnan(v) else v) > mine for v in others))
            assert block["rank_low"] == math.floor(np.quantile(ranks, lo))
            assert block["rank_high"] == math.ceil(np.quantile(ranks, hi))
    # pairs on the shared ids, with Holm over the pairs of each metric
    raw_p: dict[str, list[float]] = {}
    for record in out["pairs"]:
        a = next(m for m in models if m.name == record["a"])
        b_ = next(m for m in models if m.name == record["b"])
        shared = set(a.ids) & set(b_.ids)
        assert record["ids"] == len(shared)
        for key, block in record["metrics"].items():
            d = [_loop_values(a, w, shared)[key] - _loop_values(b_, w, shared)[key] for w in per_b]
            valid = [x for x in d if not math.isnan(x)]
            n = len(valid)
            p = min(1.0, 2 * min(sum(x <= 0 for x in valid) + 1, sum(x >= 0 for x in valid) + 1) / (n + 1))
            if all(x == 0 for x in valid):
                p = 1.0
            c = len(_present(a, key, shared, key_of) | _present(b_, key, shared, key_of))
            if correction == "expanded":
                p = 2 * (1 - stats.t.cdf(stats.norm.ppf(1 - p / 2) * math.sqrt((c - 1) / c), c - 1))
            lo, hi = _levels(c, correction)
            assert block["p"] == pytest.approx(p, abs=1e-12)
            win = (sum(x > 0 for x in valid) + 0.5 * sum(x == 0 for x in valid)) / n
            assert block["win_probability"] == pytest.approx(win, abs=1e-12)
            assert block["low"] == pytest.approx(_quantile(d, lo), abs=1e-12)
            assert block["high"] == pytest.approx(_quantile(d, hi), abs=1e-12)
            assert block["se"] == pytest.approx(float(np.std(valid, ddof=1)), abs=1e-12)
            crit = -stats.norm.ppf(lo) + stats.norm.ppf(0.8)
            assert block["mde"] == pytest.approx(crit * block["se"], abs=1e-12)
            raw_p.setdefault(key, []).append(p)
    for key, ps in raw_p.items():
        order = sorted(range(len(ps)), key=lambda i: ps[i])
        adjusted, running = [0.0] * len(ps), 0.0
        for r, i in enumerate(order):
            running = max(running, min(1.0, (len(ps) - r) * ps[i]))
            adjusted[i] = running
        got = [record["metrics"][key]["p_holm"] for record in out["pairs"]]
        assert got == pytest.approx(adjusted, abs=1e-12)


@pytest.mark.parametrize("clusters", [31, 10])
def test_coverage_and_false_positives_by_simulation(gt_path, clusters: int) -> None:
    """A short run of scripts/stats_simulation.py (300 draws, not 2,000) with the default small-sample
    correction: bounds three Monte Carlo standard errors wide around the 95% target and the 5% false
    positive rate, at the reference's 31 families and at 10 (where the plain percentile interval covers
    about 89%)."""
    from engine.synthetic.population import family_shapes, make_population, simulate

    pop = make_population(family_shapes(gt_path), seed=0)
    result = simulate(pop, clusters=clusters, draws=300, resamples=500, seed=1)
    for key in ("recall", "average"):
        assert 0.91 <= result.coverage[key] <= 0.99, result
        assert 0.01 <= result.false_positive[key] <= 0.09, result


def test_bootstrap_se_matches_clustered_se_and_scipy() -> None:
    """A plain mean over 31 clusters: the bootstrap SE is within 3% of the analytic clustered SE
    (Miller 2024), and with one id per cluster the percentile interval is scipy.stats.bootstrap's
    within Monte Carlo error."""
    from scipy import stats

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
    plain = StatsSettings(resamples=20_000, seed=5, cluster="sample", correction="none")  # scipy's interval
    ours = bootstrap_stats([flat], plain)["models"]["m"]
    ref = stats.bootstrap((y,), np.mean, n_resamples=20_000, method="percentile", confidence_level=0.95,
                          random_state=np.random.default_rng(3)).confidence_interval
    scale = ours["metrics"]["recall"]["se"]
    assert abs(ours["metrics"]["recall"]["low"] - ref.low) < 0.1 * scale
    assert abs(ours["metrics"]["recall"]["high"] - ref.high) < 0.1 * scale


@pytest.mark.parametrize("correction", ["expanded", "none"])
def test_trial_intervals_resample_tasks_with_their_trials(correction: str) -> None:
    """pass@k, pass^k and avg@k intervals equal a per-resample loop over tasks (each task's trials
    counted with it) given the same resample matrix; the values are trials.json's."""
    from engine.statistics import trial_intervals
    from engine.trial_estimators import ESTIMATORS, rate

    rng = np.random.default_rng(4)
    counts = [(4, int(c)) for c in rng.integers(0, 5, 17)] + [(3, 1), (2, 2)]   # two tasks lost trials
    clusters = [f"f{i % 6}" for i in range(len(counts))]
    settings = StatsSettings(resamples=300, seed=2, correction=correction)
    resample = bs.resample_counts(300, 6, 2)
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
            used = {c for c, (n, _) in zip(clusters, counts) if n >= k}
            lo, hi = _levels(len(used), correction)
            block = out[name][str(k)]
            assert (block["value"], block["tasks"]) == rate(counts, k, name)
            assert block["low"] == pytest.approx(_quantile(series, lo), abs=1e-12)
            assert block["high"] == pytest.approx(_quantile(series, hi), abs=1e-12)


def test_kernel_edge_cases() -> None:
    """Identical predictions give p = 1 and win probability 0.5; a resample with denominator 0 is left
    out and counted; Holm keeps the order of the p-values; CPU draws do not depend on the device."""
    zero = torch.zeros(2, 50, dtype=torch.float64)
    assert bs.two_sided_p(zero).tolist() == [1.0, 1.0]
    assert bs.win_probability(zero).tolist() == [0.5, 0.5]
    counts = torch.tensor([[1, 0], [0, 1], [2, 0]])
    values = bs.ratios(counts.double(), torch.tensor([[1.0], [2.0]], dtype=torch.float64),
                       torch.tensor([[2.0], [0.0]], dtype=torch.float64))
    assert math.isnan(values[0, 1]) and values[0, 0] == 0.5
    assert bs.holm(torch.tensor([0.01, 0.04, 0.03])).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert torch.equal(bs.resample_counts(10, 4, 1), bs.resample_counts(10, 4, 1))
    rows = torch.stack([torch.full((40,), math.nan, dtype=torch.float64), torch.linspace(0, 1, 40,
                                                                                         dtype=torch.float64)])
    low, high = bs.bca_interval(rows, torch.tensor([math.nan, 0.5], dtype=torch.float64),
                                torch.tensor([[math.nan, 0.4], [math.nan, 0.6]], dtype=torch.float64), 0.95)
    assert math.isnan(low[0]) and math.isnan(high[0]) and 0 < low[1] < high[1] < 1  # a quantity with no value
    assert bs.resample_counts(10, 4, 1).sum(1).tolist() == [4] * 10


def _score(capsys, *overrides: str) -> tuple[int, str]:
    from hydra import compose, initialize_config_dir

    from engine.apps.score import run
    from tests.script_runs import ROOT

    with initialize_config_dir(version_base="1.3", config_dir=str(ROOT / "conf" / "score")):
        cfg = compose(config_name="config", overrides=list(overrides))
    code = run(cfg)
    return code, capsys.readouterr().err


def test_stats_on_adds_files_and_changes_no_other(tmp_path, capsys, embedding_cache) -> None:
    """stats=on writes stats.json and the leaderboard with intervals; every other file is byte for byte
    the stats=off run's (the default)."""
    base = [f"demo.dir={tmp_path / 'demo'}", "demo.n_tasks=12", "device=cpu", "progress=false",
            f"encoder.cache_dir={embedding_cache}"]
    assert _score(capsys, *base, f"output_dir={tmp_path / 'off'}")[0] == 0
    assert _score(capsys, *base, "stats=on", "stats.resamples=500", f"output_dir={tmp_path / 'on'}")[0] == 0
    files = lambda root: {p.relative_to(root): p.read_bytes() for p in root.rglob("*")  # noqa: E731
                          if p.is_file() and p.suffix != ".png" and p.name not in ("score.log",
                                                                                   ".m3bench-outputs.json")}
    off, on = files(tmp_path / "off"), files(tmp_path / "on")
    added = {str(p) for p in set(on) - set(off)}
    assert added == {"stats.json", *(f"{stem}.{suffix}" for stem in ("leaderboard_intervals", "neighbour_intervals")
                                     for suffix in ("md", "csv", "json"))}
    assert {p: on[p] for p in off} == off
    import json

    stats = json.loads(on[next(p for p in on if str(p) == "stats.json")])
    assert stats["settings"]["resamples"] == 500 and stats["settings"]["cluster"] == "family"
    assert set(stats["models"]) == {"demo_strong", "demo_medium", "demo_hasty", "demo_weak", "demo_chaotic"}
    board = json.loads(off[next(p for p in off if str(p) == "leaderboard.json")])
    for row in board["rows"]:
        block = stats["models"][row["Model"]]["metrics"]["average_score"]
        assert block["value"] == pytest.approx(row["Average Score"], abs=1e-12)
        assert block["low"] <= block["value"] <= block["high"]
    assert len(stats["pairs"]) == 10
    assert {"difference", "low", "high", "p", "p_holm",
            "win_probability"} <= set(stats["pairs"][0]["metrics"]["recall"])


@pytest.mark.parametrize(("setting", "message"), [
    ("stats.level=1.5", "stats.level=1.5: must lie strictly between 0 and 1"),
    ("stats.cluster=domain", "stats.cluster='domain': expected one of family, sample"),
    ("stats.resamples=1", "stats.resamples"),
])
def test_bad_stats_setting_is_one_line(tmp_path, capsys, setting: str, message: str) -> None:
    code, err = _score(capsys, "stats=on", setting, f"demo.dir={tmp_path / 'demo'}", "demo.n_tasks=3",
                       f"output_dir={tmp_path / 'out'}")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_threshold_robustness_on_the_demo(tmp_path, capsys, embedding_cache) -> None:
    """stats=on with a grid: per grid point Kendall's tau-b of each metric's ranking with the default's
    (scipy's, on the grid's own values), 1 at the default's own point, where every pair's conclusion
    also holds; a pair whose better model changes at a point does not hold; the robustness table and
    the statistics plots are written."""
    import json

    from scipy.stats import kendalltau

    out = tmp_path / "on"
    code, err = _score(capsys, f"demo.dir={tmp_path / 'demo'}", "demo.n_tasks=12", "device=cpu", "progress=false",
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
        expected = kendalltau([stats["models"][n]["metrics"]["recall"]["value"] for n in names],
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
    so the interval ends are the quantiles of those."""
    from engine.evaluators.answer_equivalence import success_rates
    from engine.evaluators.tool_use import tool_use
    from engine.evaluators.verifiers import accuracy
    from engine.statistics import NEIGHBOUR_KEYS

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
    settings = StatsSettings(resamples=150, seed=4, correction="none")
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
            assert block["value"] == metric_value(published[unit.name][1], key)
            assert block["low"] == pytest.approx(_quantile(series, 0.025), abs=1e-12)
            assert block["high"] == pytest.approx(_quantile(series, 0.975), abs=1e-12)
    assert {"tool_use.volume", "answer_sr_l2", "check_accuracy"} <= set(out["pairs"][0]["metrics"])
