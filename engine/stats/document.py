"""The shape of stats.json (docs/statistics.md): what bootstrap_stats, trial_intervals and threshold_robustness
give, block by block. A key that only some blocks have sits in a ``total=False`` base of its block.

The reports read it as engine.reports.records' shapes; tests/test_document_shapes.py holds the two to the same
keys and types, and a document the step writes to exactly these keys."""

from __future__ import annotations

from typing import TypedDict


class SettingsRecord(TypedDict):
    """The statistics' settings as recorded (engine.stats.settings.StatsSettings's fields) and the clusters
    resampled; usage.json's ``settings``."""

    resamples: int
    level: float
    seed: int
    cluster: str
    method: str
    correction: str
    scheme: str
    power: float
    min_clusters: int
    clusters: int


class StatsSettingsRecord(SettingsRecord):
    """stats.json's ``settings``: the recorded settings and the device the step ran on."""

    device: str


class _Ranked(TypedDict, total=False):
    rank: int | None
    rank_low: int | None
    rank_high: int | None


class _MetricExtra(_Ranked, total=False):
    reason: str


class MetricBlock(_MetricExtra):
    """A model's quantity: its published value, its interval (None without one: `reason` says why), the
    clusters it has and the resamples left out; ranked quantities get rank, rank_low and rank_high."""

    value: float
    low: float | None
    high: float | None
    se: float | None
    clusters: int
    resamples_left_out: int


class ModelRecord(_Ranked):
    """A model: its ids and clusters, its quantities by key, the Average Score's ranks beside them."""

    ids: int
    clusters: int
    metrics: dict[str, MetricBlock]


class _PairExtra(TypedDict, total=False):
    reason: str
    implied: bool


class PairBlock(_PairExtra):
    """A pair's difference on one quantity: its t test (None where it is not tested: `reason` says why)."""

    difference: float | None
    low: float | None
    high: float | None
    p: float | None
    p_holm: float | None
    separable: bool | None
    win_probability: float | None
    se: float | None
    clusters: int
    mde: float | None
    clusters_needed: int | None


class PairRecord(TypedDict):
    """A pair of models (a before b in leaderboard order), the ids they share and their tests by key."""

    a: str
    b: str
    ids: int
    metrics: dict[str, PairBlock]


class PowerRow(TypedDict):
    """An adjacent pair of a ranked quantity (upper first): its difference, SE, MDE and clusters needed."""

    a: str
    b: str
    difference: float | None
    se: float | None
    mde: float | None
    clusters_needed: int | None


class _RateExtra(TypedDict, total=False):
    reason: str


class TrialRate(_RateExtra):
    """One trial rate at one k: its value, interval (None without one: `reason`) and the tasks it is over."""

    value: float | None
    low: float | None
    high: float | None
    tasks: int


TrialIntervals = dict[str, dict[str, TrialRate]]
"""A model's trial rates: estimator (pass_at_k, ...) -> k -> TrialRate."""


class Conclusion(TypedDict):
    """A pair's default conclusion on one quantity and whether it holds at every threshold point."""

    better: str | None
    separable: bool
    holds: bool
    changed_at: list[list[float]]


class RobustnessPair(TypedDict):
    """A pair's conclusions by key."""

    a: str
    b: str
    metrics: dict[str, Conclusion]


class RobustnessPoint(TypedDict):
    """A threshold point and Kendall's tau-b of its models' values with the default's, by key."""

    tau_weak: float
    tau_strong: float
    kendall_tau: dict[str, float | None]


class Thresholds(TypedDict):
    """The run's own (tau_weak, tau_strong)."""

    tau_weak: float
    tau_strong: float


class Robustness(TypedDict):
    """stats.json's ``robustness``: the default thresholds, the points, the least tau-b and the pairs held."""

    default: Thresholds
    points: list[RobustnessPoint]
    kendall_tau_min: dict[str, float | None]
    pairs_holding: dict[str, list[int]]
    pairs: list[RobustnessPair]


class _DocumentExtra(TypedDict, total=False):
    robustness: Robustness
    trials: dict[str, TrialIntervals]


class StatsDocument(_DocumentExtra):
    """stats.json: the settings, the metrics' labels, the models, the pairs, the models tied with the top and
    the power of adjacent pairs per ranked quantity, the warnings; robustness and trials where they are made."""

    settings: StatsSettingsRecord
    metrics: dict[str, str]
    models: dict[str, ModelRecord]
    pairs: list[PairRecord]
    tied_with_top: dict[str, list[str]]
    power: dict[str, list[PowerRow]]
    warnings: list[str]
