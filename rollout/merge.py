"""The rollout's shards (rollout.shards): the settings a part file records (`part_settings`), and the merge of a
run's parts into its predictions file (`merge_parts`; the command ``merge=N``: `merge_run`; the last shard to
finish: `merge_if_complete`)."""

from __future__ import annotations

import logging
from pathlib import Path

from engine.apps.config.rollout import RolloutConfig
from engine.contract import InputError, JsonObject, Task, digest, read_json
from engine.contract.settings import Shard, record
from rollout.output import dumps_record, list_text
from rollout.plan import oracle_tools, run_tasks, trial_configs
from rollout.shard_report import merge_when_complete
from rollout.shards import (
    PartPending,
    check_part,
    file_sha256,
    missing_ids,
    part_path,
    part_records,
    stray_task,
    write_merged,
)

log = logging.getLogger("rollout")

TRANSPORT_KEYS = ("delay", "timeout", "max_retries", "backoff", "base_url")
"""Model settings that change how (and from where) a reply comes, not what it is: parts made with others merge."""


def part_settings(cfg: RolloutConfig, shard: Shard, trial: int | None) -> JsonObject:
    """The settings a part file of this run records and a merge checks: the shard, the model's name, the
    SHA-256 of the tasks file (folder) and of the servers config, the trials, and the settings a preset sets
    (exposure, steps, calls per step, prepare, result length, the question field, the task ids, the servers'
    environment, the model's other settings)."""
    data, model = cfg.tasks, record(cfg.model)
    run = record(cfg)
    return {"shard": str(shard), "model": cfg.model.name,
            "tasks": file_sha256(data.root or data.file), "servers": file_sha256(cfg.servers),
            "trials": cfg.trials, "trial": trial,
            "settings": {"exposure": record(cfg.exposure),
                         **{k: run[k] for k in ("max_step", "max_concurrent", "prepare", "max_result_chars",
                                                "server_environment")},
                         "question_field": data.question_field, "ids": record(data)["ids"],
                         "model": digest({k: v for k, v in model.items() if k not in TRANSPORT_KEYS})}}


def merge_parts(cfg: RolloutConfig, count: int, tasks: list[Task], trial: int | None) -> Path:
    """Merge the `count` part files of a run (trial) into its predictions file, records in the order one run
    of every task writes them; InputError naming a part made with other settings or holding another part's
    task, PartPending naming one missing or lacking tasks."""
    output = Path(cfg.predictions)
    order = {t.id: t.index for t in tasks}
    references = oracle_tools(cfg)
    texts: dict[str, str] = {}
    for shard in Shard(0, count).siblings():
        path = part_path(Path(cfg.parts_dir), output, shard)
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


def merge_run(cfg: RolloutConfig, count: int) -> int:
    """The merge command (``merge=N``): merge the N parts of each trial of the run; 0, or InputError."""
    for trial_cfg, trial in trial_configs(cfg):
        tasks, _ = run_tasks(trial_cfg)
        print(f"rollout: {count} part(s) merged -> {merge_parts(trial_cfg, count, tasks, trial)}")
    return 0


def merge_if_complete(cfg: RolloutConfig, shard: Shard, tasks: list[Task], trial: int | None) -> None:
    """Merge the parts when every one is complete (this job finished last); say which parts it waits for
    otherwise, and in what state (rollout.shard_report)."""
    output = Path(cfg.predictions)
    merge_when_complete("rollout", shard, output, [part_path(Path(cfg.parts_dir), output, s) for s in shard.siblings()],
                        lambda: merge_parts(cfg, shard.count, tasks, trial))
