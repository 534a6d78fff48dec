"""The shapes of the documents the reports and the viewer read beside a run's results: stats.json
(engine.stats), usage.json (engine.stats.cost) and trials.json (engine.trials).

Each reader (`engine.reports.intervals.read_stats`, `engine.reports.cost.read_cost`,
`engine.reports.trials.read_trials`) checks a document's outer shape
and hands it on as one of these; the keys are the writers' (docs/statistics.md, docs/outputs.md, docs/trials.md).
Every key is optional here (``total=False``): a document of an older run may lack some, and the reports read
them with ``.get``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, cast

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


class StatsSettings(TypedDict, total=False):
    """The statistics' settings as recorded (engine.stats.settings), with the clusters used."""

    level: float
    method: str
    correction: str
    cluster: str
    clusters: int
    resamples: int
    seed: int


class GridPoint(TypedDict, total=False):
    """A threshold grid point and each metric's Kendall tau-b with the default's ranking."""

    tau_weak: float
    tau_strong: float
    kendall_tau: dict[str, float | None]


class PairHolding(TypedDict, total=False):
    """Whether a pair's conclusion by one metric holds at every grid point."""

    holds: bool


class RobustPair(TypedDict, total=False):
    """A pair's conclusions over the threshold grid, per metric."""

    a: str
    b: str
    metrics: dict[str, PairHolding]


class Thresholds(TypedDict, total=False):
    """The run's own (tau_weak, tau_strong)."""

    tau_weak: float
    tau_strong: float


class Robustness(TypedDict, total=False):
    """stats.json's threshold robustness section."""

    default: Thresholds
    points: list[GridPoint]
    pairs: list[RobustPair]
    pairs_holding: dict[str, list[int]]


class Stats(TypedDict, total=False):
    """A run's stats.json (the score app's statistics step)."""

    settings: StatsSettings
    metrics: dict[str, str]
    warnings: list[str]
    models: dict[str, StatsModel]
    pairs: list[StatsPair]
    tied_with_top: dict[str, list[str]]
    robustness: Robustness


def stats_of(document: Mapping[str, object]) -> Stats:
    """A stats.json document in memory as the statistics step (engine.stats) builds it, read as `Stats` (the
    score API passes the step's own; files are read by `engine.reports.intervals.read_stats`)."""
    return cast(Stats, document)


# --- usage.json -------------------------------------------------------------------------------------------------


class Price(TypedDict):
    """A model's list price as recorded."""

    input_usd_per_mtok: float
    output_usd_per_mtok: float
    as_of: str


class JudgeSpend(TypedDict, total=False):
    """The judges' recorded requests and USD per scored task."""

    requests: int
    usd_per_task: float | None


class Membership(TypedDict, total=False):
    """A model's place on the cost frontier: on it (point values), and with statistics the call and share."""

    on: bool
    call: str | None
    share: float | None


class CostModel(TypedDict, total=False):
    """A model's cost record: score, tasks, per-task quantities (`Interval` blocks), price, judges, frontier."""

    score: float | None
    tasks: int
    tasks_scored: int
    metrics: dict[str, Interval] | None
    price: Price | None
    judges: JudgeSpend | None
    frontier: Membership | None


class Frontier(TypedDict, total=False):
    """The cost frontier's axis, the models on it by the point values, and the membership rule's level and tail."""

    axis: str
    models: list[str]
    level: float | None
    tail: float


class Cost(TypedDict, total=False):
    """A run's usage.json (engine.stats.cost)."""

    models: dict[str, CostModel]
    frontier: Frontier | None
    notes: list[str]
    settings: StatsSettings | None


# --- trials.json ------------------------------------------------------------------------------------------------


class Spread(TypedDict, total=False):
    """A quantity over trials: mean, sample std, count, range."""

    mean: float
    std: float
    n: int
    min: float
    max: float


class Rate(TypedDict, total=False):
    """A trial rate (pass^k at one k) and its interval."""

    value: float | None


class PassHat(TypedDict):
    """pass^k by k (as text), losses counted as failures and excluded."""

    losses_as_failures: dict[str, Rate]
    losses_excluded: dict[str, Rate]


class TrialSlots(TypedDict, total=False):
    """One trial's slots by state, and the calls its records hold that were never made."""

    trial: int
    finished: int
    agent_failure: int
    infrastructure: int
    illegal_calls: int


class Inventory(TypedDict, total=False):
    """Every slot of a model's trials by state, overall and per trial."""

    slots: int
    infrastructure: int
    per_trial: list[TrialSlots]


class TrialsMeta(TypedDict, total=False):
    """The trials of a model, its tasks and the success rule in words."""

    trials: int
    tasks: int
    success_rule: str


class Tau2(TypedDict, total=False):
    """tau2-bench's figures."""

    avg_reward: float | None
    pass_hat_k: dict[str, float | None]
    max_k: int


MCPMark = dict[str, int | float | str | None | dict[str, float]]
"""MCPMark's figures: `k`, pass@1 ({avg, std}), pass@k and pass^k under keys that name k, or `refused`."""


class Conventions(TypedDict, total=False):
    """The peer conventions' figures."""

    tau2: Tau2
    mcpmark: MCPMark


class TrialsDoc(TypedDict, total=False):
    """A model's trials document of trials.json."""

    meta: TrialsMeta
    pass_hat_k: PassHat
    inventory: Inventory
    conventions: Conventions
    aggregate: dict[str, Spread]
    per_task: dict[str, dict[str, Spread]]

