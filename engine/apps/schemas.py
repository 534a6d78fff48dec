"""The schemas of the Hydra apps' configs (dataclasses in Hydra's ConfigStore): each app's config.yaml
names its schema first in its defaults list (`<app>_schema`), so Hydra itself refuses a setting the schema
lacks (`key=value`) and a value of the wrong type (`concurrency=many`). A node whose group options differ
in their keys (the rollout's model and exposure, the judge's judges and evaluators, the score app's stats)
is typed as an open mapping; the app kit checks the new keys (`+key=value`) Hydra lets in anywhere.

A bounded setting declares its range once, on its field (`bounded`, a Range), and a setting whose values
a type cannot say declares its Check the same way (`checked`: a device this machine has, an output folder
that can be made, task ids); `check_ranges` checks a composed config against both, and the app kit calls it
before any work (a setting inside an open mapping is checked where it is read)."""

from __future__ import annotations

import dataclasses
import os
import tempfile
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from engine.contract import ConfigError
from kernels.device import device_problem


@dataclass(frozen=True)
class Range:
    """The values a bounded setting takes: at least `low`, at most `high` (None: unbounded), an integer or
    any number, null too when `nullable`; a list setting's range is each of its values'."""

    low: float | None = None
    high: float | None = None
    integer: bool = True
    nullable: bool = False

    def admits(self, value: Any) -> bool:
        """Whether value lies in the range."""
        if value is None:
            return self.nullable
        if isinstance(value, bool) or not isinstance(value, int if self.integer else (int, float)):
            return False
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def __str__(self) -> str:
        kind = "an integer" if self.integer else "a number"
        if self.low is not None and self.high is not None:
            text = f"{kind} in [{self.low:g}, {self.high:g}]"
        elif self.low is not None:
            text = f"{kind} >= {self.low:g}"
        else:
            text = f"{kind} <= {self.high:g}"
        return f"{text} or null" if self.nullable else text


COUNT = Range(low=1)
"""A count: an integer >= 1."""
SIZE = Range(low=0)
"""A size or a seed: an integer >= 0."""
THRESHOLD = Range(low=-1, high=1, integer=False)
"""A similarity threshold: a number in [-1, 1] (cosine similarities)."""
SECONDS = Range(low=0, integer=False)
"""A time limit in seconds: a number >= 0."""

RANGE = "range"
"""The metadata key of a bounded field's Range."""


def bounded(default: Any, allowed: Range) -> Any:
    """A dataclass field of this default whose values lie in `allowed` (a list default: each value)."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={RANGE: allowed})
    return field(default=default, metadata={RANGE: allowed})


CHECK = "check"
"""The metadata key of a checked field's Check."""


class Check:
    """What a setting's values must be beyond their type and range."""

    def problem(self, value: Any) -> str | None:
        """Why value is refused, in a few words after `key=value: ` (None: it is admitted)."""
        raise NotImplementedError


class Device(Check):
    """A torch device this machine has: auto, cpu, cuda or cuda:N (kernels.device.device_problem)."""

    def problem(self, value: Any) -> str | None:
        """kernels.device's reason (torch is loaded only for a CUDA device's name)."""
        return device_problem(str(value))


class Folder(Check):
    """An output folder: one there that this user may write into, or one that can be made (folder_problem)."""

    def problem(self, value: Any) -> str | None:
        """folder_problem of the path (None for null)."""
        return None if value is None else folder_problem(Path(str(value)))


class TaskIds(Check):
    """Task ids: null, one id (text or an integer) or a list of them."""

    def problem(self, value: Any) -> str | None:
        """Why value holds something other than ids."""
        ids = value if isinstance(value, list) else [] if value is None else [value]
        wrong = [i for i in ids if isinstance(i, bool) or not isinstance(i, (str, int)) or i == ""]
        if wrong:
            shown = _shown(wrong[0]) or "''"
            return f"must be a task id or a list of task ids (text or integers); {shown} is not one"
        return None


DEVICE, FOLDER, TASK_IDS = Device(), Folder(), TaskIds()


def checked(default: Any, check: Check) -> Any:
    """A dataclass field of this default whose values `check` admits."""
    return field(default=default, metadata={CHECK: check})


def folder_problem(folder: Path) -> str | None:
    """Why a run could not make `folder` (relative: to the working directory) its output folder, None when
    it can: an existing entry that is not a folder, a folder this user may not write into, or one that
    cannot be made in the nearest folder above it that exists (tried with a folder of another name, which
    is removed)."""
    folder = Path(folder).absolute()
    above = next(p for p in (folder, *folder.parents) if os.path.lexists(p))
    try:
        is_folder = above.is_dir()
    except OSError as exc:
        return f"cannot be looked at: {above} ({exc.strerror or exc})"
    if above == folder:
        if not is_folder:
            return "exists and is not a folder"
        return None if os.access(folder, os.W_OK | os.X_OK) else "is a folder this user may not write into"
    if not is_folder:
        return f"cannot be made: {above} is not a folder"
    try:
        os.rmdir(tempfile.mkdtemp(dir=above, prefix=".m3bench-check-"))
    except OSError as exc:
        return f"cannot be made in {above} ({exc.strerror or exc})"
    return None

# OmegaConf reads these annotations at run time, in typing's spelling (Optional, List, Dict).


@dataclass
class DataSet:
    """A data set of conf/shared/data/ (the score, judge and rollout apps')."""

    name: str = MISSING
    gt: str | None = None
    references: list[str] = field(default_factory=list)
    tasks: str | None = MISSING  # ??? in a data set: given by the user (data.tasks=DIR)
    images_dir: str | None = None


@dataclass
class ScoreModel:
    """The score app's model group: a model's prediction file and its evaluators' files."""

    name: str | None = None
    predictions: str | None = None
    judge: str | None = None
    calls: str | None = None
    rubrics: str | None = None
    price: Any = None  # null or {input_usd_per_mtok, output_usd_per_mtok, as_of, source}: engine/cost.py


@dataclass
class ScoreEncoder:
    """The score app's encoder group."""

    model: str | None = None
    batch_size: int = bounded(128, COUNT)
    backend: str | None = "auto"
    cache_dir: str | None = None
    save_every: float = bounded(5.0, Range(low=0, integer=False))


@dataclass
class Align:
    """The score app's align group: the similarity thresholds."""

    tau_weak: float = bounded(0.6, THRESHOLD)
    tau_strong: float = bounded(0.8, THRESHOLD)
    tau_weak_grid: list[float] = bounded([], THRESHOLD)
    tau_strong_grid: list[float] = bounded([], THRESHOLD)
    select: list[str] = field(default_factory=list)


@dataclass
class Metrics:
    """The score app's metrics group."""

    profile: str = "reference"


@dataclass
class Sweep:
    """The score app's sweep group: several prediction files, or models under results_dir."""

    predictions: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    discover: bool = False


@dataclass
class Vtb:
    """How the score app reads VisualToolBench rubric verdicts."""

    profile: str = "published"


@dataclass
class Success:
    """When a trial counts as a success."""

    rule: str = "task_completion"
    threshold: float = bounded(0.5, Range(low=0, high=1, integer=False))
    key: str | None = None


@dataclass
class Trials:
    """Repeated runs of one model, scored together."""

    predictions: list[str] = field(default_factory=list)
    n: int | None = bounded(None, Range(low=1, nullable=True))
    success: Success = field(default_factory=Success)
    convention: str = "all"


@dataclass
class Demo:
    """The built-in demo (data=demo)."""

    dir: str = MISSING
    n_tasks: int = bounded(60, COUNT)
    seed: int = bounded(0, SIZE)


@dataclass
class ScoreConfig:
    """conf/score/config.yaml."""

    data: DataSet = field(default_factory=DataSet)
    model: ScoreModel = field(default_factory=ScoreModel)
    encoder: ScoreEncoder = field(default_factory=ScoreEncoder)
    align: Align = field(default_factory=Align)
    metrics: Metrics = field(default_factory=Metrics)
    sweep: Sweep = field(default_factory=Sweep)
    stats: dict[str, Any] = field(default_factory=dict)
    device: str = checked("auto", DEVICE)
    home: str = MISSING
    results_dir: str = MISSING
    output_dir: str = checked(MISSING, FOLDER)
    index_dir: str | None = None
    reports: bool = True
    progress: bool = True
    parse_string_arguments: bool = False
    vtb: Vtb = field(default_factory=Vtb)
    trials: Trials = field(default_factory=Trials)
    demo: Demo = field(default_factory=Demo)


@dataclass
class CalibrateEncoder:
    """The calibration app's encoder."""

    model: str | None = None
    backend: str | None = "auto"
    cache_dir: str | None = None


@dataclass
class CalibrateConfig:
    """conf/calibrate/config.yaml."""

    pairs: str = MISSING
    profile: str = "reference"
    device: str = checked("auto", DEVICE)
    home: str = MISSING
    output_dir: str = checked(MISSING, FOLDER)
    encoder: CalibrateEncoder = field(default_factory=CalibrateEncoder)
    tau_weak_grid: list[float] = bounded([], THRESHOLD)
    tau_strong_grid: list[float] = bounded([], THRESHOLD)


@dataclass
class RolloutTasks:
    """The tasks a rollout runs (read from its data set)."""

    file: str | None = None
    root: str | None = None
    images_dir: str | None = None
    reference: str | None = None
    question_field: str = "question"
    ids: Any = checked(None, TASK_IDS)


@dataclass
class RolloutConfig:
    """conf/rollout/config.yaml."""

    model: dict[str, Any] = field(default_factory=dict)
    exposure: dict[str, Any] = field(default_factory=dict)
    data: DataSet = field(default_factory=DataSet)
    stage: str = "rollout"
    mode: str = "live"
    results_dir: str = checked(MISSING, FOLDER)
    predictions: str = MISSING
    run_dir: str = checked(MISSING, FOLDER)
    workspace: str = MISSING
    tool_logs: str = MISSING
    cache_dir: str = MISSING
    server_logs: str = MISSING
    servers: str = MISSING
    server_envs: str | None = None
    server_environment: str | None = None
    trials: int | None = bounded(None, Range(low=1, nullable=True))
    shard: Any = None
    merge: int | None = bounded(None, Range(low=1, nullable=True))
    parts_dir: str = MISSING
    concurrency: int = bounded(4, COUNT)
    max_step: int = bounded(5, COUNT)
    max_concurrent: int = bounded(10, COUNT)
    prepare: bool = True
    max_result_chars: int = bounded(4000, SIZE)
    call_timeout: float = bounded(60.0, SECONDS)
    start_timeout: float = bounded(30.0, SECONDS)
    ping_timeout: float = bounded(5.0, SECONDS)
    max_restarts: int = bounded(2, SIZE)
    tasks: RolloutTasks = field(default_factory=RolloutTasks)
    curate: dict[str, Any] = field(default_factory=dict)


@dataclass
class JudgeConfig:
    """conf/judge/config.yaml."""

    data: DataSet = field(default_factory=DataSet)
    judges: dict[str, Any] = field(default_factory=dict)
    evaluators: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    stage: str = "both"
    home: str = MISSING
    results_dir: str = checked(MISSING, FOLDER)
    predictions: str | None = None
    run_dir: str = checked(MISSING, FOLDER)
    cache_dir: str | None = None
    concurrency: int = bounded(8, COUNT)
    attempts: int = bounded(5, COUNT)
    max_result_chars: int = bounded(0, SIZE)
    ids: Any = checked(None, TASK_IDS)
    workspace_dir: str | None = None
    tool_log_dir: str | None = None
    shard: Any = None
    merge: int | None = bounded(None, Range(low=1, nullable=True))
    parts_dir: str = MISSING


SCHEMAS: dict[str, type] = {"score": ScoreConfig, "calibrate": CalibrateConfig, "rollout": RolloutConfig,
                            "judge": JudgeConfig}
"""Each Hydra app's schema, stored in Hydra's ConfigStore as `<app>_schema`."""

for _app, _schema in SCHEMAS.items():
    ConfigStore.instance().store(name=f"{_app}_schema", node=_schema)


def _declared(schema: type, what: str, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, metadata[what]) of every field of a schema declaring `what`, nested schemas included."""
    for f in dataclasses.fields(schema):
        if what in f.metadata:
            yield f"{prefix}{f.name}", f.metadata[what]
        elif isinstance(f.default_factory, type) and dataclasses.is_dataclass(f.default_factory):
            yield from _declared(f.default_factory, what, f"{prefix}{f.name}.")


def _flags(schema: type, prefix: str = "") -> Iterator[str]:
    """The dotted key of every setting of a schema typed as a flag (bool), nested schemas included."""
    hints = typing.get_type_hints(schema)
    for f in dataclasses.fields(schema):
        if hints[f.name] is bool:
            yield f"{prefix}{f.name}"
        elif isinstance(f.default_factory, type) and dataclasses.is_dataclass(f.default_factory):
            yield from _flags(f.default_factory, f"{prefix}{f.name}.")


FLAGS: dict[str, set[str]] = {app: set(_flags(schema)) for app, schema in SCHEMAS.items()}
"""Each app's flags (dotted keys): a command line gives them true or false, never what OmegaConf would take for
one (91, yes, n)."""
RANGES: dict[str, dict[str, Range]] = {app: dict(_declared(schema, RANGE)) for app, schema in SCHEMAS.items()}
"""Each app's bounded settings (dotted keys) and their ranges, read from the schemas' fields."""
CHECKS: dict[str, dict[str, Check]] = {app: dict(_declared(schema, CHECK)) for app, schema in SCHEMAS.items()}
"""Each app's checked settings (dotted keys) and their checks, read from the schemas' fields."""


_ABSENT = object()


def _value(cfg: DictConfig, key: str) -> Any:
    """A setting's value, resolved; _ABSENT when the config lacks it (a config of another root: --config-dir,
    --config-name) or it cannot be resolved here (the app says why when it reads it)."""
    try:
        value = OmegaConf.select(cfg, key, default=_ABSENT, throw_on_missing=False)
        return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    except OmegaConfBaseException:
        return _ABSENT


def check_ranges(app: str, cfg: DictConfig) -> None:
    """A composed config of app whose bounded setting lies outside its range (RANGES), or whose checked
    setting its Check refuses (CHECKS), is a ConfigError naming it, e.g. `concurrency=0: must be an integer
    >= 1`, `device=gpu9: must be auto, cpu, cuda or cuda:N ...`. A value that cannot be resolved here is left
    to the app, which says why when it reads it."""
    for key, allowed in RANGES[app].items():
        given = _value(cfg, key)
        if given is _ABSENT:
            continue
        if isinstance(given, list):
            wrong = [v for v in given if not allowed.admits(v)]
            if wrong:
                raise ConfigError(f"{key}={_shown(given)}: each value must be {allowed}, got {wrong[0]!r}")
        elif not allowed.admits(given):
            raise ConfigError(f"{key}={_shown(given)}: must be {allowed}")
    for key, check in CHECKS[app].items():
        given = _value(cfg, key)
        if given is not _ABSENT and given != MISSING and (problem := check.problem(given)) is not None:
            raise ConfigError(f"{key}={_shown(given)}: {problem}")


def _shown(value: Any) -> str:
    """A value as a command line writes it (`null`, `[0.5,0.6]`)."""
    if value is None:
        return "null"
    if isinstance(value, list):
        return f"[{','.join(_shown(v) for v in value)}]"
    return str(value)
