"""A rollout run from its config: tasks, model, MCP servers, exposure, the Executor, curation, outputs.

The config is the composed Hydra config of conf/rollout/config.yaml as a plain dict (see rollout/README.md);
every path of the run (predictions, workspace, tool_logs, cache_dir, server_logs, curate.*) is one of its
settings. A task's workspace stays at <workspace>/<task id> after it ends, and its tool log is written to
<tool_logs>/<task id>.json before its prediction is added (a replay rebuilds both from the cache).
Every task ends with a record: finished, or failed with an ``error`` saying whose failure it was
(engine.contract.failures). `run` returns the process exit status: 0 when no task was lost to the
infrastructure (agent failures are the model's own outcome), 1 when some were (a rerun retries exactly
those and leaves the others alone), and bad input raises the contract's `InputError`.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import rollout.scripted  # noqa: F401 (registers the scripted policy "plan" of model=scripted)
from engine.contract import (
    AGENT,
    CUT_SHORT,
    MODEL_API,
    REPLAY,
    InputError,
    Task,
    Trajectory,
    atomic_write_json,
    check_choice,
    check_name,
    config_int,
    digest,
    is_lost,
    read_json,
    read_tasks,
    read_trajectories,
    record_error,
    safe_name,
    task_error,
)
from engine.contract.progress import TaskBar
from engine.contract.staged import remove_if_empty
from engine.neighbour_tasks import task_dir_tasks
from engine.trials import trial_path
from rollout.curate import Curator, CuratorSettings
from rollout.errors import CacheMiss
from rollout.executor import Executor, ExecutorSettings, TaskRun
from rollout.exposure import select_tools
from rollout.mcp.config import read_servers_config
from rollout.mcp.host import MCPHost
from rollout.mcp.protocol import ToolInfo
from rollout.models.base import settings_from_config
from rollout.models.clients import bounded, quiet_client_loggers
from rollout.models.errors import LOOPBACK_DOWN, ModelError, loopback_down, on_loopback
from rollout.models.registry import build_driver
from rollout.output import ResultFile, dumps_record, list_text
from rollout.record import CachedModel, RolloutCache
from rollout.shards import (
    PartPending,
    Shard,
    check_part,
    file_sha256,
    missing_ids,
    parse_shard,
    part_path,
    part_records,
    stray_task,
    write_merged,
)
from rollout.tasks import Turn, read_reference_tools, read_turns
from rollout.toolrunner import ToolRunner
from rollout.workspace import Workspace

log = logging.getLogger("rollout")

STAGES = ("rollout", "curate", "both")
SCRATCH = ".servers"
"""The folder of the run's workspace holding each server's temp folder while the servers run (no task's
folder: a task's is named by safe_name, which never starts with a dot)."""


def _path(cfg: Mapping[str, Any], key: str, where: str | None = None) -> Path:
    """A path setting; InputError naming the setting (`where`, default `key`) when it is missing."""
    value = cfg.get(key)
    if not isinstance(value, str) or not value:
        raise InputError("config", f"must be a path, got {value!r}", field=where or key)
    return Path(value)


@asynccontextmanager
async def _open_model(model_cfg: Mapping[str, Any], cache: RolloutCache) -> AsyncIterator[CachedModel]:
    """The model of a config behind the cache; a replay builds no driver (and needs no key). A model on this
    machine (the scripted one, a local server) that cannot be reached because the loopback interface is down
    is an InputError saying so, before any task runs."""
    settings = settings_from_config(model_cfg)
    driver = None if cache.replaying else build_driver(model_cfg)
    try:
        if driver is not None and on_loopback(driver.settings.base_url) and loopback_down():
            raise InputError("config", f"{LOOPBACK_DOWN}: the model's API at {driver.settings.base_url} cannot be "
                             "reached, so no task was run", field="model")
        yield CachedModel(driver, cache, settings.name, settings.params)
    finally:
        if driver is not None:
            await driver.aclose()


def _scratch_dir(cfg: Mapping[str, Any]) -> Path:
    """The folder of the servers' temp folders: <workspace>/.servers, a shard's own inside it (shards may share a
    workspace)."""
    folder = _path(cfg, "workspace") / SCRATCH
    shard = parse_shard(cfg.get("shard"))
    return folder / shard.label if shard is not None else folder


async def _open_tools(cfg: Mapping[str, Any], cache: RolloutCache,
                      stack: AsyncExitStack) -> tuple[MCPHost | None, list[ToolInfo], dict[str, str]]:
    """The tool catalogue and the servers that failed to start: from the cache when replaying, else from the
    servers started on `stack`."""
    if cache.replaying:
        tools, failures = cache.get_catalogue()
        for name, reason in failures.items():
            log.warning("MCP server %s was not running in the recorded run: %s", name, reason)
        return None, [ToolInfo(t["name"], t["description"], t["input_schema"]) for t in tools], failures
    specs = read_servers_config(cfg["servers"], cfg.get("server_envs"), cfg.get("server_environment"))
    host = MCPHost(specs, call_timeout=float(cfg.get("call_timeout", 60)),
                   start_timeout=float(cfg.get("start_timeout", 30)),
                   max_restarts=config_int(cfg, "max_restarts", default=2, minimum=0),
                   ping_timeout=float(cfg.get("ping_timeout", 5)),
                   log_dir=_path(cfg, "server_logs"), scratch_dir=_scratch_dir(cfg))
    stack.callback(remove_if_empty, _path(cfg, "workspace") / SCRATCH)  # after the host's close: no shard left in it
    await stack.enter_async_context(host)
    catalogue, failures = host.catalogue(), host.failures()
    if cache.recording:
        cache.put_catalogue([t.to_json() for t in catalogue], failures)
    return host, catalogue, failures


async def run_rollout(cfg: Mapping[str, Any]) -> int:
    """Roll out the tasks not yet in the predictions file (or lost to the infrastructure in an earlier
    run); 0 when none was lost, 1 when some were.

    With `trials` = N, every task runs N independent times: trial i writes <predictions stem>_trial<i>.json
    (each record with "trial": i), in its own workspace, cache and tool logs (<workspace>/trial<i>,
    <cache_dir>/trial<i>, <tool_logs>/trial<i>), its model config given ``trial``: i (a seeded model's noise
    follows it), each resumable and replayable like a single run. With `shard` = i/n, only the tasks of part i
    run, into its part file (rollout.shards), and the job that finds every part complete merges them.
    """
    status = 0
    for trial_cfg, trial in _trial_configs(cfg):
        if trial is not None:
            log.info("trial %d of %s -> %s", trial, cfg["trials"], trial_cfg["predictions"])
        status = max(status, await _rollout_trial(trial_cfg, trial))
    return status


def _trial_configs(cfg: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], int | None]]:
    """The config of each trial of a run (the run's own when it has no `trials`), with the trial's number."""
    if cfg.get("trials") is None:
        return [(cfg, None)]
    return [({**cfg, "predictions": str(trial_path(_path(cfg, "predictions"), i)),
              "workspace": str(_path(cfg, "workspace") / f"trial{i}"),
              "cache_dir": str(_path(cfg, "cache_dir") / f"trial{i}"),
              "tool_logs": str(_path(cfg, "tool_logs") / f"trial{i}"),
              "model": {**cfg["model"], "trial": i}}, i)
            for i in range(1, config_int(cfg, "trials") + 1)]


TRANSPORT_KEYS = ("delay", "timeout", "max_retries", "backoff", "base_url")
"""Model settings that change how (and from where) a reply comes, not what it is: parts made with others merge."""


def part_settings(cfg: Mapping[str, Any], shard: Shard, trial: int | None) -> dict[str, Any]:
    """The settings a part file of this run records and a merge checks: the shard, the model's name, the
    SHA-256 of the tasks file (folder) and of the servers config, the trials, and the settings a preset sets
    (exposure, steps, calls per step, prepare, result length, the question field, the task ids, the servers'
    environment, the model's other settings)."""
    data, model = cfg["tasks"], cfg["model"]
    return {"shard": str(shard), "model": model.get("name"),
            "tasks": file_sha256(data.get("root") or data.get("file")), "servers": file_sha256(cfg.get("servers")),
            "trials": cfg.get("trials"), "trial": trial,
            "settings": {"exposure": cfg.get("exposure") or {"mode": "all"},
                         **{k: cfg.get(k) for k in ("max_step", "max_concurrent", "prepare", "max_result_chars",
                                                    "server_environment")},
                         "question_field": data.get("question_field"), "ids": data.get("ids"),
                         "model": digest({k: v for k, v in model.items() if k not in TRANSPORT_KEYS})}}


def _parts_dir(cfg: Mapping[str, Any]) -> Path:
    return _path(cfg, "parts_dir")


def merge_parts(cfg: Mapping[str, Any], count: int, tasks: list[Task], trial: int | None) -> Path:
    """Merge the `count` part files of a run (trial) into its predictions file, records in the order one run
    of every task writes them; InputError naming a part made with other settings or holding another part's
    task, PartPending naming one missing or lacking tasks."""
    output = _path(cfg, "predictions")
    order = {t.id: t.index for t in tasks}
    references = (read_reference_tools(cfg["tasks"]["reference"])
                  if (cfg.get("exposure") or {}).get("mode") == "oracle" else None)
    texts: dict[str, str] = {}
    for shard in Shard(0, count).siblings():
        path = part_path(_parts_dir(cfg), output, shard)
        if not path.is_file():
            raise PartPending(path, f"part {shard} is missing: run shard={shard} with the same settings",
                              field="shard")
        data = read_json(path, "part file")
        if not isinstance(data, dict) or not isinstance(data.get("records"), list):
            raise InputError(path, f"part {shard} is not a part file (an object with a records list)",
                             field="records")
        check_part(path, data.get("part"), part_settings(cfg, shard, trial), shard)
        by_id = part_records(path, shard, data["records"])
        wanted = [t.id for t in tasks if shard.owns(t.id) and (references is None or t.id in references)]
        stray = sorted(i for i in by_id if i not in set(wanted))
        if stray:
            raise InputError(path, f"part {shard} holds {stray_task(stray[0], shard, order)}", task_id=stray[0],
                             field="id")
        records = {i: by_id[i] for i in wanted if i in by_id}
        missing_ids(path, shard, records, wanted)
        texts.update((i, dumps_record(r)) for i, r in records.items())
    write_merged(output, list_text([texts[i] for i in sorted(texts, key=lambda i: (order[i], i))]))
    return output


def merge_run(cfg: Mapping[str, Any]) -> int:
    """The merge command (``merge=N``): merge the N parts of each trial of the run; 0, or InputError."""
    count = config_int(cfg, "merge")
    for trial_cfg, trial in _trial_configs(cfg):
        tasks, _ = _run_tasks(trial_cfg)
        print(f"rollout: {count} part(s) merged -> {merge_parts(trial_cfg, count, tasks, trial)}")
    return 0


def _merge_if_complete(cfg: Mapping[str, Any], shard: Shard, tasks: list[Task], trial: int | None) -> None:
    """Merge the parts when every one is complete (this job finished last); say why not otherwise."""
    try:
        output = merge_parts(cfg, shard.count, tasks, trial)
    except PartPending as exc:
        log.info("not merged yet: %s", exc)
        print(f"rollout: part {shard} done; the merge waits for the other parts")
        return
    except InputError as exc:
        print(f"rollout: not merged: {exc}", file=sys.stderr)
        return
    print(f"rollout: every part is complete; {shard.count} part(s) merged -> {output}")


def task_ids(data: Mapping[str, Any]) -> list[str] | None:
    """The ids `tasks.ids` names (a list, or one id: engine.apps.schemas.TaskIds), as text; None: every task."""
    ids = data.get("ids")
    if ids is None:
        return None
    return [str(i) for i in (ids if isinstance(ids, list) else [ids])]


def _run_tasks(cfg: Mapping[str, Any]) -> tuple[list[Task], dict[str, list[Turn]]]:
    """The tasks to run (config node `tasks`, read from the data set) and the turns of multi-turn ones: those of
    a folder of tasks (tasks.root, or tasks.file naming a folder: an MCPVerse checkout, TOBench task files), else
    of the tasks file; InputError when the data set names neither."""
    data = cfg["tasks"]
    file = data.get("file")
    root = data.get("root") or (file if file and Path(file).is_dir() else None)
    if root:
        return task_dir_tasks(root, task_ids(data)), {}
    if not file:
        name = (cfg.get("data") or {}).get("name")
        raise InputError("config", f"no tasks to run{f' (data set {name} names none)' if name else ''}: set "
                         "tasks.file=PATH, or tasks.root=DIR for a folder of tasks", field="tasks.file")
    if not Path(file).exists():
        raise InputError(file, "tasks file not found: set tasks.file=PATH, or M3BENCH_DATA to the folder holding "
                         "tasks_fuzzy.json (the published M3-Bench files: README, \"Where the data come from\"; "
                         "tasks=demo runs the built-in demo)")
    return (read_tasks(file, data.get("images_dir"), data.get("question_field") or "question", task_ids(data)),
            read_turns(file, data.get("images_dir")))


async def _rollout_trial(cfg: Mapping[str, Any], trial: int | None) -> int:
    """One rollout of the tasks not yet in cfg's predictions file; records carry `trial` when given."""
    data = cfg["tasks"]
    all_tasks, turns = _run_tasks(cfg)
    shard = parse_shard(cfg.get("shard"))
    tasks = [t for t in all_tasks if shard is None or shard.owns(t.id)]
    exposure = cfg.get("exposure") or {"mode": "all"}
    references = read_reference_tools(data["reference"]) if exposure.get("mode") == "oracle" else None
    output, workspace_base = _path(cfg, "predictions"), _path(cfg, "workspace")
    tool_logs = _path(cfg, "tool_logs")
    cache = RolloutCache(_path(cfg, "cache_dir"), cfg.get("mode", "live"))
    settings = ExecutorSettings(max_step=config_int(cfg, "max_step", default=5),
                                max_concurrent=config_int(cfg, "max_concurrent", default=10),
                                prepare=bool(cfg.get("prepare", True)),
                                max_result_chars=config_int(cfg, "max_result_chars", default=4000, minimum=0))
    concurrency = config_int(cfg, "concurrency", default=4)
    if shard is not None:
        output = part_path(_parts_dir(cfg), output, shard)
        log.info("shard %s: %d of %d task(s) -> %s", shard, len(tasks), len(all_tasks), output)
    part = part_settings(cfg, shard, trial) if shard is not None else None
    with ResultFile(output, {t.id: t.index for t in tasks}, part, shard) as results:
        todo = [t for t in tasks if results.get(t.id) is None or is_lost(results.get(t.id))]
        if len(todo) < len(tasks):
            log.info("%d of %d tasks already in %s; they are skipped", len(tasks) - len(todo), len(tasks), output)
        if part is not None and not output.exists():
            results.save()
        if not todo:
            print(f"rollout: nothing to do, all {len(tasks)} tasks are in {output}")
            if shard is not None:
                _merge_if_complete(cfg, shard, all_tasks, trial)
            return 0
        async with AsyncExitStack() as stack:
            model = await stack.enter_async_context(_open_model(cfg["model"], cache))
            host, catalogue, failures = await _open_tools(cfg, cache, stack)
            exposed = select_tools(exposure, catalogue, todo, references)
            log.info("%d tools in the catalogue, exposure mode %s, %d task(s) to run", len(catalogue),
                     exposure.get("mode", "all"), len(todo))
            unreferenced = [t.id for t in todo if t.id not in exposed]
            if unreferenced:
                log.warning("%d task(s) have no reference trajectory and cannot run with oracle exposure: %s",
                            len(unreferenced), ", ".join(unreferenced[:10]))
            executor = Executor(model, ToolRunner(host, cache, catalogue, failures), settings)
            total = len(todo) - len(unreferenced)
            ended = [len(tasks) - len(todo)]  # tasks with a record; counted on the event loop, once per task

            def finish(run: TaskRun, record: dict[str, Any], calls: list[dict[str, Any]],
                       began: float) -> dict[str, Any]:
                """Write the task's tool log (with its wall time; a replay's the recorded one) and add its record."""
                wall = cache.wall_time(run.task.id, round(time.monotonic() - began, 3))
                atomic_write_json(tool_logs / f"{safe_name(run.task.id)}.json",
                                  {"id": run.task.id, "calls": calls, **({"wall_s": wall} if wall is not None else {})})
                if trial is not None:
                    record["trial"] = trial
                results.add(record)
                return record

            def progress(task: Task, record: dict[str, Any]) -> str:
                """Log the task's end with the count of tasks ended; its outcome ("finished" or the error kind)."""
                ended[0] += 1
                error = record_error(record)
                if error is None:
                    log.info("task %s done: %d step(s), %d call(s), %d tokens (%d of %d)", task.id,
                             record["num_step"], sum(len(s["calls"]) for s in record["steps"]),
                             record["usage"]["total_tokens"], ended[0], len(tasks))
                    return "finished"
                log.error("task %s failed (%s): %s (%d of %d)", task.id, error[0], error[1], ended[0], len(tasks))
                return error[0]

            async def work(task: Task) -> str:
                began = time.monotonic()
                run = executor.begin(task, Workspace.fresh(workspace_base, task.id))
                calls: list[dict[str, Any]] = []
                try:
                    record = await executor.run(run, exposed[task.id], calls, turns.get(task.id))
                except ModelError as exc:
                    record = run.record(task_error(MODEL_API, exc.reason, exc.attempts))
                except CacheMiss as exc:
                    record = run.record(task_error(REPLAY, str(exc), 1))
                except asyncio.CancelledError:
                    finish(run, run.record(task_error(CUT_SHORT, "the run was stopped before the task ended")), calls,
                           began)
                    raise
                except Exception as exc:  # boundary: one task's bug must not end the others
                    log.exception("task %s failed", task.id)
                    record = run.record(task_error(CUT_SHORT, f"the rollout failed: {type(exc).__name__}: {exc}"))
                return progress(task, await asyncio.to_thread(finish, run, record, calls, began))

            with TaskBar(total, "rollout") as bar:
                outcomes = await bounded([t for t in todo if t.id in exposed], concurrency, bar.each(work))
            retries = model.driver.retries if model.driver is not None else 0
    print(_summary(outcomes, total, len(unreferenced), retries, output))
    if shard is not None:
        _merge_if_complete(cfg, shard, all_tasks, trial)
    return 1 if any(o not in ("finished", AGENT) for o in outcomes) else 0


def _summary(outcomes: list[str], total: int, unreferenced: int, retries: int, output: Path) -> str:
    """The closing line of a rollout: tasks finished, failed by kind (the model's own failures apart from
    those lost to the infrastructure, which a rerun retries), the retried model requests."""
    finished = outcomes.count("finished")
    kinds = sorted({o for o in outcomes if o != "finished"})
    failed = ", ".join(f"{kind} {outcomes.count(kind)}" for kind in kinds)
    lost = sum(1 for o in outcomes if o not in ("finished", AGENT))
    text = f"rollout: {finished} of {total} task(s) finished, {len(outcomes) - finished} failed"
    if failed:
        text += f" ({failed}" + (f"; {lost} lost to the infrastructure, a rerun retries them)" if lost else ")")
    if unreferenced:
        text += f", {unreferenced} without reference"
    return text + f", {retries} model request(s) retried -> {output}"


async def run_curation(cfg: Mapping[str, Any]) -> int:
    """Give each run of the predictions file a verdict (those lost to the infrastructure left out); write the
    verdicts and the optimal trajectories."""
    curate_cfg = cfg.get("curate") or {}
    runs = [r for r in read_trajectories(_path(cfg, "predictions")).tasks.values() if not is_lost(r.raw)]
    order = {r.id: i for i, r in enumerate(runs)}
    verdicts_path = _path(curate_cfg, "verdicts", "curate.verdicts")
    optimal_path = _path(curate_cfg, "optimal", "curate.optimal")
    cache = RolloutCache(_path(cfg, "cache_dir"), cfg.get("mode", "live"))
    max_chars = config_int(curate_cfg, "max_result_chars", default=1500, minimum=0, where="curate.max_result_chars")
    settings = CuratorSettings(max_result_chars=max_chars)
    with ResultFile(verdicts_path, order) as verdicts, ResultFile(optimal_path, order) as optimal:
        todo = [r for r in runs if r.id not in verdicts.done]
        if not todo:
            print(f"curate: nothing to do, all {len(runs)} runs are in {verdicts_path}")
            return 0
        async with _open_model(curate_cfg.get("model") or cfg["model"], cache) as model:
            curator = Curator(model, settings)

            async def work(run: Trajectory) -> bool:
                try:
                    verdict, trajectory = await curator.curate(run)
                except (ModelError, CacheMiss) as exc:
                    log.error("curating %s failed: %s", run.id, exc)
                    return False
                if trajectory is not None:
                    await asyncio.to_thread(optimal.add, trajectory)
                await asyncio.to_thread(verdicts.add, verdict)
                log.info("curated %s: success=%s accepted=%s", run.id, verdict["success"], verdict["accepted"])
                return True

            with TaskBar(len(todo), "curate") as bar:
                outcomes = await bounded(todo, config_int(cfg, "concurrency", default=4), bar.each(work))
    accepted = sum(1 for r in verdicts.records() if r.get("accepted"))
    failed = outcomes.count(False)
    print(f"curate: {outcomes.count(True)} run(s) curated, {failed} failed; {accepted} optimal trajectories "
          f"-> {optimal_path}")
    return 1 if failed else 0


def run(cfg: Mapping[str, Any]) -> int:
    """Run the configured stage(s); the exit status (130 when interrupted: the tasks under way are then
    recorded as cut short, and a rerun does them)."""
    stage = check_choice(cfg.get("stage", "rollout"), STAGES, "stage", "stage")
    check_name((cfg.get("model") or {}).get("name"), "model.name")
    if cfg.get("merge") is not None:
        return merge_run(cfg)
    if parse_shard(cfg.get("shard")) is not None and stage != "rollout":
        raise InputError("config", "a shard only rolls out: curate the merged predictions (stage=curate, no "
                         "shard) once every part is merged", field="stage")
    quiet_client_loggers()
    status = 0
    try:
        if stage in ("rollout", "both"):
            status = asyncio.run(run_rollout(cfg))
        if stage in ("curate", "both"):
            status = max(status, asyncio.run(run_curation(cfg)))
    except KeyboardInterrupt:
        print("rollout: interrupted; the tasks under way are recorded as cut short (kind cut_short), and running "
              "the same command again does them", file=sys.stderr)
        return 130
    return status
