"""The rollout app's schema (conf/rollout/config.yaml): `RolloutConfig`, its nodes and its `SPEC`. Every node is
typed: the model (and the curator's) a `ModelConfig` (engine.contract.settings), the tool exposure an
`Exposure`, the curation a `Curate`, the tasks a `RolloutTasks`; the choices are enums, the ranges and the
rules across fields are each node's ``__post_init__``, and the defaults live here only."""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

from engine.apps.config.fields import COUNT, FOLDER, SECONDS, SIZE, TASK_IDS, Range, bounded, checked
from engine.apps.config.spec import AppSpec
from engine.contract.settings import SHARD_RE, Choice, DataSet, ModelConfig, SettingError


class Stage(Choice):
    """What a rollout run does: roll out, curate the predictions, or both."""

    rollout = "rollout"
    curate = "curate"
    both = "both"


class CacheMode(Choice):
    """The record/replay cache: live (unused), record (filled), replay (offline, from it)."""

    live = "live"
    record = "record"
    replay = "replay"


class ExposureMode(Choice):
    """Which tools a task's model sees (rollout.exposure)."""

    all = "all"
    oracle = "oracle"
    retrieve = "retrieve"
    fixed = "fixed"


class ServerEnvironment(Choice):
    """The environment the MCP servers get: declared (defaults + each server's own) or whole (as published)."""

    declared = "declared"
    whole = "whole"


@dataclass
class Exposure:
    """The tools exposed to a task's model: every tool, the reference's (oracle), the `top_k` most similar to the
    question (retrieve, with `encoder` on `device`; null encoder: the bundled one) or a fixed list (`tools`)."""

    mode: ExposureMode = ExposureMode.all
    tools: list[str] = field(default_factory=list)
    top_k: int = 10
    encoder: str | None = None
    device: str = "cpu"

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise SettingError("top_k", self.top_k, "must be an integer >= 1")
        if self.tools and self.mode != ExposureMode.fixed:
            raise SettingError("tools", self.tools, "a list of tools is for mode fixed (exposure=fixed)")


@dataclass
class RolloutTasks:
    """The tasks a rollout runs (read from its data set): the tasks file (or a folder of tasks, `root`), where its
    image paths are relative to, the reference trajectories, the field given to the model, the ids run (null:
    every task; one id on the command line is a list of one: rollout.cli)."""

    file: str | None = None
    root: str | None = None
    images_dir: str | None = None
    reference: str | None = None
    question_field: str = "question"
    ids: list[str] | None = checked(None, TASK_IDS)


@dataclass
class Curate:
    """The curation stage: its verdicts and optimal trajectories, the tool result length in its prompts, and
    its model (null: the rollout's)."""

    verdicts: str = MISSING
    optimal: str = MISSING
    max_result_chars: int = 1500
    model: ModelConfig | None = None

    def __post_init__(self) -> None:
        if self.max_result_chars < 0:
            raise SettingError("max_result_chars", self.max_result_chars, "must be an integer >= 0")


@dataclass
class RolloutConfig:
    """conf/rollout/config.yaml."""

    model: ModelConfig = field(default_factory=ModelConfig)
    exposure: Exposure = field(default_factory=Exposure)
    data: DataSet = field(default_factory=DataSet)
    stage: Stage = Stage.rollout
    mode: CacheMode = CacheMode.live
    results_dir: str = checked(MISSING, FOLDER)
    predictions: str = MISSING
    run_dir: str = checked(MISSING, FOLDER)
    workspace: str = MISSING
    tool_logs: str = MISSING
    cache_dir: str = MISSING
    server_logs: str = MISSING
    servers: str = MISSING
    server_envs: str | None = None
    server_environment: ServerEnvironment | None = None
    trials: int | None = bounded(None, Range(low=1, nullable=True))
    shard: str | None = None
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
    curate: Curate = field(default_factory=Curate)

    def __post_init__(self) -> None:
        if self.shard is not None:
            m = SHARD_RE.match(self.shard)
            if not m or not 0 <= int(m.group(1)) < int(m.group(2)):
                raise SettingError("shard", self.shard, "must be i/n with 0 <= i < n (e.g. 0/3)")


SPEC = AppSpec("rollout", RolloutConfig, open_keys=("model.params.*", "curate.model.params.*"), names=("model.name",),
               typed=True, missing_as_none=True)
"""m3bench-rollout: the new keys it reads are a model's (and the curator's) extra request fields; model.name
becomes part of file and folder names; its run gets the typed config (a data set's ``???`` tasks file: null,
the rollout says what to set)."""
