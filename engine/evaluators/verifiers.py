"""Verifiers (TOBench's outcome checks): a task's own check module looks at the run's trajectory, its
final workspace and its tool log and returns a list of 0/1 checks; the task succeeds when all pass.

A task names its module in ``check``: a Python file, its path relative to the tasks file's folder
(paths leaving that folder are refused). The module defines::

    def check(trajectory: dict, workspace: pathlib.Path | None, tool_log: list[dict] | None) -> list[int | bool]

- ``trajectory``: the task's prediction record as in the predictions file (steps of calls with name,
  arguments, result, is_error; final_reply; ...);
- ``workspace``: the absolute path of a copy of the task's final workspace folder (None when there is
  none);
- ``tool_log``: the calls of the task's tool log, in order (each with step, index, server, tool,
  arguments, result, is_error, files, duration_s; None when the run wrote none);
- it returns e_1 ... e_m, each 0/1 (or False/True), m >= 1. What it changes in the copy is discarded.

Each check runs contained (engine.judging.sandbox.runner): in a process of its own, under a time limit
(``timeout`` seconds, default 60, the copy of its inputs included), with a minimal environment (plus the
variables the config's ``env`` names), on a copy of the workspace made from descriptors (the original is
never changed; links, FIFOs, sockets and devices are left out, never opened, and named in the entry's
``reason``), its output capped, and every process it leaves behind killed, its files capped in total
(``disk_mb``); its answer comes back on a descriptor of its own, which neither it nor what it starts can
forge through its supervisor; with bubblewrap, without network or host socket, seeing only the system
folders, the interpreter and copies of its own files (the module and the Python files of the tasks folder
it imports: `check_files`, read beneath the tasks folder with no link followed), all read-only but its
scratch folder. Its working folder is that scratch folder; the check module's folder is on its import path.
Those files are in each verdict's input key (`Verifiers.input_files`): an edited helper judges again the
tasks whose checks import it; a module loaded at run time (importlib) is in neither, with a warning.
A check that raises, hangs, dies, or returns anything but a non-empty list of 0/1 is
an *evaluator error*: the task's entry holds the one-line reason, no success value, and it is counted
apart from the agent's failures (never a silent 0). A task without a prediction (its agent run did not
end) fails without running its check; a task without ``check`` is skipped.

Per task S_i = e_i,1 x ... x e_i,m. Aggregate over the checked tasks (``check_tasks`` = N of them,
``check_errors`` = E of them with an evaluator error): ``check_accuracy`` = sum S_i / N (an evaluator
error counts as a failure) and ``check_accuracy_evaluated`` = sum S_i / (N - E) (the tasks whose check
gave an answer; null when there is none): the latter is the TOBench paper's Avg (eq. 11 over the
evaluated tasks, Table 2: GPT-5's 26.80 = 26 / 97) and the default ``Accuracy`` column; the former is
``Accuracy (errors as failures)``. ``check_by_group`` gives both per group of the task fields ``by`` names
(default: ``type`` and ``task_difficulty``, Table 2's task family and difficulty).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, cast

from engine.contract import InputError, JsonMapping, JsonObject, JsonValue, is_number
from engine.evaluators.base import PROFILES, Metric, TaskInputs, Verdicts, file_document, file_entries
from engine.evaluators.check_scripts import (
    CheckFailed,
    check_module,
    run_check,
    script_imports,
    skipped_note,
    task_workspace,
)
from engine.evaluators.protocol import (
    Card,
    Evaluator,
    EvaluatorOptions,
    JudgeContext,
    Plain,
    ReadSettings,
    RunFiles,
    Verdict,
)
from engine.judging import check_settings

log = logging.getLogger(__name__)

NAME = "verifiers"
SUFFIX = "checks"
GROUP_BY: tuple[str, ...] = ("type", "task_difficulty")
"""The task fields TOBench's Table 2 groups its results by: task family and difficulty."""


@dataclass
class CheckOptions(EvaluatorOptions):
    """``evaluators.verifiers`` (conf/judge/evaluators/verifiers.yaml): the seconds a check may run, the task
    fields the accuracy is broken down by, the judged model's price per million tokens, the sandbox's settings
    (engine.judging.check_settings checks them) and the file (None: beside the predictions)."""

    timeout: float = 60
    by: list[str] = field(default_factory=lambda: list(GROUP_BY))
    price: dict[str, float] | None = None
    env: list[str] = field(default_factory=list)
    output_kb: int = 64
    memory_mb: int | None = 4096
    file_mb: int | None = 1024
    disk_mb: int | None = 1024
    bubblewrap: bool | None = None
    output: str | None = None


class _Checked(TypedDict):
    checks: list[int] | None
    passed: bool | None
    error: str | None


class CheckEntry(_Checked, total=False):
    """A task's entry: its check module, checks, pass, evaluator error, why it was not checked, its group and
    the run's usage."""

    check: str
    reason: str
    group: dict[str, JsonValue]
    usage: dict[str, float | None]


async def judge(ctx: JudgeContext[CheckOptions], inputs: TaskInputs) -> dict[str, object]:
    """One task's entry: its checks, whether all passed, the evaluator error (null when none), its group
    (the task fields the ``by`` setting names, default family and difficulty, when it has them) and
    the run's usage where the rollout recorded it (tool calls, tokens, their cost at ``price``)."""
    task = inputs.task or {}
    entry = await _judged(ctx, inputs, task)
    if "check" not in entry:
        return entry
    group = {f: task[f] for f in ctx.options.by or GROUP_BY if task.get(f) is not None}
    recorded = inputs.prediction is not None and isinstance(inputs.prediction.raw.get("usage"), dict)
    return {**entry, **({"group": group} if group else {}), **({"usage": _usage(ctx, inputs)} if recorded else {})}


def _usage(ctx: JudgeContext[CheckOptions], inputs: TaskInputs) -> JsonObject:
    """The run's tool calls, tokens (as the rollout recorded them in the record's ``usage``) and cost in
    USD (null without the ``price`` setting, USD per million input / output tokens)."""
    assert inputs.prediction is not None
    usage = inputs.prediction.raw["usage"]
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    total = usage.get("total_tokens")
    price = ctx.options.price or {}
    cost = None
    if is_number(prompt) and is_number(completion) and is_number(price.get("input")) and is_number(price.get("output")):
        cost = (prompt * price["input"] + completion * price["output"]) / 1e6
    return {"tool_calls": len(inputs.prediction.calls), "tokens": total if is_number(total) else None,
            "cost_usd": cost}


async def _judged(ctx: JudgeContext[CheckOptions], inputs: TaskInputs, task: Mapping[str, Any]) -> dict[str, object]:
    if task.get("check") is None:
        return {"checks": None, "passed": None, "error": None, "reason": "no check module (skipped)"}
    tasks_file = ctx.files.tasks or Path("tasks file")
    module = check_module(tasks_file, inputs.task_id, task["check"])
    rel = module.relative_to(tasks_file.resolve().parent).as_posix()
    if inputs.prediction is None:
        return {"check": rel, "checks": [], "passed": False, "error": None,
                "reason": "no prediction (the agent run did not end)"}
    settings = check_settings(dataclasses.asdict(ctx.options), f"evaluators.{NAME}")
    workspace = task_workspace(inputs.workspace, inputs.task_id)
    tool_log = list(inputs.tool_log) if inputs.tool_log is not None else None
    try:
        checks, skipped = await run_check(module, tasks_file.resolve().parent, inputs.prediction.raw, workspace,
                                          tool_log, settings)
    except CheckFailed as exc:
        return {"check": rel, "checks": None, "passed": None, "error": str(exc),
                **_skipped(inputs.task_id, exc.skipped)}
    return {"check": rel, "checks": checks, "passed": all(checks), "error": None,
            **_skipped(inputs.task_id, skipped)}


def _skipped(task_id: str, skipped: Sequence[str]) -> dict[str, str]:
    """An entry's ``reason`` naming the workspace's entries left out of its copy (logged too); none when
    nothing was left out."""
    if not skipped:
        return {}
    log.warning("%s: task %s: %s", NAME, task_id, skipped_note(skipped))
    return {"reason": skipped_note(skipped)}


def _check_entry(path: Path, task_id: str, entry: object) -> CheckEntry:
    if not isinstance(entry, dict):
        raise InputError(path, "must be an object {checks, passed, error}", task_id=task_id)
    error, passed = entry.get("error"), entry.get("passed")
    if error is not None and not isinstance(error, str):
        raise InputError(path, f"must be a string or null, got {error!r}", task_id=task_id, field="error")
    if error is None and passed is not None and not isinstance(passed, bool):
        raise InputError(path, f"must be true, false or null, got {passed!r}", task_id=task_id, field="passed")
    if error is None and isinstance(entry.get("checks"), list) and entry["checks"] and \
            passed != all(bool(c) for c in entry["checks"]):
        raise InputError(path, "does not agree with its checks (all must pass)", task_id=task_id, field="passed")
    return cast(CheckEntry, entry)


_SHOWN = ("check", "checks", "passed", "error", "reason")


def accuracy(successes: Sequence[int | None]) -> JsonObject:
    """Accuracy over tasks given by their S_i (None: evaluator error): over all of them counting errors as
    failures, and over the evaluated ones; with the counts."""
    evaluated = [s for s in successes if s is not None]
    n = len(successes)
    return {"check_accuracy": sum(evaluated) / n if n else None,
            "check_accuracy_evaluated": sum(evaluated) / len(evaluated) if evaluated else None,
            "check_tasks": n, "check_errors": n - len(evaluated)}


def breakdown(tasks: Sequence[tuple[int | None, Mapping[str, Any]]]) -> dict[str, Any]:
    """`accuracy` of checked tasks given as (S_i, detail), with ``check_by_group`` (the accuracies per
    group, named "<value> / <value>" in the ``by`` order, when some task has a group) and
    ``check_usage`` (mean tool calls, thousands of tokens and cost in USD per task over the tasks that
    have them; TOBench Table 2's Tool Calls, Tokens(k), Cost($))."""
    out = accuracy([s for s, _ in tasks])
    groups: dict[str, list[int | None]] = {}
    for s, detail in tasks:
        if detail.get("group"):
            groups.setdefault(" / ".join(str(v) for v in detail["group"].values()), []).append(s)
    if groups:
        out["check_by_group"] = {name: accuracy(values) for name, values in sorted(groups.items())}
    usages = [d["usage"] for _, d in tasks if d.get("usage")]
    if usages:
        def per_task(key: str, scale: float = 1.0) -> float | None:
            values = [u[key] / scale for u in usages if is_number(u.get(key))]
            return sum(values) / len(values) if values else None
        out["check_usage"] = {"tool_calls": per_task("tool_calls"), "tokens_k": per_task("tokens", 1000.0),
                              "cost_usd": per_task("cost_usd")}
    return out


METRICS: tuple[Metric, ...] = (
    Metric("check_accuracy_evaluated", "Accuracy", NAME, PROFILES, "evaluator", False, False, 0.0, 1.0),
    Metric("check_accuracy", "Accuracy (errors as failures)", NAME, PROFILES, "evaluator", False, False, 0.0, 1.0),
    Metric("check_tasks", "Tasks Checked", NAME, PROFILES, "evaluator", False, False, 0.0, direction="none"),
    Metric("check_errors", "Evaluator Errors", NAME, PROFILES, "evaluator", False, False, 0.0, direction="none"),
)


class Verifiers(Plain[CheckEntry, CheckOptions]):
    """Each task's check module run contained over its trajectory, workspace and tool log; no judge asked."""

    card = Card(name=NAME, reads=frozenset({"prediction", "workspace", "tool_log", "task"}), metrics=METRICS,
                suffix=SUFFIX, position=60, all_tasks=True, columns=("check_success", "check_error"),
                uses_pool=False, task_files=("check",))
    options_type = CheckOptions

    async def verdict(self, ctx: JudgeContext[CheckOptions], task: TaskInputs) -> Verdict[CheckEntry]:
        """One task's entry (`judge`)."""
        return Verdict(task.task_id, cast(CheckEntry, await judge(ctx, task)))

    def input_files(self, options: CheckOptions, files: RunFiles, task: TaskInputs) -> dict[str, Path]:
        """The modules of the tasks folder its check imports (`script_imports`)."""
        check = (task.task or {}).get("check")
        if check is None:
            return {}
        tasks_file = files.tasks or Path("tasks file")
        try:
            module = check_module(tasks_file, task.task_id, check)
        except InputError:
            return {}
        return script_imports(module, tasks_file.resolve().parent)

    def export(self, entries: Mapping[str, CheckEntry], meta: JsonMapping) -> JsonObject:
        """The file: aggregate (`breakdown`, the ids with an evaluator error, the skipped count), per_id and
        meta."""
        checked = {i: e for i, e in entries.items() if e.get("error") is not None or e.get("passed") is not None}
        agg = breakdown([(None if e.get("error") is not None else int(bool(e["passed"])), e) for e in checked.values()])
        agg["error_ids"] = [i for i, e in checked.items() if e.get("error") is not None]
        agg["skipped"] = len(entries) - len(checked)
        return {"aggregate": agg, "per_id": cast(JsonObject, dict(entries)), "meta": dict(meta)}

    def load(self, path: Path) -> dict[str, CheckEntry]:
        """The checked entries of an earlier file (to resume), id -> entry."""
        return file_entries(path, "verifier file", _check_entry, SUFFIX)

    def read(self, path: Path, settings: ReadSettings) -> Verdicts:
        """Per checked task: ``check_success`` (0/1, null for an evaluator error) and ``check_error``
        (the reason, or null); skipped tasks have no values. Its group and usage go to ``detail``, with what
        the viewer shows of every entry (check, checks, passed, error, reason); the file's meta."""
        found, meta = file_document(Path(path), "verifier file", _check_entry, SUFFIX)
        out = Verdicts(meta=meta)
        for tid, entry in found.items():
            if entry.get("error") is not None:
                out.per_id[tid] = {"check_success": None, "check_error": entry["error"]}
            elif entry.get("passed") is not None:
                out.per_id[tid] = {"check_success": int(bool(entry["passed"])), "check_error": None}
            out.detail[tid] = {**{k: entry[k] for k in ("group", "usage") if isinstance(entry.get(k), dict)},
                               **{k: entry.get(k) for k in _SHOWN}}
        return out

    def aggregate(self, verdicts: Verdicts, ids: Sequence[str]) -> JsonObject:
        """`breakdown` over the checked tasks among these ids."""
        return breakdown([(verdicts.per_id[i]["check_success"], verdicts.detail.get(i, {})) for i in ids
                          if i in verdicts.per_id])

    def display(self, task: JsonMapping | None, meta: JsonMapping) -> list[JsonObject]:
        """The viewer's block of a task: its check script, and its checks and pass, an evaluator error (apart
        from the agent's failure), or why it was not checked."""
        if task is None or "passed" not in task:
            return []
        parts: list[JsonValue] = [{"kind": "note", "text": str(task["check"])}] if task.get("check") else []
        reason = str(task["reason"]) if task.get("reason") else ""
        if task.get("error") is not None:
            parts.append({"kind": "error", "text": str(task["error"])})
        elif task.get("passed") is None:
            parts.append({"kind": "note", "text": reason or "not checked"})
        else:
            listed = task.get("checks")
            checks: list[JsonValue] = listed if isinstance(listed, list) else []
            parts += [{"kind": "badges", "items": [[str(c), bool(c)] for c in checks]},
                      {"kind": "verdict", "label": "checks", "pass": bool(task["passed"]),
                       "text": "passed" if task["passed"] else "failed", "note": reason}]
        return [{"title": "Verifier", "id": "checks", "parts": parts}]


EVALUATOR: Evaluator[CheckEntry, CheckOptions] = Verifiers()
