"""Repeated runs as two peers report them, from the same slot inventory as the project's rates
(engine.trials): ``trials.convention`` = project | tau2 | mcpmark | all.

- ``tau2`` (tau2-bench, ``src/tau2/metrics/agent_metrics.py``): slots lost to the infrastructure are
  dropped; every other slot is a simulation whose reward is the success rule's value (a failure of the
  agent: 0); success is reward == 1 (within 1e-6), not the rule's threshold; ``avg_reward`` is the mean
  reward over simulations (trials, not tasks); pass^k = mean over the tasks left of C(c, k) / C(n, k)
  with n the task's own count, for k = 1 .. the smallest n over those tasks (max_k), never beyond;
- ``mcpmark`` (MCPMark, ``src/aggregators/aggregate_results.py``): k = N (the trials) only; a model
  with any slot lost (a missing task or trial) is refused, with the slots named; success is the
  rule's success; ``pass@1`` = mean over runs of (successes in the run / tasks), each run's rate
  rounded to 6 digits, with the population standard deviation (divided by N); ``pass@N`` = share of
  tasks with at least one success, ``pass^N`` = share with all N; rounded to 4 digits as it reports.

The project's own convention (the unbiased estimators, losses counted as failures and excluded,
sample standard deviation) is the document's main block.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol, TypedDict

from engine.contract import ConfigError, JsonMapping, JsonValue

CONVENTIONS: tuple[str, ...] = ("project", "tau2", "mcpmark", "all")
_TOLERANCE = 1e-6
PEER_THRESHOLD = 1.0
"""The Task Completion a trial needs to succeed as the peers count it (tau2-bench: reward == 1; MCPMark: a
task passes or fails, a fraction is no pass)."""


def threshold_note(rule: str, threshold: float) -> str | None:
    """What a Task Completion threshold other than the peers' does to the success rates, in one line;
    None under another rule or the peers' threshold.

    >>> threshold_note("task_completion", 1.0) is None, threshold_note("outcome_checks", 0.5) is None
    (True, True)
    """
    if rule != "task_completion" or threshold == PEER_THRESHOLD:
        return None
    return (f"trials.success.threshold={threshold:g}: a trial succeeds at Task Completion >= {threshold:g}, so a "
            f"fractional result counts as a success here, while tau2-bench counts success only at "
            f"{PEER_THRESHOLD:g} (its block in trials.json keeps that rule) and MCPMark's tasks pass or fail; set "
            f"trials.success.threshold={PEER_THRESHOLD:g} for their rule in the main table")


def conventions_of(value: str = "all") -> tuple[str, ...]:
    """The peer conventions `trials.convention` asks for beside the project's (default: all)."""
    if value not in CONVENTIONS:
        raise ConfigError(f"trials.convention: unknown convention {value!r} (expected one of "
                          f"{', '.join(CONVENTIONS)})")
    return ("tau2", "mcpmark") if value == "all" else () if value == "project" else (value,)


class Slot(Protocol):
    """What the conventions read of an inventory slot (engine.trials.Slot)."""

    @property
    def task_id(self) -> str: ...
    @property
    def trial(self) -> int: ...
    @property
    def state(self) -> str: ...
    @property
    def success(self) -> bool | None: ...


class Trial(Protocol):
    """What the conventions read of a trial (engine.trials.Trial): its per-task values by id."""

    @property
    def values(self) -> Mapping[str, JsonMapping]: ...


class Tau2(TypedDict):
    """tau2-bench's figures in trials.json: average reward and success over simulations, pass^k by k (as text)
    up to max_k, the simulations and tasks counted."""

    avg_reward: float
    avg_success: float | None
    pass_hat_k: dict[str, float]
    max_k: int
    simulations: int
    tasks: int


MCPMark = dict[str, int | float | str | dict[str, float]]
"""MCPMark's figures in trials.json: ``k``, ``pass@1`` ({avg, std}), ``pass@<k>``, ``pass^<k>`` and
``total_tasks``; or only ``refused`` (why)."""


class PeerBlocks(TypedDict, total=False):
    """trials.json's ``conventions``: the figures of each peer convention asked for."""

    tau2: Tau2
    mcpmark: MCPMark


def tau2(rewards: Mapping[str, Sequence[float]]) -> Tau2:
    """tau2-bench's figures from task id -> the rewards of its simulations not lost (a task with none
    is absent, as its dataframe has no row of it)."""
    tasks = {tid: list(values) for tid, values in rewards.items() if values}
    simulations = [r for values in tasks.values() for r in values]
    if not simulations:
        return {"avg_reward": 0.0, "avg_success": None, "pass_hat_k": {}, "max_k": 0, "simulations": 0,
                "tasks": 0}
    max_k = min(len(values) for values in tasks.values())
    success = {tid: [abs(r - 1.0) <= _TOLERANCE for r in values] for tid, values in tasks.items()}
    pass_hat: dict[str, float] = {}
    for k in range(1, max_k + 1):
        per_task = [math.comb(sum(s), k) / math.comb(len(s), k) for s in success.values()]
        pass_hat[str(k)] = sum(per_task) / len(per_task)
    flat = [s for values in success.values() for s in values]
    return {"avg_reward": sum(simulations) / len(simulations), "avg_success": sum(flat) / len(flat),
            "pass_hat_k": pass_hat, "max_k": max_k, "simulations": len(simulations), "tasks": len(tasks)}


def mcpmark(success: Mapping[str, Sequence[bool | None]], lost: Sequence[str]) -> MCPMark:
    """MCPMark's figures from task id -> success per run (all tasks, N runs each), or its refusal
    when `lost` names slots lost (missing tasks or runs)."""
    if lost:
        return {"refused": f"{len(lost)} slot(s) missing: {', '.join(lost[:10])}"
                           + (" ..." if len(lost) > 10 else "")}
    tasks = list(success)
    runs = max((len(v) for v in success.values()), default=0)
    if not tasks or not runs:
        return {"refused": "no task or no run"}
    rates = [round(sum(bool(success[t][r]) for t in tasks) / len(tasks), 6) for r in range(runs)]
    mean = sum(rates) / len(rates)
    std = (sum((r - mean) ** 2 for r in rates) / len(rates)) ** 0.5
    return {"k": runs, "pass@1": {"avg": round(mean, 4), "std": round(std, 4)},
            f"pass@{runs}": round(sum(any(success[t]) for t in tasks) / len(tasks), 4),
            f"pass^{runs}": round(sum(all(success[t]) for t in tasks) / len(tasks), 4),
            "total_tasks": len(tasks)}


def _reward(value: JsonValue | None) -> float:
    """A finished slot's reward: the rule's value as a number (true 1, false and null 0)."""
    if value is None:
        return 0.0
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"a reward must be a number or a verdict, got {value!r}")
    return float(value)


def peer_blocks(slots: Sequence[Slot], task_ids: Sequence[str], trials: Sequence[Trial], field: str,
                wanted: Sequence[str]) -> PeerBlocks:
    """The `wanted` peer conventions over an inventory: `slots` (engine.trials.Slot) of `trials`
    (engine.trials.Trial, in order), whose per-task values hold the success rule's `field`."""
    out: PeerBlocks = {}
    if "tau2" in wanted:
        kept: dict[str, list[float]] = {tid: [] for tid in task_ids}
        for slot in slots:
            if slot.state == "finished":
                kept[slot.task_id].append(_reward(trials[slot.trial - 1].values.get(slot.task_id, {}).get(field)))
            elif slot.state == "agent_failure":
                kept[slot.task_id].append(0.0)
        out["tau2"] = tau2(kept)
    if "mcpmark" in wanted:
        runs: dict[str, list[bool | None]] = {tid: [] for tid in task_ids}
        for slot in slots:
            runs[slot.task_id].append(slot.success)
        lost = [f"{s.task_id}#{s.trial}" for s in slots if s.state == "infrastructure"]
        out["mcpmark"] = mcpmark(runs, lost)
    return out
