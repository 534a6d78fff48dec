"""The metric table: every number the engine reports, with its label, profiles, aggregation and role.

Aggregation, the drop-in output files, the reports, the plots and the judge-file reader all read
this table. It is the core metrics (the alignment metrics and the budget, sources ``alignment`` and
``budget``), then the metric rows of every evaluator (engine.evaluators, source: the evaluator's
name) in the evaluators' order; the budget comes last. Adding a core metric is one entry here plus
its per-task formula (alignment metrics in `engine.metrics.task_scores`); adding an evaluator's is
one row in its module. A dotted key ``block.name`` is the value ``name`` of the object ``block`` of
an aggregate (an evaluator's nested aggregate; such rows are aggregated by the evaluator itself,
rule ``evaluator``, and are not columns of the per-task CSV). Aggregation rules (over the scored
tasks of one prediction file):

- ``matched/gt``, ``matched/pred``: sum of matches over sum of GT (predicted) calls;
- ``gt_weighted``: sum over tasks of value x n_gt, over sum n_gt;
- ``strong_mean``: sum of the strong-match similarities over the number of strong matches;
- ``judged_mean``: plain mean over the tasks that have a judge value;
- ``sum``: sum over the tasks (call outcome counts; a file that gives only totals gives the aggregate);
- ``mean_pred_steps``: mean number of predicted steps; ``pred_calls_per_task``: predicted calls per task;
- ``evaluator``: the evaluator's own ``aggregate`` function.

The Average Score of the paper's Table 2 is the plain mean of the metrics with ``in_average``
that are present: the six alignment columns and Information Grounding (Task Completion is
shown, not averaged). The call outcomes (paper Figure 6) are counts: the samples with an
illegal calling format and the predicted calls of each of the four classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

from engine.evaluators import evaluators
from engine.evaluators.base import PROFILES, Metric

Profile = Literal["reference", "paper"]
"""A metrics profile (one of PROFILES)."""

__all__ = ["AVERAGE", "BY_KEY", "CORE_SOURCES", "EVALUATOR_KEYS", "METRICS", "PROFILES", "Column", "Metric",
           "alignment_keys", "check_profile", "evaluator_columns", "label_of", "leaderboard_columns", "metric_value",
           "metrics_of"]
AVERAGE = "Average Score"
CORE_SOURCES: tuple[str, ...] = ("alignment", "budget")

_BOTH = PROFILES
_SCORE = (0.0, 1.0)
_ALIGNMENT: tuple[Metric, ...] = (
    Metric("recall", "Recall", "alignment", _BOTH, "matched/gt", True, True, *_SCORE),
    Metric("precision", "Precision", "alignment", _BOTH, "matched/pred", True, True, *_SCORE),
    Metric("avg_sim_all_cov", "Argument Similarity", "alignment", ("reference",), "gt_weighted", True, True, *_SCORE),
    Metric("avg_sim_strong_cov", "Strong Similarity", "alignment", ("reference",), "gt_weighted", False, False,
           *_SCORE),
    Metric("arg_sim", "Argument Similarity", "alignment", ("paper",), "strong_mean", True, True, *_SCORE),
    Metric("step_coherence_cov", "Step Coherence", "alignment", _BOTH, "gt_weighted", True, True, *_SCORE),
    Metric("order_consistency_cov", "Order Consistency", "alignment", _BOTH, "gt_weighted", True, True, *_SCORE),
    Metric("merge_purity_cov", "Merge Purity", "alignment", _BOTH, "gt_weighted", True, True, *_SCORE),
)
_BUDGET: tuple[Metric, ...] = (
    Metric("avg_Rounds", "Steps", "budget", _BOTH, "mean_pred_steps", False, False, direction="none"),
    Metric("avg_tool_calls", "Calls", "budget", _BOTH, "pred_calls_per_task", False, False, direction="none"),
)
METRICS: tuple[Metric, ...] = (*_ALIGNMENT, *(m for e in evaluators() for m in e.card.metrics), *_BUDGET)
BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}


def check_profile(profile: str) -> Profile:
    """The profile, or a ValueError naming the choices."""
    if profile not in PROFILES:
        raise ValueError(f"unknown metrics profile {profile!r}; expected one of {', '.join(PROFILES)}")
    return cast("Profile", profile)


def metrics_of(source: str, profile: str | None = None) -> tuple[Metric, ...]:
    """The metrics of one source (for one profile, or of any profile), in table order."""
    return tuple(m for m in METRICS if m.source == source and (profile is None or profile in m.profiles))


def alignment_keys(profile: str) -> tuple[str, ...]:
    """Per-task alignment metric keys of a profile, in output order."""
    return tuple(m.key for m in metrics_of("alignment", check_profile(profile)))


EVALUATOR_KEYS: tuple[str, ...] = tuple(m.key for m in METRICS if m.source not in CORE_SOURCES)
"""Values joined to the scoring outputs by the evaluators, in table order."""


def metric_value(block: dict[str, Any], key: str) -> Any:
    """The value of a metric key in an aggregate block (a dotted key looks into nested objects);
    None when absent."""
    value: Any = block
    for part in key.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


@dataclass(frozen=True)
class Column:
    """A leaderboard column: its label and the result keys that fill it (first present wins)."""

    label: str
    keys: tuple[str, ...]
    source: str
    in_average: bool


def leaderboard_columns(source: str) -> tuple[Column, ...]:
    """The table columns of one source, merging the profiles' keys that share a label."""
    columns: dict[str, Column] = {}
    for m in METRICS:
        if m.source != source or not (m.column or source == "budget"):
            continue
        seen = columns.get(m.label)
        keys = (*seen.keys, m.key) if seen else (m.key,)
        columns[m.label] = Column(m.label, keys, m.source, m.in_average)
    return tuple(columns.values())


def evaluator_columns() -> tuple[Column, ...]:
    """The table columns of every evaluator, in table order."""
    return tuple(c for e in evaluators() for c in leaderboard_columns(e.card.name))


def label_of(key: str) -> str:
    """The display label of a result key (the key itself when it is not a metric)."""
    metric = BY_KEY.get(key)
    return metric.label if metric else key
