"""Report figures (matplotlib, Agg canvas, no display), saved atomically as PNG."""

from __future__ import annotations

import io
import math
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.contract import JsonObject, atomic_write_bytes
from engine.evaluators.call_outcomes import CALL_CLASSES, CALL_KEYS
from engine.metricspec import AVERAGE, BY_KEY, METRICS, label_of
from engine.reports.read import number, real
from engine.reports.tables import OUTCOME_KEYS, TOOL_USE_KEYS, Table

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def save_figure(fig: Figure, path: Path, dpi: int = 100) -> Path:
    """Render fig to PNG and write it atomically at path (a glyph the font lacks drawn as a box, unsaid)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        # a name in a script the font lacks (CJK, say) is drawn as boxes; matplotlib's warning for each
        # of its glyphs would say no more, on every run
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font", category=UserWarning)
        fig.savefig(buf, format="png", dpi=dpi)
    atomic_write_bytes(Path(path), buf.getvalue())
    return Path(path)


def model_colors(models: list[str]) -> dict[str, tuple[float, float, float, float]]:
    """One colour per model, by the model's place among the names in alphabetical order: every figure
    of a report shows the run's models, so a model has the same colour in each of them, whatever order
    (rank, name) a figure lists them in."""
    from matplotlib import colormaps

    names = sorted(set(models))
    cmap = colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {name: cmap(i % cmap.N) for i, name in enumerate(names)}


def _value(cell: object) -> float:
    """A numeric cell as a float, NaN for a missing one."""
    found = number(cell)
    return math.nan if found is None else float(found)


def leaderboard_figure(table: Table) -> Figure:
    """Grouped bars: one group per metric column (Average Score last), one bar per model."""
    from matplotlib.figure import Figure

    metrics = table.columns[1:]
    models = [str(m) for m in table.names()]
    colors = model_colors(models)
    fig = Figure(figsize=(max(8.0, 1.0 + len(metrics) * (0.25 * len(models) + 0.6)), 4.8), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(metrics))
    width = 0.8 / max(len(models), 1)
    for i, row in enumerate(table.rows):
        ax.bar(x - 0.4 + width * (i + 0.5), [_value(v) for v in row[1:]], width, label=str(row[0]),
               color=colors[str(row[0])])
    ax.set_xticks(x, metrics, rotation=20, ha="right")
    ax.set_ylim(0.0, 1.05)
    ax.set_ylabel("score")
    ax.set_title(table.title or "Leaderboard")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", title="model")
    return fig


def leaderboard_chart(table: Table, path: Path) -> Path:
    """The leaderboard figure (leaderboard_figure) as a PNG at path."""
    return save_figure(leaderboard_figure(table), path)


def family_figure(tables: dict[str, Table], models: list[str] | None = None) -> Figure:
    """Figure 7 style: x = task families, y = that family's Average Score, one marker per model (side
    by side within a family, no line: the families have no order)."""
    from matplotlib.figure import Figure

    families = list(tables)
    names = [str(m) for m in models] if models is not None else sorted(
        {str(m) for t in tables.values() for m in t.column("Model")})
    colors = model_colors(names)
    scores = {family: dict(zip(map(str, t.column("Model")), t.column(AVERAGE))) for family, t in tables.items()}
    fig = Figure(figsize=(max(8.0, 0.7 * len(families) + 3.0), 4.8), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(families))
    step = 0.7 / max(len(names), 1)
    for i, name in enumerate(names):
        y = [_value(scores[f].get(name)) for f in families]
        ax.plot(x - 0.35 + step * (i + 0.5), y, linestyle="none", marker="o", markersize=5, label=name,
                color=colors[name])
    ax.set_xticks(x, families, rotation=35, ha="right")
    ax.set_xticks(x[:-1] + 0.5, minor=True)
    ax.set_ylim(0.0, 1.05)
    ax.set_ylabel(AVERAGE)
    ax.set_title("Average Score per task family")
    ax.grid(axis="y", alpha=0.3)
    ax.grid(axis="x", which="minor", alpha=0.3)
    ax.tick_params(axis="x", which="minor", length=0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", title="model")
    return fig


def family_chart(tables: dict[str, Table], path: Path, models: list[str] | None = None) -> Path:
    """The per-family figure (family_figure) as a PNG at path."""
    return save_figure(family_figure(tables, models), path)


def grid_metrics(rows: list[JsonObject]) -> list[tuple[str, str]]:
    """(key, label) of the alignment and judge metrics a threshold grid holds, in table order."""
    present = {key for row in rows for key, value in row.items() if value is not None}
    return [(m.key, m.label) for m in METRICS if m.source != "budget" and m.key in present]


def threshold_figure(rows: list[JsonObject]) -> Figure:
    """Threshold ablation: each metric vs tau_weak, one line per model.

    One column of panels per metric and one row per tau_strong value of the grid.
    """
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    metrics = grid_metrics(rows)
    strongs = sorted({real(r["tau_strong"]) for r in rows})
    models = sorted({str(r["model"]) for r in rows})
    colors = model_colors(models)
    n_cols, n_rows = max(len(metrics), 1), max(len(strongs), 1)
    fig = Figure(figsize=(2.9 * n_cols + 1.8, 2.5 * n_rows + 0.6), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False, sharex=True, sharey=True)
    for r, strong in enumerate(strongs):
        for c, (key, label) in enumerate(metrics):
            ax = axes[r][c]
            for model in models:
                points = sorted((real(row["tau_weak"]), _value(row.get(key))) for row in rows
                                if row["model"] == model and real(row["tau_strong"]) == strong)
                if points:
                    xs, ys = zip(*points)
                    ax.plot(xs, ys, marker="o", markersize=3, linewidth=1.3, color=colors[model], label=model)
            ax.grid(alpha=0.3)
            if r == 0:
                ax.set_title(label, fontsize="medium")
            if r == n_rows - 1:
                ax.set_xlabel("tau_weak")
            if c == 0:
                ax.set_ylabel(f"tau_strong = {strong:g}")
    handles = [Line2D([], [], color=colors[m], marker="o", markersize=3, label=m) for m in models]
    fig.legend(handles=handles, loc="outside right center", fontsize="small", title="model")
    fig.suptitle("Threshold ablation")
    return fig


def threshold_chart(rows: list[JsonObject], path: Path) -> Path:
    """The threshold ablation figure (threshold_figure) as a PNG at path."""
    return save_figure(threshold_figure(rows), path)


def calls_chart(table: Table, path: Path) -> Path:
    """Paper Figure 6: per model a horizontal bar of its predicted calls stacked by class, with the
    illegal calling format count written beside it."""
    from matplotlib.figure import Figure

    models = table.names()
    fig = Figure(figsize=(10.0, max(2.4, 1.2 + 0.45 * len(models))), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(models))
    left = np.zeros(len(models))
    for key, color in zip(CALL_CLASSES, ("#d62728", "#ff7f0e", "#9467bd", "#2ca02c")):
        counts = np.array([_value(v) for v in table.column(label_of(key))])
        counts = np.nan_to_num(counts)
        ax.barh(y, counts, left=left, color=color, label=label_of(key))
        left += counts
    illegal = label_of(CALL_KEYS[0])
    for i, count in enumerate(table.column(illegal)):
        if count is not None:
            ax.text(left[i], y[i], f"  {illegal.lower()}: {count:g}", va="center", fontsize="small")
    ax.set_yticks(y, models)
    ax.invert_yaxis()
    ax.set_xlim(0, max(left.max(initial=0.0), 1.0) * 1.3)
    ax.set_xlabel("predicted calls")
    ax.set_title(table.title or "Call outcomes")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", title="outcome")
    return save_figure(fig, path)


def tool_use_chart(table: Table, path: Path) -> Path:
    """Per model its rates (left, 0-1: Proactivity, Success Rate) and its Volume (right, calls per task),
    by the tool-use rows of the metric table (a rate is a row bounded by 1)."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    models = table.names()
    rates = [label_of(k) for k in TOOL_USE_KEYS if BY_KEY[k].high == 1.0]
    volume = next(label_of(k) for k in TOOL_USE_KEYS if BY_KEY[k].high is None)
    fig = Figure(figsize=(max(8.0, 2.0 + 0.9 * len(models)), 4.2), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[2, 1])
    x = np.arange(len(models))
    width = 0.8 / len(rates)
    tab10 = colormaps["tab10"]
    for i, (label, color) in enumerate(zip(rates, (tab10(j) for j in range(tab10.N)))):
        left.bar(x - 0.4 + width * (i + 0.5), [_value(v) for v in table.column(label)], width, label=label,
                 color=color)
    left.set_ylim(0.0, 1.05)
    left.set_xticks(x, models, rotation=20, ha="right")
    left.legend(fontsize="small")
    left.grid(axis="y", alpha=0.3)
    right.bar(x, [_value(v) for v in table.column(volume)], 0.6, color=colormaps["tab10"](2))
    right.set_xticks(x, models, rotation=20, ha="right")
    right.set_ylabel("calls per task")
    right.set_title(volume)
    right.grid(axis="y", alpha=0.3)
    fig.suptitle(table.title or "Tool use")
    return save_figure(fig, path)
def outcomes_chart(table: Table, path: Path) -> Path:
    """Grouped bars of the outcome rates (the SR and Accuracy columns, counts left out), one bar per model."""
    rates = [label_of(k) for k in OUTCOME_KEYS if BY_KEY[k].high == 1.0 and label_of(k) in table.columns]
    keep = [table.columns.index(label) for label in rates]
    return leaderboard_chart(Table(columns=["Model", *rates], rows=[[row[0], *(row[i] for i in keep)]
                                                                    for row in table.rows],
                                   title=table.title), path)
