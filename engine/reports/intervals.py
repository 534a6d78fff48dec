"""Reports of a run's stats.json (engine.stats): the threshold robustness, neighbour-interval and pairwise
tables, and the forest plot of the leaderboard, the rank-interval plot and the pairwise p-value /
win-probability heatmap."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

from engine.contract import InputError, JsonValue, read_json
from engine.metricspec import AVERAGE
from engine.reports.plots import model_colors, save_figure
from engine.reports.records import Stats, stats_of
from engine.reports.tables import Table, interval_cell
from engine.stats import AVERAGE_KEY, NEIGHBOUR_KEYS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FOREST_FILE = "leaderboard_forest.png"
RANKS_FILE = "rank_intervals.png"
PAIRS_FILE = "pairwise.png"


def read_stats(path: Path) -> Stats | None:
    """A run's stats.json, checked to be the score app's (an object with 'models'); None when the run has none."""
    if not path.is_file():
        return None
    stats: JsonValue = read_json(path, "statistics file")
    if not isinstance(stats, dict) or not isinstance(stats.get("models"), dict):
        raise InputError(path, "expected an object with 'models' (a stats.json of the score app)", field="models")
    return cast(Stats, stats)  # the statistics step's document (engine.stats), in the shape it writes


def robustness_table(stats: Stats) -> Table | None:
    """Per metric of a stats.json with a `robustness` section: the smallest and the mean Kendall tau-b of
    the grid points' rankings with the default's, and how many pairs keep their conclusion (which model
    is better, significant or not) at every grid point; None without the section."""
    robust = stats.get("robustness")
    if not isinstance(robust, dict):
        return None
    labels = stats.get("metrics", {})
    points = robust.get("points", [])
    rows = []
    for key, (holding, total) in robust.get("pairs_holding", {}).items():
        taus = [tau for p in points if (tau := p["kendall_tau"].get(key)) is not None]
        changed = [f"{r['a']} vs {r['b']}" for r in robust.get("pairs", [])
                   if key in r["metrics"] and not r["metrics"][key]["holds"]]
        rows.append([labels.get(key, key), min(taus) if taus else None, sum(taus) / len(taus) if taus else None,
                     holding, total, ", ".join(changed) or None])
    default = robust.get("default", {})
    grid = ", ".join(f"({p['tau_weak']:g}, {p['tau_strong']:g})" for p in points)
    note = (f"Over the grid of (tau_weak, tau_strong) {grid}, against the default ({default.get('tau_weak')}, "
            f"{default.get('tau_strong')}): Kendall's tau-b of each point's ranking with the default's; a pair holds "
            "when the better model and whether the pair is separable (Holm) are the same at every point.")
    return Table(columns=["Metric", "Kendall tau (min)", "Kendall tau (mean)", "Pairs holding", "Pairs",
                          "Pairs changing"], rows=rows, title="Threshold robustness", note=note)


def neighbour_intervals_table(stats: Stats, models: list[str]) -> Table | None:
    """The neighbour aggregates with intervals (tool use, SR per level, accuracy: NEIGHBOUR_KEYS) of a
    stats.json, `value [low, high]` per model (in the given order) and aggregate some model has; None
    when none has any."""
    records = stats.get("models", {})
    keys = [k for k in NEIGHBOUR_KEYS if any(k in records.get(n, {}).get("metrics", {}) for n in models)]
    if not keys:
        return None
    rows = [[name, *(interval_cell(records[name]["metrics"].get(k)) for k in keys)] for name in models
            if name in records and any(k in records[name]["metrics"] for k in keys)]
    labels = stats.get("metrics", {})
    return Table(columns=["Model", *(labels.get(k, k) for k in keys)], rows=rows,
                 title="Neighbour aggregates with intervals",
                 note="Intervals as in leaderboard_intervals; each aggregate resampled as a ratio of resampled sums; a "
                      "value without an interval has the reason in stats.json (e.g. constant by construction).")


def pairwise_table(document: Mapping[str, object], key: str = AVERAGE_KEY) -> Table | None:
    """Every pair of a stats.json by one metric (default the Average Score), in leaderboard order: the difference
    and its interval, p and Holm's p, whether the pair is separable (or why it is not tested), the win
    probability and the clusters needed; None when no pair has the metric."""
    stats = stats_of(document)
    rows = []
    for record in stats.get("pairs", []):
        block = record.get("metrics", {}).get(key)
        if block is None:
            continue
        interval = None if block.get("low") is None else f"[{block['low']:.4f}, {block['high']:.4f}]"
        verdict = ("no" if not block["separable"] else "yes (implied: A > C > B)" if block.get("implied") else "yes") \
            if block.get("separable") is not None else f"not tested: {block.get('reason')}"
        rows.append([record["a"], record["b"], block.get("difference"), interval, block.get("p"), block.get("p_holm"),
                     verdict, block.get("win_probability"), block.get("clusters_needed")])
    if not rows:
        return None
    s = stats.get("settings", {})
    label = stats.get("metrics", {}).get(key, key)
    alpha = 1 - s.get("level", 0.95)
    note = (f"{label} of A minus B on the ids both were scored on; {s.get('level', 0.95):.0%} t interval of the "
            f"difference and its two-sided p (Student's t over the pair's clusters); separable: Holm-adjusted p < "
            f"{alpha:.2f} over the {len(rows)} pairs, or implied by two separable pairs through a third model; win "
            "probability: share of resamples with A ahead (ties half); clusters needed: to detect the difference at "
            "the settings' power. stats.json has every metric.")
    return Table(columns=["A", "B", "Difference", f"{s.get('level', 0.95):.0%} interval", "p", "p (Holm)",
                          "Separable", "Win probability", "Clusters needed"], rows=rows,
                 title=f"Pairwise comparisons by {label}", note=note)


def _ranked(stats: Stats) -> list[str]:
    """The models by their Average Score, best first (then name)."""
    models = stats.get("models", {})
    return sorted((n for n, r in models.items() if AVERAGE_KEY in r.get("metrics", {})),
                  key=lambda n: (-models[n]["metrics"][AVERAGE_KEY]["value"], n))


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _setting_note(stats: Stats) -> str:
    s = stats.get("settings", {})
    return (f"{s.get('level', 0.95):.0%} intervals, {s.get('resamples')} resamples over {s.get('clusters')} "
            f"{'families' if s.get('cluster') == 'family' else 'ids'}")


def forest_figure(stats: Stats) -> Figure:
    """The leaderboard as a forest plot: per model (best at the top) its Average Score and interval; the
    models tied with the top drawn filled, the others hollow."""
    from matplotlib.figure import Figure

    names = _ranked(stats)
    colors = model_colors(names)
    tied = set(stats.get("tied_with_top", {}).get(AVERAGE_KEY, []))
    fig = Figure(figsize=(7.5, 1.2 + 0.45 * max(len(names), 1)), layout="constrained")
    ax = fig.add_subplot()
    for y, name in enumerate(names):
        block = stats["models"][name]["metrics"][AVERAGE_KEY]
        value, low, high = block["value"], _nan(block["low"]), _nan(block["high"])
        ax.plot([low, high], [y, y], color=colors[name], linewidth=2)
        ax.plot([value], [y], marker="o", markersize=8, color=colors[name],
                markerfacecolor=colors[name] if name in tied else "white", markeredgewidth=2)
        text = f"{value:.3f}" if math.isnan(low) else f"{value:.3f} [{low:.3f}, {high:.3f}]"
        ax.annotate(text, (value if math.isnan(high) else high, y), xytext=(6, 0), textcoords="offset points",
                    va="center", fontsize="small")
    ax.set_yticks(range(len(names)), [f"{n} *" if n in tied else n for n in names])
    ax.set_ylim(len(names) - 0.5, -0.5)
    blocks = [stats["models"][n]["metrics"][AVERAGE_KEY] for n in names]
    lows = [float(np.nanmin([_nan(b["low"]), b["value"]])) for b in blocks]
    highs = [float(np.nanmax([_nan(b["high"]), b["value"]])) for b in blocks]
    if names and not all(math.isnan(v) for v in lows + highs):
        span = max(np.nanmax(highs) - np.nanmin(lows), 0.05)
        ax.set_xlim(np.nanmin(lows) - 0.05 * span, np.nanmax(highs) + 0.45 * span)
    ax.set_xlabel(AVERAGE)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"Leaderboard with intervals\n{_setting_note(stats)}; * and filled: tied with the top",
                 fontsize="medium")
    return fig


def rank_figure(stats: Stats) -> Figure:
    """Per model (best at the top) its point rank by the Average Score and its rank interval."""
    from matplotlib.figure import Figure

    names = _ranked(stats)
    colors = model_colors(names)
    fig = Figure(figsize=(6.5, 1.2 + 0.45 * max(len(names), 1)), layout="constrained")
    ax = fig.add_subplot()
    for y, name in enumerate(names):
        record = stats["models"][name]
        low, high = _nan(record.get("rank_low")), _nan(record.get("rank_high"))
        ax.plot([low, high], [y, y], color=colors[name], linewidth=6, alpha=0.45, solid_capstyle="round")
        ax.plot([_nan(record.get("rank"))], [y], marker="D", markersize=7, color=colors[name])
    ax.set_yticks(range(len(names)), names)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xticks(range(1, len(names) + 1))
    ax.set_xlim(0.5, max(len(names), 1) + 0.5)
    ax.set_xlabel(f"rank by {AVERAGE} (diamond: point rank; bar: rank interval)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"Rank intervals\n{_setting_note(stats)}", fontsize="medium")
    return fig


def pairwise_figure(stats: Stats, key: str = AVERAGE_KEY) -> Figure:
    """Two heatmaps over the models (best first): the Holm-adjusted p-value of each pair, and the win
    probability P(row > column) over the resamples, each cell written in it."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    names = _ranked(stats)
    where = {n: i for i, n in enumerate(names)}
    p = np.full((len(names), len(names)), math.nan)
    win = np.full((len(names), len(names)), math.nan)
    for record in stats.get("pairs", []):
        block = record["metrics"].get(key)
        if block is None or record["a"] not in where or record["b"] not in where:
            continue
        i, j = where[record["a"]], where[record["b"]]
        p[i, j] = p[j, i] = _nan(block.get("p_holm"))
        win[i, j], win[j, i] = _nan(block.get("win_probability")), 1.0 - _nan(block.get("win_probability"))
    size = 1.6 + 0.55 * max(len(names), 1)
    fig = Figure(figsize=(2 * size + 2.0, size + 0.8), layout="constrained")
    left, right = fig.subplots(1, 2)
    alpha = 1 - stats.get("settings", {}).get("level", 0.95)
    for ax, values, title, cmap, limits in (
            (left, p, f"Holm-adjusted p (bold: < {alpha:.2f})", "viridis_r", (0.0, 1.0)),
            (right, win, "win probability P(row > column)", "RdBu", (0.0, 1.0))):
        image = ax.imshow(np.ma.masked_invalid(values), cmap=colormaps[cmap], vmin=limits[0], vmax=limits[1])
        for i in range(len(names)):
            for j in range(len(names)):
                if not math.isnan(values[i, j]):
                    dark = image.norm(values[i, j]) > 0.6 if cmap == "viridis_r" else abs(values[i, j] - 0.5) > 0.3
                    bold = values is p and values[i, j] < alpha
                    ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize="small",
                            color="white" if dark else "black", fontweight="bold" if bold else "normal")
        ax.set_xticks(range(len(names)), names, rotation=35, ha="right")
        ax.set_yticks(range(len(names)), names)
        ax.set_title(title, fontsize="medium")
        fig.colorbar(image, ax=ax, shrink=0.8)
    label = stats.get("metrics", {}).get(key, key)
    fig.suptitle(f"Pairwise comparisons by {label} ({_setting_note(stats)})")
    return fig


def write_stats_plots(stats: Stats, out: Path) -> list[Path]:
    """The forest, rank-interval and pairwise figures of a stats.json as PNGs in out (none when no model
    has an Average Score)."""
    if not _ranked(stats):
        return []
    return [save_figure(forest_figure(stats), out / FOREST_FILE), save_figure(rank_figure(stats), out / RANKS_FILE),
            save_figure(pairwise_figure(stats), out / PAIRS_FILE)]
