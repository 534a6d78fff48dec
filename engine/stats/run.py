"""The statistics step of a score run: stats.json from a scored sweep, with the threshold grid's robustness and
the trials' intervals when the run has them (docs/statistics.md)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from engine.contract import atomic_write_json
from engine.judge_results import Joined
from engine.stats.document import StatsDocument
from engine.stats.robustness import threshold_robustness
from engine.stats.settings import STATS_FILE, StatsSettings
from engine.stats.step import bootstrap_stats
from engine.stats.trials import trial_intervals
from engine.stats.units import ModelUnits, sweep_units

if TYPE_CHECKING:
    from engine.metrics import TaskScores
    from engine.pipeline import SweepScores
    from engine.thresholds import Thresholds

log = logging.getLogger(__name__)

GridPoint = tuple[tuple[float, float], list[ModelUnits]]
"""A threshold grid point (tau_weak, tau_strong) and its models' units."""


@dataclass
class GridUnits:
    """Each threshold grid point's model units, kept as the grid scores it (engine.grid.threshold_grid's `each`),
    for the robustness of the run's conclusions."""

    result: SweepScores
    names: list[str]
    joined: list[Joined | None]
    aggregates: list[dict]
    points: list[GridPoint] = field(default_factory=list)

    def keep(self, point: Thresholds, scores: TaskScores, rows: list[dict]) -> None:
        """Keep one grid point's units: the sweep's, scored at `point`, its published rows beside them."""
        published = [{**agg, **row} for agg, row in zip(self.aggregates, rows)]
        scored = replace(self.result, scores=scores, thresholds=point)
        self.points.append(((point.tau_weak, point.tau_strong),
                            sweep_units(scored, self.names, self.joined, published)))


def write_stats(folder: Path, result: SweepScores, names: list[str], joined: list[Joined | None],
                aggregates: list[dict], settings: StatsSettings, device: torch.device,
                grid: GridUnits | None = None, trial_counts: Mapping[str, list[tuple[int, int]]] | None = None,
                loud: bool = False) -> StatsDocument:
    """Write folder/stats.json for a scored sweep (its files `names`, their joined values and aggregates): the
    bootstrap of every leaderboard quantity, the robustness over the `grid`'s points when it has any, and each
    model's trial rates from its (trials, successes) per task, `trial_counts`. The step's warnings are logged
    as warnings when `loud` (stats=on), as information otherwise."""
    document = bootstrap_stats(sweep_units(result, names, joined, aggregates), settings, device)
    for warning in document["warnings"]:
        log.log(logging.WARNING if loud else logging.INFO, "stats: %s", warning)
    if grid is not None and grid.points:
        at = (result.thresholds.tau_weak, result.thresholds.tau_strong)
        document["robustness"] = threshold_robustness(document, at, grid.points, settings, device)
    if trial_counts:
        clusters = [tid if settings.cluster == "sample" else (result.gt.tasks[tid].type or "unknown")
                    for tid in sorted(result.gt.tasks)]
        document["trials"] = {model: trial_intervals(c, clusters, settings, device)
                              for model, c in trial_counts.items()}
    atomic_write_json(folder / STATS_FILE, document)
    return document
