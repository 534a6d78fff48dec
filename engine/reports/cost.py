"""The cost reports of a run's usage.json (engine.stats.cost): the cost table beside the Average Score and the
score-vs-cost plot with the Pareto frontier and the models whose membership is uncertain marked."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, cast

from engine.contract import InputError, JsonValue, read_json
from engine.cost import LABELS, OFF, ON, QUANTITIES, UNCERTAIN
from engine.metricspec import AVERAGE
from engine.reports.plots import model_colors, save_figure
from engine.reports.records import Cost, CostModel, Interval, Quantity, Stats
from engine.reports.tables import Table, interval_cell, intervals_note

if TYPE_CHECKING:
    from matplotlib.figure import Figure

AXIS_LABELS = {"usd": "USD per task", "tokens": "tokens (in + out) per task"}


def read_cost(path: Path) -> Cost | None:
    """A run's usage.json, None when there is none; InputError when it is not a cost document (an object with
    'models')."""
    if not path.is_file():
        return None
    data: JsonValue = read_json(path, "cost file")
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise InputError(path, "expected an object with 'models'", field="models")
    return cast(Cost, data)  # the cost step's document (engine.stats.cost), in the shape it writes


def _digits(key: str) -> int:
    return 5 if key == "usd" else 2 if key == "wall_s" else 1


def _cell(block: Quantity | None, key: str) -> str | None:
    return interval_cell(block, _digits(key))


def _frontier_cell(record: CostModel) -> str | None:
    front = record.get("frontier")
    if front is None:
        return None
    if front.get("call") is None:
        return "yes" if front["on"] else "no"
    return f"{front['call']} ({front['share']:.2f})"


def cost_table(cost: Cost, order: list[str]) -> Table:
    """Per model (in `order`, then the others) its Average Score, tasks with usage, each per-task quantity some
    model has (`value [low, high]` with statistics), the judges' requests and USD per scored task when recorded,
    and its frontier membership (with statistics: on / off / uncertain and the share of resamples on it)."""
    models = cost["models"]
    names = [n for n in order if n in models] + [n for n in models if n not in order]
    keys = [k for k in QUANTITIES if any(k in (models[n].get("metrics") or {}) for n in names)]
    judged = any(models[n].get("judges") for n in names)
    columns = ["Model", AVERAGE, "Tasks", *(f"{LABELS[k]}/task" for k in keys)]
    columns += ["Judge requests", "Judge USD/task"] if judged else []
    columns += ["Frontier"]
    rows = []
    for name in names:
        record = models[name]
        metrics = record.get("metrics") or {}
        row: list[JsonValue] = [name, record.get("score"), record.get("tasks"),
                          *(_cell(metrics.get(k), k) for k in keys)]
        if judged:
            judges = record.get("judges") or {}
            per_task = judges.get("usd_per_task")
            row += [judges.get("requests"), None if per_task is None else f"{per_task:.5f}"]
        rows.append([*row, _frontier_cell(record)])
    return Table(columns, rows, title="Cost beside score", note=cost_note(cost))


def cost_note(cost: Cost) -> str:
    """What the cost table's numbers are: per task over the tasks with usage, the prices' dates, the intervals and
    the frontier rule, and the notes (models without a price or usage)."""
    models = cost["models"]
    priced = [f"{n} {p['input_usd_per_mtok']:g}/{p['output_usd_per_mtok']:g} USD per million "
              f"tokens in/out as of {p['as_of']}" for n, r in models.items() if (p := r.get("price"))]
    front = cost.get("frontier") or {}
    parts = ["Per task: means over the scored tasks with a usage record (Wall s: the rollout's tool logs); judges: "
             "the evaluator files' recorded usage per scored task."]
    if priced:
        parts.append("Prices: " + "; ".join(priced) + ".")
    if settings := cost.get("settings"):
        parts.append(intervals_note(settings).split("; a value")[0] + ", on stats.json's "
                     "resamples.")
    axis = AXIS_LABELS.get(front.get("axis", ""), "cost")
    if (level := front.get("level")) is not None:
        tail = front.get("tail")
        tail = (1 - level) / 2 if tail is None else tail
        parts.append(f"Frontier by {AVERAGE} and {axis}: the share of joint resamples in which the model is on it; "
                     f"on >= {1 - tail / 2:.4f}, off <= {tail:.4f}, uncertain between (tail: the expanded percentile "
                     "tail, halved for on: a model is on by beating each other one on score or on cost).")
    elif front:
        parts.append(f"Frontier by {AVERAGE} and {axis} of the point values (no statistics: membership not "
                     "assessed).")
    parts += [f"Note: {n}." for n in cost.get("notes", [])]
    return " ".join(parts)


def cost_figure(cost: Cost, stats: Stats | None = None) -> Figure:
    """Average Score against cost per task, each model with its intervals, the frontier of the point values as a
    staircase, and the membership calls: on (filled), uncertain (ringed), off (faded); the Average Score's interval
    from `stats` (stats.json) when given."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    front = cost.get("frontier") or {}
    axis = front.get("axis", "tokens")
    models = cost["models"]
    names = [n for n in front.get("models", []) if (models[n].get("metrics") or {}).get(axis)]
    colors = model_colors(list(models))
    fig = Figure(figsize=(8.5, 5.4), layout="constrained")
    ax = fig.add_subplot()
    points = []
    for name in names:
        record = models[name]
        block = (record.get("metrics") or {})[axis]
        score = record.get("score")
        if score is None:
            continue
        x, y = block["value"], score
        membership = record.get("frontier")
        call = membership.get("call") if membership else None
        on = membership.get("on") if membership else None
        alpha = 0.35 if call == OFF or (call is None and not on) else 1.0
        if (low := block.get("low")) is not None and (high := block.get("high")) is not None:
            ax.errorbar([x], [y], xerr=[[x - low], [high - x]], fmt="none", ecolor=colors[name],
                        alpha=alpha, capsize=3, lw=1)
        span = score_span(stats, name) or {}
        if (low := span.get("low")) is not None and (high := span.get("high")) is not None:
            ax.errorbar([x], [y], yerr=[[y - low], [high - y]], fmt="none", ecolor=colors[name],
                        alpha=alpha, capsize=3, lw=1)
        ax.scatter([x], [y], s=70, color=colors[name], alpha=alpha, zorder=3, edgecolors="black", linewidths=0.5)
        if call == UNCERTAIN:
            ax.scatter([x], [y], s=260, facecolors="none", edgecolors="tab:orange", linewidths=2.0, zorder=4)
        ax.annotate(name, (x, y), xytext=(6, 5), textcoords="offset points", fontsize="small", alpha=max(alpha, 0.6))
        points.append((x, y, bool(on)))
    frontier = sorted((x, y) for x, y, on in points if on)
    if frontier:
        xs, ys = zip(*frontier)
        ax.step(xs, ys, where="post", color="black", lw=1.2, ls="--", zorder=2)
    xs_all = [p[0] for p in points if p[0] > 0]
    if xs_all and max(xs_all) / min(xs_all) > 20:
        ax.set_xscale("log")
    ax.set_xlabel(AXIS_LABELS.get(axis, axis))
    ax.set_ylabel(AVERAGE)
    ax.set_title("Score against cost, with the Pareto frontier")
    ax.grid(alpha=0.3)
    ax.set_axisbelow(True)
    handles = [Line2D([], [], color="black", ls="--", label="frontier (point values)")]
    if front.get("level") is not None:
        handles += [Line2D([], [], marker="o", ls="", color="grey", markeredgecolor="black",
                           label=f"{ON}: on it with confidence"),
                    Line2D([], [], marker="o", ls="", markersize=13, markerfacecolor="none",
                           markeredgecolor="tab:orange", markeredgewidth=2, label=f"{UNCERTAIN}: membership uncertain"),
                    Line2D([], [], marker="o", ls="", color="grey", alpha=0.35, label=f"{OFF}: off it with confidence")]
    ax.legend(handles=handles, loc="lower right", fontsize="small")
    return fig


def cost_chart(cost: Cost, path: Path, stats: Stats | None = None) -> Path | None:
    """The cost figure (cost_figure) as a PNG at path; None when no model has both a score and a cost."""
    front = cost.get("frontier") or {}
    models = cost["models"]
    axis = front.get("axis", "tokens")
    if not any((models[n].get("metrics") or {}).get(axis) and models[n].get("score") is not None
               for n in front.get("models", [])):
        return None
    return save_figure(cost_figure(cost, stats), path)


def score_span(stats: Stats | None, name: str) -> Interval | None:
    """A model's Average Score interval block of stats.json (None without one)."""
    if stats is None:
        return None
    block = ((stats.get("models") or {}).get(name) or {}).get("metrics", {}).get("average_score")
    return block if isinstance(block, dict) and not math.isnan(block.get("value") or math.nan) else None
