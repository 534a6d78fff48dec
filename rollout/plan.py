"""What a rollout run reads from its settings before any model or server starts: the settings of each of its
trials (`trial_configs`) and its tasks with the turns of multi-turn ones (`run_tasks`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from engine.apps.config.rollout import ExposureMode, RolloutConfig, RolloutTasks
from engine.contract import InputError, Task, read_tasks
from engine.neighbour_tasks import task_dir_tasks
from engine.trials import trial_path
from rollout.tasks import Turn, read_reference_tools, read_turns


def trial_configs(cfg: RolloutConfig) -> list[tuple[RolloutConfig, int | None]]:
    """The settings of each trial of a run (the run's own when it has no `trials`), with the trial's number:
    trial i writes <predictions stem>_trial<i>.json, in its own workspace, cache and tool logs
    (<workspace>/trial<i>, ...), its model given ``trial``: i (a seeded model's noise follows it)."""
    if cfg.trials is None:
        return [(cfg, None)]
    return [(dataclasses.replace(cfg, predictions=str(trial_path(Path(cfg.predictions), i)),
                                 workspace=str(Path(cfg.workspace) / f"trial{i}"),
                                 cache_dir=str(Path(cfg.cache_dir) / f"trial{i}"),
                                 tool_logs=str(Path(cfg.tool_logs) / f"trial{i}"),
                                 model=dataclasses.replace(cfg.model, trial=i)), i)
            for i in range(1, cfg.trials + 1)]


def task_ids(tasks: RolloutTasks) -> list[str] | None:
    """The ids `tasks.ids` names; None: every task."""
    return None if tasks.ids is None else [str(i) for i in tasks.ids]


def run_tasks(cfg: RolloutConfig) -> tuple[list[Task], dict[str, list[Turn]]]:
    """The tasks to run (settings `tasks`, read from the data set) and the turns of multi-turn ones: those of a
    folder of tasks (tasks.root, or tasks.file naming a folder: an MCPVerse checkout, TOBench task files), else
    of the tasks file; InputError when the data set names neither."""
    data = cfg.tasks
    file = data.file
    root = data.root or (file if file and Path(file).is_dir() else None)
    if root:
        return task_dir_tasks(root, task_ids(data)), {}
    if not file:
        name = cfg.data.name if isinstance(cfg.data.name, str) else None
        raise InputError("config", f"no tasks to run{f' (data set {name} names none)' if name else ''}: set "
                         "tasks.file=PATH, or tasks.root=DIR for a folder of tasks", field="tasks.file")
    if not Path(file).exists():
        raise InputError(file, "tasks file not found: set tasks.file=PATH, or M3BENCH_DATA to the folder holding "
                         "tasks_fuzzy.json (the published M3-Bench files: README, \"Where the data come from\"; "
                         "tasks=demo runs the built-in demo)")
    return (read_tasks(file, data.images_dir, data.question_field or "question", task_ids(data)),
            read_turns(file, data.images_dir))


def oracle_tools(cfg: RolloutConfig) -> dict[str, list[str]] | None:
    """With oracle exposure, the tools of each task's reference trajectory (tasks.reference); None otherwise."""
    if cfg.exposure.mode != ExposureMode.oracle:
        return None
    if not cfg.tasks.reference:
        raise InputError("config", "oracle exposure needs a reference file", field="tasks.reference")
    return read_reference_tools(cfg.tasks.reference)
