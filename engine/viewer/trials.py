"""The viewer's trials summary of a repeated run: per model of the run's trials.json, the aggregates as
mean ± std over its trials, pass@k / pass^k / avg@k for every k in both loss conventions, the slot
inventory (the lost slots named) and each (task, trial) slot with the trial's site key, so that each
trial's task view is one click away, and, when trials.json has peer conventions (tau2-bench, MCPMark), the
figures each convention reports as the reports' table gives them. trials.json is read by
`engine.reports.trials.read_trials`."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from engine.contract import InputError, is_number
from engine.metricspec import BY_KEY, label_of
from engine.reports.trials import TRIAL_ROW, conventions_table, read_trials
from engine.trials import AGENT_FAILURE, FINISHED, INFRASTRUCTURE, STATES, TRIALS_FILE, mean_std
from engine.viewer.board import Board
from engine.viewer.data import Run
from engine.viewer.text import cut, number_or_none

RATES = ("pass_at_k", "pass_hat_k", "avg_at_k")
"""The rate blocks of a trials document, shown side by side for every k."""
LOSSES = ("losses_as_failures", "losses_excluded")


class _Summary(TypedDict):
    name: str
    trials: int
    tasks: object
    rule: object
    slugs: list[str | None]
    aggregate: list[list[object]]
    rates: list[dict[str, object]]
    inventory: dict[str, object]
    slots: list[list[object]]


class TrialSummary(_Summary, total=False):
    """A model's trials summary as the site shows it (`trials_data`); its peer conventions' figures."""

    conventions: dict[str, object] | None


def _rates(path: Path, model: str, doc: dict[str, object], n: int) -> list[dict[str, object]]:
    """Per k = 1..n: {k, losses_as_failures: [[value, tasks] per rate], losses_excluded: ...}."""
    rows = []
    for k in range(1, n + 1):
        row: dict[str, object] = {"k": k}
        for losses in LOSSES:
            cells = []
            for name in RATES:
                rates = doc.get(name)
                block = rates.get(losses, {}).get(str(k)) if isinstance(rates, dict) else None
                if not isinstance(block, dict):
                    raise InputError(path, f"missing: {name}.{losses}.{k}", field=f"models.{model}.{name}.{losses}.{k}")
                cells.append([number_or_none(block.get("value")), block.get("tasks")])
            row[losses] = cells
        rows.append(row)
    return rows


def _aggregates(aggregate: object, averages: list[float]) -> list[list[object]]:
    """[[key, label, mean, std, n]]: the Average Score over the trials' leaderboard rows, every metric of
    the metric table, then the other aggregates (counts and the like) of a trials document's aggregate."""
    blocks = aggregate.items() if isinstance(aggregate, dict) else ()
    out: list[list[object]] = [[key, label_of(key), float(v["mean"]), float(v["std"]), v.get("n")]
                               for key, v in blocks
                               if isinstance(v, dict) and is_number(v.get("mean")) and is_number(v.get("std"))]
    out.sort(key=lambda row: row[0] not in BY_KEY)
    if averages:
        spread = mean_std(averages)
        out.insert(0, ["average", "Average Score", spread["mean"], spread["std"], spread["n"]])
    return out


def _model(path: Path, model: str, doc: object, slugs: dict[str, str], averages: list[float]) -> TrialSummary:
    if not isinstance(doc, dict) or not isinstance(doc.get("meta"), dict) or not isinstance(doc.get("inventory"), dict):
        raise InputError(path, "a model's trials document needs meta and inventory", field=f"models.{model}")
    n = doc["meta"].get("trials")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise InputError(path, "must be a whole number >= 1", field=f"models.{model}.meta.trials")
    inv = doc["inventory"]
    slots: dict[str, list[list[object]]] = {}
    for record in inv.get("records") or []:
        trial, tid = record.get("trial"), str(record.get("id"))
        if record.get("state") not in STATES or not isinstance(trial, int) or not 1 <= trial <= n:
            raise InputError(path, "an inventory record needs a state and a trial in 1..N", task_id=tid,
                             field=f"models.{model}.inventory.records")
        row = slots.setdefault(tid, [[None, None, None] for _ in range(n)])
        row[trial - 1] = [record["state"], record.get("success"), cut(record.get("reason"))]
    return {"name": model, "trials": n, "tasks": doc["meta"].get("tasks"),
            "rule": cut(doc["meta"].get("success_rule")),
            "slugs": [slugs.get(f"{model}_trial{i}") for i in range(1, n + 1)],
            "aggregate": _aggregates(doc["aggregate"], averages),
            "rates": _rates(path, model, doc, n),
            "inventory": {"slots": inv.get("slots"), **{s: inv.get(s) for s in STATES},
                          "per_trial": [[b.get("trial"), b.get(FINISHED), b.get(AGENT_FAILURE), b.get(INFRASTRUCTURE)]
                                        for b in inv.get("per_trial") or []],
                          "missing": [[cut(str(m.get("id"))), m.get("trial"), cut(m.get("reason"))]
                                      for m in inv.get("missing") or []]},
            "slots": [[tid, row] for tid, row in sorted(slots.items())]}


def trials_data(folder: Path, slugs: dict[str, str], board: Board) -> dict[str, TrialSummary] | None:
    """model -> its trials summary for the site (None when the run has no trials.json); `board` is the
    site's leaderboard, whose trial rows (<model>_trial<i>) give the Average Score over the trials."""
    path = Path(folder) / TRIALS_FILE
    if not path.is_file():
        return None
    models = read_trials(path)
    at = board["columns"].index(board["average"]) if board["average"] in board["columns"] else None
    averages: dict[str, list[float]] = {}
    for row in board["rows"]:
        m = TRIAL_ROW.match(row["model"])
        if m and at is not None and (value := number_or_none(row["cells"][at])) is not None:
            averages.setdefault(m.group("model"), []).append(value)
    out = {model: _model(path, model, doc, slugs, averages.get(model, [])) for model, doc in models.items()}
    try:
        table = conventions_table(models)
    except (KeyError, TypeError, AttributeError) as exc:
        raise InputError(path, f"a peer convention's figures are incomplete ({exc!r})",
                         field="models.conventions") from exc
    for model, summary in out.items():
        rows = [[cut(str(r[1])), cut(str(r[2]))] for r in table.rows if r[0] == model] if table is not None else []
        summary["conventions"] = {"rows": rows, "note": table.note} if rows and table is not None else None
    return out


def trial_of(trials: dict[str, TrialSummary] | None) -> dict[str, list[object]]:
    """site key of a trial's results -> [its model, its trial index], for the trial's own page."""
    out: dict[str, list[object]] = {}
    for model, summary in (trials or {}).items():
        for i, key in enumerate(summary["slugs"], 1):
            if key is not None:
                out[key] = [model, i]
    return out


def model_counts(run: Run, trials: dict[str, TrialSummary] | None) -> dict[str, int]:
    """{models, trials}: the run's models, each run over trials counted once (its trials' results are
    rows <model>_trial<i> of the run), and the trials' results among the run's results."""
    names = [r.name for r in run.results]
    of_trials = [(n, m.group("model")) for n in names
                 if (m := TRIAL_ROW.match(n)) and m.group("model") in (trials or {})]
    models = len(set(names) - {n for n, _ in of_trials}) + len({model for _, model in of_trials} - set(names))
    return {"models": models, "trials": len(of_trials)}
