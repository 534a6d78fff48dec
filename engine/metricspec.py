"""The metric table: every number the engine reports, with its label, profiles, aggregation and role.

Aggregation, the drop-in output files, the reports, the plots and the judge-file reader all read
this table; adding a metric is one entry here plus its per-task formula (alignment metrics in
`engine.metrics.task_scores`). Aggregation rules (over the scored tasks of one prediction file):

- ``matched/gt``, ``matched/pred``: sum of matches over sum of GT (predicted) calls;
- ``gt_weighted``: sum over tasks of value x n_gt, over sum n_gt;
- ``strong_mean``: sum of the strong-match similarities over the number of strong matches;
- ``judged_mean``: plain mean over the tasks that have a judge value;
- ``sum``: sum over the tasks (call outcome counts; a file that gives only totals gives the aggregate);
- ``mean_pred_steps``: mean number of predicted steps; ``pred_calls_per_task``: predicted calls per task;
- ``tool_use``: the tool-use analytics' own rules (`engine.evaluators.tool_use`: macro over tasks for
  Proactivity and Volume, micro over calls for Success Rate).

The rubric metrics (``rubrics``, `engine.evaluators.vtb_rubrics`) are ``judged_mean``: the Average
Rubric Score is the mean of the tasks' weighted rubric scores, the Average Pass Rate the mean of their
0/1 passes, over the tasks that have rubric verdicts.
- outcome checks (source ``outcomes``, their evaluators' ``aggregate``): ``level_mean``: mean 0/1 over
  the judged tasks of one complexity level; ``level_macro``: mean of the level means present;
  ``judged_mean``: mean over the judged tasks; ``task_mean``: mean task success over every checked task,
  evaluator errors counted as failures; ``evaluated_mean``: the same over the tasks without an evaluator
  error; ``count``: a number of tasks.

The Average Score of the paper's Table 2 is the plain mean of the metrics with ``in_average``
that are present: the six alignment columns and Information Grounding (Task Completion is
shown, not averaged). The call outcomes (paper Figure 6) are counts: the samples with an
illegal calling format and the predicted calls of each of the four classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Source = Literal["alignment", "judge", "budget", "calls", "rubrics", "tool_use", "outcomes"]
PROFILES: tuple[str, ...] = ("reference", "paper")
AVERAGE = "Average Score"


@dataclass(frozen=True)
class Metric:
    """One reported number."""

    key: str                    # key in results_eval.json (aggregate, per_id, by_type)
    label: str                  # the paper's column label
    source: Source              # what produces it
    profiles: tuple[str, ...]   # metrics profiles that report it
    aggregation: str            # rule over tasks (module docstring)
    in_average: bool            # part of the Average Score
    column: bool                # a column of the leaderboard tables


_BOTH = PROFILES
METRICS: tuple[Metric, ...] = (
    Metric("recall", "Recall", "alignment", _BOTH, "matched/gt", True, True),
    Metric("precision", "Precision", "alignment", _BOTH, "matched/pred", True, True),
    Metric("avg_sim_all_cov", "Argument Similarity", "alignment", ("reference",), "gt_weighted", True, True),
    Metric("avg_sim_strong_cov", "Strong Similarity", "alignment", ("reference",), "gt_weighted", False, False),
    Metric("arg_sim", "Argument Similarity", "alignment", ("paper",), "strong_mean", True, True),
    Metric("step_coherence_cov", "Step Coherence", "alignment", _BOTH, "gt_weighted", True, True),
    Metric("order_consistency_cov", "Order Consistency", "alignment", _BOTH, "gt_weighted", True, True),
    Metric("merge_purity_cov", "Merge Purity", "alignment", _BOTH, "gt_weighted", True, True),
    Metric("task_completion", "Task Completion", "judge", _BOTH, "judged_mean", False, True),
    Metric("information_grounding", "Information Grounding", "judge", _BOTH, "judged_mean", True, True),
    Metric("illegal_calling", "Illegal Calling Format", "calls", _BOTH, "sum", False, False),
    Metric("unknown_tool", "Unknown Tool Invocation", "calls", _BOTH, "sum", False, False),
    Metric("invalid_arguments", "Invalid Invocation Arguments", "calls", _BOTH, "sum", False, False),
    Metric("resource_not_found", "Resource Not Found", "calls", _BOTH, "sum", False, False),
    Metric("success", "Successful Call", "calls", _BOTH, "sum", False, False),
    Metric("rubric_score", "Average Rubric Score", "rubrics", _BOTH, "judged_mean", False, True),
    Metric("pass_rate", "Average Pass Rate", "rubrics", _BOTH, "judged_mean", False, True),
    Metric("proactivity", "Tool-Call Proactivity", "tool_use", _BOTH, "tool_use", False, True),
    Metric("success_rate", "Tool-Call Success Rate", "tool_use", _BOTH, "tool_use", False, True),
    Metric("volume", "Tool-Call Volume", "tool_use", _BOTH, "tool_use", False, True),
    Metric("answer_sr", "SR", "outcomes", _BOTH, "level_macro", False, True),
    Metric("answer_sr_l1", "SR L1", "outcomes", _BOTH, "level_mean", False, True),
    Metric("answer_sr_l2", "SR L2", "outcomes", _BOTH, "level_mean", False, True),
    Metric("answer_sr_l3", "SR L3", "outcomes", _BOTH, "level_mean", False, True),
    Metric("answer_sr_micro", "SR (micro)", "outcomes", _BOTH, "judged_mean", False, True),
    Metric("answer_judged", "Answers Judged", "outcomes", _BOTH, "count", False, False),
    Metric("answer_skipped", "Answers Skipped", "outcomes", _BOTH, "count", False, False),
    Metric("check_accuracy", "Accuracy", "outcomes", _BOTH, "task_mean", False, True),
    Metric("check_accuracy_evaluated", "Accuracy (evaluated)", "outcomes", _BOTH, "evaluated_mean", False, True),
    Metric("check_tasks", "Tasks Checked", "outcomes", _BOTH, "count", False, False),
    Metric("check_errors", "Evaluator Errors", "outcomes", _BOTH, "count", False, False),
    Metric("avg_Rounds", "Steps", "budget", _BOTH, "mean_pred_steps", False, False),
    Metric("avg_tool_calls", "Calls", "budget", _BOTH, "pred_calls_per_task", False, False),
)
BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}


def check_profile(profile: str) -> str:
    """The profile, or a ValueError naming the choices."""
    if profile not in PROFILES:
        raise ValueError(f"unknown metrics profile {profile!r}; expected one of {', '.join(PROFILES)}")
    return profile


def metrics_of(source: Source, profile: str | None = None) -> tuple[Metric, ...]:
    """The metrics of one source (for one profile, or of any profile), in table order."""
    return tuple(m for m in METRICS if m.source == source and (profile is None or profile in m.profiles))


def alignment_keys(profile: str) -> tuple[str, ...]:
    """Per-task alignment metric keys of a profile, in output order."""
    return tuple(m.key for m in metrics_of("alignment", check_profile(profile)))


JUDGE_KEYS: tuple[str, ...] = tuple(m.key for m in metrics_of("judge"))
CALL_KEYS: tuple[str, ...] = tuple(m.key for m in metrics_of("calls"))
CALL_CLASSES: tuple[str, ...] = CALL_KEYS[1:]
"""The four per-call classes, in the published order (1 unknown tool ... 4 success)."""
RUBRIC_KEYS: tuple[str, ...] = tuple(m.key for m in metrics_of("rubrics"))
TOOL_USE_KEYS: tuple[str, ...] = tuple(m.key for m in metrics_of("tool_use"))
JOINED_KEYS: tuple[str, ...] = JUDGE_KEYS + CALL_KEYS + RUBRIC_KEYS
"""Values joined to the scoring outputs from judge files, in table order."""


@dataclass(frozen=True)
class Column:
    """A leaderboard column: its label and the result keys that fill it (first present wins)."""

    label: str
    keys: tuple[str, ...]
    source: Source
    in_average: bool


def leaderboard_columns(source: Source) -> tuple[Column, ...]:
    """The table columns of one source, merging the profiles' keys that share a label."""
    columns: dict[str, Column] = {}
    for m in METRICS:
        if m.source != source or not (m.column or source == "budget"):
            continue
        seen = columns.get(m.label)
        keys = (*seen.keys, m.key) if seen else (m.key,)
        columns[m.label] = Column(m.label, keys, m.source, m.in_average)
    return tuple(columns.values())


def label_of(key: str) -> str:
    """The display label of a result key (the key itself when it is not a metric)."""
    metric = BY_KEY.get(key)
    return metric.label if metric else key
