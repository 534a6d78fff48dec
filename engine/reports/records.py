"""The shapes of the documents the reports and the viewer read beside a run's results: stats.json
(engine.stats), usage.json (engine.stats.cost) and trials.json (engine.trials).

Each reader (`engine.reports.intervals.read_stats`, `engine.reports.cost.read_cost`,
`engine.reports.trials.read_trials`) checks a document's outer shape and hands it on as one of these. A block
every run has written whole is the writer's own shape, imported; a block a document of an older run may lack
keys of is declared here with every key optional (``total=False``), and the reports read those with ``.get``.
tests/test_document_shapes.py holds each shape here to the writer's (engine.stats.document, engine.stats.cost,
engine.cost, engine.trials_document, engine.trial_conventions): the same keys, of the same types, nested blocks
included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, cast

from engine.cost import PriceRecord as Price
from engine.stats.cost import Membership
from engine.stats.document import PowerRow, Robustness, TrialIntervals
from engine.trial_conventions import PeerBlocks as Conventions
from engine.trials_document import LossRates, Spread, TaskSpread

# --- stats.json -------------------------------------------------------------------------------------------------


class Interval(TypedDict, total=False):
    """A quantity's block: its value and interval (None without one, `reason` saying why), and its ranks."""

    value: float
    low: float | None
    high: float | None
    se: float | None
    clusters: int
    resamples_left_out: int
    rank: int | None
    rank_low: int | None
    rank_high: int | None
    reason: str


class StatsModel(TypedDict, total=False):
    """A model's record: its ids and clusters, the Average Score's ranks, and each metric's block."""

    ids: int
    clusters: int
    rank: int | None
    rank_low: int | None
    rank_high: int | None
    metrics: dict[str, Interval]


class PairBlock(TypedDict, total=False):
    """A pair's comparison by one metric (A minus B), or the `reason` it is not tested."""

    difference: float | None
    low: float | None
    high: float | None
    p: float | None
    p_holm: float | None
    separable: bool | None
    implied: bool
    win_probability: float | None
    se: float | None
    clusters: int
    mde: float | None
    clusters_needed: int | None
    reason: str


class StatsPair(TypedDict, total=False):
    """A pair of models and their comparison per metric."""

    a: str
    b: str
    ids: int
    metrics: dict[str, PairBlock]


class RunSettings(TypedDict, total=False):
    """The statistics' settings as recorded (engine.stats.settings), with the clusters used (usage.json's)."""

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


class StatsSettings(RunSettings, total=False):
    """stats.json's settings: the recorded settings and the device the step ran on."""

    device: str


class Stats(TypedDict, total=False):
    """A run's stats.json (the score app's statistics step)."""

    settings: StatsSettings
    metrics: dict[str, str]
    models: dict[str, StatsModel]
    pairs: list[StatsPair]
    tied_with_top: dict[str, list[str]]
    power: dict[str, list[PowerRow]]
    warnings: list[str]
    robustness: Robustness
    trials: dict[str, TrialIntervals]


def stats_of(document: Mapping[str, object]) -> Stats:
    """A stats.json document in memory as the statistics step (engine.stats) builds it, read as `Stats` (the
    score API passes the step's own; files are read by `engine.reports.intervals.read_stats`)."""
    return cast(Stats, document)


# --- usage.json -------------------------------------------------------------------------------------------------


class Quantity(TypedDict, total=False):
    """A per-task quantity of a model: its value, and with statistics its interval (None without one, `reason`
    saying why), SE and clusters."""

    value: float
    low: float | None
    high: float | None
    se: float | None
    clusters: int
    reason: str


class JudgeSpend(TypedDict, total=False):
    """The judges' recorded requests, tokens and USD (None: a judge without a price), their models and the USD
    per scored task."""

    requests: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    usd: float | None
    models: list[str]
    usd_per_task: float | None


class CostModel(TypedDict, total=False):
    """A model's cost record: score, tasks, per-task quantities, price, judges, frontier membership."""

    score: float | None
    tasks: int
    tasks_scored: int
    metrics: dict[str, Quantity]
    price: Price | None
    judges: JudgeSpend | None
    frontier: Membership


class Frontier(TypedDict, total=False):
    """The cost frontier's axis and score, the models placed on it, its rule in words, and with statistics the
    membership rule's level and tail and the resamples left out of the shares."""

    axis: str
    score: str
    models: list[str]
    rule: str
    level: float | None
    tail: float | None
    resamples_left_out: int | None


class Cost(TypedDict, total=False):
    """A run's usage.json (engine.stats.cost)."""

    models: dict[str, CostModel]
    frontier: Frontier
    notes: list[str]
    settings: RunSettings | None


# --- trials.json ------------------------------------------------------------------------------------------------


class SlotRecord(TypedDict, total=False):
    """A (task, trial) slot of the inventory: its state, why it is not finished, its success, its calls never
    made."""

    id: str
    trial: int
    state: str
    reason: str | None
    success: bool | None
    illegal_calls: int


class TrialSlots(TypedDict, total=False):
    """One trial's slots by state, and the calls its records hold that were never made."""

    trial: int
    finished: int
    agent_failure: int
    infrastructure: int
    illegal_calls: int


class LostSlot(TypedDict, total=False):
    """A slot lost to the infrastructure, named."""

    id: str
    trial: int
    reason: str | None


class Inventory(TypedDict, total=False):
    """Every slot of a model's trials by state, overall and per trial, the lost ones named, and every slot."""

    slots: int
    finished: int
    agent_failure: int
    infrastructure: int
    illegal_calls: int
    per_trial: list[TrialSlots]
    missing: list[LostSlot]
    records: list[SlotRecord]


class TrialsMeta(TypedDict, total=False):
    """The trials of a model, its tasks, the success rule in words and the trial files."""

    trials: int
    tasks: int
    success_rule: str
    files: list[str]


class TrialsDoc(TypedDict, total=False):
    """A model's trials document of trials.json."""

    meta: TrialsMeta
    inventory: Inventory
    pass_at_k: LossRates
    pass_hat_k: LossRates
    avg_at_k: LossRates
    conventions: Conventions
    aggregate: dict[str, Spread]
    per_task: dict[str, dict[str, TaskSpread]]
