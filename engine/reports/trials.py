"""Reports of repeated runs (trials.json): the leaderboard as mean ± std with pass^k, the slot
inventory, pass^k curves over k and the per-task spread."""

from __future__ import annotations

import re
from pathlib import Path
from typing import cast

import numpy as np

from engine.contract import InputError, JsonValue, read_json
from engine.metricspec import AVERAGE, evaluator_columns, leaderboard_columns
from engine.reports.plots import model_colors, save_figure
from engine.reports.read import number
from engine.reports.records import Spread, TrialsDoc
from engine.reports.tables import Table
from engine.trials import mean_std

TRIAL_ROW = re.compile(r"^(?P<model>.+)_trial(?P<index>\d+)$")
"""A trial's row of the run's leaderboard: <model>_trial<i> (the score app's folder and model name)."""


def read_trials(path: Path) -> dict[str, TrialsDoc]:
    """model -> its trials document, from a run's trials.json (checked to hold an object 'models')."""
    data: JsonValue = read_json(path, "trials file")
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        raise InputError(path, "expected an object of model -> trials document", field="models")
    return cast(dict[str, TrialsDoc], models)  # the trials step's documents (engine.trials), as it writes them


def _spread(block: Spread | None) -> str | None:
    return None if block is None else f"{block['mean']:.3f} ± {block['std']:.3f}"


def _pass_hat(doc: TrialsDoc, k: int) -> str | None:
    """pass^k with lost slots counted as failures, and in brackets without them where that differs."""
    failures = doc["pass_hat_k"]["losses_as_failures"][str(k)]["value"]
    excluded = doc["pass_hat_k"]["losses_excluded"][str(k)]["value"]
    if failures is None:
        return None
    return f"{failures:.3f}" + (f" ({excluded:.3f})" if excluded is not None and excluded != failures else "")


def trials_leaderboard(models: dict[str, TrialsDoc], board: Table) -> Table:
    """One row per model: each leaderboard column and the Average Score as mean ± std over its
    trials, pass^1 and pass^N (losses counted as failures; losses excluded in brackets; their headers name the
    success rule), lost slots."""
    columns = [*leaderboard_columns("alignment"), *evaluator_columns()]
    present = [c for c in columns if any(next((k for k in c.keys if k in d["aggregate"]), None)
                                         for d in models.values())]
    averages: dict[str, list[float]] = {}
    for name, average in zip(board.names(), board.column(AVERAGE)):
        m = TRIAL_ROW.match(str(name))
        if m and m.group("model") in models and (value := number(average)) is not None:
            averages.setdefault(m.group("model"), []).append(float(value))
    rules = sorted({str(d["meta"].get("success_rule")) for d in models.values() if d["meta"].get("success_rule")})
    said = f" [success: {'; '.join(rules)}]" if rules else ""
    labels = ["Model", "Trials", *(c.label for c in present), AVERAGE, f"pass^1{said}", f"pass^k{said}", "k",
              "Lost slots"]
    rows: list[list[JsonValue]] = []
    rank: dict[str, float] = {}
    for model, doc in models.items():
        n = doc["meta"]["trials"]
        cells = [_spread(next((doc["aggregate"][k] for k in c.keys if k in doc["aggregate"]), None)) for c in present]

        spread = mean_std(averages[model]) if averages.get(model) else None
        rank[model] = -spread["mean"] if spread else float("inf")
        rows.append([model, n, *cells, _spread(spread), _pass_hat(doc, 1), _pass_hat(doc, n), n,
                     doc["inventory"]["infrastructure"]])
    rows.sort(key=lambda row: (rank[str(row[0])], str(row[0])))
    note = ("Cells: mean ± sample standard deviation over the model's trials. pass^k: all k trials succeed "
            "(unbiased estimator), with infrastructure losses counted as failures; in brackets, with them "
            "excluded, where that differs.")
    return Table(columns=labels, rows=rows, title="Leaderboard over trials", digits=3, note=note)


def conventions_table(models: dict[str, TrialsDoc]) -> Table | None:
    """Per model, the figures each convention reports (trials.json's main block and its ``conventions``):
    the project's pass^1 and pass^N (losses counted as failures), tau2-bench's average reward and pass^k
    up to its max_k, MCPMark's pass@1 (avg ± population std), pass@N and pass^N or its refusal; None when
    no model has a peer convention."""
    if not any(doc.get("conventions") for doc in models.values()):
        return None
    rows = []
    for model, doc in models.items():
        n = doc["meta"]["trials"]
        block = doc["pass_hat_k"]["losses_as_failures"]
        rows.append([model, "project",
                     f"pass^1 {_value(block['1']['value'])}, pass^{n} {_value(block[str(n)]['value'])}"])
        peers = doc.get("conventions") or {}
        if "tau2" in peers:
            t = peers["tau2"]
            hats = ", ".join(f"pass^{k} {_value(v)}" for k, v in t["pass_hat_k"].items())
            rows.append([model, "tau2",
                         f"avg_reward {_value(t['avg_reward'])}, {hats or 'no pass^k'} (max_k {t['max_k']})"])
        if "mcpmark" in peers:
            m = peers["mcpmark"]
            if "refused" in m:
                rows.append([model, "mcpmark", f"refused: {m['refused']}"])
            else:
                k = m["k"]
                first = m["pass@1"]
                head = f"pass@1 {first['avg']} ± {first['std']}, " if isinstance(first, dict) else ""
                rows.append([model, "mcpmark", f"{head}pass@{k} {m[f'pass@{k}']}, pass^{k} {m[f'pass^{k}']}"])
    note = ("project: the unbiased estimators with infrastructure losses counted as failures; tau2: tau2-bench's "
            "agent_metrics (losses dropped, success = value == 1, average over trials, pass^k up to the smallest "
            "per-task count); mcpmark: MCPMark's aggregate_results (k = N only, population std, a model with a "
            "missing slot refused).")
    return Table(columns=["Model", "Convention", "Figures"], rows=rows, title="Repeated runs by convention", note=note)


def _value(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def inventory_table(models: dict[str, TrialsDoc]) -> Table:
    """Every model's slots per trial: finished, failed by the agent, lost to infrastructure; and the calls
    its records hold that were never made (illegal format; 0 in a trials.json written before they were
    counted)."""
    rows: list[list[JsonValue]] = []
    for model, doc in models.items():
        for block in doc["inventory"]["per_trial"]:
            rows.append([model, block["trial"], block["finished"], block["agent_failure"], block["infrastructure"],
                         block.get("illegal_calls", 0)])
    return Table(columns=["Model", "Trial", "Finished", "Agent failure", "Lost to infrastructure",
                          "Calls not made"], rows=rows, title="Trial inventory",
                 note="Each (task, trial) slot is exactly one of the three. Calls not made: calls whose arguments "
                      "were not a JSON object (illegal format), recorded but never run; never matched.")


def pass_k_chart(models: dict[str, TrialsDoc], path: Path) -> Path:
    """pass^k over k per model: losses counted as failures (solid) and excluded (dashed)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.add_subplot()
    colors = model_colors(list(models))
    for model, doc in models.items():
        color = colors[model]
        rates = doc["pass_hat_k"]
        for block, style in ((rates["losses_as_failures"], "-"), (rates["losses_excluded"], "--")):
            ks = [int(k) for k in block if block[k]["value"] is not None]
            ax.plot(ks, [v for k in ks if (v := block[str(k)]["value"]) is not None], style, marker="o", color=color,
                    label=model if style == "-" else None)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("k (trials that must all succeed)")
    ax.set_ylabel("pass^k")
    ax.set_ylim(0.0, 1.05)
    ax.grid(alpha=0.3)
    ax.set_title("pass^k (solid: losses as failures, dashed: losses excluded)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", title="model")
    return save_figure(fig, path)


def spread_chart(models: dict[str, TrialsDoc], path: Path) -> Path:
    """Per model, each task's mean over trials (dots, tasks sorted by it) with its min-max range;
    Task Completion where judged, else Recall."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(9.0, 2.2 + 1.8 * len(models)), layout="constrained")
    axes = fig.subplots(len(models), 1, squeeze=False)[:, 0]
    colors = model_colors(list(models))
    for ax, (model, doc) in zip(axes, models.items()):
        color = colors[model]
        per_task = doc["per_task"]
        key = "task_completion" if any("task_completion" in v for v in per_task.values()) else "recall"
        blocks = sorted((v[key] for v in per_task.values() if key in v), key=lambda b: b["mean"])
        x = np.arange(len(blocks))
        means = np.array([b["mean"] for b in blocks])
        low = means - np.array([b["min"] for b in blocks])
        high = np.array([b["max"] for b in blocks]) - means
        ax.errorbar(x, means, yerr=[low, high], fmt="o", markersize=3, color=color, ecolor="0.6", elinewidth=1)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(-0.05, 1.05)
        ax.set_ylabel(key)
        ax.set_title(f"{model}: per-task spread over {doc['meta']['trials']} trials (min-max)", fontsize="medium")
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("task (sorted by its mean)")
    return save_figure(fig, path)
