"""The judge app's schema (conf/judge/config.yaml): `JudgeConfig` and its `SPEC`. The judge pool is a typed
`Judges` node (engine.contract.settings: each judge a `ModelConfig`); the stage is a `Stage` word or the name of
an evaluator the run configures; the task ids a list (``ids=ID`` on the command line is the list of it:
rollout.judges.cli). `evaluators` stays an open mapping, each entry an evaluator's options as its YAML gives
them (each evaluator reads its own). The ranges and the rules across fields are the fields' and
``__post_init__``'s, and the defaults live here only."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from engine.apps.config.fields import COUNT, FOLDER, SIZE, TASK_IDS, Range, bounded, checked
from engine.apps.config.spec import AppSpec
from engine.contract.settings import SHARD_RE, Choice, DataSet, Judges, SettingError


class Stage(Choice):
    """What a judge run judges besides one evaluator named by its name: every configured evaluator (`both`),
    or one by the stage name it had before evaluators were configured (`judge`: m3_judges, `calls`:
    call_outcomes)."""

    both = "both"
    judge = "judge"
    calls = "calls"


STAGE_EVALUATORS = {Stage.judge.value: "m3_judges", Stage.calls.value: "call_outcomes"}
"""The evaluator each older stage name runs."""


@dataclass
class JudgeConfig:
    """conf/judge/config.yaml."""

    data: DataSet = field(default_factory=DataSet)
    judges: Judges = field(default_factory=Judges)
    evaluators: dict[str, dict[str, Any]] = field(default_factory=dict)  # open: each evaluator's own options
    model: str | None = None
    stage: str = Stage.both.value  # a Stage or an evaluator's name: evaluators are found by name at run time
    home: str = MISSING
    results_dir: str = checked(MISSING, FOLDER)
    predictions: str | None = None
    run_dir: str = checked(MISSING, FOLDER)
    cache_dir: str | None = None
    concurrency: int = bounded(8, COUNT)
    attempts: int = bounded(5, COUNT)
    max_result_chars: int = bounded(0, SIZE)
    ids: list[str] | None = checked(None, TASK_IDS)
    workspace_dir: str | None = None
    tool_log_dir: str | None = None
    shard: str | None = None
    merge: int | None = bounded(None, Range(low=1, nullable=True))
    parts_dir: str = MISSING

    def __post_init__(self) -> None:
        if self.shard is not None:
            m = SHARD_RE.match(self.shard)
            if not m or not 0 <= int(m.group(1)) < int(m.group(2)):
                raise SettingError("shard", self.shard, "must be i/n with 0 <= i < n (e.g. 0/3)")
        choices = [*Stage, *self.evaluators]
        if self.stage not in choices:
            raise SettingError("stage", self.stage, f"must be one of {', '.join(choices)} (an evaluator's name: "
                               "one of evaluators)")

    def chosen(self) -> list[str]:
        """The names of the evaluators the stage runs: every configured one (both), else the stage's one."""
        if self.stage == Stage.both:
            return list(self.evaluators)
        return [STAGE_EVALUATORS.get(self.stage, self.stage)]


SPEC = AppSpec("judge", JudgeConfig, names=("model",),
               open_keys=("judges.pool.*", "judges.pool.*.params.*", "evaluators.*", "evaluators.*.*"),
               typed=True, missing_as_none=True)
"""m3bench-judge: the new keys it reads are a judge added to the pool, a judge's extra request fields, an
evaluator's entry and its options; model becomes part of file and folder names; its run gets the typed config
(a data set's ``???`` tasks file: null, what reads it names it)."""
