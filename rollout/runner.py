"""A rollout run from its settings: tasks, model, MCP servers, exposure, the Executor, curation, outputs.

The settings are the rollout app's typed config (engine.apps.config.rollout.RolloutConfig; see
rollout/README.md); every path of the run (predictions, workspace, tool_logs, cache_dir, server_logs,
curate.*) is one of them. A task's workspace stays at <workspace>/<task id> after it ends, and its tool log is
written to <tool_logs>/<task id>.json before its prediction is added (a replay rebuilds both from the cache).
Every task ends with a record: finished, or failed with an ``error`` saying whose failure it was
(engine.contract.failures). `run` returns the process exit status: 0 when no task was lost to the
infrastructure (agent failures are the model's own outcome), 1 when some were (a rerun retries exactly
those and leaves the others alone), and bad input raises the contract's `InputError`. The trials' settings
and the tasks are rollout.plan's, the shards' merge rollout.merge's, the curation rollout.curate's.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import rollout.scripted  # noqa: F401 (registers the scripted policy "plan" of model=scripted)
from engine.apps.config.rollout import RolloutConfig, Stage
from engine.contract import (
    AGENT,
    CUT_SHORT,
    MODEL_API,
    REPLAY,
    InputError,
    JsonObject,
    Task,
    atomic_write_json,
    check_name,
    is_lost,
    record_error,
    safe_name,
    task_error,
)
from engine.contract.progress import TaskBar
from engine.contract.settings import parse_shard
from engine.contract.staged import remove_if_empty
from rollout.curate import run_curation
from rollout.errors import CacheMiss
from rollout.executor import Executor, ExecutorSettings, TaskRun
from rollout.exposure import select_tools
from rollout.mcp.config import read_servers_config
from rollout.mcp.host import MCPHost
from rollout.mcp.protocol import ToolInfo
from rollout.merge import merge_if_complete, merge_run, part_settings
from rollout.models.clients import bounded, quiet_client_loggers
from rollout.models.errors import ModelError
from rollout.output import ResultFile
from rollout.plan import oracle_tools, run_tasks, trial_configs
from rollout.record import RolloutCache, open_model
from rollout.shards import part_path
from rollout.toolrunner import ToolRunner
from rollout.workspace import Workspace

log = logging.getLogger("rollout")

SCRATCH = ".servers"
"""The folder of the run's workspace holding each server's temp folder while the servers run (no task's
folder: a task's is named by safe_name, which never starts with a dot)."""


def _scratch_dir(cfg: RolloutConfig) -> Path:
    """The folder of the servers' temp folders: <workspace>/.servers, a shard's own inside it (shards may share a
    workspace)."""
    folder = Path(cfg.workspace) / SCRATCH
    shard = parse_shard(cfg.shard)
    return folder / shard.label if shard is not None else folder


async def _open_tools(cfg: RolloutConfig, cache: RolloutCache,
                      stack: AsyncExitStack) -> tuple[MCPHost | None, list[ToolInfo], dict[str, str]]:
    """The tool catalogue and the servers that failed to start: from the cache when replaying, else from the
    servers started on `stack`."""
    if cache.replaying:
        tools, failures = cache.get_catalogue()
        for name, reason in failures.items():
            log.warning("MCP server %s was not running in the recorded run: %s", name, reason)
        return None, tools, failures
    environment = cfg.server_environment.value if cfg.server_environment is not None else None
    specs = read_servers_config(cfg.servers, cfg.server_envs, environment)
    host = MCPHost(specs, call_timeout=cfg.call_timeout, start_timeout=cfg.start_timeout,
                   max_restarts=cfg.max_restarts, ping_timeout=cfg.ping_timeout,
                   log_dir=Path(cfg.server_logs), scratch_dir=_scratch_dir(cfg))
    stack.callback(remove_if_empty, Path(cfg.workspace) / SCRATCH)  # after the host's close: no shard left in it
    await stack.enter_async_context(host)
    catalogue, failures = host.catalogue(), host.failures()
    if cache.recording:
        cache.put_catalogue([t.to_json() for t in catalogue], failures)
    return host, catalogue, failures


async def run_rollout(cfg: RolloutConfig) -> int:
    """Roll out the tasks not yet in the predictions file (or lost to the infrastructure in an earlier
    run); 0 when none was lost, 1 when some were.

    With `trials` = N, every task runs N independent times: trial i writes <predictions stem>_trial<i>.json
    (each record with "trial": i), in its own workspace, cache and tool logs (<workspace>/trial<i>,
    <cache_dir>/trial<i>, <tool_logs>/trial<i>), its model config given ``trial``: i (a seeded model's noise
    follows it), each resumable and replayable like a single run (rollout.plan.trial_configs). With `shard` =
    i/n, only the tasks of part i run, into its part file (rollout.shards), and the job that finds every part
    complete merges them (rollout.merge).
    """
    status = 0
    for trial_cfg, trial in trial_configs(cfg):
        if trial is not None:
            log.info("trial %d of %s -> %s", trial, cfg.trials, trial_cfg.predictions)
        status = max(status, await _rollout_trial(trial_cfg, trial))
    return status


async def _rollout_trial(cfg: RolloutConfig, trial: int | None) -> int:
    """One rollout of the tasks not yet in cfg's predictions file; records carry `trial` when given."""
    all_tasks, turns = run_tasks(cfg)
    shard = parse_shard(cfg.shard)
    tasks = [t for t in all_tasks if shard is None or shard.owns(t.id)]
    exposure = cfg.exposure
    references = oracle_tools(cfg)
    output, workspace_base, tool_logs = Path(cfg.predictions), Path(cfg.workspace), Path(cfg.tool_logs)
    cache = RolloutCache(Path(cfg.cache_dir), cfg.mode.value)
    settings = ExecutorSettings(max_step=cfg.max_step, max_concurrent=cfg.max_concurrent, prepare=cfg.prepare,
                                max_result_chars=cfg.max_result_chars)
    if shard is not None:
        output = part_path(Path(cfg.parts_dir), output, shard)
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
                merge_if_complete(cfg, shard, all_tasks, trial)
            return 0
        async with AsyncExitStack() as stack:
            model = await stack.enter_async_context(open_model(cfg.model, cache))
            host, catalogue, failures = await _open_tools(cfg, cache, stack)
            exposed = select_tools(exposure, catalogue, todo, references)
            log.info("%d tools in the catalogue, exposure mode %s, %d task(s) to run", len(catalogue),
                     exposure.mode.value, len(todo))
            unreferenced = [t.id for t in todo if t.id not in exposed]
            if unreferenced:
                log.warning("%d task(s) have no reference trajectory and cannot run with oracle exposure: %s",
                            len(unreferenced), ", ".join(unreferenced[:10]))
            executor = Executor(model, ToolRunner(host, cache, catalogue, failures), settings)
            total = len(todo) - len(unreferenced)
            ended = [len(tasks) - len(todo)]  # tasks with a record; counted on the event loop, once per task

            def finish(run: TaskRun, record: JsonObject, calls: list[dict[str, object]], began: float) -> JsonObject:
                """Write the task's tool log (with its wall time; a replay's the recorded one) and add its record."""
                wall = cache.wall_time(run.task.id, round(time.monotonic() - began, 3))
                atomic_write_json(tool_logs / f"{safe_name(run.task.id)}.json",
                                  {"id": run.task.id, "calls": calls, **({"wall_s": wall} if wall is not None else {})})
                if trial is not None:
                    record["trial"] = trial
                results.add(record)
                return record

            def progress(run: TaskRun, record: JsonObject) -> str:
                """Log the task's end with the count of tasks ended; its outcome ("finished" or the error kind)."""
                ended[0] += 1
                error, task = record_error(record), run.task
                if error is None:  # the record's steps and usage are the run's
                    log.info("task %s done: %d step(s), %d call(s), %d tokens (%d of %d)", task.id,
                             len(run.steps), sum(len(calls) for calls in run.steps),
                             run.dialogue.usage["total_tokens"], ended[0], len(tasks))
                    return "finished"
                log.error("task %s failed (%s): %s (%d of %d)", task.id, error[0], error[1], ended[0], len(tasks))
                return error[0]

            async def work(task: Task) -> str:
                began = time.monotonic()
                run = executor.begin(task, Workspace.fresh(workspace_base, task.id))
                calls: list[dict[str, object]] = []
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
                return progress(run, await asyncio.to_thread(finish, run, record, calls, began))

            with TaskBar(len(tasks), "rollout", done=len(tasks) - total) as bar:
                outcomes = await bounded([t for t in todo if t.id in exposed], cfg.concurrency, bar.each(work))
            retries = model.driver.retries if model.driver is not None else 0
    print(_summary(outcomes, total, len(unreferenced), retries, output))
    if shard is not None:
        merge_if_complete(cfg, shard, all_tasks, trial)
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


def run(cfg: RolloutConfig) -> int:
    """Run the configured stage(s); the exit status (130 when interrupted: the tasks under way are then
    recorded as cut short, and a rerun does them)."""
    stage = cfg.stage
    check_name(cfg.model.name, "model.name")
    if cfg.merge is not None:
        return merge_run(cfg, cfg.merge)
    if cfg.shard is not None and stage != Stage.rollout:
        raise InputError("config", "a shard only rolls out: curate the merged predictions (stage=curate, no "
                         "shard) once every part is merged", field="stage")
    quiet_client_loggers()
    status = 0
    try:
        if stage in (Stage.rollout, Stage.both):
            status = asyncio.run(run_rollout(cfg))
        if stage in (Stage.curate, Stage.both):
            status = max(status, asyncio.run(run_curation(cfg)))
    except KeyboardInterrupt:
        print("rollout: interrupted; the tasks under way are recorded as cut short (kind cut_short), and running "
              "the same command again does them", file=sys.stderr)
        return 130
    return status
