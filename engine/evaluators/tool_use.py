"""Tool-use analytics of a prediction file: Proactivity, Success Rate and Volume of the predicted calls.

Over the tasks T of a file (N = |T|, C_i the predicted calls of task i):

- Proactivity = |{i : |C_i| > 0}| / N, the share of tasks with at least one call (macro over tasks);
- Success Rate = sum_i |{c in C_i : is_error(c) is not true}| / sum_i |C_i|, micro over calls, as
  VisualToolBench's eq. 4 divides: by every call, a call that does not report an error being valid;
  null when there are no calls;
- Success Rate (flagged) = sum_i |{c in C_i : is_error(c) is false}| / sum_i |{c in C_i : c carries
  is_error}|, the stricter variant that counts only the calls whose outcome the rollout recorded; null
  when no call carries ``is_error``;
- Volume = sum_i |C_i| / N, calls per task over all tasks, zero-call tasks included.

A call's error is its ``"is_error": true`` as the rollout records it (MCP's ``isError`` and JSON-RPC
errors), never a guess from the result text. Computed from the predictions alone at scoring time:
nothing is written beside them. Each task of ``per_id`` gets its counts ``tool_use: {calls, flagged,
valid}`` (valid: calls whose is_error is false), every aggregate (overall and per family) ``tool_use:
{proactivity, success_rate, success_rate_flagged, volume}`` (metric keys ``tool_use.<name>``). Where some
prediction says whether its task is single- or multi-turn (its ``turncase``, else a ``turns`` list of one or
more replies), its task gets ``turncase`` and the aggregate ``tool_use.by_turncase: {single-turn, multi-turn:
{calls, tasks, proactivity, ...}}`` (a task that does not say counting as single-turn): VisualToolBench's
Table 8.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.contract import JsonObject, JsonValue, Trajectory, TrajectoryFile
from engine.evaluators.base import PROFILES, Metric, Verdicts
from engine.evaluators.protocol import Card, Evaluator, EvaluatorOptions, Plain
from engine.evaluators.vtb_records import MULTI_TURN, SINGLE_TURN

KEY = "tool_use"
METRICS: tuple[Metric, ...] = (
    Metric(f"{KEY}.proactivity", "Tool-Call Proactivity", KEY, PROFILES, "evaluator", False, False, 0.0, 1.0),
    Metric(f"{KEY}.success_rate", "Tool-Call Success Rate", KEY, PROFILES, "evaluator", False, False, 0.0, 1.0),
    Metric(f"{KEY}.success_rate_flagged", "Tool-Call Success Rate (flagged calls)", KEY, PROFILES, "evaluator",
           False, False, 0.0, 1.0),
    Metric(f"{KEY}.volume", "Tool-Call Volume", KEY, PROFILES, "evaluator", False, False, 0.0, direction="none"),
)
COUNTS: tuple[str, ...] = ("calls", "flagged", "valid")
"""Per task: predicted calls, calls that carry is_error, calls whose is_error is false."""


def call_counts(trajectory: Trajectory) -> dict[str, JsonValue]:
    """One task's {calls, flagged, valid}, read from the predicted calls' objects (their is_error)."""
    calls = flagged = valid = 0
    for step in trajectory.raw.get("steps") or []:
        for call in (step.get("calls") or []) if isinstance(step, Mapping) else []:
            calls += 1
            flag = call.get("is_error") if isinstance(call, Mapping) else None
            if isinstance(flag, bool):
                flagged += 1
                valid += not flag
    return {"calls": calls, "flagged": flagged, "valid": valid}


def tool_use(counts: Sequence[Mapping[str, int]]) -> JsonObject:
    """{proactivity, success_rate, success_rate_flagged, volume} of some tasks' counts (all None when
    there is no task)."""
    n = len(counts)
    calls = sum(c["calls"] for c in counts)
    flagged = sum(c["flagged"] for c in counts)
    valid = sum(c["valid"] for c in counts)
    errors = flagged - valid
    return {"proactivity": sum(1 for c in counts if c["calls"] > 0) / n if n else None,
            "success_rate": (calls - errors) / calls if calls else None,
            "success_rate_flagged": valid / flagged if flagged else None,
            "volume": calls / n if n else None}


def turncase(trajectory: Trajectory) -> str | None:
    """Whether a prediction's task is single- or multi-turn, as it says (its ``turncase``, else the length of
    its ``turns`` list); None when it does not say."""
    given, turns = trajectory.raw.get("turncase"), trajectory.raw.get("turns")
    if given in (SINGLE_TURN, MULTI_TURN):
        return str(given)
    if isinstance(turns, list) and turns:
        return MULTI_TURN if len(turns) > 1 else SINGLE_TURN
    return None


_COUNT_HEADS = {"calls": ("Tool calls", "the task's predicted calls"),
                "flagged": ("outcome recorded", "calls that carry is_error (true or false) in the prediction file"),
                "valid": ("valid", "calls whose is_error is false: recorded without an error")}


class ToolUse(Plain[Mapping[str, JsonValue], EvaluatorOptions]):
    """Tool-use analytics, computed from the predictions at scoring time (no file, no judge)."""

    card = Card(name=KEY, reads=frozenset({"prediction"}), metrics=METRICS, position=40)
    options_type = EvaluatorOptions

    def compute(self, predictions: TrajectoryFile) -> Verdicts:
        """Per task id of the file, its call counts under ``tool_use`` (and its ``turncase`` where it says)."""
        per_id: dict[str, dict[str, JsonValue]] = {}
        for tid, t in predictions.tasks.items():
            case = turncase(t)
            per_id[tid] = {KEY: call_counts(t), **({"turncase": case} if case is not None else {})}
        return Verdicts(per_id=per_id)

    def aggregate(self, verdicts: Verdicts, ids: Sequence[str]) -> JsonObject:
        """``{"tool_use": {proactivity, success_rate, success_rate_flagged, volume}}`` over these ids (an id
        without counts has no call), with ``by_turncase`` when some of them says its turncase."""
        empty = {k: 0 for k in COUNTS}
        counts: dict[str, Mapping[str, int]] = {i: verdicts.per_id.get(i, {}).get(KEY, empty) for i in ids}
        out = tool_use(list(counts.values()))
        cases = {i: verdicts.per_id.get(i, {}).get("turncase") for i in ids}
        if any(cases.values()):
            by_case: JsonObject = {}
            for case in (SINGLE_TURN, MULTI_TURN):
                part = [counts[i] for i in ids if (cases[i] or SINGLE_TURN) == case]
                by_case[case] = {"calls": sum(c["calls"] for c in part), "tasks": len(part), **tool_use(part)}
            out["by_turncase"] = by_case
        return {KEY: out}

    def display(self, task: Mapping[str, JsonValue] | None, meta: Mapping[str, JsonValue]) -> list[JsonObject]:
        """The viewer's block of a task: its calls, those whose outcome the prediction file records, and those
        recorded as valid."""
        counts = task.get(KEY) if task is not None else None
        if not isinstance(counts, Mapping):
            return []
        return [{"title": "Tool use", "id": "tool-use", "parts": [
            {"kind": "rows", "head": [_COUNT_HEADS[k][0] for k in COUNTS], "rows": [[counts.get(k) for k in COUNTS]]},
            {"kind": "note", "text": "; ".join(f"{_COUNT_HEADS[k][0]}: {_COUNT_HEADS[k][1]}" for k in COUNTS)}]}]


EVALUATOR: Evaluator[Mapping[str, JsonValue], EvaluatorOptions] = ToolUse()
