"""In-process threshold grid: every (tau_weak, tau_strong) point from one similarity pass."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.align import match
from engine.contract import ConfigError, atomic_write_csv, atomic_write_json
from engine.contract.progress import track
from engine.metrics import TaskScores, aggregate, match_structure, task_scores
from engine.pipeline import PreparedSweep, selected_samples
from engine.thresholds import Thresholds

GRID_FILES = ("threshold_grid.json", "threshold_grid.csv")


def threshold_grid(prepared: PreparedSweep, tau_weak_grid: list[float], tau_strong_grid: list[float],
                   names: list[str], progress: bool = False,
                   each: Callable[[Thresholds, TaskScores, list[dict]], None] | None = None) -> list[dict]:
    """Aggregate metrics of every prediction file at every grid point (rows: model, tau_weak, tau_strong, ...).

    The assignment and the step structure are computed once per tau_weak; tau_strong only changes
    the strong-similarity metrics. each: called at every grid point with its thresholds, its per-sample
    scores and its rows (one per file).
    """
    tables = prepared.tables
    rows = []
    grid = [[Thresholds(w, s) for s in tau_strong_grid] for w in tau_weak_grid]  # checked first
    if not tau_strong_grid:
        raise ConfigError("the threshold grid needs at least one tau_strong")
    for points in track(grid, "threshold grid", progress, unit="tau_weak"):
        tau_weak = points[0].tau_weak
        with prepared.kernel_stage("align"):
            matches = match(prepared.candidates, tau_weak)
        with prepared.kernel_stage("metrics"):
            structure = match_structure(tables, matches)
        for point in points:
            with prepared.kernel_stage("metrics"):
                scores = task_scores(tables, matches, point.tau_strong, prepared.settings.profile, structure)
                here = []
                for f, name in enumerate(names):
                    idx = selected_samples(tables, scores, f, prepared.settings)
                    here.append({"model": name, "tau_weak": tau_weak, "tau_strong": point.tau_strong,
                                 **aggregate(scores, idx)})
                rows += here
            if each is not None:
                each(point, scores, here)
    return rows


def write_grid(rows: list[dict], directory: Path) -> None:
    """threshold_grid.json and threshold_grid.csv in directory (atomic)."""
    atomic_write_json(directory / GRID_FILES[0], rows)
    if rows:
        atomic_write_csv(directory / GRID_FILES[1], list(rows[0]), rows)
