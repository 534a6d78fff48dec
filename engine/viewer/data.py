"""What the viewer shows, gathered from a finished scoring run: plain JSON-ready dicts, checked.

A run folder holds one ``results_eval.json`` per scored prediction file (the folder itself for a
single model, sub-folders for a sweep). Each names in its ``meta`` the reference (``gt``) and the
predictions it scored, and, when joined, the judge files (``judge``: taskcompletion, ``calls``:
callanalysis; ``rubrics``, ``answer_equivalence``, ``verifiers``: the outcome evaluators' files, also
looked up beside the predictions by their suffix). The viewer needs the per-task match details of
``per_id`` and both trajectory files; a run missing any of them is refused with an `InputError`
naming what is missing. With several references per task, each task is shown against the reference
it was aligned with (``per_id[].reference``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.contract import InputError, is_number, lost_tasks, read_json, read_trajectories, record_error, strict_value
from engine.contract.trajectory import Trajectory
from engine.evaluators import answer_equivalence, evaluator, verifiers, vtb_rubrics
from engine.evaluators.call_outcomes import CALL_KEYS
from engine.evaluators.m3_judges import JUDGE_KEYS, read_taskcompletion
from engine.evaluators.tool_use import COUNTS, KEY as TOOL_USE
from engine.judge_results import companion_path
from engine.metricspec import AVERAGE, BY_KEY, label_of, leaderboard_columns
from engine.references import read_references
from engine.reports.read import ModelResult, collect_run
from engine.reports.tables import leaderboard_table

log = logging.getLogger(__name__)

MAX_TEXT = 20_000
"""Longest string kept in the site's data; a longer one is cut with a note of its full length."""
MAX_REPLY = 600
"""Longest judge reply kept in the site (the judge file keeps it whole)."""
_COUNT_KEYS = frozenset({"num_ids", "total_gt_calls", "total_pred_calls", "matched", "id", "details"})
OUTCOME_LABELS = {"rubric_score": "Rubric Score", "pass_rate": "Rubric Pass", "answer_success": "Answer E",
                  "check_success": "Checks Passed"}
"""Per-task values of the outcome evaluators shown as task-list columns, with their labels."""
_SHOWN = frozenset({*OUTCOME_LABELS, "answer_level", "check_error", TOOL_USE, "reference"})
"""Per-task keys the task view shows in their own place (not among the other values)."""


@dataclass(frozen=True)
class Run:
    """A run as the viewer reads it: the results, the leaderboard and each model's files."""

    folder: Path
    results: list[ModelResult]
    per_id: dict[str, list[dict[str, Any]]]     # model name -> results' per_id records
    gt: dict[tuple[Path, ...], dict[str, Trajectory]]  # reference files -> their trajectories (each id's first)
    predictions: dict[str, dict[str, Trajectory]]
    alternatives: dict[tuple[Path, ...], dict[str, tuple[Trajectory, ...]]]  # reference files -> id -> its references


def slug(index: int, name: str) -> str:
    """A file-name-safe, unique key of the index-th model."""
    return f"{index:02d}-" + (re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "model")[:60]


def cut(value: Any) -> Any:
    """The value with every string longer than MAX_TEXT cut, noting its length (JSON-ready)."""
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + f"\u2026 [{len(value):,} characters in all]"
    if isinstance(value, list):
        return [cut(v) for v in value]
    if isinstance(value, dict):
        return {str(k): cut(v) for k, v in value.items()}
    return value


def _meta_file(result: ModelResult, key: str, what: str) -> Path:
    value = result.meta.get(key)
    if not isinstance(value, str) or not value:
        raise InputError(result.path, f"missing: meta.{key} (the {what}); the run is from an older version or "
                         "incomplete: score it again with scripts/score.py", field=f"meta.{key}")
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
    if not isinstance(several, list) or not several or not all(isinstance(p, str) and p for p in several):
        raise InputError(result.path, "must be a list of reference files", field="meta.references")
    missing = [p for p in several if not Path(p).is_file()]
    if missing:
        raise InputError(result.path, f"the reference file {missing[0]} named in meta.references is missing",
                         field="meta.references")
    return tuple(Path(p) for p in several)


def _check_per_id(result: ModelResult, per_id: Any) -> list[dict[str, Any]]:
    if not isinstance(per_id, list):
        raise InputError(result.path, "missing: per_id (a list of per-task records)", field="per_id")
    for i, record in enumerate(per_id):
        details = record.get("details") if isinstance(record, dict) else None
        if not isinstance(details, dict) or not isinstance(details.get("matches"), list):
            raise InputError(result.path, "missing: per-task match details (per_id[].details.matches); the run "
                             "is from an older version: score it again", task_id=str(
                                 record.get("id") if isinstance(record, dict) else f"#{i}"),
                             field=f"per_id[{i}].details.matches")
    return per_id


def read_run(folder: Path) -> Run:
    """Read and check a run folder: its results, their per-task details and the trajectories they name."""
    folder = Path(folder)
    results = collect_run(folder)
    per_id, gt, predictions, alternatives = {}, {}, {}, {}
    for result in results:
        if not is_number(result.meta.get("tau_strong")):
            raise InputError(result.path, "missing: meta.tau_strong; the run is from an older version: "
                             "score it again", field="meta.tau_strong")
        per_id[result.name] = _check_per_id(result, read_json(result.path, "results file").get("per_id"))
        key = reference_key(result)
        if key not in gt:
            first, several = read_references(list(key))
            gt[key], alternatives[key] = first.tasks, several or {}
        predictions[result.name] = read_trajectories(_meta_file(result, "predictions", "prediction file"),
                                                     lenient=True).tasks
    return Run(folder, results, per_id, gt, predictions, alternatives)


def _number(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def _extra_columns(results: list[ModelResult]) -> list[dict[str, Any]]:
    """Columns for aggregate keys beyond the metric table's: numbers, {mean, std} and objects of numbers."""
    columns: dict[str, dict[str, Any]] = {}
    for r in results:
        for key, value in r.aggregate.items():
            if key in BY_KEY or key in _COUNT_KEYS:
                continue
            if is_number(value):
                columns.setdefault(key, {"key": key, "label": label_of(key), "path": [key]})
            elif isinstance(value, dict) and is_number(value.get("mean")):
                columns.setdefault(key, {"key": key, "label": label_of(key), "path": [key], "std": True})
            elif isinstance(value, dict):
                for sub, inner in value.items():
                    if is_number(inner) or (isinstance(inner, dict) and is_number(inner.get("mean"))):
                        columns.setdefault(f"{key}.{sub}", {"key": f"{key}.{sub}", "label": f"{label_of(key)}: {sub}",
                                                            "path": [key, sub], "std": isinstance(inner, dict)})
    return list(columns.values())


def _extra_cell(aggregate: dict[str, Any], column: dict[str, Any]) -> Any:
    value: Any = aggregate
    for part in column["path"]:
        value = value.get(part) if isinstance(value, dict) else None
    if column.get("std"):
        return [_number(value.get("mean")), _number(value.get("std"))] if isinstance(value, dict) else None
    return _number(value)


def board(run: Run, slugs: dict[str, str]) -> dict[str, Any]:
    """The leaderboard as the reports compute it (Table 2), plus the extra aggregate columns."""
    table = leaderboard_table(run.results)
    extra = _extra_columns(run.results)
    by_name = {r.name: r for r in run.results}
    rows = []
    for row in table.rows:
        result = by_name[row[0]]
        rows.append({"model": row[0], "slug": slugs[row[0]], "cells": row[1:],
                     "extra": [_extra_cell(result.aggregate, c) for c in extra],
                     "tasks": result.aggregate.get("num_ids")})
    return {"columns": table.columns[1:], "average": AVERAGE, "note": table.note,
            "extra": [{"key": c["key"], "label": c["label"], "std": bool(c.get("std"))} for c in extra],
            "rows": rows}


def _task_average(record: dict[str, Any]) -> float | None:
    """The mean of a task's alignment metrics that are in the Average Score (for 'models differ most')."""
    values = []
    for column in leaderboard_columns("alignment"):
        key = next((k for k in column.keys if is_number(record.get(k))), None)
        if column.in_average and key is not None:
            values.append(float(record[key]))
    return sum(values) / len(values) if values else None


def steps_of(trajectory: Trajectory | None) -> list[list[list[Any]]]:
    """[[tool, arguments], ...] per step (arguments cut to MAX_TEXT per string; NaN and the infinities of a
    prediction read leniently shown as strings, as the results echo them)."""
    if trajectory is None:
        return []
    return [[[c.name, cut(c.arguments if c.warning is None else strict_value(c.arguments))] for c in step.calls]
            for step in trajectory.steps]


def task_index(run: Run, slugs: dict[str, str]) -> dict[str, Any]:
    """Every task of the run's reference: family, question, image, and each model's per-task average."""
    order = [r.name for r in run.results]
    averages: dict[str, list[float | None]] = {}
    for m, name in enumerate(order):
        for record in run.per_id[name]:
            averages.setdefault(str(record["id"]), [None] * len(order))[m] = _task_average(record)
    tasks: dict[str, dict[str, Any]] = {}
    for gt in run.gt.values():
        for tid, t in gt.items():
            if tid in averages and tid not in tasks:
                question = t.raw.get("question")
                tasks[tid] = {"id": tid, "family": t.type or "", "scores": averages[tid],
                              "question": cut(question) if isinstance(question, str) else ""}
    return {"models": [slugs[n] for n in order], "names": order, "tasks": list(tasks.values())}


def reference_data(run: Run, images: dict[str, str]) -> dict[str, Any]:
    """id -> {family, question, steps, image} of every reference task some model was scored on."""
    scored = {str(r["id"]) for records in run.per_id.values() for r in records}
    out = {}
    for gt in run.gt.values():
        for tid, t in gt.items():
            if tid in scored and tid not in out:
                image = t.raw.get("image")
                out[tid] = {"family": t.type or "", "question": cut(t.raw.get("question") or ""),
                            "steps": steps_of(t), "image": image if isinstance(image, str) else None,
                            "image_file": images.get(tid)}
    return out


def _outcomes(path: Path | None) -> tuple[dict[str, dict[tuple[int, int], str]], dict[str, str]]:
    """(id -> (step, call) -> outcome class, id -> illegal format reason) of a callanalysis file's per-call labels."""
    if path is None:
        return {}, {}
    root = read_json(path, "call outcomes file")
    labels: dict[str, dict[tuple[int, int], str]] = {}
    calls = root.get("calls") if isinstance(root, dict) else None
    for i, label in enumerate(calls if isinstance(calls, list) else []):
        if not (isinstance(label, dict) and isinstance(label.get("step"), int) and isinstance(label.get("call"), int)):
            raise InputError(path, "a call label needs integer 'step' and 'call'", field=f"calls[{i}]")
        labels.setdefault(str(label.get("id")), {})[(label["step"], label["call"])] = label.get("label") or "undecided"
    illegal = root.get("illegal") if isinstance(root, dict) else None
    return labels, {str(k): str(v) for k, v in (illegal or {}).items()} if isinstance(illegal, dict) else {}


def _reply(text: Any) -> Any:
    if not isinstance(text, str) or len(text) <= MAX_REPLY:
        return text
    return text[:MAX_REPLY] + f"\u2026 [{len(text):,} characters in all: see the judge file]"


def _judges(path: Path | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(id -> {tc, ig: {final, judges: [{name, score, reply?}]}}, meta with agreement) of a taskcompletion file."""
    if path is None:
        return {}, {}
    entries = read_taskcompletion(path)
    root = read_json(path, "judge file")
    meta = root.get("meta") if isinstance(root, dict) and isinstance(root.get("meta"), dict) else {}

    def block(b: Any) -> dict[str, Any] | None:
        if not isinstance(b, dict):
            return None
        judges = [{k: _reply(v) if k == "reply" else cut(v) for k, v in j.items() if k in ("name", "score", "reply")}
                  for j in b.get("judges") or [] if isinstance(j, dict)]
        return {"final": _number(b.get("final")), "judges": judges}

    per_id = {tid: {"tc": block(e), "ig": block(e.get("info_grounding"))} for tid, e in entries.items()}
    keep = {k: cut(meta[k]) for k in ("judges", "prompt_versions", "agreement", "failed") if k in meta}
    return per_id, keep


def _meta_path(result: ModelResult, key: str) -> Path | None:
    value = result.meta.get(key)
    if not isinstance(value, str) or not value:
        return None
    path = Path(value)
    if not path.is_file():
        log.warning("%s: the %s file %s named in meta.%s is missing; its per-task details are left out",
                    result.path, "judge" if key == "judge" else "call outcomes", path, key)
        return None
    return path


def _evaluator_path(result: ModelResult, name: str) -> Path | None:
    """An evaluator's file as the score app found it: named in the results' meta under the evaluator's
    option, else ``<predictions stem>_<suffix>.json`` beside the predictions; None when there is none."""
    e = evaluator(name)
    if isinstance(result.meta.get(e.option), str) and result.meta[e.option]:
        path = Path(result.meta[e.option])
        if not path.is_file():
            log.warning("%s: the %s file %s named in meta.%s is missing; its per-task details are left out",
                        result.path, name, path, e.option)
            return None
        return path
    path = companion_path(Path(result.meta["predictions"]), str(e.suffix))
    return path if path.is_file() else None


def _rubrics(path: Path | None) -> dict[str, dict[str, Any]]:
    """id -> {score, pass, no_critical, unanswered, turns: [{score, pass, rubrics: [{d, w, c, k, m, j}]}]}
    of a rubric verdicts file (or a drop-in verdicts list): per rubric its description, weight,
    categories, critical, verdict (true, false, null) and the judges' [name, verdict, explanation or
    error] (the judges only in the evaluator's own file)."""
    if path is None:
        return {}
    values = vtb_rubrics.read(path)
    root = read_json(path, "rubric verdicts file")
    raw = {str(k): v for k, v in root["per_id"].items()} if isinstance(root, dict) else {}  # checked by read
    out = {}
    for tid, detail in values.detail.items():
        turns = [{"score": t["score"], "pass": t["pass"], "rubrics": []} for t in detail["turns"]]
        counters = [0] * len(turns)
        for item, met in detail["rubrics"]:
            j = counters[item.turn]
            counters[item.turn] += 1
            judged = raw[tid]["turns"][item.turn]["rubrics"][j].get("judges") if tid in raw else []
            turns[item.turn]["rubrics"].append({
                "d": cut(item.description), "w": item.weight, "c": list(item.categories), "k": item.critical,
                "m": met, "j": [[str(v.get("name")), v.get("verdict"), _reply(v.get("explanation", v.get("error")))]
                                for v in judged or [] if isinstance(v, dict)]})
        score = detail.get("rubric_score")
        out[tid] = {"score": score, "pass": None if score is None else detail["pass_rate"] == 1.0,
                    "no_critical": detail["no_critical"], "unanswered": detail["unanswered"], "turns": turns}
    return out


def _answers(path: Path | None) -> dict[str, dict[str, Any]]:
    """id -> {level, score (0, 1, null when skipped), judges: [[name, score, reply or null]], reason} of
    an answer equivalence file (replies cut at MAX_REPLY)."""
    if path is None:
        return {}
    out = {}
    for tid, e in answer_equivalence.entries(path).items():
        scores = e.get("judges") if isinstance(e.get("judges"), dict) else {}
        replies = e.get("replies") if isinstance(e.get("replies"), dict) else {}
        out[tid] = {"level": e.get("level"), "score": e.get("score"), "reason": cut(e.get("reason")),
                    "judges": [[str(k), v, _reply(replies.get(k))] for k, v in scores.items()]}
    return out


def _checks(path: Path | None) -> dict[str, dict[str, Any]]:
    """id -> {check, checks (0/1 each, null with an evaluator error), passed, error, reason} of a
    verifier file."""
    if path is None:
        return {}
    return {tid: {k: cut(e.get(k)) for k in ("check", "checks", "passed", "error", "reason")}
            for tid, e in verifiers.entries(path).items()}


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


def _chosen_reference(run: Run, result: ModelResult, record: dict[str, Any]) -> tuple[int | None, Trajectory | None,
                                                                                       int]:
    """(the index of the reference the task was aligned with, or None with one reference per task; that
    reference when the run's reference file holds it; the number of references it holds for the task)."""
    key, tid = reference_key(result), str(record["id"])
    index = record.get("reference")
    alternatives = run.alternatives[key].get(tid) or ((run.gt[key][tid],) if tid in run.gt[key] else ())
    if not isinstance(index, int) or isinstance(index, bool):
        return None, run.gt[key].get(tid), len(alternatives)
    return index, alternatives[index] if 0 <= index < len(alternatives) else None, len(alternatives)


def _check_counts(result: ModelResult, record: dict[str, Any], reference: Trajectory | None,
                  prediction: Trajectory | None) -> None:
    """InputError unless the trajectory files still hold the calls the run scored for this task."""
    for key, trajectory, meta in (("total_gt_calls", reference, "gt"), ("total_pred_calls", prediction, "predictions")):
        count = trajectory.num_calls if trajectory is not None else None
        if record.get(key) is not None and record[key] != count:
            raise InputError(result.path, f"the run scored {record[key]} call(s) but {result.meta[meta]} now holds "
                             f"{'no such task' if count is None else count}; the file changed after scoring: score "
                             "it again", task_id=str(record["id"]), field=f"per_id.{key}")


def model_data(run: Run, result: ModelResult) -> dict[str, Any]:
    """One model's site data: per task its metrics, predicted steps (with their calls' is_error),
    matches, call outcomes, judges, rubric verdicts, outcome checks, tool-use counts and the reference
    it was aligned with."""
    tau_strong = float(result.meta["tau_strong"])
    outcomes, illegal = _outcomes(_meta_path(result, "calls"))
    judges, judge_meta = _judges(_meta_path(result, "judge"))
    rubrics = _rubrics(_evaluator_path(result, vtb_rubrics.NAME))
    answers = _answers(_evaluator_path(result, answer_equivalence.NAME))
    checks = _checks(_evaluator_path(result, verifiers.NAME))
    predictions = run.predictions[result.name]
    records = run.per_id[result.name]
    metric_keys = [m for m in (*(k for c in leaderboard_columns("alignment") for k in c.keys), *JUDGE_KEYS,
                               *OUTCOME_LABELS) if any(is_number(r.get(m)) for r in records)]
    tasks, order = {}, []
    for record in records:
        tid = str(record["id"])
        details = record["details"]
        trajectory = predictions.get(tid)
        index, chosen, n_refs = _chosen_reference(run, result, record)
        if index is None or chosen is not None:
            _check_counts(result, record, chosen, trajectory)
        steps = steps_of(trajectory)
        labels = outcomes.get(tid, {})
        classes = [[labels.get((si, ci)) for ci in range(len(step))] for si, step in enumerate(steps)]
        extra = {k: cut(v) for k, v in record.items()
                 if k not in BY_KEY and k not in _COUNT_KEYS and k not in CALL_KEYS and k not in _SHOWN}
        counts = record.get(TOOL_USE)
        tasks[tid] = {
            "m": [_number(record.get(k)) for k in metric_keys],
            "n": [record.get("total_gt_calls"), record.get("total_pred_calls"), record.get("matched")],
            "steps": steps,
            "errors": error_flags(trajectory),
            "matches": [[m["gt_call_index"], m["pred_call_index"], float(m["similarity"]),
                         1 if float(m["similarity"]) >= tau_strong else 0] for m in details["matches"]],
            "ugt": details.get("unmatched_gt_indices") or [],
            "upred": details.get("unmatched_pred_indices") or [],
            "outcomes": classes if labels else None,
            "counts": {k: record[k] for k in CALL_KEYS if is_number(record.get(k))},
            "illegal": illegal.get(tid),
            "judge": judges.get(tid),
            "tool_use": {k: counts.get(k) for k in COUNTS} if isinstance(counts, dict) else None,
            "rubrics": rubrics.get(tid),
            "answer": answers.get(tid),
            "checks": checks.get(tid),
            "reference": None if index is None else {"index": index, "of": n_refs,
                                                      "steps": steps_of(chosen) if index and chosen else None},
            "extra": extra,
            "final_reply": cut(trajectory.raw.get("final_reply")) if trajectory is not None and isinstance(
                trajectory.raw.get("final_reply"), str) else None,
            "error": [cut(v) for v in record_error(trajectory.raw)] if trajectory is not None and record_error(
                trajectory.raw) else None,
        }
        order.append(tid)
    return {"name": result.name, "tau_strong": tau_strong, "tau_weak": _number(result.meta.get("tau_weak")),
            "profile": result.meta.get("profile"),
            "metrics": [[k, OUTCOME_LABELS.get(k) or label_of(k)] for k in metric_keys],
            "judge_meta": judge_meta, "has_outcomes": bool(outcomes), "has_rubrics": bool(rubrics),
            "order": order, "tasks": tasks,
            "lost": {i: [cut(v) for v in e] for i, e in lost_tasks({i: t.raw for i, t in predictions.items()}).items()}}
