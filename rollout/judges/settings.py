"""The judge app's settings as its run reads them: `JudgeSettings`, the shape of the typed config the app kit
hands the run (engine.apps.config.judge.JudgeConfig, which the judges may not import: only their command line
imports the apps), checked by mypy where the command line passes it on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from engine.contract import JsonValue
from engine.contract.settings import DataSet, Judges


class JudgeSettings(Protocol):
    """A judge run's settings (conf/judge/config.yaml), each checked by its schema before the run starts."""

    data: DataSet
    judges: Judges
    model: str | None
    results_dir: str
    predictions: str | None
    run_dir: str
    cache_dir: str | None
    concurrency: int
    attempts: int
    max_result_chars: int
    ids: list[str] | None
    workspace_dir: str | None
    tool_log_dir: str | None
    shard: str | None
    merge: int | None
    parts_dir: str

    @property
    def evaluators(self) -> Mapping[str, Mapping[str, JsonValue]]:
        """Each configured evaluator's entry (its options, as its YAML gives them), by name."""
        ...

    def chosen(self) -> list[str]:
        """The names of the evaluators the stage runs."""
        ...
