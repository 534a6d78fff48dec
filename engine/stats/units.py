"""Each model's units for the statistics step: per scored id its cluster and the numerator and denominator of
every leaderboard aggregate's ratio (engine.metricspec's rules), the published values, the value a ratio with
no denominator reads as, and the quantities that are constant by construction.

Each aggregate is a ratio of sums over scored ids: recall = sum matched / sum n_gt, precision = sum matched /
sum n_pred, a ``*_cov`` metric = sum(value x n_gt) / sum n_gt, the paper's Argument Similarity = sum of strong
similarities / strong matches, a judged mean (Task Completion, Information Grounding, ARS, APR) = sum of values /
ids judged, and the neighbour benchmarks' aggregates (neighbour_parts).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.evaluators.answer_equivalence import LEVELS
from engine.evaluators.tool_use import KEY as TOOL_USE
from engine.metrics import TaskScores
from engine.metricspec import BY_KEY, EVALUATOR_KEYS, alignment_keys, metric_value
from engine.stats.settings import AVERAGE_KEY

if TYPE_CHECKING:
    from engine.judge_results import Joined
    from engine.pipeline import SweepScores


@dataclass
class ModelUnits:
    """One model's scored ids: each id's cluster, its numerator and denominator of every metric, the
    published aggregate values, the metrics its Average Score averages, and per metric the reason it is
    constant by construction (it then gets no interval and takes no part in ranks and pairs)."""

    name: str
    ids: list[str]
    clusters: list[str]
    num: dict[str, np.ndarray]
    den: dict[str, np.ndarray]
    published: dict[str, float]
    average: tuple[str, ...] = field(default_factory=tuple)
    constant: dict[str, str] = field(default_factory=dict)


def empty_value(key: str) -> float:
    """What a ratio of `key` with a zero denominator reads as: 0 for the alignment metrics (the published
    scorer's 0/0, engine.metrics.aggregate), no value (NaN) for the others, as their aggregates give None."""
    return 0.0 if key in BY_KEY and BY_KEY[key].source == "alignment" else math.nan


def alignment_parts(scores: TaskScores, samples: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per alignment metric of the profile, the per-sample numerator and denominator of its ratio."""
    n_gt = scores.n_gt[samples].astype(np.float64)
    matched = scores.matched[samples].astype(np.float64)
    out = {}
    for key in scores.names:
        rule = BY_KEY[key].aggregation
        if rule == "matched/gt":
            out[key] = matched, n_gt
        elif rule == "matched/pred":
            out[key] = matched, scores.n_pred[samples].astype(np.float64)
        elif rule == "gt_weighted":
            out[key] = scores.values[key][samples] * n_gt, n_gt
        elif rule == "strong_mean":
            out[key] = (scores.strong_similarity[samples].astype(np.float64),
                        scores.strong_matches[samples].astype(np.float64))
        else:  # a new alignment rule must say its ratio here
            raise ValueError(f"no ratio for the aggregation {rule!r} of {key}")
    return out


JUDGED_KEYS: tuple[str, ...] = tuple(k for k in EVALUATOR_KEYS
                                     if BY_KEY[k].aggregation == "judged_mean" and BY_KEY[k].column)
"""The evaluators' plain means over the judged ids that the leaderboards show."""


NEIGHBOUR_KEYS: tuple[str, ...] = (*(f"{TOOL_USE}.{k}" for k in ("proactivity", "success_rate", "success_rate_flagged",
                                                                  "volume")),
                                   *(f"answer_sr_{level.lower()}" for level in LEVELS), "answer_sr_micro",
                                   "check_accuracy_evaluated", "check_accuracy")
"""The neighbour benchmarks' aggregates resampled as ratios: tool use (VisualToolBench), MCPVerse's SR per level
and over every judged answer, TOBench's accuracy (evaluated tasks, and errors counted as failures)."""
WHOLE_FILE_KEYS = ("answer_level", "check_success")
"""The per-task keys of the evaluators that judge every task of their file (their aggregates count every
task of it, scored or not)."""


def neighbour_parts(ids: list[str], judged: dict[str, dict[str, Any]], scored: int) -> dict[str, tuple[np.ndarray,
                                                                                                    np.ndarray]]:
    """Per neighbour aggregate some id has (NEIGHBOUR_KEYS), the per-id numerator and denominator of its
    ratio from the joined values (`judged`: id -> values), over the first `scored` ids for tool use (the
    scored ids) and over every id for answers and checks:

    - Proactivity: calls > 0 over 1; Success Rate: calls not reporting an error over calls; Success Rate
      (flagged calls): valid over flagged; Volume: calls over 1 (an id without counts has no call);
    - SR of a level: the answer's score over 1, for the judged answers of that level; SR (micro): over
      every judged answer;
    - Accuracy: the check's success over 1 for the tasks without an evaluator error; Accuracy (errors as
      failures): over every checked task.
    """
    n = len(ids)
    values = [judged.get(i, {}) for i in ids]
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if any(isinstance(v.get(TOOL_USE), dict) for v in values[:scored]):
        counts = np.zeros((n, 3))
        for j, v in enumerate(values[:scored]):
            block = v.get(TOOL_USE) or {}
            counts[j] = [block.get("calls", 0), block.get("flagged", 0), block.get("valid", 0)]
        calls, flagged, valid = counts.T
        one = np.r_[np.ones(scored), np.zeros(n - scored)]
        for name, num, den in (("proactivity", (calls > 0).astype(np.float64), one),
                               ("success_rate", calls - (flagged - valid), calls),
                               ("success_rate_flagged", valid, flagged), ("volume", calls, one)):
            out[f"{TOOL_USE}.{name}"] = num, den
    scores = np.array([0.0 if (success := v.get("answer_success")) is None else float(success) for v in values])
    judged_answer = np.array(["answer_level" in v and v.get("answer_success") is not None for v in values])
    if judged_answer.any():
        for level in LEVELS:
            at = judged_answer & np.array([v.get("answer_level") == level for v in values])
            if at.any():
                out[f"answer_sr_{level.lower()}"] = np.where(at, scores, 0.0), at.astype(np.float64)
        out["answer_sr_micro"] = np.where(judged_answer, scores, 0.0), judged_answer.astype(np.float64)
    checked = np.array(["check_success" in v for v in values])
    if checked.any():
        success = np.array([float(v.get("check_success") or 0) for v in values])
        evaluated = checked & np.array([v.get("check_success") is not None for v in values])
        out["check_accuracy_evaluated"] = np.where(evaluated, success, 0.0), evaluated.astype(np.float64)
        out["check_accuracy"] = np.where(checked, success, 0.0), checked.astype(np.float64)
    return out


def model_units(name: str, ids: list[str], clusters: list[str], parts: dict[str, tuple[np.ndarray, np.ndarray]],
                judged: dict[str, dict[str, Any]], published: dict[str, Any], profile: str,
                extra: Sequence[tuple[str, str]] = ()) -> ModelUnits:
    """One model's units: alignment `parts` (alignment_parts) and the joined values per id (`judged`: id ->
    {key: value}); a judged key counts where the id has it (denominator 1), nowhere else; the neighbour
    aggregates by neighbour_parts. extra: (id, cluster) of the tasks that only the evaluators judging every
    task of their file count (answers, checks), beyond the scored `ids`."""
    scored = len(ids)
    ids = [*ids, *(i for i, _ in extra)]
    clusters = [*clusters, *(c for _, c in extra)]
    pad = np.zeros(len(ids) - scored)
    num = {k: np.r_[np.asarray(v[0], dtype=np.float64), pad] for k, v in parts.items()}
    den = {k: np.r_[np.asarray(v[1], dtype=np.float64), pad] for k, v in parts.items()}
    for key in JUDGED_KEYS:
        has = np.array([key in judged.get(i, {}) and j < scored for j, i in enumerate(ids)], dtype=bool)
        if has.any():
            num[key] = np.array([float(judged[i][key]) if h else 0.0 for i, h in zip(ids, has)])
            den[key] = has.astype(np.float64)
    for key, (top, bottom) in neighbour_parts(ids, judged, scored).items():
        num[key], den[key] = top, bottom
    average = tuple(k for k in (*alignment_keys(profile), *JUDGED_KEYS) if BY_KEY[k].in_average and k in num)
    values = {k: float(metric_value(published, k)) for k in num if metric_value(published, k) is not None}
    if average and all(k in values for k in average):
        values[AVERAGE_KEY] = sum(values[k] for k in average) / len(average)
    constant = {k: "constant by construction: its denominator is 0 on every id (0/0 read as "
                   f"{empty_value(k):g}, as the published scorer reads it)"
                for k in values if k in den and not den[k][:scored].any() and not math.isnan(empty_value(k))}
    success, flags = f"{TOOL_USE}.success_rate", f"{TOOL_USE}.success_rate_flagged"
    if success in values and success not in constant and flags in den and not den[flags].any():
        constant[success] = "constant by construction: no call carries an error flag, so every call counts as a success"
    return ModelUnits(name, list(ids), list(clusters), num, den, values, average, constant)


def sweep_units(result: SweepScores, names: list[str], joined: Sequence[Joined | None],
                aggregates: list[dict]) -> list[ModelUnits]:
    """Each scored prediction file of a sweep (engine.pipeline.SweepScores) as ModelUnits: its scored
    ids, their task families (the GT's ``type``, else the prediction's, as by_type groups them), the
    alignment metrics' ratios, the joined judged values and the published aggregate; the tasks of an answer
    or check file that were not scored count for those aggregates alone (in the GT's family, else "unknown")."""
    tables = result.tables
    units = []
    for f, name in enumerate(names):
        samples = result.samples_of(f)
        ids = [tables.task_ids[tables.sample_task[s]] for s in samples.tolist()]
        families = [tables.task_types[tables.sample_task[s]] or tables.sample_pred[s].type or "unknown"
                    for s in samples.tolist()]
        found = joined[f]
        judged = found.per_id if found is not None else {}
        scored = set(ids)
        extra = [(i, (result.gt.tasks[i].type if i in result.gt.tasks else None) or "unknown") for i in judged
                 if i not in scored and any(k in judged[i] for k in WHOLE_FILE_KEYS)]
        units.append(model_units(name, ids, families, alignment_parts(result.scores, samples), judged,
                                 aggregates[f], result.settings.profile, extra))
    return units
