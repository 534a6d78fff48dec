"""The outcome checks of a judge run (stage ``outcomes``): every configured evaluator of
engine/evaluators over every task of the tasks file, written to ``<predictions stem>_<suffix>.json``.

Each task offers its record of the tasks file (``data.tasks``), its prediction (None when its agent
run did not end), its final workspace ``<workspace_dir>/<task id>/`` and its tool log
``<tool_log_dir>/<task id>.json`` (both default to the rollout run folder of model=NAME). The file is
rewritten atomically after every task; a rerun keeps the entries it holds and does the others (delete
the file to judge again). A task a judge never answered is left out and listed under ``meta.failed``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.contract import InputError, TrajectoryFile, atomic_write_json, config_int, read_json
from engine.evaluators.base import Evaluator, JudgeContext, TaskInputs
from engine.evaluators.judging import JudgeUnanswered
from engine.judge_results import OUTCOME_EVALUATORS
from rollout.judges.cache import ReplyCache
from rollout.judges.pool import JudgeFailure, JudgePool, judge_specs
from rollout.runs import bounded
from rollout.workspace import safe_name

log = logging.getLogger("judge")

def load_evaluator(name: str) -> Evaluator:
    """The outcome evaluator of this name; InputError naming the setting for another name."""
    known = {e.name: e for e in OUTCOME_EVALUATORS}
    if name not in known:
        raise InputError("config", f"unknown evaluator {name!r} (expected some of {', '.join(known)})",
                         field="evaluators")
    return known[name]


def read_task_records(path: Path) -> dict[str, dict[str, Any]]:
    """id -> task record of a tasks file (a list of objects with ids, or an object id -> task), in order."""
    root = read_json(path, "tasks file")
    items = list(root.items()) if isinstance(root, dict) else list(enumerate(root)) if isinstance(root, list) \
        else None
    if items is None:
        raise InputError(path, "the root must be a list of tasks or an object of id -> task")
    out: dict[str, dict[str, Any]] = {}
    for key, task in items:
        label = str(key) if isinstance(root, dict) else f"#{key}"
        if not isinstance(task, dict):
            raise InputError(path, "a task must be an object", task_id=label)
        tid = task.get("id", key if isinstance(root, dict) else None)
        if tid is None or isinstance(tid, bool) or not isinstance(tid, (str, int)):
            raise InputError(path, "a task needs a string id", task_id=label, field="id")
        out[str(tid)] = task
    return out


def _tool_log(path: Path) -> list[dict[str, Any]] | None:
    if not path.is_file():
        return None
    root = read_json(path, "tool log")
    calls = root.get("calls") if isinstance(root, dict) else None
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise InputError(path, "must be a list of call objects", field="calls")
    return calls


def _rollout_folder(cfg: Mapping[str, Any], key: str, leaf: str) -> Path:
    """`key` when set, else <results_dir>/rollout/<model>/<leaf>."""
    if cfg.get(key):
        return Path(cfg[key])
    if not cfg.get("model"):
        raise InputError("config", f"set {key}=PATH (or model=NAME for the rollout's own folder)", field=key)
    return Path(cfg["results_dir"]) / "rollout" / str(cfg["model"]) / leaf


async def evaluator_stage(cfg: Mapping[str, Any], evaluator: Evaluator, preds: TrajectoryFile, tasks_file: Path,
                          output: Path) -> int:
    """Run one evaluator over the tasks not yet in `output`; 0 when every task has an entry, else 1."""
    assert evaluator.judge is not None and evaluator.document is not None and evaluator.entries is not None
    options = dict((cfg.get("evaluators") or {}).get(evaluator.name) or {})
    tasks = read_task_records(tasks_file)
    wanted = {str(i) for i in cfg.get("ids") or []}
    order = [i for i in tasks if not wanted or i in wanted]
    entries = evaluator.entries(output) if output.is_file() else {}
    todo = [i for i in order if i not in entries]
    workspaces = _rollout_folder(cfg, "workspace_dir", "workspace")
    tool_logs = _rollout_folder(cfg, "tool_log_dir", "tool_logs")
    uses_judges = "final_answer" in evaluator.reads
    specs = judge_specs(cfg["judges"]["pool"]) if uses_judges else []
    failed: dict[str, str] = {}
    meta: dict[str, Any] = {"evaluator": evaluator.name, "predictions": str(preds.path), "tasks": str(tasks_file),
                            "workspace_dir": str(workspaces), "tool_log_dir": str(tool_logs)}
    if uses_judges:
        meta.update(judges=[{"name": s.name, **{k: s.identity[k] for k in ("provider", "model")}} for s in specs],
                    attempts=config_int(cfg, "attempts"))

    def write(pool: JudgePool | None) -> None:
        ordered = {i: entries[i] for i in order if i in entries}
        ordered.update((i, e) for i, e in entries.items() if i not in ordered)
        extra: dict[str, Any] = {"failed": dict(failed)}
        if pool is not None:
            extra["usage"] = {s.name: pool.usage[s.name].to_json(s) for s in specs}
        atomic_write_json(output, evaluator.document(ordered, {**meta, **extra}))

    async def judge_all(pool: JudgePool | None) -> None:
        ctx = JudgeContext(pool=pool, attempts=config_int(cfg, "attempts"),
                           options={**options, "tasks_file": str(tasks_file)})

        async def one(tid: str) -> None:
            inputs = TaskInputs(tid, prediction=preds.tasks.get(tid), task=tasks[tid],
                                workspace=workspaces / safe_name(tid),
                                tool_log=_tool_log(tool_logs / f"{safe_name(tid)}.json"))
            try:
                entries[tid] = await evaluator.judge(ctx, inputs)
            except (JudgeUnanswered, JudgeFailure) as exc:
                failed[tid] = str(exc)
                log.warning("%s: task %s not judged: %s", evaluator.name, tid, exc)
                return
            write(pool)

        await bounded(todo, config_int(cfg, "concurrency"), one)
        write(pool)

    if uses_judges:
        cache = ReplyCache(cfg.get("cache_dir"))
        async with JudgePool(specs, cache, config_int(cfg["judges"], "max_requests",
                                                      where="judges.max_requests")) as pool:
            await judge_all(pool)
    else:
        await judge_all(None)
    done = sum(1 for i in order if i in entries)
    print(f"{evaluator.name}: {done} of {len(order)} task(s) have an entry ({len(todo) - len(failed)} now, "
          f"{len(failed)} failed) -> {output}")
    return 1 if failed else 0
