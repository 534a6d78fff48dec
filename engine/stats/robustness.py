"""How a run's conclusions hold over a grid of alignment thresholds (stats.json's `robustness`)."""

from __future__ import annotations

import torch

from engine.stats.document import (
    Conclusion,
    PairRecord,
    Robustness,
    RobustnessPair,
    RobustnessPoint,
    StatsDocument,
)
from engine.stats.settings import StatsSettings
from engine.stats.step import bootstrap_stats, clean
from engine.stats.units import ModelUnits


def _pair_of(out_pairs: list[PairRecord], a: str, b: str) -> tuple[PairRecord, int] | None:
    """The record of the pair (a, b) and the sign that turns its difference into a - b."""
    for record in out_pairs:
        if record["a"] == a and record["b"] == b:
            return record, 1
        if record["a"] == b and record["b"] == a:
            return record, -1
    return None


def _conclusion(document: StatsDocument, a: str, b: str, key: str) -> tuple[str | None, bool] | None:
    """Which of a and b is better by `key` in a stats document (None for no difference) and whether the
    pair is separable (Holm); None when the document has no such pair."""
    found = _pair_of(document["pairs"], a, b)
    if found is None or key not in found[0]["metrics"]:
        return None
    block, sign = found[0]["metrics"][key], found[1]
    d = block["difference"]
    better = None if not d else (a if sign * d > 0 else b)
    return better, bool(block["separable"])


def _kendall(x: list[float], y: list[float]) -> float | None:
    """Kendall's tau-b of two rankings' values (None with fewer than two models or a constant one)."""
    from scipy.stats import kendalltau

    if len(x) < 2:
        return None
    return clean(float(kendalltau(x, y).statistic))


def threshold_robustness(document: StatsDocument, default: tuple[float, float],
                         points: list[tuple[tuple[float, float], list[ModelUnits]]], settings: StatsSettings,
                         device: torch.device | str = "cpu") -> Robustness:
    """How the run's conclusions (`document`, bootstrap_stats at the `default` thresholds) hold over a grid
    of (tau_weak, tau_strong) `points`, each with its models' units: per point and metric Kendall's
    tau-b of the models' values with the default's; per pair and metric the default conclusion (which
    model is better, separable after Holm or not), whether it holds at every point, and the points where it
    does not. Every point uses the same resamples (the settings' seed over the same clusters)."""
    keys = list(document["metrics"])
    at_points: list[tuple[tuple[float, float], StatsDocument]] = []
    out_points: list[RobustnessPoint] = []
    for (tau_weak, tau_strong), units in points:
        doc = bootstrap_stats(units, settings, device)
        at_points.append(((tau_weak, tau_strong), doc))
        taus: dict[str, float | None] = {}
        for key in keys:
            shared = [n for n, r in document["models"].items()
                      if key in r["metrics"] and n in doc["models"] and key in doc["models"][n]["metrics"]]
            taus[key] = _kendall([document["models"][n]["metrics"][key]["value"] for n in shared],
                                 [doc["models"][n]["metrics"][key]["value"] for n in shared])
        out_points.append({"tau_weak": tau_weak, "tau_strong": tau_strong, "kendall_tau": taus})
    pairs: list[RobustnessPair] = []
    holding: dict[str, list[int]] = {key: [0, 0] for key in keys}
    for record in document["pairs"]:
        a, b = record["a"], record["b"]
        metrics: dict[str, Conclusion] = {}
        for key in record["metrics"]:
            expected = _conclusion(document, a, b, key)
            assert expected is not None, "a pair of the document has its own conclusion"
            changed = [[w, s] for (w, s), doc in at_points if _conclusion(doc, a, b, key) != expected]
            better, separable = expected
            metrics[key] = {"better": better, "separable": separable, "holds": not changed, "changed_at": changed}
            holding[key][0] += not changed
            holding[key][1] += 1
        pairs.append({"a": a, "b": b, "metrics": metrics})
    minimum = {key: min((t for p in out_points if (t := p["kendall_tau"][key]) is not None), default=None)
               for key in keys}
    return {"default": {"tau_weak": default[0], "tau_strong": default[1]}, "points": out_points,
            "kendall_tau_min": minimum, "pairs_holding": holding, "pairs": pairs}

