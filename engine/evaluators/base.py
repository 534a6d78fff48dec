"""What the evaluators share besides their shape (engine.evaluators.protocol): what they may read of a task
(`Input`, `TaskInputs`), a row of the metric table (`Metric`), the values the score app joins (`Verdicts`), the
format record of the files the project writes, the reading of an evaluator file's entries, and the choice of a
judge of the pool (`PoolJudge`, `pool_judge`). Nothing here imports the rollout side. docs/judges.md shows a whole
simple evaluator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

from engine.contract import InputError, JsonObject, Trajectory, read_json
from engine.contract.settings import Judges, ModelConfig

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
EntryT = TypeVar("EntryT")
"""An entry of an evaluator's file as its checker gives it."""
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
    meta: JsonObject = field(default_factory=dict)
    """The file's ``meta`` as its reader kept it (what a display shows of the file as a whole)."""


FORMAT_PREFIX = "m3bench."


def format_record(name: str, version: int = 1) -> JsonObject:
    """The ``meta.format`` record of a file the project writes: {"name": "m3bench.<name>", "version": N}."""
    return {"name": FORMAT_PREFIX + name, "version": version}


def format_version(path: Path, root: object, name: str, versions: Sequence[int] = (1,)) -> int:
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


def file_entries(path: Path, what: str, check: Callable[[Path, str, object], EntryT],
                 name: str | None = None) -> dict[str, EntryT]:
    """id -> entry of the ``per_id`` object of an evaluator's file, each checked by `check(path, id,
    entry)`; `what` names the file in errors; `name`, when given, its format (`format_version`)."""
    return file_document(path, what, check, name)[0]


def file_document(path: Path, what: str, check: Callable[[Path, str, object], EntryT],
                  name: str | None = None) -> tuple[dict[str, EntryT], JsonObject]:
    """(`file_entries`, the file's meta) of an evaluator's file, read once."""
    root = read_json(path, what)
    if name is not None:
        format_version(path, root, name)
    return root_entries(path, root, check), file_meta(root)


def file_meta(root: object) -> JsonObject:
    """The ``meta`` object of a file's root (empty when it has none)."""
    meta = root.get("meta") if isinstance(root, dict) else None
    return dict(meta) if isinstance(meta, dict) else {}


def root_entries(path: Path, root: object, check: Callable[[Path, str, object], EntryT]) -> dict[str, EntryT]:
    """id -> entry of the ``per_id`` object of an evaluator file's root already read, each checked by
    `check(path, id, entry)`."""
    per_id = root.get("per_id") if isinstance(root, dict) else None
    if not isinstance(per_id, dict):
        raise InputError(path, "must be an object of id -> entry", field="per_id")
    return {str(tid): check(path, str(tid), entry) for tid, entry in per_id.items()}


@dataclass(frozen=True)
class PoolJudge:
    """The one judge an evaluator asks: its name (the judge files' name for it), its model config and the
    setting it is given by (``judges.pool.<name>``, ``judges.classifier``, an evaluator's option), which an
    error about it names."""

    name: str
    model: ModelConfig
    setting: str


def pool_judge(judges: Judges, name: str | None = None, where: str = "judges.pool") -> PoolJudge:
    """The judge `name` of the judges config's pool (``judges.pool``), or its first judge when `name` is None;
    InputError naming the setting `where` when it has none such."""
    pool = judges.pool
    if not pool:
        raise InputError("config", "the judge pool is empty: choose judges=<pool> or add judges", field="judges.pool")
    chosen = next(iter(pool)) if name is None else name
    if chosen not in pool:
        raise InputError("config", f"no judge {name!r} in the pool ({', '.join(pool)})", field=where)
    return PoolJudge(chosen, pool[chosen], f"judges.pool.{chosen}")


def object_entry(path: Path, task_id: str, entry: object) -> JsonObject:
    """An entry of an evaluator's file, checked to be an object."""
    if not isinstance(entry, dict):
        raise InputError(path, "must be an object", task_id=task_id)
    return entry


def verdict_reader(suffix: str, keys: Sequence[str]) -> Callable[[Path], Verdicts]:
    """The score app's reader of a file of `Plain.export`'s plain shape: per task the values of `keys` it
    has, its entry as the detail, and the file's meta."""
    def read(path: Path) -> Verdicts:
        found, meta = file_document(Path(path), f"{suffix} file", object_entry, suffix)
        return Verdicts(per_id={t: {k: e[k] for k in keys if k in e} for t, e in found.items()}, detail=found,
                        meta=meta)
    return read
