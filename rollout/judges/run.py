"""A judge run from its settings (conf/judge/, typed: rollout.judges.settings): every configured evaluator
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
entry's ``output``) is the verdict store's (rollout.judges.verdicts): each verdict journaled as it comes,
the file written whole on the journal's schedule and at the end, and resumed by a rerun, which judges
again the entries the evaluator finds incomplete (e.g. judged by another pool), or all of them when it
finds the earlier file stale (made with other settings), and adds the judges' usage to the earlier runs'.
The images a question names are shown to the judges only by the one path rule of the task's folders
(rollout.judges.images); those not shown are named in the evaluator's closing lines.
Every reply is cached, so what a killed run had asked is not asked again. A predictions file with
trial files beside it has every trial judged. `run` returns the exit status: 0 when every task was
judged, 1 when some judge kept failing on some task (run again to retry them); bad input raises the
contract's InputError.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import rollout.judges.scripted  # noqa: F401 (registers the scripted policy "judge" of judges=scripted)
from engine.contract import (
    InputError,
    JsonMapping,
    JsonObject,
    TrajectoryFile,
    config_int,
    file_objects,
    read_trajectories,
    safe_name,
    without_lost,
)
from engine.contract.progress import TaskBar
from engine.contract.settings import Shard, parse_shard
from engine.evaluators import evaluator
from engine.evaluators.base import TaskInputs
from engine.evaluators.protocol import (
    EntryT,
    Evaluator,
    EvaluatorOptions,
    JudgeContext,
    OptionsT,
    RunFiles,
    Verdict,
    options_of,
)
from engine.judge_results import verdict_lines
from engine.judging import Catalogue, JudgeFailure, JudgeSpec
from engine.serialize import scored_ids
from engine.trials import check_trial_files, find_trials
from rollout.judges.catalogue import run_catalogue
from rollout.judges.images import ImageFolders, image_folders, named_files_key, refused_line
from rollout.judges.inputs import (
    NOT_KEYED,
    evaluator_options,
    evaluator_output,
    input_key,
    predictions_path,
    rollout_folder,
    tool_log,
    wanted_ids,
)
from rollout.judges.pool import JudgePool, check_keys, judge_specs, pool_specs, read_prompts
from rollout.judges.settings import JudgeSettings
from rollout.judges.shards import merge_verdicts, part_inputs
from rollout.judges.verdicts import VerdictFile, check_judged
from rollout.models.clients import bounded, quiet_client_loggers
from rollout.shard_report import merge_when_complete
from rollout.shards import hold_part, part_path

log = logging.getLogger("judge")

FILE_OPTIONS = ("tasks_file", "reference_file", "predictions_file", "output")
"""Options naming the run's files (``output``: the evaluator's own), kept out of its file's meta."""


class Catalogues:
    """The tool catalogues of a run, each loaded once (a servers config's servers are started to list
    their tools, their logs under <run_dir>/server_logs), by the ``catalogue`` setting naming it; ``auto``
    names the rollout's recorded one (<results_dir>/rollout/<model>/cache/catalogue.json)."""

    def __init__(self, cfg: JudgeSettings) -> None:
        self.recorded = (Path(cfg.results_dir) / "rollout" / cfg.model / "cache" / "catalogue.json"
                         if cfg.model else None)
        self.log_dir = Path(cfg.run_dir) / "server_logs"
        self.loaded: dict[str | None, Catalogue | None] = {}

    async def get(self, source: str | None) -> Catalogue | None:
        """The catalogue a ``catalogue`` setting names (a file, ``auto`` or null); None for none."""
        if source not in self.loaded:
            self.loaded[source] = await run_catalogue(source, self.recorded, self.log_dir)
        return self.loaded[source]


@dataclass
class Stage:
    """One evaluator's run on one predictions file: what it reads and the judges it asks."""

    judged: Evaluator[Any, Any]
    preds: TrajectoryFile
    gt: TrajectoryFile | None
    options: JsonObject
    tasks: dict[str, JsonObject]
    workspaces: Path | None
    logs: Path | None
    objects: Mapping[str, list[tuple[int, JsonObject]]]
    specs: list[JudgeSpec]
    attempts: int
    max_chars: int
    catalogue: Catalogue | None = None
    images: ImageFolders = field(default_factory=ImageFolders)
    """Where the files its questions name may lie (rollout.judges.images)."""
    refused: dict[str, dict[str, str]] = field(default_factory=dict)
    """Task id -> file reference -> why it was not shown to the judges, this run."""
    typed: EvaluatorOptions = field(default_factory=EvaluatorOptions)  # its options (options_of its entry)
    files: RunFiles = field(default_factory=lambda: RunFiles(Path()))  # the run's files it judges with

    @property
    def names(self) -> list[str]:
        """The models of the judges asked."""
        return [str(s.identity["model"]) for s in self.specs]

    def inputs_of(self, tid: str) -> TaskInputs:
        """What the evaluator gets of one task."""
        ws, logs = self.workspaces, self.logs
        return TaskInputs(tid, prediction=self.preds.tasks.get(tid),
                          reference=self.gt.tasks.get(tid) if self.gt else None, task=self.tasks.get(tid),
                          workspace=ws / safe_name(tid) if ws else None,
                          tool_log=tool_log(logs / f"{safe_name(tid)}.json") if logs else None,
                          file_entries=self.objects.get(tid, ()))


async def read_stage(cfg: JudgeSettings, judged: Evaluator[EntryT, OptionsT], preds: TrajectoryFile,
                     gt: TrajectoryFile | None, catalogues: Catalogues | None) -> Stage:
    """What an evaluator reads on this run: its config entry (with the run's files, FILE_OPTIONS), the tasks
    file, the rollout's folders, the predictions file's objects, its judges (none for one that asks no
    judge; its one judge for one that asks one), its ``attempts`` and ``max_result_chars`` (else the app's)
    and the catalogue for one that reads it."""
    data = cfg.data
    options = evaluator_options(cfg, judged.card.name)
    typed = options_of(judged, options)
    options["predictions_file"] = str(preds.path)
    if gt is not None:
        options["reference_file"] = str(gt.path)
    tasks: dict[str, JsonObject] = {}
    if "task" in judged.card.reads:
        if not data.tasks:
            raise InputError("config", "no tasks file: set data.tasks=PATH", field="data.tasks")
        tasks = judged.read_tasks(Path(data.tasks))
        options["tasks_file"] = str(data.tasks)
    one = judged.one_judge(typed, cfg.judges) if judged.card.uses_pool else None
    attempts, max_chars = (
        config_int(options, key, minimum=minimum, where=f"evaluators.{judged.card.name}.{key}")
        if options.get(key) is not None else default for key, minimum, default in (
            ("attempts", 1, cfg.attempts), ("max_result_chars", 0, cfg.max_result_chars)))
    stage = Stage(judged, preds, gt, options, tasks,
                  rollout_folder(cfg, cfg.workspace_dir, "workspace_dir", "workspace")
                  if "workspace" in judged.card.reads else None,
                  rollout_folder(cfg, cfg.tool_log_dir, "tool_log_dir", "tool_logs")
                  if "tool_log" in judged.card.reads else None,
                  file_objects(preds.path) if "file_entries" in judged.card.reads else {},
                  (pool_specs([one]) if one else judge_specs(cfg.judges.pool)) if judged.card.uses_pool else [],
                  attempts, max_chars, images=image_folders(cfg, options, "task" in judged.card.reads), typed=typed,
                  files=RunFiles(preds.path, gt.path if gt is not None else None,
                                 Path(str(options["tasks_file"])) if "tasks_file" in options else None))
    if "catalogue" in judged.card.reads:
        source = options.get("catalogue")
        stage.catalogue = await (catalogues or Catalogues(cfg)).get(None if source is None else str(source))
    return stage


def task_order(cfg: JudgeSettings, stage: Stage, lost: Mapping[str, object]) -> list[str]:
    """The tasks to judge, in order: those of the predictions (and of the reference, when it reads it, in
    the reference's order, and of the tasks file, when it reads the task), or every task of the tasks file
    for an evaluator of all tasks less those `lost` to the infrastructure; only the ``ids`` when set."""
    judged, preds, gt, tasks = stage.judged, stage.preds, stage.gt, stage.tasks
    shared = set(scored_ids(gt, preds)) if gt is not None else set(preds.tasks)
    candidates = [i for i in (gt.tasks if gt is not None else preds.tasks) if i in shared]
    wanted = wanted_ids(cfg.ids, tasks if judged.card.all_tasks else candidates)
    if judged.card.all_tasks:
        return [i for i in tasks if (not wanted or i in wanted) and i not in lost]
    missing = [i for i in preds.tasks if tasks and i not in tasks]
    if missing:
        log.warning("%s: %d predicted id(s) have no task in %s: %s", judged.card.name, len(missing),
                    cfg.data.tasks, ", ".join(missing[:10]))
    return [i for i in candidates if (not tasks or i in tasks) and (not wanted or i in wanted)]


def run_meta(stage: Stage, lost: Mapping[str, tuple[str, str]]) -> JsonObject:
    """The file's meta of the run: its files and folders, judges, settings, attempts, the tasks `lost` to
    the infrastructure, the catalogue's source and the number of tasks the evaluator records."""
    specs, options = stage.specs, stage.options
    meta: JsonObject = {"evaluator": stage.judged.card.name, "predictions": str(stage.preds.path),
                            "gt": str(stage.gt.path) if stage.gt else None, "tasks": options.get("tasks_file"),
                            **({"workspace_dir": str(stage.workspaces)} if stage.workspaces else {}),
                            **({"tool_log_dir": str(stage.logs)} if stage.logs else {}),
                            **({"judges": [{"name": s.name, **{k: s.identity[k] for k in ("provider", "model")}}
                                           for s in specs]} if specs else {}),
                            **{k: v for k, v in options.items() if k not in FILE_OPTIONS},
                            "attempts": stage.attempts,
                            **({"lost": {i: k for i, (k, _) in lost.items()}} if lost else {})}
    if "catalogue" in stage.judged.card.reads:
        meta["catalogue"] = stage.catalogue.source if stage.catalogue is not None else None
    count = stage.judged.task_count(stage.gt.path) if stage.gt is not None else None
    if count is not None:
        meta["num_total"] = count
    return meta


def input_keys(cfg: JudgeSettings, stage: Stage, order: list[str]) -> dict[str, str]:
    """The input key of each task of the order: its inputs, the files besides them that decide its verdict
    (its `input_files`, and the content of the files its prediction names that its judges are shown) and the
    run's settings that can change a verdict, the versions of the prompts
    its judge may ask among them (rollout.judges.inputs.input_key)."""
    card, catalogue, tasks_file = stage.judged.card, stage.catalogue, cfg.data.tasks
    pool_prompts = read_prompts(cfg.judges.prompts) if stage.specs else {}
    prompts = {**{r.purpose: r.version for r in card.rubrics}, **pool_prompts}
    tools = None if catalogue is None else {"tools": catalogue.tools, "unavailable": sorted(catalogue.unavailable)}
    settings: dict[str, object] = {  # the order of these keys is part of every input key
        "evaluator": card.name, "options": {k: v for k, v in stage.options.items() if k not in NOT_KEYED},
        "judges": [s.identity for s in stage.specs], "max_result_chars": stage.max_chars, "prompts": prompts,
        **({"asked": sorted([r.purpose, r.version] for r in card.asked)} if card.asked else {}), "catalogue": tools}
    base = Path(tasks_file).resolve() if stage.tasks and tasks_file else None
    if base is not None and not base.is_dir():
        base = base.parent
    keys = {}
    for i in order:
        inputs = stage.inputs_of(i)
        named = (named_files_key(stage.images.of_task(i), inputs.prediction.raw)
                 if stage.specs and inputs.prediction is not None else {})
        keys[i] = input_key(inputs, settings, card.task_files, base,
                            stage.judged.input_files(stage.typed, stage.files, inputs), named)
    return keys


async def judge_tasks(cfg: JudgeSettings, stage: Stage, store: VerdictFile, todo: list[str],
                      keys: Mapping[str, str]) -> str:
    """Ask the evaluator about each task of `todo`, the store keeping each verdict as it comes (its journal)
    and writing the file whole at the end, also when the run is stopped; what the judges were asked, as a
    line's tail."""
    judge = stage.judged
    for tid in todo:  # every task's fields, before a judge or a script is started
        judge.check_task(stage.typed, stage.files, tid, stage.tasks.get(tid))

    async def judge_all(pool: JudgePool | None) -> None:
        if pool is not None and judge.card.rubrics:
            store.meta["prompt_versions"] = {r.purpose: pool.rubric(r).version for r in judge.card.rubrics}
        context = JudgeContext(pool=pool, attempts=stage.attempts, options=stage.typed, files=stage.files,
                               max_result_chars=stage.max_chars, catalogue=stage.catalogue)
        usage = pool.usage_totals if pool is not None else None

        async def one(tid: str) -> None:
            shown = stage.images.of_task(tid)
            asked = dataclasses.replace(context, pool=pool.for_task(shown)) if pool is not None else context
            try:
                verdict = await judge.verdict(asked, stage.inputs_of(tid))
            except JudgeFailure as exc:
                verdict = Verdict(tid, error=str(exc))
            if shown.refused:
                stage.refused[tid] = dict(shown.refused)
            store.record(verdict, keys[tid], usage)

        try:
            with TaskBar(len(store.order), stage.judged.card.name, done=len(store.order) - len(todo)) as bar:
                await bounded(todo, cfg.concurrency, bar.each(one))
        finally:  # stopped or done: the verdicts kept so far are in the file
            store.compact(usage)

    if not stage.specs:
        await judge_all(None)
        return ""
    async with JudgePool.of(cfg.judges, cfg.cache_dir, stage.specs) as pool:
        await judge_all(pool)
        return (f"; {sum(u.requests for u in pool.usage.values())} request(s) sent, "
                f"{sum(u.cached for u in pool.usage.values())} reply(ies) from the cache")


def report(judged: Evaluator[EntryT, OptionsT], store: VerdictFile, todo: list[str], asked: str, sharded: bool,
           refused: Mapping[str, Mapping[str, str]] | None = None) -> None:
    """The lines of an evaluator's run: what was judged, the file references its judges were not shown
    (`refused`: task id -> path -> why), and (unsharded) its headline and odd counts."""
    left = store.incomplete()
    print(f"{judged.card.name}: {store.done()} of {len(store.order)} task(s) judged ({len(todo) - len(store.failed)} "
          f"now, {len(store.failed)} failed, {len(left)} incomplete){asked} -> {store.path}")
    line = refused_line(refused or {})
    if line is not None:
        print(f"{judged.card.name}: {line}")
    if not sharded and store.done():
        for closing in verdict_lines(judged, store.path):  # the file read once: its warnings said once
            print(f"{judged.card.name}: {closing}")


def merge_parts(judged: Evaluator[EntryT, OptionsT], merged: Path, parts_dir: Path, shard: Shard, order: list[str],
                meta: JsonMapping, inputs: Callable[[Shard], JsonObject], stage: Stage) -> None:
    """Merge the shards' part files once every part is complete, saying so, or what it waits for."""
    merge_when_complete(judged.card.name, shard, merged, [part_path(parts_dir, merged, s) for s in shard.siblings()],
                        lambda: merge_verdicts(judged, merged, parts_dir, shard.count, order, meta, inputs,
                                               stage.specs, stage.names))


async def evaluator_stage(cfg: JudgeSettings, judged: Evaluator[EntryT, OptionsT], preds: TrajectoryFile,
                          gt: TrajectoryFile | None, output: Path,
                          lost: Mapping[str, tuple[str, str]] | None = None,
                          catalogues: Catalogues | None = None) -> int:
    """Ask an evaluator about the tasks not yet in `output` (`task_order`, less the tasks `lost` to the
    infrastructure, named in the file's meta: a rerun of the rollout retries them), its verdict store
    writing the file after each; 0 when every task has a complete entry, else 1."""
    lost = lost or {}
    stage = await read_stage(cfg, judged, preds, gt, catalogues)
    order = task_order(cfg, stage, lost)
    meta = run_meta(stage, lost)
    shard, parts_dir = parse_shard(cfg.shard), Path(cfg.parts_dir)

    def inputs(part: Shard) -> JsonObject:
        tasks_file = stage.options.get("tasks_file")
        return part_inputs(part, preds.path, gt.path if gt else None, str(tasks_file) if tasks_file else None)

    if cfg.merge is not None:
        merged = merge_verdicts(judged, output, parts_dir, cfg.merge, order, meta, inputs, stage.specs, stage.names)
        print(f"{judged.card.name}: {cfg.merge} part(s) merged -> {merged}")
        return 0
    merged, all_order = output, order
    if shard is not None:
        order = [i for i in order if shard.owns(i)]
        output = part_path(parts_dir, output, shard)
    keys = input_keys(cfg, stage, order)
    store = VerdictFile(judged, output, meta, stage.names, order, inputs(shard) if shard is not None else None)
    todo = store.resume(keys)
    log.info("%s: %d of %d task(s) to judge with %d judge(s)", judged.card.name, len(todo), len(order),
             len(stage.specs))
    if todo and judged.card.asks_always:
        check_keys(stage.specs)
    with hold_part(output) if shard is not None else nullcontext():  # a merge sees the part running
        asked = await judge_tasks(cfg, stage, store, todo, keys)
    report(judged, store, todo, asked, shard is not None, stage.refused)
    if shard is not None:
        merge_parts(judged, merged, parts_dir, shard, all_order, meta, inputs, stage)
    return 1 if store.failed or store.incomplete() else 0


def configured(cfg: JudgeSettings) -> list[Evaluator[Any, Any]]:
    """The evaluators the run judges: every one of ``evaluators`` (stage both), or the stage's one."""
    out = []
    for name in cfg.chosen():
        try:
            found = evaluator(name)
        except ValueError as exc:
            raise InputError("config", str(exc), field=f"evaluators.{name}") from None
        check_judged(found)
        out.append(found)
    return out


def run(cfg: JudgeSettings) -> int:
    """Run the configured evaluators; the exit status. A predictions file with trial files beside it
    (<stem>_trial<i>.json, a rollout with trials=N) has each trial judged, its verdicts beside it."""
    found = find_trials(predictions_path(cfg))
    check_trial_files(found, "predictions")
    trials = [t for t in found if t.is_file()]
    named = [n for n in cfg.evaluators if evaluator_options(cfg, n).get("output")]
    catalogues = Catalogues(cfg)
    if trials and not named:
        return max(run_one(cfg, t, catalogues) for t in trials)
    return run_one(cfg, predictions_path(cfg), catalogues)


def run_one(cfg: JudgeSettings, predictions: Path, catalogues: Catalogues | None = None) -> int:
    """Run the configured evaluators on one predictions file (the run's `catalogues`, loaded once); the
    exit status."""
    chosen = configured(cfg)
    quiet_client_loggers()
    preds, lost = without_lost(read_trajectories(predictions))  # lost to the infrastructure: reported apart, not judged
    catalogues = catalogues or Catalogues(cfg)
    status = 0
    gt: TrajectoryFile | None = None  # the reference file, read once for the evaluators that read it
    for judged in chosen:
        if "reference" in judged.card.reads:
            if not cfg.data.gt:
                raise InputError("config", "no reference file: set data.gt=PATH", field="data.gt")
            gt = gt or read_trajectories(cfg.data.gt)
        output = evaluator_output(cfg, judged, predictions)
        reference = gt if "reference" in judged.card.reads else None
        status = max(status, asyncio.run(evaluator_stage(cfg, judged, preds, reference, output, lost, catalogues)))
    return status
