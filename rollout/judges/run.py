"""A judge run from its config (conf/judge/, as a plain dict): every configured evaluator
(``evaluators``, conf/judge/evaluators/; engine.evaluators): Task Completion and Information
Grounding of every task (m3_judges, stage ``judge``), the call outcomes (call_outcomes, stage
``calls``), and every other evaluator with a ``judge`` function; ``stage=both`` runs them all,
``stage=<name>`` one.

An evaluator with a ``judge`` function is asked about every task of the predictions (and of the
reference, when it reads it, and of the tasks file, when it reads the task; every task of the tasks
file for an evaluator of all tasks) with what it ``reads``: the predicted trajectory, the reference
(``data.gt``), the task record (``data.tasks``), the task's final workspace folder
(``<workspace_dir>/<id>``, default the rollout's) and its tool log (``<tool_log_dir>/<id>.json``,
default the rollout's); its file ``<predictions stem>_<suffix>.json`` (or its entry's ``output``) is
rewritten atomically after every task and resumed by a rerun, which judges again the entries the
evaluator finds incomplete. A predictions file with trial files beside it has every trial judged.

Judging is resumable: the taskcompletion.json is rewritten atomically after every judged task, and a
rerun judges only the tasks it lacks (and those judged by other models, whose entries it drops);
every reply is cached, so what a killed run had asked is not asked again. `run` returns the exit
status: 0 when every task was judged, 1 when some judge kept failing on some task (run again to
retry them); bad input raises the contract's InputError.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import rollout.judges.scripted  # noqa: F401 (registers the scripted policy "judge" of judges=scripted)
from engine.contract import (InputError, TrajectoryFile, atomic_write_json, check_choice, check_name, config_int,
                             read_json, read_trajectories, safe_name, without_lost)
from engine.evaluators import evaluator
from engine.serialize import scored_ids
from engine.evaluators.base import Evaluator, JudgeContext, TaskInputs
from engine.evaluators.call_outcomes import CALLANALYSIS
from engine.evaluators.ensemble import entry_scores
from engine.evaluators.judging import JudgeFailure
from engine.evaluators.m3_judges import EVALUATOR as M3_JUDGES
from engine.evaluators.m3_judges import TASKCOMPLETION, read_taskcompletion, taskcompletion_document
from engine.evaluators.prompts import COMPLETION, GROUNDING, OUTCOME, TASK_COMPLETION
from engine.judge_results import companion_path
from engine.neighbour_tasks import read_task_dir
from engine.trials import find_trials
from rollout.judges.agreement import agreement
from rollout.judges.calls import judge_undecided, outcome_document, rule_labels
from rollout.judges.catalogue import load_catalogue
from rollout.judges.classified_calls import published_stage
from rollout.judges.outcomes import Catalogue
from rollout.judges.pool import USAGE_COUNTS, JudgePool, check_keys, judge_specs
from rollout.models.clients import bounded, quiet_client_loggers

log = logging.getLogger("judge")

STAGES = {"judge": "m3_judges", "calls": "call_outcomes"}
"""The stages of the two built-in evaluators, by their former names; ``both`` runs every configured one."""


def predictions_path(cfg: Mapping[str, Any]) -> Path:
    """`predictions`, else <results_dir>/<model>_test_mcp_fuzzy.json."""
    if cfg.get("predictions"):
        return Path(cfg["predictions"])
    if not cfg.get("model"):
        raise InputError("config", "name the judged model (model=NAME) or its file (predictions=PATH)", field="model")
    return Path(cfg["results_dir"]) / f"{check_name(cfg['model'], 'model')}_test_mcp_fuzzy.json"


def wanted_ids(cfg: Mapping[str, Any], known: Iterable[str]) -> set[str]:
    """The ids of ``ids`` (a list, or one id as a string; empty: every task), warning about those
    that are not among `known`."""
    ids = cfg.get("ids")
    if ids is None:
        return set()
    if isinstance(ids, (str, int)) and not isinstance(ids, bool):
        ids = [ids]
    if not isinstance(ids, list) or not all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in ids):
        raise InputError("config", f"must be a list of task ids or one id, got {str(ids)[:80]!r}", field="ids")
    wanted = {str(i) for i in ids}
    unknown = sorted(wanted - set(known))
    if unknown:
        log.warning("%d id(s) of `ids` match no task to judge: %s", len(unknown),
                    ", ".join(unknown[:10]) + (" ..." if len(unknown) > 10 else ""))
    return wanted


def _gt_entries(path: Path) -> int:
    """The number of task objects in a reference file, repeated ids included (the published num_total)."""
    root = read_json(path, "trajectory file")
    return len(root) if isinstance(root, (list, dict)) else 0


def _previous(output: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The entries and the usage of an earlier run's output (empty when there is none)."""
    if not output.is_file():
        return {}, {}
    usage = _previous_usage(output, "judge file")
    for name, block in usage.items():
        for key, value in (block.items() if isinstance(block, dict) else ()):
            if key in USAGE_COUNTS and not (isinstance(value, int) and not isinstance(value, bool)
                                             and 0 <= value < 2 ** 53):
                raise InputError(output, f"must be a count (an integer >= 0 below 2**53), got {str(value)[:40]!r}",
                                 field=f"meta.usage.{name}.{key}")
    return read_taskcompletion(output), usage


async def judge_stage(cfg: Mapping[str, Any], gt: TrajectoryFile, preds: TrajectoryFile, output: Path) -> int:
    """Judge the tasks of both files not yet in `output`; 0 when none failed, else 1."""
    specs = judge_specs(cfg["judges"]["pool"])
    names = [s.identity["model"] for s in specs]
    attempts, max_chars = config_int(cfg, "attempts"), config_int(cfg, "max_result_chars", minimum=0)
    entries, usage_before = _previous(output)
    shared = set(scored_ids(gt, preds))
    wanted = wanted_ids(cfg, [i for i in gt.tasks if i in shared])
    order = [i for i in gt.tasks if i in shared and (not wanted or i in wanted)]
    stale = [i for i in order if i in entries and (judged := sorted(entry_scores(entries[i], TASK_COMPLETION)))
             and judged != sorted(names)]
    if stale:
        log.warning("%d task(s) were judged by other models; they are judged again by %s", len(stale),
                    ", ".join(names))
    entries = {i: e for i, e in entries.items() if i not in stale}
    todo = [i for i in order if i not in entries]
    log.info("%d of %d task(s) to judge with %d judge(s): %s", len(todo), len(order), len(specs),
             ", ".join(s.name for s in specs))
    if todo:
        check_keys(specs)
    num_total, failed = _gt_entries(gt.path), {}
    meta: dict[str, Any] = {"predictions": str(preds.path), "gt": str(gt.path), "judges": [
        {"name": s.name, **{k: s.identity[k] for k in ("provider", "model")}} for s in specs],
        "prompt_versions": {r.purpose: r.version for r in (COMPLETION, GROUNDING)}, "attempts": attempts}

    def write(pool: JudgePool, final: bool = False) -> None:
        ordered = {i: entries[i] for i in order if i in entries}
        ordered.update((i, e) for i, e in entries.items() if i not in ordered)
        extra = {"usage": pool.usage_totals(usage_before), "failed": failed}
        if final:
            extra["agreement"] = agreement(ordered, config_int(cfg, "agreement_top", minimum=0))
        atomic_write_json(output, taskcompletion_document(ordered, num_total, meta={**meta, **extra}))

    concurrency = config_int(cfg, "concurrency")
    async with JudgePool.from_config(cfg, specs) as pool:
        meta["prompt_versions"] = {r.purpose: pool.rubric(r).version for r in (COMPLETION, GROUNDING)}
        options = dict((cfg.get("evaluators") or {}).get(M3_JUDGES.name) or {})
        options["images_dir"] = options.get("images_dir") or str(gt.path.parent)  # task images: beside the reference
        context = JudgeContext(pool, attempts, options, max_chars)

        async def one(tid: str) -> None:
            inputs = TaskInputs(tid, prediction=preds.tasks[tid], reference=gt.tasks[tid])
            try:
                entry = await M3_JUDGES.judge(context, inputs)  # type: ignore[misc]
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
    mode = check_choice(calls_cfg.get("mode", "rules"), ["rules", "published"], "calls mode", "calls.mode")
    wanted = wanted_ids(cfg, preds.tasks)
    catalogue = await _catalogue(cfg, Path(cfg["run_dir"]))
    if mode == "published":
        return await published_stage(cfg, preds.path, output, catalogue, wanted)
    labels, calls, illegal = rule_labels(preds, catalogue)
    if wanted:
        kept = [i for i, label in enumerate(labels) if label["id"] in wanted]
        labels, calls = [labels[i] for i in kept], [calls[i] for i in kept]
        illegal = {tid: reason for tid, reason in illegal.items() if tid in wanted}
    specs = judge_specs(cfg["judges"]["pool"])
    pool = JudgePool.from_config(cfg, specs)
    spec = pool.spec(calls_cfg["judge"]) if calls_cfg.get("judge") else specs[0]
    if any(label["label"] is None for label in labels):
        check_keys([spec])
    async with pool:
        await judge_undecided(pool, spec, labels, calls, config_int(cfg, "attempts"),
                              config_int(calls_cfg, "max_result_chars", minimum=0, where="calls.max_result_chars"))
    samples = [i for i in preds.tasks if not wanted or i in wanted]
    document = outcome_document(labels, illegal, samples, predictions=str(preds.path),
                                catalogue=catalogue.source if catalogue else None, judge=spec.name,
                                prompt_version=pool.rubric(OUTCOME).version,
                                usage={spec.name: pool.usage[spec.name].to_json(spec)})
    atomic_write_json(output, document)
    counts = ", ".join(f"{k} {document[k]}" for k in ("illegal_calling", "unknown_tool", "invalid_arguments",
                                                      "resource_not_found", "success", "undecided"))
    print(f"calls: {len(labels)} call(s) of {len(samples)} sample(s): {counts}; decided by "
          + ", ".join(f"{k} {v}" for k, v in document["decided_by"].items()) + f" -> {output}")
    return 0


def read_task_records(path: Path) -> dict[str, dict[str, Any]]:
    """id -> task record of a tasks file (a list of objects with ids, or an object id -> task), in order; an
    id given twice is refused; a folder is a checkout of the MCPVerse repository (engine.neighbour_tasks)."""
    if Path(path).is_dir():
        return read_task_dir(path)
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
        if str(tid) in out:
            raise InputError(path, f"the id is given twice (again at {label})", task_id=str(tid), field="id")
        out[str(tid)] = task
    return out


def _tool_log(path: Path) -> list[dict[str, Any]] | None:
    """The calls of a task's tool log (the rollout's ``{"calls": [...]}``); None when there is none."""
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
    return Path(cfg["results_dir"]) / "rollout" / check_name(cfg["model"], "model") / leaf


def evaluator_output(cfg: Mapping[str, Any], judged: Evaluator, predictions: Path) -> Path:
    """The file of an evaluator: its entry's ``output``, else <predictions stem>_<suffix>.json."""
    explicit = ((cfg.get("evaluators") or {}).get(judged.name) or {}).get("output")
    return Path(explicit) if explicit else companion_path(predictions, str(judged.suffix))


def _previous_usage(output: Path, what: str = "evaluator file") -> dict[str, Any]:
    """The judges' usage recorded in an earlier run's output (`what` names the file in errors); empty
    when there is none."""
    if not output.is_file():
        return {}
    root = read_json(output, what)
    meta = root.get("meta") if isinstance(root, dict) else None
    usage = meta.get("usage") if isinstance(meta, dict) else None
    return usage if isinstance(usage, dict) else {}


async def evaluator_stage(cfg: Mapping[str, Any], judged: Evaluator, preds: TrajectoryFile,
                          gt: TrajectoryFile | None, output: Path,
                          lost: Mapping[str, tuple[str, str]] | None = None) -> int:
    """Ask an evaluator's `judge` about the tasks not yet in `output`, writing the file after each; 0
    when every task has a complete entry, else 1.

    The tasks: those of the predictions (and of the reference, when it reads it, and of the tasks
    file, when it reads the task), or every task of the tasks file for an evaluator of all tasks, less
    the tasks `lost` to the infrastructure (named in the file's meta: a rerun of the rollout retries them). Its
    context has its config entry (and ``tasks_file``), its ``attempts`` (else the app's) and the pool
    (none for an evaluator that asks no judge)."""
    assert judged.judge is not None and judged.document is not None
    data = cfg.get("data") or {}
    options = dict((cfg.get("evaluators") or {}).get(judged.name) or {})
    tasks: dict[str, dict[str, Any]] = {}
    if "task" in judged.reads:
        if not data.get("tasks"):
            raise InputError("config", "no tasks file: set data.tasks=PATH", field="data.tasks")
        tasks = read_task_records(Path(data["tasks"]))
        options["tasks_file"] = str(data["tasks"])
    workspaces = _rollout_folder(cfg, "workspace_dir", "workspace") if "workspace" in judged.reads else None
    logs = _rollout_folder(cfg, "tool_log_dir", "tool_logs") if "tool_log" in judged.reads else None
    specs = judge_specs(cfg["judges"]["pool"]) if judged.pool else []
    names = [s.identity["model"] for s in specs]
    attempts = config_int(options, "attempts", where=f"evaluators.{judged.name}.attempts") \
        if options.get("attempts") is not None else config_int(cfg, "attempts")
    wanted = wanted_ids(cfg, tasks if judged.all_tasks else [i for i in preds.tasks if gt is None or i in gt.tasks])
    lost = lost or {}
    if judged.all_tasks:
        order = [i for i in tasks if (not wanted or i in wanted) and i not in lost]
    else:
        order = [i for i in preds.tasks if (gt is None or i in gt.tasks) and (not tasks or i in tasks)
                 and (not wanted or i in wanted)]
        missing = [i for i in preds.tasks if tasks and i not in tasks]
        if missing:
            log.warning("%s: %d predicted id(s) have no task in %s: %s", judged.name, len(missing), data["tasks"],
                        ", ".join(missing[:10]))
    previous = judged.entries(output) if judged.entries is not None and output.is_file() else {}
    entries = {i: e for i, e in previous.items() if judged.complete is None or judged.complete(e, names)}
    todo = [i for i in order if i not in entries]
    log.info("%s: %d of %d task(s) to judge with %d judge(s)", judged.name, len(todo), len(order), len(specs))
    if todo:
        check_keys(specs)
    failed: dict[str, str] = {}
    usage_before = _previous_usage(output)
    meta: dict[str, Any] = {"evaluator": judged.name, "predictions": str(preds.path),
                            "gt": str(gt.path) if gt else None, "tasks": options.get("tasks_file"),
                            **({"workspace_dir": str(workspaces)} if workspaces else {}),
                            **({"tool_log_dir": str(logs)} if logs else {}),
                            **({"judges": [{"name": s.name, **{k: s.identity[k] for k in ("provider", "model")}}
                                           for s in specs]} if specs else {}),
                            **{k: v for k, v in options.items() if k not in ("tasks_file", "output")},
                            "attempts": attempts, **({"lost": {i: k for i, (k, _) in lost.items()}} if lost else {})}

    def incomplete() -> list[str]:
        return [i for i in order if i in entries and judged.complete is not None
                and not judged.complete(entries[i], names)]

    def write(pool: JudgePool | None) -> None:
        ordered = {i: entries[i] for i in order if i in entries}
        ordered.update((i, e) for i, e in entries.items() if i not in ordered)
        extra: dict[str, Any] = {"failed": dict(failed)}
        if judged.complete is not None:
            extra["incomplete"] = incomplete()
        if pool is not None:
            extra["usage"] = pool.usage_totals(usage_before)
        atomic_write_json(output, judged.document(ordered, {**meta, **extra}))

    async def judge_all(pool: JudgePool | None) -> None:
        context = JudgeContext(pool, attempts, options, config_int(cfg, "max_result_chars", minimum=0))

        async def one(tid: str) -> None:
            inputs = TaskInputs(tid, prediction=preds.tasks.get(tid), reference=gt.tasks.get(tid) if gt else None,
                                task=tasks.get(tid), workspace=workspaces / safe_name(tid) if workspaces else None,
                                tool_log=_tool_log(logs / f"{safe_name(tid)}.json") if logs else None)
            try:
                entries[tid] = await judged.judge(context, inputs)  # type: ignore[misc]
            except JudgeFailure as exc:
                failed[tid] = str(exc)
                log.warning("%s: task %s not judged: %s", judged.name, tid, exc)
                return
            write(pool)

        await bounded(todo, config_int(cfg, "concurrency"), one)
        write(pool)

    if specs:
        async with JudgePool.from_config(cfg, specs) as pool:
            await judge_all(pool)
    else:
        await judge_all(None)
    left = incomplete()
    done = sum(1 for i in order if i in entries) - len(left)
    print(f"{judged.name}: {done} of {len(order)} task(s) judged ({len(todo) - len(failed)} now, {len(failed)} "
          f"failed, {len(left)} incomplete) -> {output}")
    return 1 if failed or left else 0


def configured(cfg: Mapping[str, Any]) -> list[Evaluator]:
    """The evaluators the run judges: every one of ``evaluators`` (stage both), or the stage's one."""
    names = list(cfg.get("evaluators") or {})
    stage = check_choice(cfg.get("stage", "both"), ["both", *STAGES, *names], "stage", "stage")
    chosen = names if stage == "both" else [STAGES.get(stage, stage)]
    out = []
    for name in chosen:
        try:
            found = evaluator(name)
        except ValueError as exc:
            raise InputError("config", str(exc), field=f"evaluators.{name}") from None
        if name not in STAGES.values() and (found.judge is None or found.document is None):
            raise InputError("config", f"evaluator {name} has nothing to judge (no judge or document function); "
                             "the score app computes or reads its values", field=f"evaluators.{name}")
        out.append(found)
    return out


def run(cfg: Mapping[str, Any]) -> int:
    """Run the configured evaluators; the exit status. A predictions file with trial files beside it
    (<stem>_trial<i>.json, a rollout with trials=N) has each trial judged, its verdicts beside it."""
    trials = [t for t in find_trials(predictions_path(cfg)) if t.is_file()]
    if trials and not cfg.get("output") and not (cfg.get("calls") or {}).get("output"):
        return max(run_one({**cfg, "predictions": str(t)}) for t in trials)
    return run_one(cfg)


def run_one(cfg: Mapping[str, Any]) -> int:
    """Run the configured evaluators on one predictions file; the exit status."""
    chosen = configured(cfg)
    quiet_client_loggers()
    predictions = predictions_path(cfg)
    preds, lost = without_lost(read_trajectories(predictions))  # lost to the infrastructure: reported apart, not judged
    data = cfg.get("data") or {}
    status = 0
    gt: TrajectoryFile | None = None  # the reference file, read once for the evaluators that read it
    for judged in chosen:
        if "reference" in judged.reads:
            if not data.get("gt"):
                raise InputError("config", "no reference file: set data.gt=PATH", field="data.gt")
            gt = gt or read_trajectories(data["gt"])
        if judged.name == STAGES["judge"]:
            assert gt is not None
            output = Path(cfg["output"]) if cfg.get("output") else companion_path(predictions, TASKCOMPLETION)
            status = max(status, asyncio.run(judge_stage(cfg, gt, preds, output)))
        elif judged.name == STAGES["calls"]:
            calls_output = (cfg.get("calls") or {}).get("output")
            output = Path(calls_output) if calls_output else companion_path(predictions, CALLANALYSIS)
            status = max(status, asyncio.run(calls_stage(cfg, preds, output)))
        else:
            output = evaluator_output(cfg, judged, predictions)
            status = max(status, asyncio.run(evaluator_stage(cfg, judged, preds,
                                                             gt if "reference" in judged.reads else None, output,
                                                             lost)))
    return status
