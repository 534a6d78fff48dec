"""A judging evaluator (engine.evaluators) run over a prediction file with the judge pool: stage ``rubrics``.

Every id of the predictions that the tasks file (``data.tasks``) has is judged by the evaluator's
``judge``; the file ``<predictions stem>_<suffix>.json`` is rewritten atomically after every judged
task. Resuming: a rerun keeps the entries the pool's judges (and no others) answered in full and
judges the others again (the reply cache answers what was asked before, and a judge that failed gets fresh
attempts). The exit status is 1 when some task is left with a rubric some judge could not answer.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.contract import InputError, TrajectoryFile, atomic_write_json, config_int, read_json
from engine.evaluators.base import Evaluator, JudgeContext, TaskInputs
from engine.evaluators.vtb_rubrics import complete, read_task_records
from rollout.errors import ModelError
from rollout.judges.cache import ReplyCache
from rollout.judges.pool import JudgePool, JudgeUsage, judge_specs
from rollout.runs import bounded

log = logging.getLogger("judge")


def evaluator_output(predictions: Path, evaluator: Evaluator, explicit: str | None = None) -> Path:
    """`explicit`, else <predictions stem>_<suffix>.json beside the predictions."""
    return Path(explicit) if explicit else predictions.with_name(f"{predictions.stem}_{evaluator.suffix}.json")


async def evaluator_stage(cfg: Mapping[str, Any], evaluator: Evaluator, options: Mapping[str, Any],
                          preds: TrajectoryFile, output: Path) -> int:
    """Judge the predicted tasks the tasks file has and write the evaluator's file; 0, or 1 when some
    task still lacks an answer of some judge."""
    tasks_path = (cfg.get("data") or {}).get("tasks")
    if not tasks_path:
        raise InputError("config", "no tasks file with rubrics: set data.tasks=PATH", field="data.tasks")
    tasks = read_task_records(tasks_path)
    specs = judge_specs(cfg["judges"]["pool"])
    names = [s.identity["model"] for s in specs]
    attempts = config_int(options, "attempts", where=f"{evaluator.name}.attempts")
    previous = evaluator.entries(output) if evaluator.entries else {}
    usage_before = {}
    if output.is_file():
        meta = read_json(output, "rubric verdicts file").get("meta") or {}
        usage_before = meta.get("usage") or {}
    wanted = {str(i) for i in cfg.get("ids") or []}
    order = [i for i in preds.tasks if i in tasks and (not wanted or i in wanted)]
    missing = [i for i in preds.tasks if i not in tasks]
    if missing:
        log.warning("%d predicted id(s) have no task in %s: %s", len(missing), tasks_path, ", ".join(missing[:10]))
    entries = {i: e for i, e in previous.items() if complete(e, names)}
    todo = [i for i in order if i not in entries]
    log.info("%d of %d task(s) to judge on their rubrics with %d judge(s)", len(todo), len(order), len(specs))
    meta: dict[str, Any] = {"predictions": str(preds.path), "tasks": str(tasks_path), "evaluator": evaluator.name,
                            "judges": [{"name": s.name, "provider": s.identity["provider"],
                                        "model": s.identity["model"]} for s in specs],
                            "attempts": attempts, "agreement_top": config_int(options, "agreement_top", minimum=0,
                                                                               where=f"{evaluator.name}.agreement_top")}

    def write(pool: JudgePool) -> None:
        ordered = {i: entries[i] for i in order if i in entries}
        usage = {}
        for spec in specs:
            total = JudgeUsage()
            total.add(usage_before.get(spec.name) or {})
            total.add(vars(pool.usage[spec.name]))
            usage[spec.name] = total.to_json(spec)
        incomplete = [i for i in ordered if not complete(ordered[i], names)]
        atomic_write_json(output, evaluator.document(ordered, {**meta, "usage": usage, "incomplete": incomplete}))

    async with JudgePool(specs, ReplyCache(cfg.get("cache_dir")),
                         config_int(cfg["judges"], "max_requests", where="judges.max_requests")) as pool:
        ctx = JudgeContext(pool, attempts, options, no_answer=(ModelError,))

        async def one(tid: str) -> None:
            entries[tid] = await evaluator.judge(ctx, TaskInputs(tid, prediction=preds.tasks[tid], task=tasks[tid]))
            write(pool)

        await bounded(todo, config_int(cfg, "concurrency"), one)
        write(pool)
        sent = sum(u.requests for u in pool.usage.values())
        cached = sum(u.cached for u in pool.usage.values())
    incomplete = [i for i in order if not complete(entries[i], names)]
    print(f"{evaluator.name}: {len(order)} task(s) judged ({len(todo)} now, {len(incomplete)} with rubrics some "
          f"judge could not answer); {sent} request(s) sent, {cached} reply(ies) from the cache -> {output}")
    return 1 if incomplete else 0
