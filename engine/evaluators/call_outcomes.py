"""Call outcomes (the paper's Figure 6): the file ``<predictions stem>_callanalysis.json`` in the
published shape, the five counts ``illegal_calling`` (samples with an illegal calling format),
``unknown_tool``, ``invalid_arguments``, ``resource_not_found`` and ``success`` (predicted calls of
each class), optionally with ``per_id`` counts per task (as the judge app writes it). Counts are
summed per family and overall; a file that gives only totals gives the aggregate. The judge app
writes the file (rollout.judges.calls decides the calls, `outcome_document` here makes the file); its
setting in the score app is ``model.calls=PATH``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from engine.contract import InputError, read_json
from engine.evaluators.base import PROFILES, Evaluator, Metric, Verdicts, file_meta, format_record, format_version

NAME = "call_outcomes"
CALLANALYSIS = "callanalysis"
METRICS: tuple[Metric, ...] = (
    Metric("illegal_calling", "Illegal Calling Format", NAME, PROFILES, "sum", False, False, 0.0),
    Metric("unknown_tool", "Unknown Tool Invocation", NAME, PROFILES, "sum", False, False, 0.0),
    Metric("invalid_arguments", "Invalid Invocation Arguments", NAME, PROFILES, "sum", False, False, 0.0),
    Metric("resource_not_found", "Resource Not Found", NAME, PROFILES, "sum", False, False, 0.0),
    Metric("success", "Successful Call", NAME, PROFILES, "sum", False, False, 0.0),
)
CALL_KEYS: tuple[str, ...] = tuple(m.key for m in METRICS)
CALL_CLASSES: tuple[str, ...] = CALL_KEYS[1:]
"""The four per-call classes, in the published order (1 unknown tool ... 4 success)."""
UNDECIDED = "undecided"
"""A call the judge gave no class in its attempts: counted apart, never put in a class."""


def _count(path: Path, value: Any, where: str, task_id: str | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(path, f"must be a count (an integer >= 0), got {value!r}", task_id=task_id, field=where)
    return value


def read_callanalysis(path: str | Path) -> Verdicts:
    """The call outcome counts of a callanalysis.json: file totals, and per task when it has per_id."""
    path = Path(path)
    root = read_json(path, "call outcomes file")
    if not isinstance(root, dict):
        raise InputError(path, "the root must be an object of call outcome counts")
    format_version(path, root, CALLANALYSIS)
    totals = {key: _count(path, root.get(key), key) for key in CALL_KEYS}
    per_id = root.get("per_id")
    if per_id is None:
        return Verdicts(totals=totals, detail=_labels(path, root), meta=file_meta(root))
    if not isinstance(per_id, dict):
        raise InputError(path, "must be an object of id -> counts", field="per_id")
    counts = {}
    for tid, block in per_id.items():
        if not isinstance(block, dict):
            raise InputError(path, "must be an object of counts", task_id=str(tid), field="per_id")
        counts[str(tid)] = {key: _count(path, block.get(key), key, str(tid)) for key in CALL_KEYS}
    return Verdicts(per_id=counts, detail=_labels(path, root), meta=file_meta(root))


def _labels(path: Path, root: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """id -> {calls: its call labels, illegal: its illegal format reason} of the judge app's file."""
    out: dict[str, dict[str, Any]] = {}
    calls = root.get("calls")
    for i, label in enumerate(calls if isinstance(calls, list) else []):
        if not (isinstance(label, dict) and all(isinstance(label.get(k), int) for k in ("step", "call"))):
            raise InputError(path, "a call label needs integer 'step' and 'call'", field=f"calls[{i}]")
        out.setdefault(str(label.get("id")), {"calls": []})["calls"].append(label)
    illegal = root.get("illegal")
    for tid, reason in (illegal.items() if isinstance(illegal, dict) else ()):
        out.setdefault(str(tid), {"calls": []})["illegal"] = str(reason)
    return out


_SHOWN = {"illegal_calling": "illegal calling format", "unknown_tool": "unknown tool",
          "invalid_arguments": "invalid arguments", "resource_not_found": "resource not found", "success": "success",
          UNDECIDED: UNDECIDED}


def display(task: dict[str, Any] | None, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The viewer's blocks of a task: each predicted call's class beside it, the counts, the illegal format."""
    if task is None:
        return []
    labels = [[c["step"], c["call"], str(c.get("label") or UNDECIDED), _SHOWN.get(str(c.get("label") or UNDECIDED),
                                                                                str(c.get("label")))]
              for c in task.get("calls") or []]
    tags = sorted({key for *_, key, _ in labels} | {k for k in CALL_KEYS if task.get(k)})
    parts: list[dict[str, Any]] = [{"kind": "calls", "labels": labels},
                                   {"kind": "tags", "tags": [[k, _SHOWN.get(k, k)] for k in tags]},
                                   {"kind": "rows", "head": [_SHOWN[k] for k in CALL_KEYS],
                                    "rows": [[task.get(k) for k in CALL_KEYS]]}]
    if task.get("illegal"):
        parts.append({"kind": "verdict", "label": "calling format", "pass": False, "text": "illegal",
                      "note": task["illegal"]})
    return [{"title": "Call outcomes", "id": "call-outcomes", "parts": parts}]


def _share(count: int, total: int) -> float | None:
    return count / total if total else None


def outcome_document(labels: list[dict[str, Any]], illegal: dict[str, str], sample_ids: list[str],
                     **meta: Any) -> dict[str, Any]:
    """The callanalysis.json: the published five counts first, then undecided calls, sizes, rates (illegal
    format per sample, classes per call), what decided the labels, per-task counts and the labels."""
    per_id = {tid: dict.fromkeys(CALL_KEYS, 0) for tid in sample_ids}
    for tid in illegal:
        per_id[tid][CALL_KEYS[0]] = 1
    for label in labels:
        if label["label"] is not None:
            per_id[label["id"]][label["label"]] += 1
    totals = {key: sum(counts[key] for counts in per_id.values()) for key in CALL_KEYS}
    undecided = sum(1 for label in labels if label["label"] is None)
    rates = {CALL_KEYS[0]: _share(totals[CALL_KEYS[0]], len(sample_ids)),
             **{key: _share(totals[key], len(labels)) for key in CALL_CLASSES},
             UNDECIDED: _share(undecided, len(labels))}
    decided = Counter(str(label["by"]).split(":", 1)[0] for label in labels)
    return {**totals, UNDECIDED: undecided, "num_samples": len(sample_ids), "total_calls": len(labels),
            "rates": rates, "decided_by": {"rule": decided["rule"], "judge": decided["judge"],
                                           UNDECIDED: decided[UNDECIDED]},
            "illegal": illegal, "per_id": per_id, "calls": labels,
            "meta": {"format": format_record(CALLANALYSIS), **meta}}


EVALUATOR = Evaluator(name=NAME, reads=frozenset({"prediction", "tool_log"}), metrics=METRICS,
                      suffix=CALLANALYSIS, read=read_callanalysis, option="calls", position=20,
                      display=display)
