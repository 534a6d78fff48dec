"""The schemas of the Hydra apps' configs (dataclasses in Hydra's ConfigStore): each app's config.yaml
names its schema first in its defaults list (`<app>_schema`), so Hydra itself refuses a setting the schema
lacks (`key=value`) and a value of the wrong type (`concurrency=many`). A node whose group options differ
in their keys (the rollout's model and exposure, the judge's judges and evaluators, the score app's stats)
is typed as an open mapping; the app kit checks the new keys (`+key=value`) Hydra lets in anywhere."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

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


@dataclass
class ScoreEncoder:
    """The score app's encoder group."""

    model: str | None = None
    batch_size: int = 128
    backend: str | None = "torch"
    cache_dir: str | None = None


@dataclass
class Align:
    """The score app's align group: the similarity thresholds."""

    tau_weak: float = 0.6
    tau_strong: float = 0.8
    tau_weak_grid: list[float] = field(default_factory=list)
    tau_strong_grid: list[float] = field(default_factory=list)
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
class ReadPredictions:
    """How the score app reads predicted calls."""

    parse_string_arguments: bool = False


@dataclass
class Vtb:
    """How the score app reads VisualToolBench rubric verdicts."""

    profile: str = "published"


@dataclass
class Success:
    """When a trial counts as a success."""

    rule: str = "task_completion"
    threshold: float = 0.5
    key: str | None = None


@dataclass
class Trials:
    """Repeated runs of one model, scored together."""

    predictions: list[str] = field(default_factory=list)
    n: int | None = None
    success: Success = field(default_factory=Success)
    convention: str = "all"


@dataclass
class Demo:
    """The built-in demo (data=demo)."""

    dir: str = MISSING
    n_tasks: int = 60
    seed: int = 0


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
    device: str = "auto"
    home: str = MISSING
    results_dir: str = MISSING
    output_dir: str = MISSING
    index_dir: str | None = None
    reports: bool = True
    progress: bool = True
    predictions: ReadPredictions = field(default_factory=ReadPredictions)
    vtb: Vtb = field(default_factory=Vtb)
    trials: Trials = field(default_factory=Trials)
    demo: Demo = field(default_factory=Demo)


@dataclass
class CalibrateEncoder:
    """The calibration app's encoder."""

    model: str | None = None
    backend: str | None = "torch"
    cache_dir: str | None = None


@dataclass
class CalibrateConfig:
    """conf/calibrate/config.yaml."""

    pairs: str = MISSING
    profile: str = "reference"
    device: str = "auto"
    home: str = MISSING
    output_dir: str = MISSING
    encoder: CalibrateEncoder = field(default_factory=CalibrateEncoder)
    tau_weak_grid: list[float] = field(default_factory=list)
    tau_strong_grid: list[float] = field(default_factory=list)


@dataclass
class RolloutTasks:
    """The tasks a rollout runs (read from its data set)."""

    file: str | None = None
    root: str | None = None
    images_dir: str | None = None
    reference: str | None = None
    question_field: str = "question"
    ids: Any = None


@dataclass
class RolloutConfig:
    """conf/rollout/config.yaml."""

    model: dict[str, Any] = field(default_factory=dict)
    exposure: dict[str, Any] = field(default_factory=dict)
    data: DataSet = field(default_factory=DataSet)
    stage: str = "rollout"
    mode: str = "live"
    results_dir: str = MISSING
    predictions: str = MISSING
    run_dir: str = MISSING
    workspace: str = MISSING
    tool_logs: str = MISSING
    cache_dir: str = MISSING
    server_logs: str = MISSING
    servers: str = MISSING
    server_envs: str | None = None
    server_environment: str | None = None
    trials: int | None = None
    shard: Any = None
    merge: int | None = None
    parts_dir: str = MISSING
    concurrency: int = 4
    max_step: int = 5
    max_concurrent: int = 10
    prepare: bool = True
    max_result_chars: int = 4000
    call_timeout: Any = 60
    start_timeout: Any = 30
    ping_timeout: Any = 5
    max_restarts: int = 2
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
    results_dir: str = MISSING
    predictions: str | None = None
    run_dir: str = MISSING
    cache_dir: str | None = None
    concurrency: int = 8
    attempts: int = 5
    max_result_chars: int = 0
    ids: Any = None
    workspace_dir: str | None = None
    tool_log_dir: str | None = None
    shard: Any = None
    merge: int | None = None
    parts_dir: str = MISSING


SCHEMAS: dict[str, type] = {"score": ScoreConfig, "calibrate": CalibrateConfig, "rollout": RolloutConfig,
                            "judge": JudgeConfig}
"""Each Hydra app's schema, stored in Hydra's ConfigStore as `<app>_schema`."""

for _app, _schema in SCHEMAS.items():
    ConfigStore.instance().store(name=f"{_app}_schema", node=_schema)
