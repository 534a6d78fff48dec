"""Report step: the published scorer's drop-in output files of each prediction file, written atomically."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import numpy as np

from engine.contract import JsonObject, atomic_write_csv, atomic_write_json, strict_value
from engine.judge_results import Joined, joined_aggregate
from engine.metrics import TaskScores, aggregate
from engine.serialize import SweepTables
from kernels.structure import step_matrices

log = logging.getLogger(__name__)

RESULT_FILES = ("strong_matches.json", "weak_matches.json", "unmatched_predictions.json", "results_eval.csv",
                "results_eval.json")
"""The files written for each prediction file, in writing order."""


class ResultsDocument(TypedDict):
    """results_eval.json: the aggregate, one entry per scored id, the aggregates per task family, the meta."""

    aggregate: JsonObject
    per_id: list[JsonObject]
    by_type: dict[str, JsonObject]
    meta: JsonObject


@dataclass
class SampleView:
    """Host-side arrays needed to describe each sample's matches."""

    tables: SweepTables
    match_sample: np.ndarray
    match_gt: np.ndarray
    match_pred: np.ndarray
    match_similarity: np.ndarray

    def __post_init__(self) -> None:
        n = self.tables.num_samples
        bounds = np.searchsorted(self.match_sample, np.arange(n + 1))
        self.match_bounds = bounds

    def matches_of(self, sample: int) -> slice:
        """Slice of the match arrays that belongs to this sample."""
        return slice(int(self.match_bounds[sample]), int(self.match_bounds[sample + 1]))


def _call_record(task_calls: list, call_index: int, step_index: int, step_offsets: list[int]) -> dict:
    call = task_calls[call_index]
    arguments = call.arguments if call.warning is None else strict_value(call.arguments)
    return {"tool": call.name, "arguments": arguments, "step_index": step_index,
            "call_index_in_step": call_index - step_offsets[step_index]}


def _step_offsets(steps: tuple) -> list[int]:
    offsets, total = [], 0
    for step in steps:
        offsets.append(total)
        total += len(step.calls)
    return offsets


def per_id_records(view: SampleView, scores: TaskScores, samples: np.ndarray,
                   tau_strong: float) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    """per_id entries and the strong / weak / unmatched-prediction records of these samples."""
    t = view.tables
    per_id: list[dict] = []
    strong: list[dict] = []
    weak: list[dict] = []
    unmatched: list[dict] = []
    names = scores.names
    sample_ref = t.sample_ref if t.several_references else None  # each sample's reference, with several
    for s in samples.tolist():
        task = t.sample_task[s]
        gt_task = t.gt_tasks[task]
        pred_task = t.sample_pred[s]
        tid = t.task_ids[task]
        sl = view.matches_of(s)
        g_flat = view.match_gt[sl]
        p_flat = view.match_pred[sl]
        sims = view.match_similarity[sl]
        g_idx = t.gt_index[g_flat]
        p_idx = t.pred_index[p_flat]
        g_step = t.gt_step[g_flat]
        p_step = t.pred_step[p_flat]
        gt_calls = gt_task.calls
        pred_calls = pred_task.calls
        n_gt_steps, n_pred_steps = len(gt_task.steps), len(pred_task.steps)
        steps = step_matrices(g_step, p_step, sims, n_gt_steps, n_pred_steps)
        matched_gt = set(g_idx.tolist())
        matched_pred = set(p_idx.tolist())
        matches = []
        g_off, p_off = _step_offsets(gt_task.steps), _step_offsets(pred_task.steps)
        for gi, pi, gs, ps, sim in zip(g_idx.tolist(), p_idx.tolist(), g_step.tolist(), p_step.tolist(),
                                       sims.tolist()):
            matches.append({"gt_call_index": gi, "pred_call_index": pi, "gt_step": gs, "pred_step": ps,
                            "similarity": sim, "gt_tool": gt_calls[gi].name, "pred_tool": pred_calls[pi].name})
            record = {"id": tid, "similarity": sim,
                      "gt": _call_record(gt_calls, gi, gs, g_off),
                      "pred": _call_record(pred_calls, pi, ps, p_off)}
            (strong if sim >= tau_strong else weak).append(record)
        p_step_all = [si for si, step in enumerate(pred_task.steps) for _ in step.calls]
        for pi in range(len(pred_calls)):
            if pi not in matched_pred:
                unmatched.append({"id": tid, "pred": _call_record(pred_calls, pi, p_step_all[pi], p_off)})
        entry = {"id": tid, "total_gt_calls": int(scores.n_gt[s]), "total_pred_calls": int(scores.n_pred[s]),
                 "matched": int(scores.matched[s])}
        entry.update({name: float(scores.values[name][s]) for name in names})
        if sample_ref is not None:
            entry["reference"] = int(sample_ref[s])
        entry["details"] = {
            "unmatched_gt_indices": [i for i in range(len(gt_calls)) if i not in matched_gt],
            "unmatched_pred_indices": [i for i in range(len(pred_calls)) if i not in matched_pred],
            "matches": matches, "W": steps.weights.tolist(), "primary_pred_for_gt": steps.primary,
            "per_step_fragmentation": steps.fragmentation}
        per_id.append(entry)
    return per_id, strong, weak, unmatched


def by_type(tables: SweepTables, scores: TaskScores, samples: np.ndarray, judge: Joined | None = None) -> dict:
    """Aggregates per task family (`type` of the GT task, else of the prediction), with the joined values."""
    families: dict[str, list[int]] = {}
    for s in samples.tolist():
        family = tables.task_types[tables.sample_task[s]] or tables.sample_pred[s].type or "unknown"
        families.setdefault(family, []).append(s)
    out = {}
    for name, idx in sorted(families.items()):
        out[name] = aggregate(scores, np.asarray(idx))
        if judge:
            ids = [tables.task_ids[tables.sample_task[s]] for s in idx]
            out[name].update(joined_aggregate(judge, ids, totals=False))
    return out


def _warn_unlisted(path: str, ids: list[str], listed: frozenset[str], headline: str, value: object) -> None:
    """Warn when a file of every task (answers, checks) lacks entries for scored tasks (a judge run that
    stopped early), and, in one line, when nothing in it can be scored (its headline is null)."""
    missing = [i for i in ids if i not in listed]
    if missing:
        log.warning("%s: %d of %d scored task(s) have an entry, %d have none (judge them: run the judge app "
                    "again): %s", path, len(ids) - len(missing), len(ids), len(missing),
                    ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
    if value is None:
        log.warning("%s: nothing in it can be scored: %s is null (%d entr(ies), none with a score)", path,
                    headline, len(listed))


def join_values(per_id: list[dict], agg: dict, judge: Joined) -> list[str]:
    """Join the evaluator values to each per_id entry and to the file's aggregate `agg` (in place),
    naming in warnings the scored ids an evaluator file lacks; returns the joined per-task columns."""
    ids = [entry["id"] for entry in per_id]
    for path, keys in judge.expected:
        missing = [i for i in ids if not any(k in judge.per_id.get(i, {}) for k in keys)]
        if missing:
            log.warning("%s: %d scored id(s) have no judge record: %s", path, len(missing),
                        ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
    for entry in per_id:
        entry.update(judge.per_id.get(entry["id"], {}))
    agg.update(joined_aggregate(judge, ids))
    for path, listed, headline in judge.listed:
        _warn_unlisted(path, ids, listed, headline, agg.get(headline))
    return judge.keys()


@dataclass
class FileResults:
    """One prediction file's outputs, before they are written: the results_eval.json content (`result`:
    aggregate, per_id, by_type, meta), the strong / weak / unmatched-prediction records and the columns of
    results_eval.csv."""

    result: ResultsDocument
    strong: list[dict]
    weak: list[dict]
    unmatched: list[dict]
    columns: list[str]

    @property
    def aggregate(self) -> JsonObject:
        """The file's aggregate (results_eval.json's ``aggregate``)."""
        return self.result["aggregate"]


def file_results(view: SampleView, scores: TaskScores, samples: np.ndarray, tau_strong: float, meta: dict,
                 judge: Joined | None = None) -> FileResults:
    """One prediction file's outputs, in memory (write_results writes them).

    With evaluator results, each id and every aggregate also get the joined values (e.g.
    task_completion and information_grounding as plain means over the ids that were judged, call
    outcomes as sums, the tool-use analytics computed from the predictions); the scored ids an
    evaluator file with per-task values lacks are named in a warning.
    """
    per_id, strong, weak, unmatched = per_id_records(view, scores, samples, tau_strong)
    agg = aggregate(scores, samples)
    columns = ["id", "total_gt_calls", "total_pred_calls", "matched", *scores.names]
    if judge:
        columns += join_values(per_id, agg, judge)
    result: ResultsDocument = {"aggregate": agg, "per_id": per_id,
                               "by_type": by_type(view.tables, scores, samples, judge), "meta": meta}
    return FileResults(result, strong, weak, unmatched, columns)


def write_results(directory: Path, results: FileResults) -> dict:
    """Write the five output files of one prediction file (RESULT_FILES, each atomically); returns its aggregate."""
    for name, records in zip(RESULT_FILES[:3], (results.strong, results.weak, results.unmatched)):
        atomic_write_json(directory / name, records)
    atomic_write_csv(directory / "results_eval.csv", results.columns, results.result["per_id"])
    atomic_write_json(directory / "results_eval.json", results.result)
    return results.aggregate

