"""A judge run from its config (conf/judge/, as a plain dict): Task Completion and Information
Grounding of every task (stage ``judge``), the call outcomes (stage ``calls``), or both.

Judging is resumable: the taskcompletion.json is rewritten atomically after every judged task, and a
rerun judges only the tasks it lacks (and those judged by other models, whose entries it drops);
every reply is cached, so what a killed run had asked is not asked again. `run` returns the exit
status: 0 when every task was judged, 1 when some judge kept failing on some task (run again to
retry them); bad input raises the contract's InputError.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.contract import (InputError, TrajectoryFile, atomic_write_json, check_choice, config_int, read_json,
                             read_trajectories)
from engine.evaluators.call_outcomes import CALLANALYSIS
from engine.evaluators.m3_judges import TASKCOMPLETION, read_taskcompletion, taskcompletion_document
from engine.judge_results import companion_path
import rollout.judges.scripted  # noqa: F401 (registers the scripted policy "judge" of judges=scripted)
from rollout.judges.agreement import agreement
from rollout.judges.cache import ReplyCache
from rollout.judges.calls import judge_undecided, outcome_document, rule_labels
from rollout.judges.catalogue import load_catalogue
from rollout.judges.ensemble import entry_scores, judge_task
from rollout.judges.outcomes import Catalogue
from rollout.judges.pool import JudgeFailure, JudgePool, JudgeUsage, judge_specs
from rollout.judges.prompts import COMPLETION, GROUNDING, OUTCOME, TASK_COMPLETION
from rollout.models.clients import bounded, quiet_client_loggers

log = logging.getLogger("judge")

STAGES = ("judge", "calls", "both")


def predictions_path(cfg: Mapping[str, Any]) -> Path:
    """`predictions`, else <results_dir>/<model>_test_mcp_fuzzy.json."""
    if cfg.get("predictions"):
        return Path(cfg["predictions"])
    if not cfg.get("model"):
        raise InputError("config", "name the judged model (model=NAME) or its file (predictions=PATH)", field="model")
    return Path(cfg["results_dir"]) / f"{cfg['model']}_test_mcp_fuzzy.json"


def _gt_entries(path: Path) -> int:
    """The number of task objects in a reference file, repeated ids included (the published num_total)."""
    root = read_json(path, "trajectory file")
    return len(root) if isinstance(root, (list, dict)) else 0


def _previous(output: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The entries and the usage of an earlier run's output (empty when there is none)."""
    if not output.is_file():
        return {}, {}
    root = read_json(output, "judge file")
    meta = root.get("meta") if isinstance(root, dict) else None
    usage = meta.get("usage") if isinstance(meta, dict) else None
    return read_taskcompletion(output), usage if isinstance(usage, dict) else {}


async def judge_stage(cfg: Mapping[str, Any], gt: TrajectoryFile, preds: TrajectoryFile, output: Path) -> int:
    """Judge the tasks of both files not yet in `output`; 0 when none failed, else 1."""
    specs = judge_specs(cfg["judges"]["pool"])
    names = [s.identity["model"] for s in specs]
    attempts, max_chars = config_int(cfg, "attempts"), config_int(cfg, "max_result_chars", minimum=0)
    entries, usage_before = _previous(output)
    wanted = {str(i) for i in cfg.get("ids") or []}
    order = [i for i in gt.tasks if i in preds.tasks and (not wanted or i in wanted)]
    stale = [i for i in order if i in entries and (judged := sorted(entry_scores(entries[i], TASK_COMPLETION)))
             and judged != sorted(names)]
    if stale:
        log.warning("%d task(s) were judged by other models; they are judged again by %s", len(stale),
                    ", ".join(names))
    entries = {i: e for i, e in entries.items() if i not in stale}
    todo = [i for i in order if i not in entries]
    log.info("%d of %d task(s) to judge with %d judge(s): %s", len(todo), len(order), len(specs),
             ", ".join(s.name for s in specs))
    num_total, failed = _gt_entries(gt.path), {}
    meta: dict[str, Any] = {"predictions": str(preds.path), "gt": str(gt.path), "judges": [
        {"name": s.name, **{k: s.identity[k] for k in ("provider", "model")}} for s in specs],
        "prompt_versions": {r.purpose: r.version for r in (COMPLETION, GROUNDING)}, "attempts": attempts}

    def write(pool: JudgePool, final: bool = False) -> None:
        ordered = {i: entries[i] for i in order if i in entries}
        ordered.update((i, e) for i, e in entries.items() if i not in ordered)
        usage = {}
        for spec in specs:
            total = JudgeUsage()
            total.add(usage_before.get(spec.name) or {})
            total.add(vars(pool.usage[spec.name]))
            usage[spec.name] = total.to_json(spec)
        extra = {"usage": usage, "failed": failed}
        if final:
            extra["agreement"] = agreement(ordered, config_int(cfg, "agreement_top", minimum=0))
        atomic_write_json(output, taskcompletion_document(ordered, num_total, meta={**meta, **extra}))

    cache = ReplyCache(cfg.get("cache_dir"))
    concurrency = config_int(cfg, "concurrency")
    async with JudgePool(specs, cache, config_int(cfg["judges"], "max_requests", where="judges.max_requests")) as pool:

        async def one(tid: str) -> None:
            try:
                entry = await judge_task(pool, gt.tasks[tid], preds.tasks[tid], attempts, max_chars)
            except JudgeFailure as exc:
                failed[tid] = str(exc)
                log.warning("task %s not judged: %s", tid, exc)
                return
            entries[tid] = entry
            write(pool)

        await bounded(todo, concurrency, one)
        write(pool, final=True)
        sent = sum(u.requests for u in pool.usage.values())
        cached = sum(u.cached for u in pool.usage.values())
    judged = sum(1 for i in order if i in entries)
    print(f"judge: {judged} of {len(order)} task(s) judged ({len(todo) - len(failed)} now, {len(failed)} failed); "
          f"{sent} request(s) sent, {cached} reply(ies) from the cache -> {output}")
    return 1 if failed else 0


async def _catalogue(cfg: Mapping[str, Any], run_dir: Path) -> Catalogue | None:
    """The catalogue the calls config names: a file, `auto` (the rollout's recorded one, if any) or null."""
    source = (cfg.get("calls") or {}).get("catalogue")
    if source == "auto":
        recorded = Path(cfg["results_dir"]) / "rollout" / str(cfg.get("model")) / "cache" / "catalogue.json"
        source = str(recorded) if cfg.get("model") and recorded.is_file() else None
    if not source:
        log.info("no tool catalogue: unknown tools and schemas are judged from the results alone")
        return None
    return await load_catalogue(source, log_dir=run_dir / "server_logs")


async def calls_stage(cfg: Mapping[str, Any], preds: TrajectoryFile, output: Path) -> int:
    """Classify every predicted call (rules, then the judge) and write the callanalysis.json; 0."""
    calls_cfg = cfg.get("calls") or {}
    catalogue = await _catalogue(cfg, Path(cfg["run_dir"]))
    labels, calls, illegal = rule_labels(preds, catalogue)
    specs = judge_specs(cfg["judges"]["pool"])
    pool = JudgePool(specs, ReplyCache(cfg.get("cache_dir")),
                     config_int(cfg["judges"], "max_requests", where="judges.max_requests"))
    spec = pool.spec(calls_cfg["judge"]) if calls_cfg.get("judge") else specs[0]
    async with pool:
        await judge_undecided(pool, spec, labels, calls, config_int(cfg, "attempts"),
                              config_int(calls_cfg, "max_result_chars", minimum=0, where="calls.max_result_chars"))
    document = outcome_document(labels, illegal, list(preds.tasks), predictions=str(preds.path),
                                catalogue=catalogue.source if catalogue else None, judge=spec.name,
                                prompt_version=OUTCOME.version, usage={spec.name: pool.usage[spec.name].to_json(spec)})
    atomic_write_json(output, document)
    counts = ", ".join(f"{k} {document[k]}" for k in ("illegal_calling", "unknown_tool", "invalid_arguments",
                                                      "resource_not_found", "success", "undecided"))
    print(f"calls: {len(labels)} call(s) of {len(preds.tasks)} sample(s): {counts}; decided by "
          + ", ".join(f"{k} {v}" for k, v in document["decided_by"].items()) + f" -> {output}")
    return 0


def run(cfg: Mapping[str, Any]) -> int:
    """Run the configured stage(s); the exit status."""
    stage = check_choice(cfg.get("stage", "both"), STAGES, "stage", "stage")
    quiet_client_loggers()
    predictions = predictions_path(cfg)
    preds = read_trajectories(predictions)
    status = 0
    if stage in ("judge", "both"):
        data = cfg.get("data") or {}
        if not data.get("gt"):
            raise InputError("config", "no reference file: set data.gt=PATH", field="data.gt")
        output = Path(cfg["output"]) if cfg.get("output") else companion_path(predictions, TASKCOMPLETION)
        status = asyncio.run(judge_stage(cfg, read_trajectories(data["gt"]), preds, output))
    if stage in ("calls", "both"):
        calls_output = (cfg.get("calls") or {}).get("output")
        output = Path(calls_output) if calls_output else companion_path(predictions, CALLANALYSIS)
        status = max(status, asyncio.run(calls_stage(cfg, preds, output)))
    return status
