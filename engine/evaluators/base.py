"""What an evaluator is: its name, what it reads, its rows of the metric table, the file of its verdicts
beside the predictions, how it judges one task (`Judge`: one typed `Verdict` per task) and how the score
app reads its file back and aggregates it.

An evaluator is one module of this package that defines ``EVALUATOR = Evaluator(...)`` plus one config
entry naming it. The judge app asks every configured evaluator that has a `Judge` about every task (with
the judge pool in the context); the verdict store (rollout.judges.verdicts) keeps the verdicts in
``<predictions stem>_<suffix>.json`` beside the predictions, in the shape the judge's ``export`` gives;
the score app reads that file back with ``read`` (or computes the values from the predictions with
``compute``) and joins them to ``results_eval.json`` by the metric table's rules, or by the evaluator's
own ``aggregate`` where those rules cannot say it. Nothing here imports the rollout side: the judge pool
reaches an evaluator through its context at run time. docs/judges.md shows a whole simple evaluator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
    leaderboard tables; low, high: the range its values are checked against (None: unbounded); direction:
    which way is better when models are ranked by it: ``higher``, ``lower``, or ``none`` (a volume or a count:
    compared, never ranked).
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
    direction: str = "higher"


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
    (engine.judging.call_rules.Catalogue; None when the run has none)."""

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
class Verdict:
    """One task's verdict, as an evaluator's judge gives it: the task's id, its values (the entry its file
    keeps for the task: the metric keys of a simple verdict, the published entry of a published shape), a
    short explanation, and the error that left it unjudged (None when judged; such a verdict is kept out of
    the file, named in its meta ``failed``, and asked again by a rerun)."""

    task_id: str
    values: Mapping[str, Any] = field(default_factory=dict)
    explanation: str = ""
    error: str | None = None

    def entry(self) -> dict[str, Any]:
        """The task's entry of the file: its values, with its explanation when it has one."""
        return {**self.values, **({"explanation": self.explanation} if self.explanation else {})}


class Judge:
    """How an evaluator judges: `verdict` per task, and its file's shape. Subclass it and override
    `verdict`; the other methods are the special cases, each with the plain default.

    uses_pool: it asks the judge pool (False: the judge app gives it none, e.g. checks it runs itself);
    asks_always: it asks the pool about every task, so the judges' keys are checked before the first task
    (False: only for what its rules leave, a missing key refused at the first question); rubrics: the prompts
    it asks (their versions recorded in meta ``prompt_versions``); asked: the prompts it may ask besides
    (their versions are in each verdict's input key, not in its file's meta); task_files: the task fields
    naming a file beside the tasks file whose content is part of each verdict's input key (a check
    script); read_tasks: ``read_tasks(path) -> {id: record}``, the tasks file as it reads it (None: the
    judge app's reader); partial: an entry may lack some judge's answer, and is judged again until it has
    them all (`complete`; its file's meta names the incomplete ids).
    """

    uses_pool: bool = True
    asks_always: bool = True
    partial: bool = False
    rubrics: tuple[Any, ...] = ()
    asked: tuple[Any, ...] = ()
    task_files: tuple[str, ...] = ()
    read_tasks: Callable[[Path], dict[str, dict[str, Any]]] | None = None

    async def verdict(self, context: JudgeContext, task: TaskInputs) -> Verdict:
        """One task's verdict (raising the pool's JudgeFailure, or giving a Verdict with an error, when no
        answer could be had)."""
        raise NotImplementedError

    def export(self, entries: dict[str, dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
        """The file of the entries, in order, and the run's meta (the verdict store adds ``meta.format``):
        ``{"per_id": entries, "meta": meta}`` unless the evaluator has a published shape."""
        return {"per_id": entries, "meta": meta}

    def load(self, path: Path) -> dict[str, dict[str, Any]]:
        """The entries of an earlier file, checked (to resume)."""
        return file_entries(path, "verdict file", _object_entry)

    def complete(self, entry: Mapping[str, Any], names: Sequence[str]) -> bool:
        """Whether an entry has the answers of every judge named (an incomplete one is judged again)."""
        return True

    def stale(self, earlier: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
        """Why an earlier file, by its meta, cannot be resumed under this run's meta (None: it can)."""
        return None

    def one_judge(self, options: Mapping[str, Any],
                  judges: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
        """The one judge it asks under its config entry, as (name, model config); None: the whole pool."""
        return None

    def task_count(self, reference: Path) -> int | None:
        """The number of tasks its file records (meta ``num_total``) from the reference file; None: none."""
        return None

    def check_task(self, options: Mapping[str, Any], task_id: str, task: Mapping[str, Any] | None) -> None:
        """Raise the InputError its judge would raise on a task record (every task is checked before a
        judge or a script is started)."""

    def input_files(self, options: Mapping[str, Any], task: TaskInputs) -> dict[str, Path]:
        """The files besides those of `task_files` whose content decides a task's verdict, by a name that
        stays when the data set's folder moves (the modules a check script imports, the image the judges
        are shown): their content is part of its input key. None of them when the task names a file the
        judge refuses (it refuses it when it judges). Default: none."""
        return {}


def _object_entry(path: Path, task_id: str, entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise InputError(path, "must be an object", task_id=task_id)
    return entry


def verdict_reader(suffix: str, keys: Sequence[str]) -> Callable[[Path], Verdicts]:
    """The score app's reader of a file of `Judge.export`'s plain shape: per task the values of `keys` it
    has, its entry as the detail, and the file's meta."""
    def read(path: Path) -> Verdicts:
        found, meta = file_document(Path(path), f"{suffix} file", _object_entry, suffix)
        return Verdicts(per_id={t: {k: e[k] for k in keys if k in e} for t, e in found.items()}, detail=found,
                        meta=meta)
    return read


@dataclass(frozen=True)
class Evaluator:
    """One kind of verdict: what it is and reads, and how the score app gets its values.

    name: registry key and config entry; reads: the inputs it needs (INPUTS); metrics: its rows of the metric
    table (their source is the evaluator's name); suffix: its file beside the predictions (None: computed at
    scoring time); judge: how the judge app judges it (`Judge`; its file is the verdict store's,
    rollout.judges.verdicts); read: the file's values, checked (``read(path, **settings)``, the settings the
    score app names for it; default for a judge: `verdict_reader` of its metric keys and columns); compute:
    the values from the predictions alone; aggregate: the aggregate over some ids where the metric table's
    rules cannot say it; option: the score app's setting ``model.<option>=PATH`` naming its file (default: the
    name); position: its place among the evaluators (then by name); scripted: the offline scripted judge's
    answer per rubric purpose (``answer(payload, bias) -> reply``, rollout.judges.scripted); all_tasks: it
    judges every task of the tasks file, predicted or not, and its file's aggregate in the outputs is over
    every task of its file; columns: its per-task values that are columns of the per-task CSV besides its
    metric keys; display: how the viewer shows it (`Display`, from one task's values and detail merged, or
    None for the file as a whole, and the file's meta).
    """

    name: str
    reads: frozenset[str]
    metrics: tuple[Metric, ...]
    suffix: str | None = None
    judge: Judge | None = None
    read: Callable[..., Verdicts] | None = None
    compute: Callable[[TrajectoryFile], Verdicts] | None = None
    aggregate: Callable[[Verdicts, Sequence[str]], dict[str, Any]] | None = None
    option: str = ""
    position: int = 100
    scripted: Mapping[str, Callable[[dict[str, Any], float], str]] = field(default_factory=dict)
    all_tasks: bool = False
    columns: tuple[str, ...] = ()
    display: Display | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.reads) - set(INPUTS))
        if unknown:
            raise ValueError(f"evaluator {self.name}: unknown input(s) {unknown}; expected some of {INPUTS}")
        if (self.read is not None or self.judge is not None) and not self.suffix:
            raise ValueError(f"evaluator {self.name}: an evaluator that reads or judges a file names its suffix")
        if self.judge is not None and self.read is None and self.compute is None:
            object.__setattr__(self, "read", verdict_reader(str(self.suffix), [*(m.key for m in self.metrics),
                                                                               *self.columns]))
        if (self.read is None) == (self.compute is None):
            raise ValueError(f"evaluator {self.name}: give exactly one of read (a file) and compute")
        foreign = sorted(m.key for m in self.metrics if m.source != self.name)
        if foreign:
            raise ValueError(f"evaluator {self.name}: metric(s) {foreign} must have source {self.name!r}")
        if not self.option:
            object.__setattr__(self, "option", self.name)
