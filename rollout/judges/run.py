"""A judge run from its config (conf/judge/, as a plain dict): every configured evaluator
(``evaluators``, conf/judge/evaluators/; engine.evaluators) with a ``judge`` function, through one
stage; ``stage=both`` runs them all, ``stage=<name>`` one (``stage=judge`` and ``stage=calls`` name
m3_judges and call_outcomes).

An evaluator is asked about every task of the predictions (and of the reference, when it reads it, in
the reference's order, and of the tasks file, when it reads the task; every task of the tasks file for
an evaluator of all tasks) with what it ``reads``: the predicted trajectory, the reference
(``data.gt``), the task record (``data.tasks``), the task's final workspace folder
(``<workspace_dir>/<id>``, default the rollout's), its tool log (``<tool_log_dir>/<id>.json``, default
the rollout's), every object of the predictions file under its id, and the tool catalogue its entry's
``catalogue`` names (loaded once per run, rollout.judges.catalogue). Its pool is the judges pool, or the
one judge it declares it asks (``one_judge``). Its file ``<predictions stem>_<suffix>.json`` (or its
entry's ``output``) is rewritten atomically after every task and resumed by a rerun, which judges again
the entries the evaluator finds incomplete (e.g. judged by another pool), or all of them when it finds
the earlier file stale (made with other settings), and adds the judges' usage to the earlier runs'.
Every reply is cached, so what a killed run had asked is not asked again. A predictions file with
trial files beside it has every trial judged. `run` returns the exit status: 0 when every task was
judged, 1 when some judge kept failing on some task (run again to retry them); bad input raises the
contract's InputError.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import rollout.judges.scripted  # noqa: F401 (registers the scripted policy "judge" of judges=scripted)
from engine.contract import (InputError, TrajectoryFile, atomic_write_json, check_choice, config_int, file_objects,
                             read_trajectories, safe_name, without_lost)
from engine.contract.progress import TaskBar
from engine.evaluators import evaluator
from engine.evaluators.base import Evaluator, JudgeContext, TaskInputs
from engine.evaluators._judging import JudgeFailure
from engine.judge_results import verdict_headline, verdict_odd_line
from engine.serialize import scored_ids
from engine.trials import check_trial_files, find_trials
from rollout.judges.catalogue import run_catalogue
from rollout.judges.inputs import (INPUT_KEYS, NOT_KEYED, evaluator_options, evaluator_output, input_key,
                                   predictions_path, previous_keys, previous_meta, previous_usage, read_task_records,
                                   rollout_folder, tool_log, wanted_ids)
from rollout.judges.pool import JudgePool, check_keys, judge_specs, read_prompts
from rollout.judges.shards import merge_verdicts, part_document, part_inputs
from rollout.shards import PartPending, Shard, parse_shard, part_path
from rollout.models.clients import bounded, quiet_client_loggers

log = logging.getLogger("judge")

ALIASES = {"judge": "m3_judges", "calls": "call_outcomes"}
"""Stage names of two evaluators, kept from the app's first stages; ``both`` runs every configured one."""
FILE_OPTIONS = ("tasks_file", "reference_file", "predictions_file", "output")
"""Options naming the run's files (``output``: the evaluator's own), kept out of its file's meta."""


class Catalogues:
    """The tool catalogues of a run, each loaded once (a servers config's servers are started to list
    their tools, their logs under <run_dir>/server_logs), by the ``catalogue`` setting naming it."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        self.cfg = cfg
        self.loaded: dict[str | None, Any] = {}

    async def get(self, source: str | None) -> Any:
        """The catalogue a ``catalogue`` setting names (a file, ``auto`` or null); None for none."""
        if source not in self.loaded:
            self.loaded[source] = await run_catalogue(self.cfg, source, Path(self.cfg["run_dir"]) / "server_logs")
        return self.loaded[source]


async def evaluator_stage(cfg: Mapping[str, Any], judged: Evaluator, preds: TrajectoryFile,
                          gt: TrajectoryFile | None, output: Path,
                          lost: Mapping[str, tuple[str, str]] | None = None, catalogues: Catalogues | None = None) -> int:
    """Ask an evaluator's `judge` about the tasks not yet in `output`, writing the file after each; 0
    when every task has a complete entry, else 1.

    The tasks: those of the predictions (and of the reference, when it reads it, and of the tasks
    file, when it reads the task), or every task of the tasks file for an evaluator of all tasks, less
    the tasks `lost` to the infrastructure (named in the file's meta: a rerun of the rollout retries them). Its
    context has its config entry (and the run's files, FILE_OPTIONS), its ``attempts`` and ``max_result_chars``
    (else the app's), the pool (none for an evaluator that asks no judge; its one judge for one that asks one) and
    the catalogue for one that reads it (meta ``catalogue``: its source)."""
    assert judged.judge is not None and judged.document is not None
    data = cfg.get("data") or {}
    options = evaluator_options(cfg, judged.name)
    options["predictions_file"] = str(preds.path)
    if gt is not None:
        options["reference_file"] = str(gt.path)
    tasks: dict[str, dict[str, Any]] = {}
    if "task" in judged.reads:
        if not data.get("tasks"):
            raise InputError("config", "no tasks file: set data.tasks=PATH", field="data.tasks")
        tasks = (judged.read_tasks or read_task_records)(Path(data["tasks"]))
        options["tasks_file"] = str(data["tasks"])
    workspaces = rollout_folder(cfg, "workspace_dir", "workspace") if "workspace" in judged.reads else None
    logs = rollout_folder(cfg, "tool_log_dir", "tool_logs") if "tool_log" in judged.reads else None
    objects = file_objects(preds.path) if "file_entries" in judged.reads else {}
    one = judged.one_judge(options, cfg["judges"]) if judged.pool and judged.one_judge is not None else None
    specs = judge_specs({one[0]: one[1]} if one else cfg["judges"]["pool"]) if judged.pool else []
    names = [s.identity["model"] for s in specs]
    attempts, max_chars = (
        config_int(options, key, minimum=minimum, where=f"evaluators.{judged.name}.{key}")
        if options.get(key) is not None else config_int(cfg, key, minimum=minimum)
        for key, minimum in (("attempts", 1), ("max_result_chars", 0)))
    shared = set(scored_ids(gt, preds)) if gt is not None else set(preds.tasks)
    candidates = [i for i in (gt.tasks if gt is not None else preds.tasks) if i in shared]  # the reference's order
    wanted = wanted_ids(cfg, tasks if judged.all_tasks else candidates)
    lost = lost or {}
    if judged.all_tasks:
        order = [i for i in tasks if (not wanted or i in wanted) and i not in lost]
    else:
        order = [i for i in candidates if (not tasks or i in tasks) and (not wanted or i in wanted)]
        missing = [i for i in preds.tasks if tasks and i not in tasks]
        if missing:
            log.warning("%s: %d predicted id(s) have no task in %s: %s", judged.name, len(missing), data["tasks"],
                        ", ".join(missing[:10]))
    meta: dict[str, Any] = {"evaluator": judged.name, "predictions": str(preds.path),
                            "gt": str(gt.path) if gt else None, "tasks": options.get("tasks_file"),
                            **({"workspace_dir": str(workspaces)} if workspaces else {}),
                            **({"tool_log_dir": str(logs)} if logs else {}),
                            **({"judges": [{"name": s.name, **{k: s.identity[k] for k in ("provider", "model")}}
                                           for s in specs]} if specs else {}),
                            **{k: v for k, v in options.items() if k not in FILE_OPTIONS},
                            "attempts": attempts, **({"lost": {i: k for i, (k, _) in lost.items()}} if lost else {})}
    catalogue = None
    if "catalogue" in judged.reads:
        catalogue = await (catalogues or Catalogues(cfg)).get(options.get("catalogue"))
        meta["catalogue"] = catalogue.source if catalogue is not None else None
    if judged.task_count is not None and gt is not None:
        meta["num_total"] = judged.task_count(gt.path)
    settings = {"evaluator": judged.name, "options": {k: v for k, v in options.items() if k not in NOT_KEYED},
                "judges": [s.identity for s in specs], "max_result_chars": max_chars,
                "prompts": {**{r.purpose: r.version for r in judged.rubrics},
                            **(read_prompts(cfg["judges"].get("prompts")) if specs else {})},
                "catalogue": None if catalogue is None else {"tools": catalogue.tools,
                                                             "unavailable": sorted(catalogue.unavailable)}}
    tasks_base = Path(data["tasks"]).resolve() if tasks and data.get("tasks") else None
    if tasks_base is not None and not tasks_base.is_dir():
        tasks_base = tasks_base.parent

    def inputs_of(tid: str) -> TaskInputs:
        return TaskInputs(tid, prediction=preds.tasks.get(tid), reference=gt.tasks.get(tid) if gt else None,
                          task=tasks.get(tid), workspace=workspaces / safe_name(tid) if workspaces else None,
                          tool_log=tool_log(logs / f"{safe_name(tid)}.json") if logs else None,
                          file_entries=objects.get(tid, ()))

    shard, parts_dir = parse_shard(cfg.get("shard")), Path(cfg.get("parts_dir") or output.parent / "parts")

    def inputs(part: Shard) -> dict[str, Any]:
        return part_inputs(part, preds.path, gt.path if gt else None, options.get("tasks_file"))

    if cfg.get("merge") is not None:
        merged = merge_verdicts(judged, output, parts_dir, config_int(cfg, "merge"), order, meta, inputs, specs, names)
        print(f"{judged.name}: {cfg['merge']} part(s) merged -> {merged}")
        return 0
    merged, all_order = output, order
    if shard is not None:
        order = [i for i in order if shard.owns(i)]
        output = part_path(parts_dir, output, shard)
    keys = {i: input_key(inputs_of(i), settings, judged.task_files, tasks_base) for i in order}
    earlier = previous_meta(output, str(judged.suffix)) if judged.entries is not None else {}
    previous = judged.entries(output) if judged.entries is not None and output.is_file() else {}
    why = judged.stale(earlier, meta) if judged.stale is not None and previous else None
    if why:
        log.warning("%s: every task is judged again, as %s was not made as this run asks: %s", judged.name,
                    output, why)
        previous = {}
    entries = {i: e for i, e in previous.items() if judged.complete is None or judged.complete(e, names)}
    again = [i for i in order if i in previous and i not in entries]
    if again:
        log.warning("%s: %d task(s) were judged by other models or in part; they are judged again by %s",
                    judged.name, len(again), ", ".join(names))
    stored = {i: k for i, k in previous_keys(earlier, output).items() if i in entries}
    changed = [i for i in order if i in stored and stored[i] != keys[i]]
    for i in changed:
        del entries[i], stored[i]
    if changed:
        log.warning("%s: %d task(s) changed since %s judged them (their task, reference, prediction or this "
                    "run's settings); they are judged again: %s", judged.name, len(changed), output,
                    ", ".join(changed[:10]) + (" ..." if len(changed) > 10 else ""))
    unkeyed = [i for i in order if i in entries and i not in stored]
    if unkeyed:
        log.warning("%s: %d task(s) of %s were judged by an earlier build that recorded no input keys; their "
                    "verdicts are kept, as nothing shows their input changed (remove the file to judge them "
                    "again)", judged.name, len(unkeyed), output)
    todo = [i for i in order if i not in entries]
    log.info("%s: %d of %d task(s) to judge with %d judge(s)", judged.name, len(todo), len(order), len(specs))
    if todo and judged.asks_always:
        check_keys(specs)
    failed: dict[str, str] = {}
    usage_before = previous_usage(earlier, output)

    def incomplete() -> list[str]:
        return [i for i in order if i in entries and judged.complete is not None
                and not judged.complete(entries[i], names)]

    def write(pool: JudgePool | None) -> None:
        ordered = {i: entries[i] for i in order if i in entries}
        ordered.update((i, e) for i, e in entries.items() if i not in ordered)
        extra: dict[str, Any] = {"failed": dict(failed), INPUT_KEYS: {i: stored[i] for i in ordered if i in stored}}
        if judged.complete is not None:
            extra["incomplete"] = incomplete()
        if pool is not None:
            extra["usage"] = pool.usage_totals(usage_before)
        document = judged.document(ordered, {**meta, **extra})
        if shard is not None:
            document = part_document(document, inputs(shard), meta, extra, ordered)
        atomic_write_json(output, document)

    async def judge_all(pool: JudgePool | None) -> None:
        if pool is not None and judged.rubrics:
            meta["prompt_versions"] = {r.purpose: pool.rubric(r).version for r in judged.rubrics}
        context = JudgeContext(pool, attempts, options, max_chars, catalogue)

        async def one(tid: str) -> None:
            try:
                entries[tid] = await judged.judge(context, inputs_of(tid))  # type: ignore[misc]
            except JudgeFailure as exc:
                failed[tid] = str(exc)
                log.warning("%s: task %s not judged: %s", judged.name, tid, exc)
                return
            stored[tid] = keys[tid]
            write(pool)

        with TaskBar(len(todo), judged.name) as bar:
            await bounded(todo, config_int(cfg, "concurrency"), bar.each(one))
        write(pool)

    if judged.task_check is not None:  # every task's fields, before a judge or a script is started
        for tid in todo:
            judged.task_check(options, tid, tasks.get(tid))
    asked = ""
    if specs:
        async with JudgePool.from_config(cfg, specs) as pool:
            await judge_all(pool)
            asked = (f"; {sum(u.requests for u in pool.usage.values())} request(s) sent, "
                     f"{sum(u.cached for u in pool.usage.values())} reply(ies) from the cache")
    else:
        await judge_all(None)
    left = incomplete()
    done = sum(1 for i in order if i in entries) - len(left)
    print(f"{judged.name}: {done} of {len(order)} task(s) judged ({len(todo) - len(failed)} now, {len(failed)} "
          f"failed, {len(left)} incomplete){asked} -> {output}")
    if shard is None and done:
        print(f"{judged.name}: {verdict_headline(judged, output)}")
        odd = verdict_odd_line(judged, output)
        if odd is not None:
            print(f"{judged.name}: {odd}")
    if shard is not None:
        try:
            merge_verdicts(judged, merged, parts_dir, shard.count, all_order, meta, inputs, specs, names)
            print(f"{judged.name}: every part is complete; {shard.count} part(s) merged -> {merged}")
        except PartPending as exc:
            log.info("not merged yet: %s", exc)
            print(f"{judged.name}: part {shard} done; the merge waits for the other parts")
        except InputError as exc:
            print(f"{judged.name}: not merged: {exc}", file=sys.stderr)
    return 1 if failed or left else 0


def configured(cfg: Mapping[str, Any]) -> list[Evaluator]:
    """The evaluators the run judges: every one of ``evaluators`` (stage both), or the stage's one."""
    names = list(cfg.get("evaluators") or {})
    stage = check_choice(cfg.get("stage", "both"), ["both", *ALIASES, *names], "stage", "stage")
    chosen = names if stage == "both" else [ALIASES.get(stage, stage)]
    out = []
    for name in chosen:
        try:
            found = evaluator(name)
        except ValueError as exc:
            raise InputError("config", str(exc), field=f"evaluators.{name}") from None
        if found.judge is None or found.document is None:
            raise InputError("config", f"evaluator {name} has nothing to judge (no judge or document function); "
                             "the score app computes or reads its values", field=f"evaluators.{name}")
        out.append(found)
    return out


def run(cfg: Mapping[str, Any]) -> int:
    """Run the configured evaluators; the exit status. A predictions file with trial files beside it
    (<stem>_trial<i>.json, a rollout with trials=N) has each trial judged, its verdicts beside it."""
    found = find_trials(predictions_path(cfg))
    check_trial_files(found, "predictions")
    trials = [t for t in found if t.is_file()]
    named = [n for n, entry in (cfg.get("evaluators") or {}).items() if (entry or {}).get("output")]
    catalogues = Catalogues(cfg)
    if trials and not named:
        return max(run_one({**cfg, "predictions": str(t)}, catalogues) for t in trials)
    return run_one(cfg, catalogues)


def run_one(cfg: Mapping[str, Any], catalogues: Catalogues | None = None) -> int:
    """Run the configured evaluators on one predictions file (the run's `catalogues`, loaded once); the
    exit status."""
    chosen = configured(cfg)
    quiet_client_loggers()
    predictions = predictions_path(cfg)
    preds, lost = without_lost(read_trajectories(predictions))  # lost to the infrastructure: reported apart, not judged
    data = cfg.get("data") or {}
    catalogues = catalogues or Catalogues(cfg)
    status = 0
    gt: TrajectoryFile | None = None  # the reference file, read once for the evaluators that read it
    for judged in chosen:
        if "reference" in judged.reads:
            if not data.get("gt"):
                raise InputError("config", "no reference file: set data.gt=PATH", field="data.gt")
            gt = gt or read_trajectories(data["gt"])
        output = evaluator_output(cfg, judged, predictions)
        status = max(status, asyncio.run(evaluator_stage(cfg, judged, preds, gt if "reference" in judged.reads else None,
                                                         output, lost, catalogues)))
    return status
