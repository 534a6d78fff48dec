"""Judge results joined to a prediction file's outputs.

Two files may lie beside a prediction file ``<stem>.json`` (or be named explicitly):

- ``<stem>_taskcompletion.json``: Task Completion and Information Grounding per task, in the
  published shape ``{"aggregate": {...}, "pre_id": {id: {"final": TC, "judges": [...],
  "info_grounding": {"final": IG, "judges": [...]}}}}`` ("per_id" is accepted for "pre_id"; an entry
  that is a bare number is a Task Completion alone), or a list of ``{id, task_completion,
  information_grounding}`` records, or an object of such records keyed by id;
- ``<stem>_callanalysis.json``: the call outcomes, in the published shape (the five counts
  ``illegal_calling``, ``unknown_tool``, ``invalid_arguments``, ``resource_not_found``, ``success``),
  optionally with ``per_id`` counts per task;
- ``<stem>_rubrics.json``: VisualToolBench rubric verdicts (`engine.evaluators.vtb_rubrics`: its own
  file or a drop-in list of ``{id, rubrics: [{weight, critical?, met, category?}]}``), giving each
  task its ``rubric_score`` and ``pass_rate`` (0 or 1).

Values join each task of ``per_id`` and are aggregated by the metric table's rules; counts a file
gives only as totals join the file's aggregate as they are.

The outcome checks' files (``<stem>_answers.json``, ``<stem>_checks.json``; engine.evaluators) join
too: their per-task values join ``per_id`` and their evaluator's own aggregate joins each aggregate.
The file's aggregate is over every task the outcome file holds (the tasks file's, so a task whose
agent run did not end counts as it is scored there), a family's over the scored tasks of the family.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.contract import InputError, is_number, read_json
from engine.evaluators import answer_equivalence, verifiers, vtb_rubrics
from engine.evaluators.base import Evaluator, Verdicts
from engine.metricspec import BY_KEY, CALL_KEYS, JOINED_KEYS, JUDGE_KEYS, RUBRIC_KEYS

TASKCOMPLETION = "taskcompletion"
CALLANALYSIS = "callanalysis"
RUBRICS = vtb_rubrics.SUFFIX
_ENTRY_KEYS = ("pre_id", "per_id")
OUTCOME_EVALUATORS: tuple[Evaluator, ...] = (answer_equivalence.EVALUATOR, verifiers.EVALUATOR)
"""The outcome checks whose files join the scoring outputs (found beside the predictions by suffix)."""
OUTCOME_VALUE_KEYS: tuple[str, ...] = ("answer_level", "answer_success", "check_success", "check_error")
"""Per-task values of the outcome files, in the order of the per-task CSV."""


def companion_path(predictions: Path, kind: str) -> Path:
    """The file of this kind (TASKCOMPLETION, CALLANALYSIS or RUBRICS) beside a prediction file: <stem>_<kind>.json."""
    predictions = Path(predictions)
    return predictions.with_name(f"{predictions.stem}_{kind}.json")


@dataclass(frozen=True)
class JoinedFiles:
    """The judge files of one prediction file (None where there is none)."""

    judge: Path | None = None
    calls: Path | None = None
    rubrics: Path | None = None
    outcomes: tuple[tuple[str, Path], ...] = ()


def joined_files(predictions: Path, judge: str | Path | None = None, calls: str | Path | None = None,
                 rubrics: str | Path | None = None) -> JoinedFiles:
    """The files named, else the companion files beside the predictions that exist (the outcome files
    always beside them: (evaluator name, path) of each that exists)."""

    def pick(explicit: str | Path | None, kind: str) -> Path | None:
        if explicit:
            return Path(explicit)
        path = companion_path(predictions, kind)
        return path if path.is_file() else None

    outcomes = tuple((e.name, companion_path(predictions, e.suffix)) for e in OUTCOME_EVALUATORS
                     if e.suffix and companion_path(predictions, e.suffix).is_file())
    return JoinedFiles(pick(judge, TASKCOMPLETION), pick(calls, CALLANALYSIS), pick(rubrics, RUBRICS), outcomes)


@dataclass
class Joined:
    """Joined values: per task id, file totals of the keys no task has, and the rubric verdicts (for
    their per-category aggregate)."""

    per_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    totals: dict[str, float] = field(default_factory=dict)
    rubrics: Verdicts | None = None
    outcomes: dict[str, Verdicts] = field(default_factory=dict)

    def keys(self) -> list[str]:
        """The joined keys present, in table order (outcome values last)."""
        present = set(self.totals).union(*self.per_id.values())
        return [k for k in (*JOINED_KEYS, *OUTCOME_VALUE_KEYS) if k in present]


def mean(values: list[float]) -> float:
    """The plain mean, summed in order as the published scripts sum (sum / count)."""
    return float(sum(values)) / len(values)


def _score(path: Path, value: Any, task_id: str, where: str) -> float:
    if not is_number(value) or not 0.0 <= value <= 1.0:
        raise InputError(path, f"must be a number in [0, 1], got {value!r}", task_id=task_id, field=where)
    return float(value)


def _published_entry(path: Path, task_id: str, entry: Any) -> dict[str, Any]:
    """One entry of a published taskcompletion.json, checked (a bare number is a Task Completion)."""
    if is_number(entry):
        return {"final": _score(path, entry, task_id, "final"), "judges": []}
    if not isinstance(entry, dict):
        raise InputError(path, "must be an object {final, judges, info_grounding}", task_id=task_id)
    out = dict(entry)
    out["final"] = _score(path, entry.get("final"), task_id, "final")
    grounding = entry.get("info_grounding")
    if grounding is not None:
        if not isinstance(grounding, dict):
            raise InputError(path, "must be an object {final, judges}", task_id=task_id, field="info_grounding")
        out["info_grounding"] = {**grounding,
                                 "final": _score(path, grounding.get("final"), task_id, "info_grounding.final")}
    return out


def _record_entry(path: Path, task_id: str, record: dict[str, Any]) -> dict[str, Any]:
    """A {task_completion, information_grounding} record as a published entry."""
    tc, ig = (_score(path, record.get(key), task_id, key) for key in JUDGE_KEYS)
    return {"final": tc, "judges": [], "info_grounding": {"final": ig, "judges": []}}


def read_taskcompletion(path: str | Path) -> dict[str, dict[str, Any]]:
    """id -> published entry ({final, judges, info_grounding?}) of a judge file in any accepted shape."""
    path = Path(path)
    root = read_json(path, "judge file")
    if isinstance(root, dict) and any(k in root for k in _ENTRY_KEYS):
        key = next(k for k in _ENTRY_KEYS if k in root)
        entries = root[key]
        if not isinstance(entries, dict):
            raise InputError(path, "must be an object of id -> entry", field=key)
        return {str(tid): _published_entry(path, str(tid), entry) for tid, entry in entries.items()}
    if isinstance(root, dict):
        items = [(str(k), v) for k, v in root.items()]
    elif isinstance(root, list):
        items = [(str(v["id"]) if isinstance(v, dict) and v.get("id") is not None else None, v) for v in root]
    else:
        raise InputError(path, "the root must be a taskcompletion object, a list or an object of judge records")
    out = {}
    for position, (tid, record) in enumerate(items):
        if tid is None or not isinstance(record, dict):
            raise InputError(path, "a judge record must be an object with an id", task_id=f"#{position}", field="id")
        out[tid] = _record_entry(path, tid, record)
    return out


def judge_values(entries: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """id -> {task_completion, information_grounding (when judged)} of published entries."""
    out = {}
    for tid, entry in entries.items():
        values = {"task_completion": entry["final"]}
        if isinstance(entry.get("info_grounding"), dict):
            values["information_grounding"] = entry["info_grounding"]["final"]
        out[tid] = values
    return out


def _count(path: Path, value: Any, where: str, task_id: str | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(path, f"must be a count (an integer >= 0), got {value!r}", task_id=task_id, field=where)
    return value


def read_callanalysis(path: str | Path) -> Joined:
    """The call outcome counts of a callanalysis.json: file totals, and per task when it has per_id."""
    path = Path(path)
    root = read_json(path, "call outcomes file")
    if not isinstance(root, dict):
        raise InputError(path, "the root must be an object of call outcome counts")
    totals = {key: _count(path, root.get(key), key) for key in CALL_KEYS}
    per_id = root.get("per_id")
    if per_id is None:
        return Joined(totals=totals)
    if not isinstance(per_id, dict):
        raise InputError(path, "must be an object of id -> counts", field="per_id")
    counts = {}
    for tid, block in per_id.items():
        if not isinstance(block, dict):
            raise InputError(path, "must be an object of counts", task_id=str(tid), field="per_id")
        counts[str(tid)] = {key: _count(path, block.get(key), key, str(tid)) for key in CALL_KEYS}
    return Joined(per_id=counts)


def load_joined(files: JoinedFiles | None) -> Joined | None:
    """The values of a prediction file's judge files, or None when it has none."""
    if files is None or (files.judge is None and files.calls is None and files.rubrics is None and not files.outcomes):
        return None
    joined = Joined()
    if files.judge is not None:
        joined.per_id = judge_values(read_taskcompletion(files.judge))
    if files.calls is not None:
        calls = read_callanalysis(files.calls)
        joined.totals = calls.totals
        for tid, counts in calls.per_id.items():
            joined.per_id.setdefault(tid, {}).update(counts)
    if files.rubrics is not None:
        joined.rubrics = vtb_rubrics.read(files.rubrics)
        for tid, values in joined.rubrics.per_id.items():
            joined.per_id.setdefault(tid, {}).update({k: values[k] for k in RUBRIC_KEYS if k in values})
    evaluators = {e.name: e for e in OUTCOME_EVALUATORS}
    for name, path in files.outcomes:
        reader = evaluators[name].read
        assert reader is not None
        verdicts = joined.outcomes[name] = reader(path)
        for tid, values in verdicts.per_id.items():
            joined.per_id.setdefault(tid, {}).update(values)
    return joined


def joined_aggregate(joined: Joined, ids: list[str], totals: bool = True) -> dict[str, float]:
    """The joined values over these ids by the metric table's rules (judged_mean, sum), with the rubric
    verdicts' ``rubrics`` block (per category, counts); file totals stand for keys no task has when
    `totals` is true, when the outcome checks' aggregates are over every task of their files (else over
    these ids)."""
    out: dict[str, float] = {}
    for key in JOINED_KEYS:
        values = [joined.per_id[i][key] for i in ids if key in joined.per_id.get(i, {})]
        if values:
            out[key] = sum(values) if BY_KEY[key].aggregation == "sum" else mean(values)
        elif totals and key in joined.totals:
            out[key] = joined.totals[key]
    if joined.rubrics is not None:
        out.update(vtb_rubrics.aggregate(joined.rubrics, ids))
    evaluators = {e.name: e for e in OUTCOME_EVALUATORS}
    for name, verdicts in joined.outcomes.items():
        combine = evaluators[name].aggregate
        assert combine is not None
        out.update(combine(verdicts, list(verdicts.per_id) if totals else ids))
    return out


def taskcompletion_document(entries: dict[str, dict[str, Any]], num_total: int, **extra: Any) -> dict[str, Any]:
    """A taskcompletion.json in the published shape: aggregate (rates are means over the judged tasks,
    null when none is judged) and pre_id; `extra` adds top-level keys (e.g. meta)."""
    tc = [e["final"] for e in entries.values()]
    ig = [e["info_grounding"]["final"] for e in entries.values() if isinstance(e.get("info_grounding"), dict)]
    aggregate = {"num_total": num_total, "num_scored": len(entries),
                 "completion_rate": mean(tc) if tc else None,
                 "information_grounding_rate": mean(ig) if ig else None}
    return {"aggregate": aggregate, "pre_id": entries, **extra}
