"""What an evaluator is: its name, what it reads, the file it writes beside the predictions, its rows
of the metric table, and the functions that judge one task, read its file back and aggregate it.

An evaluator is one module of this package that defines ``EVALUATOR = Evaluator(...)`` plus one config
entry naming it. The judge app asks every configured evaluator that has a ``judge`` function about
every task (with the judge pool in the context) and writes ``<predictions stem>_<suffix>.json``
beside the predictions; the score app reads that file back with ``read`` (or computes the values
from the predictions with ``compute``) and joins them to ``results_eval.json`` by the metric table's
rules, or by the evaluator's own ``aggregate`` where those rules cannot say it. Nothing here imports
the rollout side: the judge pool reaches an evaluator through its context at run time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from engine.contract import InputError, Trajectory, TrajectoryFile, read_json

Input = Literal["prediction", "final_answer", "reference", "task", "workspace", "tool_log", "file_entries",
                "catalogue"]
"""What an evaluator may read of a task: the predicted trajectory, its final answer, the reference
trajectory, the task record (question, ground truth, rubrics, level, check module), the task's final
workspace folder, the tool log of its rollout, every object of the predictions file under the task's id
(``file_entries``: repeated ids included, each with its position in the file; such an evaluator is asked
about every id of the file, those lost to the infrastructure included), and the run's tool catalogue
(``catalogue``: loaded once per run by the judge app from its config entry's ``catalogue`` setting, in
the context; its source recorded in the meta)."""
INPUTS: tuple[str, ...] = get_args(Input)
PROFILES: tuple[str, ...] = ("reference", "paper")
"""The metrics profiles: the published scorer (``reference``) and the paper's formulas (``paper``)."""


@dataclass(frozen=True)
class Metric:
    """One reported number: a row of the metric table (engine.metricspec).

    key: its key in results_eval.json (aggregate, per_id, by_type); a dotted key ``block.name`` is
    the value ``name`` of the object ``block`` (an evaluator's nested aggregate, e.g.
    ``tool_use.proactivity``). label: the paper's column label; source: what produces it
    (``alignment``, ``budget``, or an evaluator's name); profiles: the metrics profiles that report
    it; aggregation: its rule over tasks (engine.metricspec), or ``evaluator`` when the evaluator's
    own ``aggregate`` gives it; in_average: part of the Average Score; column: a column of the
    leaderboard tables; low, high: the range its values are checked against (None: unbounded).
    """

    key: str
    label: str
    source: str
    profiles: tuple[str, ...]
    aggregation: str
    in_average: bool
    column: bool
    low: float | None = None
    high: float | None = None


def mean(values: Sequence[float]) -> float:
    """The plain mean, summed in order as the published scripts sum (sum / count)."""
    return float(sum(values)) / len(values)


def mean_or_none(values: Sequence[float]) -> float | None:
    """The plain mean, or None for no values."""
    return mean(values) if values else None


@dataclass(frozen=True)
class TaskInputs:
    """What one task offers an evaluator (None where the run has no such thing)."""

    task_id: str
    prediction: Trajectory | None = None
    reference: Trajectory | None = None
    task: Mapping[str, Any] | None = None
    workspace: Path | None = None
    tool_log: Sequence[Mapping[str, Any]] | None = None
    file_entries: Sequence[tuple[int, Mapping[str, Any]]] = ()

    @property
    def final_answer(self) -> str | None:
        """The prediction's final reply (``final_reply``, else ``final_answer``), when it has one."""
        raw = self.prediction.raw if self.prediction is not None else {}
        for key in ("final_reply", "final_answer"):
            value = raw.get(key)
            if isinstance(value, str):
                return value
        return None


@dataclass
class Verdicts:
    """An evaluator's values: per task id (key -> value, joined to the task's outputs), file totals of
    keys no task has, and per task id what its own aggregate needs besides (``detail``, not joined)."""

    per_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    totals: dict[str, Any] = field(default_factory=dict)
    detail: dict[str, dict[str, Any]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    """The file's ``meta`` as its reader kept it (what a display shows of the file as a whole)."""


FORMAT_PREFIX = "m3bench."


def format_record(name: str, version: int = 1) -> dict[str, Any]:
    """The ``meta.format`` record of a file the project writes: {"name": "m3bench.<name>", "version": N}."""
    return {"name": FORMAT_PREFIX + name, "version": version}


def format_version(path: Path, root: Any, name: str, versions: Sequence[int] = (1,)) -> int:
    """The version of a file of format `name` as its ``meta.format`` records it; a file without the record
    (a published shape, a drop-in) is version 1. InputError for a record of another format or a version
    this reader does not know."""
    meta = root.get("meta") if isinstance(root, dict) else None
    record = meta.get("format") if isinstance(meta, dict) else None
    if record is None:
        return 1
    version = record.get("version") if isinstance(record, dict) else None
    if not isinstance(record, dict) or record.get("name") != FORMAT_PREFIX + name:
        raise InputError(path, f"must be {{\"name\": \"{FORMAT_PREFIX + name}\", \"version\": N}}, got "
                         f"{str(record)[:80]!r}", field="meta.format")
    if not isinstance(version, int) or isinstance(version, bool):
        got = f"the string {version[:20]!r}" if isinstance(version, str) else repr(version)[:40]
        raise InputError(path, f"must be an integer (a version of {FORMAT_PREFIX + name}), got {got}",
                         field="meta.format.version")
    if version not in versions:
        raise InputError(path, f"version {version} of {FORMAT_PREFIX + name} is not one this build reads (it reads "
                         f"{', '.join(map(str, versions))}): update m3bench", field="meta.format.version")
    return version


def file_entries(path: Path, what: str, check: Callable[[Path, str, Any], dict[str, Any]],
                 name: str | None = None) -> dict[str, dict[str, Any]]:
    """id -> entry of the ``per_id`` object of an evaluator's file, each checked by `check(path, id,
    entry)`; `what` names the file in errors; `name`, when given, its format (`format_version`)."""
    return file_document(path, what, check, name)[0]


def file_document(path: Path, what: str, check: Callable[[Path, str, Any], dict[str, Any]],
                  name: str | None = None) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """(`file_entries`, the file's meta) of an evaluator's file, read once."""
    root = read_json(path, what)
    if name is not None:
        format_version(path, root, name)
    return root_entries(path, root, check), file_meta(root)


def file_meta(root: Any) -> dict[str, Any]:
    """The ``meta`` object of a file's root (empty when it has none)."""
    meta = root.get("meta") if isinstance(root, dict) else None
    return dict(meta) if isinstance(meta, dict) else {}


def root_entries(path: Path, root: Any,
                 check: Callable[[Path, str, Any], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """id -> entry of the ``per_id`` object of an evaluator file's root already read, each checked by
    `check(path, id, entry)`."""
    per_id = root.get("per_id") if isinstance(root, dict) else None
    if not isinstance(per_id, dict):
        raise InputError(path, "must be an object of id -> entry", field="per_id")
    return {str(tid): check(path, str(tid), entry) for tid, entry in per_id.items()}


@dataclass(frozen=True)
class JudgeContext:
    """What a judging evaluator gets besides the task: the judge pool (duck-typed, built by the judge
    app), the attempts per judge, its own config entry, how much of a tool result a payload keeps (its
    entry's ``max_result_chars``, else the app's), and the tool catalogue for an evaluator that reads it
    (engine.evaluators._call_rules.Catalogue; None when the run has none)."""

    pool: Any
    attempts: int
    options: Mapping[str, Any] = field(default_factory=dict)
    max_result_chars: int = 0
    catalogue: Any = None


def pool_judge(judges: Mapping[str, Any], name: str | None = None,
               where: str = "judges.pool") -> tuple[str, Mapping[str, Any]]:
    """(name, model config) of the judge `name` of the judges config's pool (``judges.pool``), or of
    its first judge when `name` is None; InputError naming the setting `where` when it has none such."""
    pool = judges.get("pool")
    if not isinstance(pool, Mapping) or not pool:
        raise InputError("config", "the judge pool is empty: choose judges=<pool> or add judges", field="judges.pool")
    if name is None:
        first = next(iter(pool))
        return str(first), pool[first]
    if name not in pool:
        raise InputError("config", f"no judge {name!r} in the pool ({', '.join(map(str, pool))})", field=where)
    return name, pool[name]


Display = Callable[[Mapping[str, Any] | None, Mapping[str, Any]], list[dict[str, Any]]]
"""An evaluator's display: blocks ``{"title", "id"?, "parts": [part, ...]}``, each part one of
``{"kind": "heading", "text", "note"?}``, ``{"kind": "verdict", "label", "pass": true|false|null, "text",
"note"?}`` (a labelled pass/fail badge), ``{"kind": "rows", "head"?: [str], "rows": [[cell, ...]], "marked"?:
[row index]}`` (key/value rows or a table), ``{"kind": "reply", "label", "text"}`` (a judge's reply, cut by
the viewer's rule), ``{"kind": "error", "text"}`` (an evaluator error), ``{"kind": "note", "text"}``,
``{"kind": "calls", "labels": [[step, call, key, text], ...]}`` (a label beside each predicted call) and
``{"kind": "tags", "tags": [[key, text], ...]}`` (what the task list filters by). A cell is a string, a
number or null, or ``{"badge": text, "pass": true|false|null}``, ``{"reply": text}``, ``{"task": id, "text"}``
(a link to the model's task) or ``{"details": summary, "rows": [[cell, ...]]}``. Every text is data: the
viewer cuts and escapes it."""


@dataclass(frozen=True)
class Evaluator:
    """One kind of verdict.

    name: registry key and config entry; reads: the inputs it needs (INPUTS); metrics: its rows of
    the metric table (their source is the evaluator's name); suffix: its file beside the predictions
    (None: computed at scoring time); option: the score app's setting ``model.<option>=PATH`` naming
    its file, and the key of ``meta`` recording it (default: the name); position: its place among the
    evaluators (metric table, outputs; then by name);
    judge: one task's entry of its file (raises the pool's failure when no answer could be had);
    document: the file from the entries and the run's meta; entries: an earlier file's entries (to
    resume, its judges' usage added to this run's; None: every task judged anew, the usage this run's
    alone); read: the file's values, checked (``read(path, **settings)``, the settings the score app
    names for it, e.g. vtb_rubrics' profile); compute: the values from the predictions alone;
    aggregate: the aggregate over some ids where the metric table's rules cannot say it (joined to the values
    of its rows the rules give); all_tasks: it judges every task of the tasks file, predicted or not (a task
    whose run did not end is judged as such, not left out), and its file's aggregate in the outputs is over
    every task of its file (a family's over the family's scored tasks); columns: its per-task values that are
    columns of the per-task CSV besides its metric rows' keys; pool: its judge asks the judge pool (False: the
    judge app gives it none, e.g. checks it runs itself); complete: whether an entry of its file has the
    answers of every judge named (None: every entry is), an incomplete one (e.g. judged by another pool:
    the pool's fingerprint is its judges' models) judged again by a rerun; task_count: the number of tasks
    its document records (meta ``num_total``), from the reference file; rubrics: the prompts its judge
    asks, their versions as the pool gives them recorded in meta ``prompt_versions``; one_judge: the one
    judge it asks under its config entry, of the judges config (``judges``: ``pool``, ...), as (name,
    model config): the judge app builds its pool of that judge alone (None, or no such function: the
    whole pool); stale: why an earlier file, by its meta, cannot be resumed under this run's meta (e.g.
    made with other settings; None: it can), its entries then all judged again; asks_always: its judge asks
    the pool about every task, so the judges' keys are checked before the first task (False: it asks only
    for what its rules leave, e.g. call outcomes, and a missing key is refused at the first question);
    scripted: the offline scripted judge's answer per rubric purpose it asks (``answer(payload,
    bias) -> reply``), registered by the scripted judge policy (rollout.judges.scripted);
    display: how the viewer shows it: ``display(task, meta) -> [block, ...]`` from one task's values and
    detail as ``read`` (or ``compute``) gives them merged (``task`` None: the file as a whole, on a model's
    page) and the file's meta; each block JSON-ready, as `Display` says; task_files: the task fields that
    name a file beside the tasks file its verdict depends on (a check script), whose content is part of each
    verdict's input key (rollout.judges.inputs.input_key), so that a changed file judges its tasks again;
    task_check: ``task_check(options, task_id, task)`` raises the InputError its judge would raise on a task
    record, so the judge app checks every task before it starts a judge or a script (None: nothing to check
    beyond the tasks file's reader); read_tasks: ``read_tasks(path) -> {id: record}``, the tasks file as its
    judge reads it, checked, with its warnings once per file (None: the judge app's reader,
    rollout.judges.inputs.read_task_records).
    """

    name: str
    reads: frozenset[str]
    metrics: tuple[Metric, ...]
    suffix: str | None = None
    judge: Callable[[JudgeContext, TaskInputs], Awaitable[dict[str, Any]]] | None = None
    document: Callable[[dict[str, dict[str, Any]], dict[str, Any]], dict[str, Any]] | None = None
    entries: Callable[[Path], dict[str, dict[str, Any]]] | None = None
    read: Callable[..., Verdicts] | None = None
    compute: Callable[[TrajectoryFile], Verdicts] | None = None
    aggregate: Callable[[Verdicts, Sequence[str]], dict[str, Any]] | None = None
    option: str = ""
    position: int = 100
    scripted: Mapping[str, Callable[[dict[str, Any], float], str]] = field(default_factory=dict)
    all_tasks: bool = False
    columns: tuple[str, ...] = ()
    pool: bool = True
    complete: Callable[[Mapping[str, Any], Sequence[str]], bool] | None = None
    task_count: Callable[[Path], int] | None = None
    rubrics: tuple[Any, ...] = ()
    one_judge: Callable[[Mapping[str, Any], Mapping[str, Any]], tuple[str, Mapping[str, Any]] | None] | None = None
    stale: Callable[[Mapping[str, Any], Mapping[str, Any]], str | None] | None = None
    asks_always: bool = True
    display: Display | None = None
    task_files: tuple[str, ...] = ()
    task_check: Callable[[Mapping[str, Any], str, Mapping[str, Any] | None], None] | None = None
    read_tasks: Callable[[Path], dict[str, dict[str, Any]]] | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.reads) - set(INPUTS))
        if unknown:
            raise ValueError(f"evaluator {self.name}: unknown input(s) {unknown}; expected some of {INPUTS}")
        if (self.read is None) == (self.compute is None):
            raise ValueError(f"evaluator {self.name}: give exactly one of read (a file) and compute")
        if self.read is not None and not self.suffix:
            raise ValueError(f"evaluator {self.name}: an evaluator that reads a file names its suffix")
        foreign = sorted(m.key for m in self.metrics if m.source != self.name)
        if foreign:
            raise ValueError(f"evaluator {self.name}: metric(s) {foreign} must have source {self.name!r}")
        if not self.option:
            object.__setattr__(self, "option", self.name)
