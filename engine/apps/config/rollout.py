"""The rollout app's schema (conf/rollout/config.yaml): `RolloutConfig`, and its `SPEC`. The model,
exposure and curate nodes are open mappings (their group options differ in their keys): the rollout
checks them where it reads them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from engine.apps.config.fields import COUNT, FOLDER, SECONDS, SIZE, TASK_IDS, Range, bounded, checked
from engine.apps.config.spec import AppSpec
from engine.contract.settings import DataSet


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


SPEC = AppSpec("rollout", RolloutConfig, open_keys=("model.params.*", "curate.model.params.*"), names=("model.name",))
"""m3bench-rollout: the new keys it reads are a model's (and the curator's) extra request fields; model.name
becomes part of file and folder names."""
