"""What the judge app reads besides the evaluators: the predictions file and the ids it judges, the
tasks file, the rollout's workspace and tool log folders, each evaluator's output file and the usage an
earlier run of it recorded."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from engine.contract import InputError, check_name, read_json, task_records
from engine.evaluators.base import Evaluator, file_meta
from engine.judge_results import companion_path
from engine.neighbour_tasks import read_task_dir
from rollout.judges.pool import USAGE_COUNTS

log = logging.getLogger("judge")


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


def read_task_records(path: Path) -> dict[str, dict[str, Any]]:
    """id -> task record of a tasks file (engine.contract.task_records), in order; a folder is a checkout of
    the MCPVerse repository (engine.neighbour_tasks)."""
    return read_task_dir(path) if Path(path).is_dir() else task_records(path)


def tool_log(path: Path) -> list[dict[str, Any]] | None:
    """The calls of a task's tool log (the rollout's ``{"calls": [...]}``); None when there is none."""
    if not path.is_file():
        return None
    root = read_json(path, "tool log")
    calls = root.get("calls") if isinstance(root, dict) else None
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise InputError(path, "must be a list of call objects", field="calls")
    return calls


def rollout_folder(cfg: Mapping[str, Any], key: str, leaf: str) -> Path:
    """`key` when set, else <results_dir>/rollout/<model>/<leaf>."""
    if cfg.get(key):
        return Path(cfg[key])
    if not cfg.get("model"):
        raise InputError("config", f"set {key}=PATH (or model=NAME for the rollout's own folder)", field=key)
    return Path(cfg["results_dir"]) / "rollout" / check_name(cfg["model"], "model") / leaf


def evaluator_options(cfg: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The config entry of evaluator `name` (``evaluators.<name>``), a copy; empty when it has none."""
    return dict((cfg.get("evaluators") or {}).get(name) or {})


def evaluator_output(cfg: Mapping[str, Any], judged: Evaluator, predictions: Path) -> Path:
    """The file of an evaluator: its entry's ``output``, else <predictions stem>_<suffix>.json."""
    explicit = evaluator_options(cfg, judged.name).get("output")
    return Path(explicit) if explicit else companion_path(predictions, str(judged.suffix))


def previous_meta(output: Path) -> dict[str, Any]:
    """The ``meta`` object of an earlier run's output; empty when there is none."""
    return file_meta(read_json(output, "evaluator file")) if output.is_file() else {}


def previous_usage(meta: Mapping[str, Any], output: Path) -> dict[str, Any]:
    """The judges' usage an earlier run's output records in its `meta`, its counts checked; empty when
    there is none."""
    usage = meta.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    for name, block in usage.items():
        for key, value in (block.items() if isinstance(block, dict) else ()):
            if key in USAGE_COUNTS and not (isinstance(value, int) and not isinstance(value, bool)
                                             and 0 <= value < 2 ** 53):
                raise InputError(output, f"must be a count (an integer >= 0 below 2**53), got {str(value)[:40]!r}",
                                 field=f"meta.usage.{name}.{key}")
    return usage
