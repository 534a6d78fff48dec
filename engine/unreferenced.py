"""Scoring without reference trajectories: the evaluators' values of each prediction file (answer
equivalence, outcome checks, rubric verdicts, tool use) joined into its results_eval.json, for the
benchmarks that publish no reference trajectories (MCPVerse, VisualToolBench). The alignment metrics
are absent; the budget (steps and calls per task) is counted from the predictions."""

from __future__ import annotations

import logging
from pathlib import Path

from engine.contract import TrajectoryFile, atomic_write_csv, atomic_write_json, read_trajectories, scorable
from engine.judge_results import JoinedFiles, joined_aggregate, load_joined
from engine.results import join_values

log = logging.getLogger(__name__)

NO_REFERENCE = ("no reference trajectories (data.gt, data.references): scoring the evaluator files only; "
                "the alignment metrics (Recall, Precision, ...) and the Average Score are absent")
"""The one line an unreferenced run says."""


def _budget(preds: TrajectoryFile, ids: list[str]) -> dict[str, float | int]:
    """Task count, predicted calls and the budget metrics (avg_Rounds, avg_tool_calls) over these ids."""
    steps = [len(preds.tasks[i].steps) for i in ids]
    calls = sum(len(preds.tasks[i].calls) for i in ids)
    return {"num_ids": len(ids), "total_pred_calls": calls,
            "avg_Rounds": sum(steps) / len(ids) if ids else 0.0,
            "avg_tool_calls": calls / len(ids) if ids else 0.0}


def write_unreferenced(pred_paths: list[Path], dirs: list[Path], names: list[str],
                       judges: list[JoinedFiles]) -> list[dict]:
    """Write each prediction file's results_eval.json and .csv (per task and overall: the budget and the
    joined evaluator values, per family as well; ``meta.gt`` null) into its folder; returns the aggregates."""
    aggregates = []
    for path, directory, name, files in zip(pred_paths, dirs, names, judges):
        preds = scorable(read_trajectories(path, lenient=True))
        joined = load_joined(files, preds)
        ids = list(preds.tasks)
        per_id = [{"id": tid, "total_pred_calls": len(preds.tasks[tid].calls)} for tid in ids]
        agg = _budget(preds, ids)
        columns = ["id", "total_pred_calls"]
        if joined is not None:
            columns += join_values(per_id, agg, joined)
        families: dict[str, list[str]] = {}
        for tid in ids:
            families.setdefault(preds.tasks[tid].type or "unknown", []).append(tid)
        by_type = {}
        for family, members in sorted(families.items()):
            by_type[family] = _budget(preds, members)
            if joined is not None:
                by_type[family].update(joined_aggregate(joined, members, totals=False))
        meta = {"gt": None, "predictions": str(path), "model": name, **(files.meta() if files else {})}
        atomic_write_csv(directory / "results_eval.csv", columns, per_id)
        atomic_write_json(directory / "results_eval.json",
                          {"aggregate": agg, "per_id": per_id, "by_type": by_type, "meta": meta})
        aggregates.append(agg)
    return aggregates
