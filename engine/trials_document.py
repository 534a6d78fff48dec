"""The shape of trials.json (docs/trials.md), as engine.trials writes it: each model's trials document (its
meta, the inventory of (task, trial) slots, the rates, the peers' conventions, the spread over trials) and the
file around them. The reports read it as engine.reports.records' shapes, held to these by
tests/test_document_shapes.py."""

from __future__ import annotations

from typing import TypedDict

from engine.trial_conventions import PeerBlocks


class SlotRecord(TypedDict):
    """A (task, trial) slot in the inventory's ``records``."""

    id: str
    trial: int
    state: str
    reason: str | None
    success: bool | None
    illegal_calls: int


class TrialSlots(TypedDict):
    """One trial's slots by state, and the calls its records hold that were never made."""

    trial: int
    finished: int
    agent_failure: int
    infrastructure: int
    illegal_calls: int


class LostSlot(TypedDict):
    """A slot lost to the infrastructure, named in the inventory's ``missing``."""

    id: str
    trial: int
    reason: str | None


class InventorySummary(TypedDict):
    """Every slot by state (overall and per trial), the calls never made, the lost slots named."""

    slots: int
    finished: int
    agent_failure: int
    infrastructure: int
    illegal_calls: int
    per_trial: list[TrialSlots]
    missing: list[LostSlot]


class Inventory(InventorySummary):
    """trials.json's ``inventory``: the summary and every slot's record."""

    records: list[SlotRecord]


class Rate(TypedDict):
    """A rate at one k and the number of tasks it is the mean over (None: no task has k trials)."""

    value: float | None
    tasks: int


class LossRates(TypedDict):
    """An estimator's rates by k (as text), losses counted as failures and excluded."""

    losses_as_failures: dict[str, Rate]
    losses_excluded: dict[str, Rate]


class Rates(TypedDict):
    """Every estimator's rates (ESTIMATORS)."""

    pass_at_k: LossRates
    pass_hat_k: LossRates
    avg_at_k: LossRates


class Spread(TypedDict):
    """A quantity over trials: mean, sample standard deviation, count."""

    mean: float
    std: float
    n: int


class TaskSpread(Spread):
    """A task's quantity over the trials that scored it: its spread and range."""

    min: float
    max: float


class TrialsMeta(TypedDict):
    """A model's trials, tasks, success rule in words and trial files."""

    trials: int
    tasks: int
    success_rule: str
    files: list[str]


class Peers(TypedDict, total=False):
    """The peers' conventions, written when asked for."""

    conventions: PeerBlocks


class TrialsDocument(Rates, Peers):
    """A model's trials document: meta, inventory, the rates, the peers' conventions (when asked for), the
    aggregates' spread and each task's spread by key."""

    meta: TrialsMeta
    inventory: Inventory
    aggregate: dict[str, Spread]
    per_task: dict[str, dict[str, TaskSpread]]


class TrialsFileMeta(TypedDict):
    """trials.json's ``meta``: the reference file and the success rule."""

    gt: str
    success_rule: str


class TrialsFile(TypedDict):
    """trials.json: its meta and each model's trials document."""

    meta: TrialsFileMeta
    models: dict[str, TrialsDocument]
