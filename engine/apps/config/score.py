"""The score app's schema (conf/score/config.yaml): `ScoreConfig` and its nodes, and its `SPEC`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from engine.apps.config.fields import COUNT, DEVICE, FOLDER, SIZE, THRESHOLD, Range, bounded, checked
from engine.apps.config.spec import AppSpec
from engine.contract.settings import DataSet
from engine.evaluators import evaluators


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


SPEC = AppSpec("score", ScoreConfig, open_keys=tuple(f"model.{e.option}" for e in evaluators()),
               names=("model.name", "sweep.models"))
"""m3bench-score: the new keys it reads are an evaluator's file, `+model.<option>=PATH`; model.name and
sweep.models become part of file and folder names."""
