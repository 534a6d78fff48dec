"""What the judge app reads besides the evaluators: the predictions file and the ids it judges, the
tasks file, the rollout's workspace and tool log folders, each evaluator's output file and the input key
of each task's verdict (its earlier file is the verdict store's, rollout.judges.verdicts)."""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from engine.contract import InputError, JsonObject, check_name, digest, read_json, task_records
from engine.evaluators.base import TaskInputs
from engine.evaluators.protocol import EntryT, Evaluator, OptionsT
from engine.judge_results import companion_path
from engine.neighbour_tasks import read_task_dir
from rollout.judges.settings import JudgeSettings

log = logging.getLogger("judge")


def predictions_path(cfg: JudgeSettings) -> Path:
    """`predictions`, else <results_dir>/<model>_test_mcp_fuzzy.json."""
    if cfg.predictions:
        return Path(cfg.predictions)
    if not cfg.model:
        raise InputError("config", "name the judged model (model=NAME) or its file (predictions=PATH)", field="model")
    return Path(cfg.results_dir) / f"{check_name(cfg.model, 'model')}_test_mcp_fuzzy.json"


def wanted_ids(ids: list[str] | None, known: Iterable[str]) -> set[str]:
    """The ids of ``ids`` (empty or null: every task), warning about those that are not among `known`."""
    wanted = set(ids or ())
    unknown = sorted(wanted - set(known))
    if unknown:
        log.warning("%d id(s) of `ids` match no task to judge: %s", len(unknown),
                    ", ".join(unknown[:10]) + (" ..." if len(unknown) > 10 else ""))
    return wanted


def read_task_records(path: Path) -> dict[str, JsonObject]:
    """id -> task record of a tasks file (engine.contract.task_records), in order; a folder is a checkout of
    the MCPVerse repository (engine.neighbour_tasks)."""
    return read_task_dir(path) if Path(path).is_dir() else task_records(path)


def tool_log(path: Path) -> list[JsonObject] | None:
    """The calls of a task's tool log (the rollout's ``{"calls": [...]}``); None when there is none."""
    if not path.is_file():
        return None
    root = read_json(path, "tool log")
    calls = root.get("calls") if isinstance(root, dict) else None
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise InputError(path, "must be a list of call objects", field="calls")
    return calls


def rollout_folder(cfg: JudgeSettings, given: str | None, key: str, leaf: str) -> Path:
    """The folder a setting `key` gives (`given`), else <results_dir>/rollout/<model>/<leaf>."""
    if given:
        return Path(given)
    if not cfg.model:
        raise InputError("config", f"set {key}=PATH (or model=NAME for the rollout's own folder)", field=key)
    return Path(cfg.results_dir) / "rollout" / check_name(cfg.model, "model") / leaf


def evaluator_options(cfg: JudgeSettings, name: str) -> JsonObject:
    """The config entry of evaluator `name` (``evaluators.<name>``), a copy; empty when it has none."""
    return dict(cfg.evaluators.get(name) or {})


def evaluator_output(cfg: JudgeSettings, judged: Evaluator[EntryT, OptionsT], predictions: Path) -> Path:
    """The file of an evaluator: its entry's ``output``, else <predictions stem>_<suffix>.json."""
    explicit = evaluator_options(cfg, judged.card.name).get("output")
    return Path(str(explicit)) if explicit else companion_path(predictions, str(judged.card.suffix))


NOT_KEYED = ("output", "tasks_file", "reference_file", "predictions_file", "agreement_top", "attempts")
"""An evaluator's settings that change no verdict, left out of the input keys (where its file goes, the
paths of files whose content is in the key, how much of the agreement its meta lists, how often a judge
is asked again after a failed reply)."""


def content_digest(path: Path) -> str:
    """The SHA-256 of the bytes of the regular file at `path`, the link at its end not followed and
    opened without waiting: a FIFO, socket or device is never read (what it is stands instead)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    sha = hashlib.sha256()
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            return f"not a regular file: {stat.S_IFMT(mode):o}"
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def folder_digest(folder: Path | None) -> list[list[str]] | None:
    """[relative path, SHA-256 of its bytes (a link: its target; a FIFO, socket or device: what it is,
    never opened)] of every file under a folder, sorted; None when there is no such folder."""
    if folder is None or not folder.is_dir():
        return None
    out = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files) + [d for d in dirs if (Path(root) / d).is_symlink()]:
            path = Path(root) / name
            rel = path.relative_to(folder).as_posix()
            try:
                out.append([rel, "link:" + os.readlink(path) if path.is_symlink() else content_digest(path)])
            except OSError as exc:
                out.append([rel, f"unreadable: {exc.strerror}"])
    return sorted(out)


def named_file_digest(base: Path, value: object) -> str | None:
    """The SHA-256 of a file a task names (a path relative to the tasks file's folder `base`); None when
    it names no file inside that folder (the evaluator refuses it when it judges)."""
    if not isinstance(value, str) or not value.strip() or Path(value).is_absolute():
        return None
    target = (base / value).resolve()
    return content_digest(target) if target.is_relative_to(base) and target.is_file() else None


def input_key(inputs: TaskInputs, settings: Mapping[str, object], task_files: Sequence[str] = (),
              base: Path | None = None, files: Mapping[str, Path] | None = None,
              shown: Mapping[str, str] | None = None) -> str:
    """The key of what a verdict judged: the SHA-256 of the canonical JSON of the task's inputs as the
    evaluator gets them (the prediction, the reference, the task record, the content of the files its
    `task_files` fields name under the tasks folder `base` and of the other `files` that decide its
    verdict, name -> path: the evaluator's `input_files`, its final workspace's files, its tool log, its objects of
    the predictions file), the digests of the files its prediction names that its judges are shown (`shown`:
    path -> digest, or why it is not shown) and the run's `settings` that can change a verdict."""
    task = inputs.task
    named = {f: named_file_digest(base, task.get(f)) for f in task_files} if task is not None and base else {}
    extra: dict[str, object] = {"files": {name: content_digest(path) for name, path in files.items()}} if files else {}
    if shown:
        extra["shown_files"] = dict(shown)
    return digest({"prediction": inputs.prediction.raw if inputs.prediction is not None else None,
                   "reference": inputs.reference.raw if inputs.reference is not None else None,
                   "task": dict(task) if task is not None else None, "task_files": named,
                   "workspace": folder_digest(inputs.workspace), "tool_log": inputs.tool_log,
                   "file_entries": [[p, o] for p, o in inputs.file_entries], "settings": settings, **extra})
