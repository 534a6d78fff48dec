"""The statistics step: a cluster bootstrap of every leaderboard aggregate, its intervals, paired t tests,
Holm's decisions and the rank sets that follow from them (docs/statistics.md).

- engine.stats.settings: the settings and the memory check;
- engine.stats.units: each model's per-id numerators and denominators;
- engine.stats.step: the resamples and stats.json's content (bootstrap_stats);
- engine.stats.decisions: intervals, tests, ranks and ties;
- engine.stats.trials, engine.stats.robustness: the trial rates' intervals, the threshold grid's conclusions.
- engine.stats.run: the step of a score run, stats.json from a scored sweep (write_stats).
"""

from engine.stats.robustness import threshold_robustness
from engine.stats.settings import AVERAGE_KEY, MIN_CLUSTERS, STATS_FILE, StatsSettings
from engine.stats.step import bootstrap_stats
from engine.stats.trials import trial_intervals
from engine.stats.units import NEIGHBOUR_KEYS, ModelUnits, model_units, sweep_units

__all__ = ["AVERAGE_KEY", "MIN_CLUSTERS", "NEIGHBOUR_KEYS", "STATS_FILE", "ModelUnits", "StatsSettings",
           "bootstrap_stats", "model_units", "sweep_units", "threshold_robustness", "trial_intervals"]
