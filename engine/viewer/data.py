"""What the viewer shows, gathered from a finished scoring run: plain JSON-ready dicts, checked.

A run folder holds one ``results_eval.json`` per scored prediction file (the folder itself for a
single model, sub-folders for a sweep). Each names in its ``meta`` the reference (``gt``) and the
predictions it scored, and, when joined, the evaluators' files (under each evaluator's option, else
beside the predictions by its suffix): what each evaluator says of a task is shown by its own display
(engine.viewer.evaluations). The viewer needs the per-task match details of
``per_id`` and both trajectory files; a run missing any of them is refused with an `InputError`
naming what is missing. With several references per task, each task is shown against the reference
it was aligned with (``per_id[].reference``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from engine.contract import (
    InputError,
    JsonObject,
    JsonValue,
    TrajectoryFile,
    is_number,
    lost_tasks,
    read_json,
    read_trajectories,
    record_error,
    strict_value,
)
from engine.contract.trajectory import Trajectory
from engine.metricspec import BY_KEY, label_of, leaderboard_columns
from engine.references import read_references
from engine.reports.read import ModelResult, block_of, collect_run, real
from engine.viewer.evaluations import evaluations_of, shown_keys, task_columns
from engine.viewer.text import cut, number_or_none

COUNT_KEYS = frozenset({"num_ids", "total_gt_calls", "total_pred_calls", "matched", "id", "details", "reference"})
"""A result's keys that are counts or structure, not metrics: no column of their own."""


@dataclass(frozen=True)
class Run:
    """A run as the viewer reads it: the results, the leaderboard and each model's files."""

    folder: Path
    results: list[ModelResult]
    per_id: dict[str, list[JsonObject]]     # model name -> results' per_id records
    gt: dict[tuple[Path, ...], dict[str, Trajectory]]  # reference files -> their trajectories (each id's first)
    predictions: dict[str, TrajectoryFile]
    alternatives: dict[tuple[Path, ...], dict[str, tuple[Trajectory, ...]]]  # reference files -> id -> its references


def slug(index: int, name: str) -> str:
    """A file-name-safe, unique key of the index-th model."""
    return f"{index:02d}-" + (re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "model")[:60]


def _meta_file(result: ModelResult, key: str, what: str) -> Path:
    value = result.meta.get(key)
    if not isinstance(value, str) or not value:
        raise InputError(result.path, f"missing: meta.{key} (the {what}), which the viewer needs: score the "
                         "run again with scripts/score.py", field=f"meta.{key}")
    path = Path(value)
    if not path.is_file():
        raise InputError(result.path, f"the {what} {path} named in meta.{key} is missing", field=f"meta.{key}")
    return path


def reference_key(result: ModelResult) -> tuple[Path, ...]:
    """The reference files a model was scored against, in order: meta.references (several files), else
    meta.gt; each checked to exist."""
    several = result.meta.get("references")
    if several is None:
        return (_meta_file(result, "gt", "reference file"),)
    files = [p for p in several if isinstance(p, str) and p] if isinstance(several, list) else []
    if not isinstance(several, list) or not several or len(files) != len(several):
        raise InputError(result.path, "must be a list of reference files", field="meta.references")
    missing = [p for p in files if not Path(p).is_file()]
    if missing:
        raise InputError(result.path, f"the reference file {missing[0]} named in meta.references is missing",
                         field="meta.references")
    return tuple(Path(p) for p in files)


def _check_per_id(result: ModelResult, per_id: JsonValue) -> list[JsonObject]:
    if not isinstance(per_id, list):
        raise InputError(result.path, "missing: per_id (a list of per-task records)", field="per_id")
    records: list[JsonObject] = []
    for i, record in enumerate(per_id):
        details = record.get("details") if isinstance(record, dict) else None
        matches = details.get("matches") if isinstance(details, dict) else None
        if not isinstance(record, dict) or not isinstance(matches, list):
            raise InputError(result.path, "missing: per-task match details (per_id[].details.matches), which the "
                             "viewer needs: score the run again", task_id=str(
                                 record.get("id") if isinstance(record, dict) else f"#{i}"),
                             field=f"per_id[{i}].details.matches")
        records.append(record)
    return records


def read_run(folder: Path) -> Run:
    """Read and check a run folder: its results, their per-task details and the trajectories they name."""
    folder = Path(folder)
    results = collect_run(folder)
    per_id, gt, predictions, alternatives = {}, {}, {}, {}
    for result in results:
        if not is_number(result.meta.get("tau_strong")):
            raise InputError(result.path, "missing: meta.tau_strong, which the viewer needs: score the run "
                             "again", field="meta.tau_strong")
        per_id[result.name] = _check_per_id(result, read_json(result.path, "results file").get("per_id"))
        key = reference_key(result)
        if key not in gt:
            first, several = read_references(list(key))
            gt[key], alternatives[key] = first.tasks, several or {}
        predictions[result.name] = read_trajectories(_meta_file(result, "predictions", "prediction file"),
                                                     lenient=True)
    return Run(folder, results, per_id, gt, predictions, alternatives)


def _task_average(record: JsonObject) -> float | None:
    """The mean of a task's alignment metrics that are in the Average Score (for 'models differ most')."""
    values = []
    for column in leaderboard_columns("alignment"):
        key = next((k for k in column.keys if is_number(record.get(k))), None)
        if column.in_average and key is not None:
            values.append(real(record[key]))
    return sum(values) / len(values) if values else None


def steps_of(trajectory: Trajectory | None) -> list[list[list[object]]]:
    """[[tool, arguments], ...] per step (arguments cut to MAX_TEXT per string; NaN and the infinities of a
    prediction read leniently shown as strings, as the results echo them)."""
    if trajectory is None:
        return []
    return [[[c.name, cut(c.arguments if c.warning is None else strict_value(c.arguments))] for c in step.calls]
            for step in trajectory.steps]


def task_index(run: Run, slugs: dict[str, str]) -> dict[str, object]:
    """Every task of the run's reference: family, question, image, and each model's per-task average."""
    order = [r.name for r in run.results]
    averages: dict[str, list[float | None]] = {}
    for m, name in enumerate(order):
        for record in run.per_id[name]:
            averages.setdefault(str(record["id"]), [None] * len(order))[m] = _task_average(record)
    tasks: dict[str, dict[str, object]] = {}
    for gt in run.gt.values():
        for tid, t in gt.items():
            if tid in averages and tid not in tasks:
                question = t.raw.get("question")
                tasks[tid] = {"id": tid, "family": t.type or "", "scores": averages[tid],
                              "question": cut(question) if isinstance(question, str) else ""}
    return {"models": [slugs[n] for n in order], "names": order, "tasks": list(tasks.values())}


def scored_ids(run: Run) -> set[str]:
    """The ids of the tasks some model of the run was scored on."""
    return {str(r["id"]) for records in run.per_id.values() for r in records}


def reference_data(run: Run, images: dict[str, str | None]) -> dict[str, dict[str, object]]:
    """id -> {family, question, steps, image, image_file} of every reference task some model was scored
    on; `images` gives per task with an image it may show that image's path in the site (None when
    the file was not found), so a task without an entry there shows no image name."""
    scored = scored_ids(run)
    out = {}
    for gt in run.gt.values():
        for tid, t in gt.items():
            if tid in scored and tid not in out:
                out[tid] = {"family": t.type or "", "question": cut(t.raw.get("question") or ""),
                            "steps": steps_of(t), "image": t.raw["image"] if tid in images else None,
                            "image_file": images.get(tid)}
    return out


def error_flags(trajectory: Trajectory | None) -> list[list[bool | None]] | None:
    """Per step, per predicted call its ``is_error`` as the prediction file records it (None where a
    call has none); None when no call carries one."""
    if trajectory is None:
        return None
    raw_steps = trajectory.raw.get("steps")
    raw_steps = raw_steps if isinstance(raw_steps, list) else []
    flags: list[list[bool | None]] = []
    for si, step in enumerate(trajectory.steps):
        raw = raw_steps[si].get("calls") if si < len(raw_steps) and isinstance(raw_steps[si], dict) else None
        raw = raw if isinstance(raw, list) and len(raw) == len(step.calls) else [{}] * len(step.calls)
        flags.append([c.get("is_error") if isinstance(c, dict) and isinstance(c.get("is_error"), bool) else None
                      for c in raw])
    return flags if any(f is not None for step in flags for f in step) else None


def not_made(result: ModelResult, record: JsonObject, trajectory: Trajectory | None) -> list[int]:
    """The flat indices of a task's predicted calls that were never made (illegal format); InputError
    when the run matched one of them (it was scored before such calls were left unmatched)."""
    if trajectory is None:
        return []
    indices = [i for i, call in enumerate(trajectory.calls) if not call.made]
    matched = {m.get("pred_call_index") for m in _match_list(record) if isinstance(m, dict)}
    wrong = sorted(set(indices).intersection(matched))
    if wrong:
        raise InputError(result.path, f"the run matched predicted call #{wrong[0]}, which was never made (illegal "
                                      "format); it was scored before such calls were left unmatched: score it again",
                         task_id=str(record["id"]), field="per_id.details.matches")
    return indices


def _match_list(record: JsonObject) -> list[JsonValue]:
    """A checked record's details.matches (`_check_per_id`)."""
    details = record["details"]
    matches = details.get("matches") if isinstance(details, dict) else None
    return matches if isinstance(matches, list) else []


def _chosen_reference(run: Run, result: ModelResult, record: JsonObject) -> tuple[int | None, Trajectory | None,
                                                                                       int]:
    """(the index of the reference the task was aligned with, or None with one reference per task; that
    reference when the run's reference file holds it; the number of references it holds for the task)."""
    key, tid = reference_key(result), str(record["id"])
    index = record.get("reference")
    alternatives = run.alternatives[key].get(tid) or ((run.gt[key][tid],) if tid in run.gt[key] else ())
    if not isinstance(index, int) or isinstance(index, bool):
        return None, run.gt[key].get(tid), len(alternatives)
    return index, alternatives[index] if 0 <= index < len(alternatives) else None, len(alternatives)


def _check_counts(result: ModelResult, record: JsonObject, reference: Trajectory | None,
                  prediction: Trajectory | None) -> None:
    """InputError unless the trajectory files still hold the calls the run scored for this task."""
    for key, trajectory, meta in (("total_gt_calls", reference, "gt"), ("total_pred_calls", prediction, "predictions")):
        count = trajectory.num_calls if trajectory is not None else None
        if record.get(key) is not None and record[key] != count:
            raise InputError(result.path, f"the run scored {record[key]} call(s) but {result.meta[meta]} now holds "
                             f"{'no such task' if count is None else count}; the file changed after scoring: score "
                             "it again", task_id=str(record["id"]), field=f"per_id.{key}")


def _matches(result: ModelResult, record: JsonObject, tau_strong: float) -> list[list[object]]:
    """[[reference call, predicted call, similarity, strong 0/1]] of a task's match details (flat call
    indices); InputError for a match without integer indices and a numeric similarity."""
    out: list[list[object]] = []
    for i, match in enumerate(_match_list(record)):
        g, p, sim = (match.get(k) if isinstance(match, dict) else None
                     for k in ("gt_call_index", "pred_call_index", "similarity"))
        similarity = number_or_none(sim)
        if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in (g, p)) or similarity is None:
            raise InputError(result.path, "a match needs call indices (integers >= 0) and a numeric similarity",
                             task_id=str(record["id"]), field=f"per_id.details.matches[{i}]")
        out.append([g, p, similarity, 1 if similarity >= tau_strong else 0])
    return out


def _label(key: str) -> str:
    return label_of(key) if key in BY_KEY else key.replace("_", " ").capitalize()


class ModelData(TypedDict):
    """One model's site data (`model_data`): each task's view by id, in the results' order."""

    name: str
    tau_strong: float
    tau_weak: float | None
    profile: JsonValue
    metrics: list[list[str]]
    blocks: list[dict[str, object]]
    order: list[str]
    tasks: dict[str, dict[str, object]]
    lost: dict[str, list[object]]


def model_data(run: Run, result: ModelResult) -> ModelData:
    """One model's site data: per task its metrics, predicted steps (with their calls' is_error and the
    calls never made, ``unmade``), matches,
    what each evaluator's display shows of it (``blocks``), the reference it was aligned with and whether
    that reference has its calls in one step (``one_step``: the published Order Consistency has no step
    pairs there); the evaluators' blocks of the model as a whole."""
    tau_strong = real(result.meta["tau_strong"])
    predictions = run.predictions[result.name]
    records = run.per_id[result.name]
    shown = evaluations_of(result, predictions, [str(r["id"]) for r in records])
    metric_keys = [m for m in (*(k for c in leaderboard_columns("alignment") for k in c.keys), *task_columns(records))
                   if any(is_number(r.get(m)) for r in records)]
    hidden = COUNT_KEYS | shown_keys()
    tasks: dict[str, dict[str, object]] = {}
    order: list[str] = []
    for record in records:
        tid = str(record["id"])
        details = block_of(record["details"])
        trajectory = predictions.tasks.get(tid)
        error = record_error(trajectory.raw if trajectory is not None else None)
        index, chosen, n_refs = _chosen_reference(run, result, record)
        if index is None or chosen is not None:
            _check_counts(result, record, chosen, trajectory)
        tasks[tid] = {
            "m": [number_or_none(record.get(k)) for k in metric_keys],
            "n": [record.get("total_gt_calls"), record.get("total_pred_calls"), record.get("matched")],
            "steps": steps_of(trajectory),
            "errors": error_flags(trajectory),
            "unmade": not_made(result, record, trajectory),
            "matches": _matches(result, record, tau_strong),
            "ugt": details.get("unmatched_gt_indices") or [],
            "upred": details.get("unmatched_pred_indices") or [],
            "blocks": shown.tasks.get(tid, []),
            "one_step": chosen is not None and sum(1 for step in chosen.steps if step.calls) == 1,
            "reference": None if index is None else {"index": index, "of": n_refs,
                                                      "steps": steps_of(chosen) if index and chosen else None},
            "extra": {k: cut(v) for k, v in record.items() if k not in BY_KEY and k not in hidden},
            "final_reply": cut(trajectory.raw.get("final_reply")) if trajectory is not None and isinstance(
                trajectory.raw.get("final_reply"), str) else None,
            "error": [cut(v) for v in error] if error else None,
        }
        order.append(tid)
    return {"name": result.name, "tau_strong": tau_strong, "tau_weak": number_or_none(result.meta.get("tau_weak")),
            "profile": result.meta.get("profile"), "metrics": [[k, _label(k)] for k in metric_keys],
            "blocks": shown.model, "order": order, "tasks": tasks,
            "lost": {i: [cut(v) for v in e]
                     for i, e in lost_tasks({i: t.raw for i, t in predictions.tasks.items()}).items()}}
