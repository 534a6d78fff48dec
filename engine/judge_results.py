"""Evaluator results joined to a prediction file's outputs.

Every evaluator that reads a file (engine.evaluators) may have one beside a prediction file
``<stem>.json``: ``<stem>_<suffix>.json`` (e.g. ``_taskcompletion`` of m3_judges, ``_callanalysis``
of call_outcomes), or one named explicitly (the score app's ``model.<option>=PATH``, e.g.
``inputs.verdicts.judge``, ``inputs.verdicts.calls``). Evaluators that compute their values from the predictions
(``compute``) join every prediction file. Values join each task of ``per_id`` and are aggregated by
the metric table's rules and by the evaluator's own ``aggregate``; values a file gives only as
totals join the file's aggregate as they are.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

from engine.contract import JsonObject, TrajectoryFile
from engine.evaluators import evaluators
from engine.evaluators.answer_equivalence import ODD_SCORES
from engine.evaluators.base import Verdicts
from engine.evaluators.protocol import EntryT, Evaluator, OptionsT, ReadSettings
from engine.evaluators.vtb_scoring import COUNTS as VTB_COUNTS
from engine.judging import mean
from engine.metricspec import metric_value, metrics_of

log = logging.getLogger(__name__)


def companion_path(predictions: Path, suffix: str) -> Path:
    """The file of an evaluator beside a prediction file: <stem>_<suffix>.json."""
    predictions = Path(predictions)
    return predictions.with_name(f"{predictions.stem}_{suffix}.json")


@dataclass(frozen=True)
class JoinedFiles:
    """The evaluator files of one prediction file: evaluator name -> path (only those there are)."""

    files: Mapping[str, Path] = field(default_factory=dict)
    settings: Mapping[str, Mapping[str, str | None]] = field(default_factory=dict)
    """Evaluator name -> the keyword settings its ``read`` takes (e.g. vtb_rubrics: {"profile": ...})."""

    def meta(self) -> JsonObject:
        """The files as the outputs' meta records them: the evaluator's option (judge, calls, ...) -> path,
        and ``<option>_<setting>`` -> value for the settings of the evaluators with a file."""
        by_name = {e.card.name: e.card for e in evaluators()}
        out: JsonObject = {by_name[name].option_name: str(path) for name, path in self.files.items()}
        for name, settings in self.settings.items():
            if name in self.files:
                out.update((f"{by_name[name].option_name}_{k}", v) for k, v in settings.items())
        return out


def joined_files(predictions: Path, explicit: Mapping[str, str | PathLike[str] | None] | None = None) -> JoinedFiles:
    """Per evaluator that reads a file: the file named by its option in `explicit` (e.g. {"judge":
    PATH}), else the companion file beside the predictions when it exists."""
    explicit = explicit or {}
    files = {}
    for e in evaluators():
        if e.card.suffix is None:
            continue
        named = explicit.get(e.card.option_name)
        path = Path(named) if named else companion_path(predictions, e.card.suffix)
        if named or path.is_file():
            files[e.card.name] = path
    return JoinedFiles(files)


@dataclass
class Joined:
    """Joined values: per task id, and file totals of the keys no task has; `verdicts` keeps the
    values of each evaluator that aggregates them itself, `expected` (file, per-task keys) of
    the files with values per task, which every scored task should have, and `listed` the entries of
    the files of every task."""

    per_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    totals: dict[str, Any] = field(default_factory=dict)
    verdicts: dict[str, Verdicts] = field(default_factory=dict)
    expected: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    listed: list[tuple[str, frozenset[str], str]] = field(default_factory=list)
    """(file, the ids it has an entry for, its headline metric) of the files of the evaluators that judge
    every task (answers, checks): every scored task should have an entry, and the headline a value."""

    def add(self, evaluator: Evaluator[EntryT, OptionsT], values: Verdicts) -> None:
        """Join one evaluator's values."""
        self.totals.update(values.totals)
        for tid, block in values.per_id.items():
            self.per_id.setdefault(tid, {}).update(block)
        self.verdicts[evaluator.card.name] = values

    def keys(self) -> list[str]:
        """The joined per-task keys present, in table order (nested ones are left out), each evaluator's
        metric keys followed by its other per-task columns."""
        present = set(self.totals).union(*self.per_id.values())
        return [k for e in evaluators() for k in (*(m.key for m in e.card.metrics), *e.card.columns) if k in present]


def _warn_unmatched(path: Path, per_id: Mapping[str, object], predictions: TrajectoryFile) -> None:
    """Warn about the ids of an evaluator file that match no prediction (their values count nowhere)."""
    unmatched = [tid for tid in per_id if tid not in predictions.tasks]
    if unmatched:
        log.warning("%s: %d id(s) match no prediction of %s and are left out: %s", path, len(unmatched),
                    predictions.path, ", ".join(unmatched[:5]) + (" ..." if len(unmatched) > 5 else ""))


def load_joined(files: JoinedFiles | None, predictions: TrajectoryFile | None = None) -> Joined | None:
    """The values of a prediction file's evaluator files, and of the evaluators that compute theirs
    from the predictions; None when there are none."""
    joined = Joined()
    found = False
    for e in evaluators():
        card = e.card
        if card.suffix is not None and files is not None and card.name in files.files:
            path = files.files[card.name]
            profile = files.settings.get(card.name, {}).get("profile")
            values = e.read(path, ReadSettings(vtb_profile=profile))
            if predictions is not None:
                _warn_unmatched(path, values.per_id, predictions)
            expected = tuple(m.key for m in card.metrics if m.aggregation != "evaluator")
            if expected and (values.per_id or not values.totals):
                joined.expected.append((str(path), expected))
            if card.all_tasks and card.metrics:
                joined.listed.append((str(path), frozenset(values.per_id) | frozenset(values.detail),
                                      card.metrics[0].key))
        elif card.suffix is None and predictions is not None:
            values = e.compute(predictions)
        else:
            continue
        joined.add(e, values)
        found = True
    return joined if found else None


def joined_aggregate(joined: Joined | Verdicts, ids: Sequence[str], totals: bool = True) -> dict[str, Any]:
    """The joined values over these ids: each evaluator's rows by the metric table's rules (judged_mean,
    sum), then its own aggregate, if any (over every task of its file when it judges all tasks
    and `totals` is true); file totals stand for keys no task has when `totals` is true."""
    out: dict[str, Any] = {}
    own = getattr(joined, "verdicts", {})
    for e in evaluators():
        for metric in metrics_of(e.card.name):
            key = metric.key
            if metric.aggregation == "evaluator":
                continue
            values = [joined.per_id[i][key] for i in ids if key in joined.per_id.get(i, {})]
            if values:
                out[key] = sum(values) if metric.aggregation == "sum" else mean(values)
            elif totals and key in joined.totals:
                out[key] = joined.totals[key]
        if e.card.name in own:
            verdicts = own[e.card.name]
            found = e.aggregate(verdicts, list(verdicts.per_id) if e.card.all_tasks and totals else ids)
            out.update(found or {})
    return out


HEADLINE_KEYS: tuple[str, ...] = ("answer_sr", "check_accuracy_evaluated")
"""The outcome checks' headline numbers: MCPVerse's SR and TOBench's accuracy over the evaluated tasks."""


ODD_COUNTS: tuple[str, ...] = (*ODD_SCORES, *VTB_COUNTS)
"""The counts of what the neighbours' published code reads otherwise than this project (MCPVerse's boolean and
out-of-range judge scores; VisualToolBench's fenced and empty judge replies and middle turns never answered),
in an evaluator's aggregate or its ``rubrics`` block when not zero; docs/judges.md says what each would do."""


def _file_aggregate(evaluator: Evaluator[EntryT, OptionsT], path: Path) -> dict[str, Any]:
    """The joined aggregate of an evaluator's file over the tasks it has."""
    values = evaluator.read(path, ReadSettings()) if evaluator.card.suffix is not None else Verdicts()
    joined = Joined()
    joined.add(evaluator, values)
    return joined_aggregate(joined, list(values.per_id))


def odd_counts(aggregate: Mapping[str, Any]) -> dict[str, int]:
    """The ODD_COUNTS an aggregate gives (at its top or in its ``rubrics`` block), those not zero, in order."""
    rubrics = aggregate.get("rubrics")
    found = {**aggregate, **(rubrics if isinstance(rubrics, Mapping) else {})}
    return {k: found[k] for k in ODD_COUNTS if found.get(k)}


def verdict_lines(evaluator: Evaluator[EntryT, OptionsT], path: Path) -> list[str]:
    """The closing lines of an evaluator's file, read once: its headline numbers under the papers' names over
    the tasks it has (its leaderboard columns: Task Completion, Information Grounding, VisualToolBench's rubric
    scores; else its HEADLINE_KEYS: SR, Accuracy; else every metric it reports: the call outcome counts), then
    the ODD_COUNTS the published code reads otherwise, when there are any."""
    aggregate = _file_aggregate(evaluator, path)
    metrics = metrics_of(evaluator.card.name)
    shown = ([m for m in metrics if m.column] or [m for m in metrics if m.key in HEADLINE_KEYS] or list(metrics))

    def cell(value: object) -> str:
        if value is None:
            return "–"
        return f"{value:.4f}" if isinstance(value, float) else str(value)

    lines = [", ".join(f"{m.label} {cell(metric_value(aggregate, m.key))}" for m in shown)]
    counts = odd_counts(aggregate)
    if counts:
        lines.append("read otherwise by the published code (docs/judges.md): "
                     + ", ".join(f"{k} {n}" for k, n in counts.items()))
    return lines
