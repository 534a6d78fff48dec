"""One evaluator shape: an evaluator is one object that satisfies `Evaluator[EntryT, OptionsT]`, EntryT the
entry a task has in its file (a TypedDict) and OptionsT its options (its config entry as a dataclass). It says
what it is in its `Card` (data), judges a task into a typed `Verdict[EntryT]` given a `JudgeContext[OptionsT]`,
and implements each special case of its file, its judging and its reading once, as a method; `Plain` writes
each default once, so an evaluator subclasses it and overrides what it does otherwise:

    class Concise(Plain[ConciseEntry, ConciseOptions]):
        card = Card(name="concise", reads=frozenset({"final_answer"}), metrics=METRICS, suffix="concise")
        options_type = ConciseOptions

        async def verdict(self, ctx, task): ...

    EVALUATOR = Concise()

The judge app makes its options from its config entry with `options_of` (``record(options)`` is what its file's
meta and input keys hold) and the verdict store keeps a verdict's `Verdict.file_entry`. Each module's
``EVALUATOR`` is annotated ``Evaluator[Entry, Options]``, so mypy checks its shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar, cast, runtime_checkable

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from engine.contract import ConfigError, JsonMapping, JsonObject, TrajectoryFile, task_records
from engine.contract.settings import Judges, SettingError, setting_text
from engine.evaluators.base import (
    INPUTS,
    Input,
    Metric,
    PoolJudge,
    TaskInputs,
    Verdicts,
    file_entries,
    object_entry,
    verdict_reader,
)
from engine.judging import Catalogue, Pool, Rubric
from engine.neighbour_tasks import read_task_dir

EntryT = TypeVar("EntryT", bound=Mapping[str, object])
"""A task's entry in an evaluator's file (a TypedDict per evaluator; a simple verdict's: dict[str, float])."""
OptionsT = TypeVar("OptionsT", bound="EvaluatorOptions")
"""An evaluator's options (an EvaluatorOptions dataclass per evaluator)."""

ScriptedAnswer = Callable[[JsonObject, float], str]
"""The offline scripted judge's reply to a payload, given the judge's bias (rollout.judges.scripted)."""


@dataclass(frozen=True)
class Card:
    """What an evaluator is (data only).

    name: registry key and config entry; reads: the inputs it needs (base.INPUTS); metrics: its rows of the
    metric table (their source its name); suffix: its file beside the predictions,
    ``<predictions stem>_<suffix>.json`` (None: its values are computed at scoring time, no file, no judging);
    option: the score app's setting naming its file (None: its name; `option_name`); position: its place
    among the evaluators (then by name); all_tasks: it judges every task of the tasks file, predicted or not,
    and its file's aggregate is over all of them; columns: its per-task values that are columns of the
    per-task CSV besides its metric keys; uses_pool: it asks the judge pool (False: it is given none);
    asks_always: it asks about every task, so the judges' keys are checked before the first (False: only
    for what its rules leave); partial: an entry may lack some judge's answer, and is judged again until it
    has them all (`complete`); rubrics: the prompts it asks (their versions in meta ``prompt_versions``);
    asked: the prompts it may ask besides (their versions in each input key); task_files: the task fields
    naming a file beside the tasks file whose content is part of each verdict's input key.
    """

    name: str
    reads: frozenset[Input]
    metrics: tuple[Metric, ...]
    suffix: str | None = None
    option: str | None = None
    position: int = 100
    all_tasks: bool = False
    columns: tuple[str, ...] = ()
    uses_pool: bool = True
    asks_always: bool = True
    partial: bool = False
    rubrics: tuple[Rubric, ...] = ()
    asked: tuple[Rubric, ...] = ()
    task_files: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = sorted(set(self.reads) - set(INPUTS))
        if unknown:
            raise ValueError(f"evaluator {self.name}: unknown input(s) {unknown}; expected some of {INPUTS}")
        foreign = sorted(m.key for m in self.metrics if m.source != self.name)
        if foreign:
            raise ValueError(f"evaluator {self.name}: metric(s) {foreign} must have source {self.name!r}")

    @property
    def option_name(self) -> str:
        """The score app's setting naming its file: `option`, else its name."""
        return self.option or self.name


@dataclass
class EvaluatorOptions:
    """The base of an evaluator's options: its config entry (conf/judge/evaluators/<name>.yaml) as a
    dataclass, one field per key in the YAML's order, defaults only there, ranges in ``__post_init__``
    (engine.contract.settings.SettingError: the judge app names it ``evaluators.<name>.<key>``), so that
    ``record(options)`` is the entry as the YAML wrote it (its file's meta and its input keys). The judge
    app reads ``output``, ``attempts`` and ``max_result_chars`` of the options that declare them."""


@dataclass(frozen=True)
class RunFiles:
    """The files of the run an evaluator judges: the predictions, the reference trajectories and the tasks
    file (None where the run has none)."""

    predictions: Path
    reference: Path | None = None
    tasks: Path | None = None


@dataclass(frozen=True, kw_only=True)
class JudgeContext(Generic[OptionsT]):
    """What an evaluator's verdict gets besides the task: the judge pool (None for one that asks none), the
    attempts per judge, its options, the run's files, how much of a tool result a payload keeps, and the
    run's tool catalogue (for one that reads it; None when the run has none)."""

    pool: Pool | None
    attempts: int
    options: OptionsT
    files: RunFiles
    max_result_chars: int = 0
    catalogue: Catalogue | None = None


@dataclass(frozen=True)
class Verdict(Generic[EntryT]):
    """One task's verdict: its entry in the file (the file keeps the explanation beside it, when there is
    one), or the error that left it unjudged (kept out of the file, named in its meta ``failed``, asked again
    by a rerun); exactly one of them."""

    task_id: str
    entry: EntryT | None = None
    explanation: str = ""
    error: str | None = None

    def __post_init__(self) -> None:
        if (self.entry is None) == (self.error is None):
            raise ValueError(f"verdict of task {self.task_id}: exactly one of its entry and its error")

    def file_entry(self) -> EntryT:
        """The task's entry as its file keeps it: the entry, with ``explanation`` after it when there is one
        (what the verdict store records, so the entry type of verdicts that explain has an optional
        ``explanation: str``, from a ``total=False`` TypedDict base); ValueError for a verdict with an error,
        which no file keeps."""
        if self.entry is None:
            raise ValueError(f"verdict of task {self.task_id}: not judged ({self.error}), so not in the file")
        return cast(EntryT, {**self.entry, **({"explanation": self.explanation} if self.explanation else {})})


@dataclass(frozen=True)
class ReadSettings:
    """How the score app reads verdict files: the VisualToolBench profile (None: its default)."""

    vtb_profile: str | None = None


TaskRecord = JsonObject
"""A task's record of a tasks file (engine.contract.task_records)."""


@runtime_checkable
class Evaluator(Protocol[EntryT, OptionsT]):
    """An evaluator: its card and options' type, how it judges a task, and the special cases of its file
    (export, load, complete, stale), its judging (one_judge, task_count, check_task, input_files,
    read_tasks, scripted_answer) and its reading on the score side (read, compute, aggregate, display)."""

    card: Card
    options_type: type[OptionsT]

    async def verdict(self, ctx: JudgeContext[OptionsT], task: TaskInputs) -> Verdict[EntryT]:
        """One task's verdict (raising the pool's JudgeFailure, or giving a Verdict with an error, when no
        answer could be had)."""
        ...

    def export(self, entries: Mapping[str, EntryT], meta: JsonMapping) -> JsonObject:
        """The file of the entries, in order, and the run's meta (the verdict store adds ``meta.format``)."""
        ...

    def load(self, path: Path) -> dict[str, EntryT]:
        """The entries of an earlier file, checked (to resume)."""
        ...

    def complete(self, entry: EntryT, judges: Sequence[str]) -> bool:
        """Whether an entry has the answers of every judge named (an incomplete one is judged again)."""
        ...

    def stale(self, earlier: JsonMapping, now: JsonMapping) -> str | None:
        """Why an earlier file, by its meta, cannot be resumed under this run's meta (None: it can)."""
        ...

    def one_judge(self, options: OptionsT, judges: Judges) -> PoolJudge | None:
        """The one judge it asks under its options and the judge pool (``judges``); None: the whole pool."""
        ...

    def task_count(self, reference: Path) -> int | None:
        """The number of tasks its file records (meta ``num_total``) from the reference file; None: none."""
        ...

    def check_task(self, options: OptionsT, files: RunFiles, task_id: str, task: JsonMapping | None) -> None:
        """Raise the InputError its verdict would raise on a task record (every task is checked first)."""
        ...

    def input_files(self, options: OptionsT, files: RunFiles, task: TaskInputs) -> dict[str, Path]:
        """The files besides those of `card.task_files` whose content decides a task's verdict, by a name that
        stays when the data set's folder moves: their content is part of its input key."""
        ...

    def read_tasks(self, path: Path) -> dict[str, TaskRecord]:
        """id -> task record of the tasks file, as it reads it."""
        ...

    def read(self, path: Path, settings: ReadSettings) -> Verdicts:
        """The values of its file, checked (the score side)."""
        ...

    def compute(self, predictions: TrajectoryFile) -> Verdicts:
        """Its values from the predictions alone (an evaluator without a file)."""
        ...

    def aggregate(self, verdicts: Verdicts, ids: Sequence[str]) -> JsonObject | None:
        """Its aggregate over some ids where the metric table's rules cannot say it (None: they can)."""
        ...

    def display(self, task: JsonMapping | None, meta: JsonMapping) -> list[JsonObject]:
        """How the viewer shows it, for one task's values and detail, or the file as a whole (`task` None);
        none: nothing of its own. Blocks ``{"title", "id"?, "parts": [part, ...]}``, each part one of
        ``{"kind": "heading", "text", "note"?}``, ``{"kind": "verdict", "label", "pass": true|false|null,
        "text", "note"?}`` (a labelled pass/fail badge), ``{"kind": "rows", "head"?: [str], "rows": [[cell,
        ...]], "marked"?: [row index]}`` (key/value rows or a table), ``{"kind": "reply", "label", "text"}`` (a
        judge's reply, cut by the viewer's rule), ``{"kind": "error", "text"}`` (an evaluator error), ``{"kind":
        "note", "text"}``, ``{"kind": "calls", "labels": [[step, call, key, text], ...]}`` (a label beside each
        predicted call) and ``{"kind": "tags", "tags": [[key, text], ...]}`` (what the task list filters by). A
        cell is a string, a number or null, or ``{"badge": text, "pass": true|false|null}``, ``{"reply":
        text}``, ``{"task": id, "text"}`` (a link to the model's task) or ``{"details": summary, "rows":
        [[cell, ...]]}``. Every text is data: the viewer cuts and escapes it."""
        ...

    def scripted_answer(self, purpose: str) -> ScriptedAnswer | None:
        """The offline scripted judge's answer to its rubric of `purpose` (None: none of its own)."""
        ...


class Plain(Generic[EntryT, OptionsT]):
    """Each default of `Evaluator` written once: subclass it, set `card` and `options_type`, override
    `verdict` (or `compute`, for an evaluator without a file) and what the evaluator does otherwise."""

    card: Card
    options_type: type[OptionsT]

    async def verdict(self, ctx: JudgeContext[OptionsT], task: TaskInputs) -> Verdict[EntryT]:
        """None by default: an evaluator with a file judges its tasks."""
        raise NotImplementedError(f"evaluator {self.card.name} judges no task")

    def export(self, entries: Mapping[str, EntryT], meta: JsonMapping) -> JsonObject:
        """``{"per_id": entries, "meta": meta}``."""
        return cast(JsonObject, {"per_id": dict(entries), "meta": dict(meta)})

    def load(self, path: Path) -> dict[str, EntryT]:
        """The ``per_id`` entries of the file, each an object."""
        return cast(dict[str, EntryT], file_entries(path, "verdict file", object_entry))

    def complete(self, entry: EntryT, judges: Sequence[str]) -> bool:
        """Every entry is complete."""
        return True

    def stale(self, earlier: JsonMapping, now: JsonMapping) -> str | None:
        """An earlier file can always be resumed."""
        return None

    def one_judge(self, options: OptionsT, judges: Judges) -> PoolJudge | None:
        """The whole pool is asked."""
        return None

    def task_count(self, reference: Path) -> int | None:
        """No ``num_total``."""
        return None

    def check_task(self, options: OptionsT, files: RunFiles, task_id: str, task: JsonMapping | None) -> None:
        """Every task record is admitted."""

    def input_files(self, options: OptionsT, files: RunFiles, task: TaskInputs) -> dict[str, Path]:
        """No file besides the task's."""
        return {}

    def read_tasks(self, path: Path) -> dict[str, TaskRecord]:
        """The tasks file (engine.contract.task_records), or a neighbour's folder (engine.neighbour_tasks)."""
        return read_task_dir(path) if Path(path).is_dir() else task_records(path)

    def read(self, path: Path, settings: ReadSettings) -> Verdicts:
        """Per task the values of its metric keys and columns, its entry as the detail, and the file's meta."""
        if self.card.suffix is None:
            raise NotImplementedError(f"evaluator {self.card.name} has no file: its values are computed")
        return verdict_reader(self.card.suffix, [*(m.key for m in self.card.metrics), *self.card.columns])(path)

    def compute(self, predictions: TrajectoryFile) -> Verdicts:
        """None by default: an evaluator without a file computes its values."""
        raise NotImplementedError(f"evaluator {self.card.name} reads its file: its values are not computed")

    def aggregate(self, verdicts: Verdicts, ids: Sequence[str]) -> JsonObject | None:
        """The metric table's rules say it."""
        return None

    def display(self, task: JsonMapping | None, meta: JsonMapping) -> list[JsonObject]:
        """Nothing of its own."""
        return []

    def scripted_answer(self, purpose: str) -> ScriptedAnswer | None:
        """No scripted answer of its own."""
        return None


def options_of(evaluator: Evaluator[EntryT, OptionsT], entry: Mapping[str, object]) -> OptionsT:
    """An evaluator's options from its config entry (``evaluators.<name>`` of the judge app's config): its
    `options_type` with the entry's values over its defaults. A key it does not declare, a value of the
    wrong type or one its ``__post_init__`` refuses is a ConfigError of one line naming the setting
    ``evaluators.<name>.<key>``. ``record(options)`` is what its file's meta and input keys hold."""
    where = f"evaluators.{evaluator.card.name}"
    try:
        return cast(OptionsT, OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(evaluator.options_type),
                                                                  dict(entry))))
    except SettingError as exc:
        raise ConfigError(f"{where}.{exc.key}={setting_text(exc.value)}: {exc.problem}") from None
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or getattr(exc, "key", None)
        raise ConfigError(f"{where}.{key}: {str(exc).splitlines()[0]}" if key else f"{where}: {exc}") from None
