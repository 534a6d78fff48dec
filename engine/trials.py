"""Repeated runs: the inventory of (task, trial) slots, success per trial from a declared rule, the
unbiased pass@k / pass^k / avg@k rates (estimators in engine.trial_estimators), and the spread of every
metric over trials.

A trial is one prediction file of a model; trial i of ``<stem>.json`` is ``<stem>_trial<i>.json``
(engine.inputs: the trial files' names). Each (task, trial) slot is exactly one of:

- ``finished``: the trial holds a record of the task, with no error; its success comes from the rule;
- ``agent_failure``: the record carries ``"error": {"kind": "agent", ...}`` (the model's unusable output
  ended its run; engine.contract.failures); it counts as an unsuccessful trial in both conventions;
- ``infrastructure``: lost to the infrastructure: the trial file is missing, it holds no record of the
  task (the run was killed before the task ended), the record carries any other ``"error"`` (the model
  API after its retries, a server, a run cut short), or one of its calls was answered by the rollout's
  "MCP server '<name>' is not running" (a server that did not start).

Rates are given twice: with infrastructure losses counted as failures (every task keeps n = N trials)
and with them excluded (n is the task's finished and agent-failed trials; a task with n < k does not
enter the rate at k, and the number of tasks that do is written beside it).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from engine.contract import (
    AGENT,
    ConfigError,
    InputError,
    JsonMapping,
    JsonObject,
    TrajectoryFile,
    atomic_write_json,
    is_number,
    not_made_calls,
    record_error,
    server_down,
)
from engine.evaluators import evaluator
from engine.inputs import check_distinct as check_distinct
from engine.inputs import check_trial_files as check_trial_files
from engine.inputs import find_trials as find_trials
from engine.inputs import model_name as model_name
from engine.inputs import trial_path as trial_path
from engine.judge_results import Joined, JoinedFiles
from engine.trial_conventions import peer_blocks, threshold_note
from engine.trial_estimators import ESTIMATORS, rate
from engine.trials_document import (
    InventorySummary,
    Peers,
    Rate,
    Rates,
    SlotRecord,
    Spread,
    TaskSpread,
    TrialsDocument,
    TrialsFile,
    TrialSlots,
)

if TYPE_CHECKING:
    import numpy as np

    from engine.pipeline import SweepScores

log = logging.getLogger(__name__)

FINISHED, AGENT_FAILURE, INFRASTRUCTURE = "finished", "agent_failure", "infrastructure"
STATES = (FINISHED, AGENT_FAILURE, INFRASTRUCTURE)
RULES = {"task_completion": "task_completion", "critical_rubrics": "pass_rate", "outcome_checks": "check_success"}
"""Success rules and the per_id key each reads by default: m3_judges' Task Completion, vtb_rubrics' 0/1
critical-gated pass, verifiers' 0/1 check success (engine.evaluators)."""
TRIALS_FILE = "trials.json"


# Inventory

@dataclass(frozen=True)
class Slot:
    """One (task, trial) slot: its state, why when it is not finished, its success when known, and the
    calls of its record that were never made (illegal format)."""

    task_id: str
    trial: int
    state: str
    reason: str | None = None
    success: bool | None = None
    illegal_calls: int = 0

    def to_json(self) -> SlotRecord:
        """The slot as a trials.json inventory record."""
        return {"id": self.task_id, "trial": self.trial, "state": self.state, "reason": self.reason,
                "success": self.success, "illegal_calls": self.illegal_calls}


def slot_state(record: JsonMapping | None) -> tuple[str, str | None]:
    """(state, reason) of one trial's record of a task (None: no record)."""
    if record is None:
        return INFRASTRUCTURE, "no record (the run was killed before the task ended)"
    error = record_error(record)
    if error is not None:
        kind, reason = error
        return (AGENT_FAILURE if kind == AGENT else INFRASTRUCTURE), f"error ({kind}): {reason}"
    down = server_down(record)
    if down is not None:
        return INFRASTRUCTURE, f"MCP server '{down}' did not start"
    return FINISHED, None


@dataclass(frozen=True)
class SuccessRule:
    """How a finished trial's success is decided: `rule` (RULES), the per_id `key` it reads, and the
    Task Completion `threshold` (rule task_completion)."""

    rule: str = "task_completion"
    threshold: float = 0.5
    key: str | None = None

    @property
    def field(self) -> str:
        """The per_id key the rule reads."""
        return self.key or RULES[self.rule]

    def describe(self) -> str:
        """The rule in words, for trials.json."""
        if self.rule == "task_completion":
            return f"{self.field} >= {self.threshold}"
        return f"{self.field} is true"

    def success(self, values: JsonMapping, source: Path | str, task_id: str) -> bool:
        """A finished trial's success from its per-task values; InputError naming the source, the id
        and the field when the value is missing or not of the rule's kind."""
        value = values.get(self.field)
        if value is None and self.rule != "task_completion" and self.field in values:
            return False  # a verdict of null: the evaluator failed on the task (verifiers), a failure
        if value is None:
            raise InputError(source, f"a finished trial needs a value for the success rule ({self.describe()})",
                             task_id=task_id, field=self.field)
        if self.rule == "task_completion":
            if not is_number(value):
                raise InputError(source, f"must be a number, got {value!r}", task_id=task_id, field=self.field)
            return float(value) >= self.threshold
        if isinstance(value, bool) or value in (0, 1):
            return bool(value)
        raise InputError(source, f"must be a pass/fail verdict (true/false), got {value!r}; a fraction is "
                                 "not a success", task_id=task_id, field=self.field)


def success_rule(cfg: Mapping[str, object] | None) -> SuccessRule:
    """A `trials.success` mapping as a SuccessRule (the score app reads its typed node instead:
    engine.apps.config.score.Success); ConfigError naming the setting when it is wrong."""
    cfg = cfg or {}
    rule = cfg.get("rule", SuccessRule.rule)
    if rule not in RULES:
        raise ConfigError(f"trials.success.rule: unknown rule {rule!r} (expected one of {', '.join(RULES)})")
    threshold = cfg.get("threshold", SuccessRule.threshold)
    if not is_number(threshold) or not 0.0 <= float(threshold) <= 1.0:
        raise ConfigError(f"trials.success.threshold: must be a number in [0, 1], got {threshold!r}")
    key = cfg.get("key")
    if key is not None and (not isinstance(key, str) or not key):
        raise ConfigError(f"trials.success.key: must be a per_id key or null, got {key!r}")
    return SuccessRule(rule, float(threshold), key)


@dataclass(frozen=True)
class Trial:
    """One trial: its prediction file (None when it is missing) and the per-task values its scoring
    gave (alignment metrics and judged values, keyed by id); `source` names the values' file."""

    path: Path
    file: TrajectoryFile | None
    values: Mapping[str, JsonMapping]
    source: Path | None = None


def inventory(task_ids: Sequence[str], trials: Sequence[Trial], rule: SuccessRule) -> list[Slot]:
    """Every (task, trial) slot of these tasks, trial by trial.

    A record's optional integer ``trial`` field must equal its file's position (1-based); a repeated
    id in one trial file is a duplicate slot; both are an InputError naming the file and the id.
    """
    slots = []
    for index, trial in enumerate(trials, 1):
        if trial.file is None:
            slots += [Slot(tid, index, INFRASTRUCTURE, f"missing file {trial.path}") for tid in task_ids]
            continue
        if trial.file.duplicate_ids:
            raise InputError(trial.path, "the trial holds this task twice: a duplicate slot",
                             task_id=trial.file.duplicate_ids[0], field="id")
        for tid in task_ids:
            task = trial.file.tasks.get(tid)
            record = task.raw if task is not None else None
            declared = record.get("trial") if record is not None else None
            if declared is not None and (type(declared) is not int or declared != index):
                problem = f"must be the trial's number, got {declared!r}" if type(declared) is not int else \
                    f"record says trial {declared!r} but the file is trial {index}: a duplicate or misplaced slot"
                raise InputError(trial.path, problem, task_id=tid, field="trial")
            state, reason = slot_state(record)
            success = None
            if state == FINISHED:
                success = rule.success(trial.values.get(tid, {}), trial.source or trial.path, tid)
            elif state == AGENT_FAILURE:
                success = False
            slots.append(Slot(tid, index, state, reason, success, not_made_calls(record) if record else 0))
    return slots


def counts_per_task(slots: Sequence[Slot], task_ids: Sequence[str], trials: int,
                    losses: str) -> list[tuple[int, int]]:
    """(n, c) per task: n = trials (losses "failures") or the task's slots not lost ("excluded")."""
    by_task: dict[str, list[Slot]] = {tid: [] for tid in task_ids}
    for slot in slots:
        by_task[slot.task_id].append(slot)
    out = []
    for tid in task_ids:
        kept = by_task[tid] if losses == "failures" else [s for s in by_task[tid] if s.state != INFRASTRUCTURE]
        n = trials if losses == "failures" else len(kept)
        out.append((n, sum(1 for s in kept if s.success)))
    return out


def rates(slots: Sequence[Slot], task_ids: Sequence[str], trials: int) -> Rates:
    """pass_at_k, pass_hat_k and avg_at_k for k = 1..trials, each with losses counted as failures and
    with losses excluded; beside each value, the number of tasks it is the mean over."""
    conventions = {"losses_as_failures": counts_per_task(slots, task_ids, trials, "failures"),
                   "losses_excluded": counts_per_task(slots, task_ids, trials, "excluded")}
    out: dict[str, dict[str, dict[str, Rate]]] = {}
    for name in ESTIMATORS:
        by_convention: dict[str, dict[str, Rate]] = {}
        for convention, counts in conventions.items():
            block: dict[str, Rate] = {}
            for k in range(1, trials + 1):
                value, tasks = rate(counts, k, name)
                block[str(k)] = {"value": value, "tasks": tasks}
            by_convention[convention] = block
        out[name] = by_convention
    return cast(Rates, out)  # ESTIMATORS' names and the two conventions: held to Rates by test_document_shapes


def inventory_summary(slots: Sequence[Slot], trials: int) -> InventorySummary:
    """Counts of each state (overall and per trial), of the calls never made (``illegal_calls``), and
    the lost slots named."""
    per_trial: list[TrialSlots] = []
    for index in range(1, trials + 1):
        mine = [s for s in slots if s.trial == index]
        per_trial.append(cast(TrialSlots, {"trial": index,
                                           **{state: sum(1 for s in mine if s.state == state) for state in STATES},
                                           "illegal_calls": sum(s.illegal_calls for s in mine)}))
    return cast(InventorySummary, {"slots": len(slots),
                                   **{state: sum(1 for s in slots if s.state == state) for state in STATES},
                                   "illegal_calls": sum(s.illegal_calls for s in slots),
                                   "per_trial": per_trial,
                                   "missing": [{"id": s.task_id, "trial": s.trial, "reason": s.reason}
                                               for s in slots if s.state == INFRASTRUCTURE]})


# Spread over trials

def mean_std(values: Sequence[float]) -> Spread:
    """Mean and sample standard deviation (n - 1; 0 for one value) of the values, with their count."""
    n = len(values)
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return {"mean": mean, "std": std, "n": n}


def aggregate_spread(aggregates: Sequence[JsonMapping]) -> dict[str, Spread]:
    """Every numeric aggregate key as mean and standard deviation over the trials that have it."""
    keys = [k for k in aggregates[0] if is_number(aggregates[0][k])] if aggregates else []
    keys += [k for a in aggregates[1:] for k in a if is_number(a[k]) and k not in keys]
    return {k: mean_std([float(v) for a in aggregates if is_number(v := a.get(k))]) for k in keys}


def task_spread(trials: Sequence[Trial], keys: Sequence[str]) -> dict[str, dict[str, TaskSpread]]:
    """Per task id: each key's mean, standard deviation, min and max over the trials that scored it."""
    ids = sorted(set().union(*(t.values for t in trials))) if trials else []
    out: dict[str, dict[str, TaskSpread]] = {}
    for tid in ids:
        entry: dict[str, TaskSpread] = {}
        for key in keys:
            values = [float(v) for t in trials if tid in t.values and is_number(v := t.values[tid].get(key))]
            if values:
                entry[key] = {**mean_std(values), "min": min(values), "max": max(values)}
        out[tid] = entry
    return out


def trials_document(task_ids: Sequence[str], trials: Sequence[Trial], rule: SuccessRule,
                    aggregates: Sequence[JsonMapping], keys: Sequence[str],
                    conventions: Sequence[str] = ()) -> TrialsDocument:
    """A model's document of trials.json: the inventory, the rates in both loss conventions, the peers'
    `conventions` (engine.trial_conventions), the aggregate spread, the per-task spread."""
    slots = inventory(task_ids, trials, rule)
    n = len(trials)
    peers: Peers = ({"conventions": peer_blocks(slots, task_ids, trials, rule.field, conventions)} if conventions
                     else {})
    return {"meta": {"trials": n, "tasks": len(task_ids), "success_rule": rule.describe(),
                     "files": [str(t.path) for t in trials]},
            "inventory": {**inventory_summary(slots, n), "records": [s.to_json() for s in slots]},
            **rates(slots, task_ids, n),
            **peers,
            "aggregate": aggregate_spread(aggregates),
            "per_task": task_spread(trials, keys)}


def scored_values(task_ids: Sequence[str], sample_task: np.ndarray, values: Mapping[str, np.ndarray],
                  samples: Sequence[int], joined: Mapping[str, JsonMapping] | None = None
                  ) -> dict[str, JsonObject]:
    """id -> the per-task values of one trial: its alignment metrics (values[key][sample]) and the
    values joined from its judge files (`joined`, keyed by id; every key, so other verdicts plug in)."""
    out: dict[str, JsonObject] = {}
    for s in samples:
        tid = task_ids[sample_task[s]]
        out[tid] = {key: float(column[s]) for key, column in values.items()}
        out[tid].update((joined or {}).get(tid, {}))
    return out


def trial_items(result: SweepScores, paths: Sequence[Path], position: Mapping[Path, int],
                judges: Sequence[JoinedFiles], joined: Sequence[Joined | None], rule: SuccessRule
                ) -> tuple[list[Trial], list[int]]:
    """One model's Trial per trial file (its scored values; None for a file not there) and the sweep
    positions of the files present (`position`: scored file -> its index in the sweep)."""
    tables, scores = result.tables, result.scores
    items, present = [], []
    for trial in paths:
        f = position.get(Path(trial))
        if f is None:
            items.append(Trial(Path(trial), None, {}))
            continue
        values = scored_values(tables.task_ids, tables.sample_task, scores.values,
                               result.samples_of(f).tolist(), None if (found := joined[f]) is None else found.per_id)
        source = next((path for name, path in judges[f].files.items()
                       if rule.field in (*(m.key for m in evaluator(name).card.metrics),
                                         *evaluator(name).card.columns)),
                      Path(trial))
        items.append(Trial(Path(trial), result.preds[f], values, source))
        present.append(f)
    return items, present


def success_counts(result: SweepScores, trials: Mapping[str, Sequence[Path]], scored: Sequence[Path],
                   judges: Sequence[JoinedFiles], joined: Sequence[Joined | None], rule: SuccessRule
                   ) -> dict[str, list[tuple[int, int]]]:
    """Per model of `trials`, (trials, successes) of every reference task in sorted id order, losses
    counted as failures (the counts behind pass@k, pass^k and avg@k)."""
    position = {Path(p): f for f, p in enumerate(scored)}
    task_ids = sorted(result.gt.tasks)
    out = {}
    for model, paths in trials.items():
        items, _ = trial_items(result, paths, position, judges, joined, rule)
        out[model] = counts_per_task(inventory(task_ids, items, rule), task_ids, len(paths), "failures")
    return out


def write_trials(path: Path, result: SweepScores, trials: Mapping[str, Sequence[Path]], scored: Sequence[Path],
                 judges: Sequence[JoinedFiles], joined: Sequence[Joined | None],
                 aggregates: Sequence[JsonMapping], rule: SuccessRule,
                 conventions: Sequence[str] = ("tau2", "mcpmark")) -> TrialsFile:
    """Write trials.json for a scored sweep: per model of `trials` (model -> every trial file in trial
    order), its trials document; `scored` are the sweep's files in order, `judges`, `joined` (their
    values, as write_sweep joined them) and `aggregates` theirs; a trial's success is `rule`'s, and the peers'
    `conventions` (engine.trial_conventions) are written beside the project's."""
    note = threshold_note(rule.rule, rule.threshold)
    if note is not None:  # the tables name the rule beside every pass^k; the peers' rule is in their blocks
        log.info(note)
    position = {Path(p): f for f, p in enumerate(scored)}
    scores = result.scores
    models: dict[str, TrialsDocument] = {}
    for model, paths in trials.items():
        items, present = trial_items(result, paths, position, judges, joined, rule)
        keys = list(scores.names) + sorted({k for t in items for v in t.values.values() for k in v
                                            if k not in scores.names and is_number(v[k])})
        models[model] = trials_document(sorted(result.gt.tasks), items, rule, [aggregates[f] for f in present], keys,
                                        conventions=tuple(conventions))
    document: TrialsFile = {"meta": {"gt": str(result.gt.path), "success_rule": rule.describe()}, "models": models}
    atomic_write_json(path, document)
    return document
