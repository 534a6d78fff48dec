"""The judge app's schema (conf/judge/config.yaml): `JudgeConfig`, and its `SPEC`. The judges and
evaluators nodes are open mappings (a pool's judges, each evaluator's options): the judge app checks them
where it reads them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from engine.apps.config.fields import COUNT, FOLDER, SIZE, TASK_IDS, Range, bounded, checked
from engine.apps.config.spec import AppSpec
from engine.contract.settings import DataSet


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


SPEC = AppSpec("judge", JudgeConfig, names=("model",),
               open_keys=("judges.pool.*", "judges.pool.*.params.*", "evaluators.*", "evaluators.*.*"))
"""m3bench-judge: the new keys it reads are a judge added to the pool, a judge's extra request fields, an
evaluator's entry and its options; model becomes part of file and folder names."""
