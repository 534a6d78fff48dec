"""The statistics step (engine.statistics, kernels.bootstrap): the batched bootstrap equals a plain
per-resample loop given the same resample matrix, and its intervals and tests are valid by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

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


@pytest.mark.parametrize("cluster", ["family", "sample"])
def test_batched_equals_loop(cluster: str) -> None:
    models = _models()
    settings = StatsSettings(resamples=200, cluster=cluster, seed=3)
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
    lo, hi = 0.025, 0.975
    # per model intervals and ranks
    draws = {m.name: [_loop_values(m, w, set(m.ids)) for w in per_b] for m in models}
    for m in models:
        for key, block in out["models"][m.name]["metrics"].items():
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
            assert block["p"] == pytest.approx(p, abs=1e-12)
            win = (sum(x > 0 for x in valid) + 0.5 * sum(x == 0 for x in valid)) / n
            assert block["win_probability"] == pytest.approx(win, abs=1e-12)
            assert block["low"] == pytest.approx(_quantile(d, lo), abs=1e-12)
            assert block["high"] == pytest.approx(_quantile(d, hi), abs=1e-12)
            assert block["se"] == pytest.approx(float(np.std(valid, ddof=1)), abs=1e-12)
            raw_p.setdefault(key, []).append(p)
    for key, ps in raw_p.items():
        order = sorted(range(len(ps)), key=lambda i: ps[i])
        adjusted, running = [0.0] * len(ps), 0.0
        for r, i in enumerate(order):
            running = max(running, min(1.0, (len(ps) - r) * ps[i]))
            adjusted[i] = running
        got = [record["metrics"][key]["p_holm"] for record in out["pairs"]]
        assert got == pytest.approx(adjusted, abs=1e-12)
