"""Reading VisualToolBench rubric verdicts files, in three shapes, into each task's values
(engine.evaluators.vtb_scoring) under a profile:

- this project's ``<predictions stem>_rubrics.json``: ``{"aggregate", "per_id": {id: entry}, "meta"}``, an
  entry holding per turn whether it was answered and its rubrics, each with every judge's label (or error);
- a drop-in list ``[{"id", "rubrics": [{"weight", "critical"?, "category"?, "met": bool | "judge_result":
  label}], "prompt_category"?/"domain"?, "eval_focus"?, "turncase"?}]``;
- the results file VisualToolBench's judge scripts write, ``[{"task_id", "turncase", "eval_focus",
  "prompt_category", "judge_result": [{"rubric_id", "judge_result": JSON text}] (per turn a list of those
  for multi-turn tasks), "score", "accuracy"}]``: its score and accuracy are taken as the published analysis
  takes them (it carries no rubric weights, so only the published profile reads it).

A task id given twice is refused; labels other than "Met" and "Not Met" are counted and warned about in one
line naming the file, the first such task and field.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.contract import InputError, read_json
from engine.evaluators.base import Verdicts, file_meta, format_version
from engine.evaluators.vtb_records import listed_records, log_mismatches, rubric_entries, rubric_item, task_groups
from engine.evaluators.vtb_scoring import FAILED, MET, NOT_MET, ODD_REPLIES, TaskVerdicts, other_label, task_values

log = logging.getLogger(__name__)

KEYS: tuple[str, ...] = ("rubric_score", "pass_rate")
SUFFIX = "rubrics"
"""The file's suffix beside the predictions, and its format's name (``meta.format``)."""


def _object_entry(path: Path, task_id: str, entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise InputError(path, "must be an object of id -> entry", field="per_id")
    return entry


def own_verdicts(path: Path, tid: str, entry: Mapping[str, Any], profile: str) -> tuple[TaskVerdicts, list[str]]:
    """A task of this evaluator's file, and the fields of the labels counting as neither."""
    turns = entry.get("turns")
    if not isinstance(turns, list) or not turns:
        raise InputError(path, "must be a non-empty list of turns", task_id=tid, field="turns")
    rubrics, answered, odd, failed = [], [], [], 0
    for k, turn in enumerate(turns):
        if not isinstance(turn, Mapping):
            raise InputError(path, "a turn must be an object", task_id=tid, field=f"turns[{k}]")
        answered.append(turn.get("answered", True) is not False)
        for j, (_, raw) in enumerate(rubric_entries(path, turn.get("rubrics"), tid, f"turns[{k}].rubrics")):
            where = f"turns[{k}].rubrics[{j}]"
            if not isinstance(raw, Mapping):
                raise InputError(path, "a rubric must be an object", task_id=tid, field=where)
            rid = raw.get("rubric_id")
            item = rubric_item(path, {**raw, "critical": raw.get("critical_flag")}, tid, where, k, need_text=False,
                               profile=profile, rid=rid if isinstance(rid, str) else None)
            judged = [v for v in raw.get("judges") or [] if isinstance(v, Mapping)]
            votes = tuple(v["verdict"] if "verdict" in v else FAILED for v in judged)
            if not judged and "met" in raw and isinstance(raw["met"], bool):  # an entry without its judges
                votes = (MET if raw["met"] else NOT_MET,)
            failed += sum(1 for v in votes if v is FAILED)
            if answered[-1] and other_label(votes, profile) is not None:
                odd.append(f"per_id.{tid}.{where}.judges")
            rubrics.append((item, votes))
    return TaskVerdicts(tuple(rubrics), tuple(answered), task_groups(entry, len(turns)), failed,
                        _odd_replies(path, tid, entry.get("odd_replies", {}))), odd


def _odd_replies(path: Path, tid: str, raw: Any) -> dict[str, int]:
    """An entry's ``odd_replies`` ({kind: count} of ODD_REPLIES), checked."""
    if not isinstance(raw, Mapping) or any(k not in ODD_REPLIES or isinstance(n, bool) or not isinstance(n, int)
                                           or n < 0 for k, n in raw.items()):
        raise InputError(path, f"must be an object of {', '.join(ODD_REPLIES)} -> count, got {raw!r}",
                         task_id=tid, field="odd_replies")
    return dict(raw)


def dropin_verdicts(path: Path, tid: str, record: Mapping[str, Any], position: int,
                    profile: str) -> tuple[TaskVerdicts, list[str]]:
    """A record of a drop-in verdicts list, and the fields of the labels counting as neither."""
    rubrics, odd = [], []
    for j, (_, raw) in enumerate(rubric_entries(path, record.get("rubrics"), tid, "rubrics")):
        where = f"rubrics[{j}]"
        item = rubric_item(path, raw, tid, where, need_text=False, profile=profile)
        if "judge_result" in raw:
            votes: tuple[Any, ...] = (raw["judge_result"],)
        elif isinstance(raw.get("met"), bool):
            votes = (MET if raw["met"] else NOT_MET,)
        else:
            raise InputError(path, f"must be true or false (or give judge_result), got {raw.get('met')!r}",
                             task_id=tid, field=f"{where}.met")
        if other_label(votes, profile) is not None:
            odd.append(f"[{position}].{where}.judge_result")
        rubrics.append((item, votes))
    return TaskVerdicts(tuple(rubrics), (True,), task_groups(record, 1)), odd


def _label(path: Path, tid: str, raw: Any, where: str) -> Any:
    if not isinstance(raw, Mapping):
        raise InputError(path, "a rubric result must be an object", task_id=tid, field=where)
    text = raw.get("judge_result")
    try:
        reply = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        reply = None
    if not isinstance(reply, dict) or "judge_result" not in reply:
        raise InputError(path, "must be the judge's JSON reply with a judge_result", task_id=tid,
                         field=f"{where}.judge_result")
    return reply["judge_result"]


def published_values(path: Path, tid: str, record: Mapping[str, Any],
                     position: int) -> tuple[dict[str, Any], list[str]]:
    """The values of a record of VisualToolBench's judge results: its score and accuracy as they are."""
    score, accuracy = record.get("score"), record.get("accuracy")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score) \
            or not 0 <= score <= 1:
        raise InputError(path, f"must be a number in [0, 1], got {score!r}", task_id=tid, field="score")
    if isinstance(accuracy, bool) or accuracy not in (0, 1):
        raise InputError(path, f"must be 0 or 1, got {accuracy!r}", task_id=tid, field="accuracy")
    results = record.get("judge_result")
    if not isinstance(results, list):
        raise InputError(path, "must be a list of rubric results", task_id=tid, field="judge_result")
    turns = results if results and all(isinstance(t, list) for t in results) else [results]
    odd = []
    for k, turn in enumerate(turns):
        for j, raw in enumerate(turn):
            where = f"judge_result[{k}][{j}]" if turns is results else f"judge_result[{j}]"
            if other_label((_label(path, tid, raw, where),), "published") is not None:
                odd.append(f"[{position}].{where}.judge_result")
    values = {"rubric_score": float(score), "pass_rate": float(accuracy), "rubrics": [],
              "turns": [{"score": None, "pass": None, "no_critical": False} for _ in turns], "no_critical": False,
              "unanswered": 0, "other_labels": len(odd), "dropped_turns": 0, "unanswered_turns": 0,
              "critical_mismatches": 0, "groups": task_groups(record, len(turns)), "by_category": {},
              "profile": "published"}
    return values, odd


def _is_published_results(root: Any) -> bool:
    return isinstance(root, list) and bool(root) and isinstance(root[0], Mapping) and \
        {"task_id", "judge_result", "score", "accuracy"} <= set(root[0])


def _warn_labels(path: Path, odd: list[tuple[str, str]], profile: str) -> None:
    if odd:
        tid, where = odd[0]
        counted = ("counted as neither: no weight, no failure, as published" if profile == "published" else
                   "not counted: a rubric without a Met or Not Met verdict leaves its task unscored")
        log.warning("%s: %d rubric verdict(s) neither \"Met\" nor \"Not Met\" (%s); first: task %s, field %s",
                    path, len(odd), counted, tid, where)


def read_verdicts(path: Path, profile: str) -> Verdicts:
    """Per task id its ``rubric_score`` and ``pass_rate`` (0 or 1; absent while it cannot be scored), and as
    its detail all its values (vtb_scoring.task_values), from a file of any of the three shapes."""
    path = Path(path)
    root = read_json(path, "rubric verdicts file")
    format_version(path, root, SUFFIX)
    out = Verdicts(meta=file_meta(root))
    odd: list[tuple[str, str]] = []
    mismatches = 0
    if isinstance(root, dict) and "per_id" in root:
        per_id = root["per_id"]
        if not isinstance(per_id, dict):
            raise InputError(path, "must be an object of id -> entry", field="per_id")
        for tid, entry in per_id.items():
            verdicts, fields = own_verdicts(path, str(tid), _object_entry(path, str(tid), entry), profile)
            out.detail[str(tid)] = {**task_values(verdicts, profile), "judges": _judges(entry)}
            odd += [(str(tid), f) for f in fields]
        if profile == "strict" and out.meta.get("profile") == "published":
            log.warning("%s: judged under the published profile, which asks the pool's first judge alone, so the "
                        "strict profile's majority is that judge's label; judge with "
                        "evaluators.vtb_rubrics.profile=strict to have every judge asked", path)
    elif _is_published_results(root):
        if profile != "published":
            raise InputError(path, "VisualToolBench's judge results carry no rubric weights: only "
                                   "vtb.profile=published reads them", field="score")
        for position, (tid, record) in enumerate(listed_records(path, root, "judge result")):
            out.detail[tid], fields = published_values(path, tid, record, position)
            odd += [(tid, f) for f in fields]
    elif isinstance(root, list):
        for position, (tid, record) in enumerate(listed_records(path, root, "verdicts record")):
            if not isinstance(record, Mapping):
                raise InputError(path, "a verdicts record must be an object", task_id=tid)
            verdicts, fields = dropin_verdicts(path, tid, record, position, profile)
            out.detail[tid] = task_values(verdicts, profile)
            odd += [(tid, f) for f in fields]
    else:
        raise InputError(path, "the root must be a rubric verdicts file {aggregate, per_id, meta}, a list of "
                               "{id, rubrics} records or VisualToolBench's judge results")
    flagged = []  # the tasks with such rubrics
    for tid, values in out.detail.items():
        out.per_id[tid] = {k: values[k] for k in KEYS if k in values}
        items = [item for item, _ in values["rubrics"]]
        count = log_mismatches(tid, items, profile) if items else 0
        mismatches += count
        flagged += [tid] if count else []
    if mismatches:
        rule = "the flag is kept" if profile == "strict" else "weight >= 4 decides, as published"
        log.warning("%s: %d rubric(s) of %d task(s) flagged critical otherwise than weight >= 4 (%s): %s%s; each "
                    "rubric at DEBUG (hydra.verbose=%s)", path, mismatches, len(flagged), rule,
                    ", ".join(flagged[:5]), ", ..." if len(flagged) > 5 else "", log_mismatches.__module__)
    _warn_labels(path, odd, profile)
    out.totals["critical_mismatches"] = mismatches
    return out


def _judges(entry: Mapping[str, Any]) -> list[list[Any]]:
    """Per turn, per rubric of an entry of this evaluator's file, its judges' verdicts as recorded."""
    return [[r.get("judges") if isinstance(r, Mapping) else None for r in turn.get("rubrics") or []]
            if isinstance(turn, Mapping) else [] for turn in entry.get("turns") or []]


def entries(path: Path) -> dict[str, dict[str, Any]]:
    """id -> entry of an earlier file of this evaluator (to resume); empty when there is none."""
    path = Path(path)
    if not path.is_file():
        return {}
    root = read_json(path, "rubric verdicts file")
    format_version(path, root, SUFFIX)
    per_id = root.get("per_id") if isinstance(root, dict) else None
    if not isinstance(per_id, dict):
        raise InputError(path, "must be an object of id -> entry", field="per_id")
    return {str(tid): _object_entry(path, str(tid), e) for tid, e in per_id.items()}
