"""LLM-judge results (Task Completion, Information Grounding) attached to a prediction file."""

from __future__ import annotations

from pathlib import Path

from engine.contract import InputError, is_number, read_json
from engine.metricspec import JUDGE_KEYS


def judge_path_for(predictions: Path) -> Path:
    """The conventional judge file of a prediction file: <stem>_judge.json beside it."""
    return predictions.with_name(f"{predictions.stem}_judge.json")


def load_judge(path: str | Path) -> dict[str, dict[str, float]]:
    """id -> {task_completion, information_grounding} (each in [0, 1]) from a JSON list or object."""
    path = Path(path)
    root = read_json(path, "judge file")
    if isinstance(root, dict):
        items = [(str(k), v) for k, v in root.items()]
    elif isinstance(root, list):
        items = [(str(v.get("id")) if isinstance(v, dict) and v.get("id") is not None else None, v) for v in root]
    else:
        raise InputError(path, "the root must be a list or an object of judge records")
    out: dict[str, dict[str, float]] = {}
    for position, (tid, record) in enumerate(items):
        if tid is None or not isinstance(record, dict):
            raise InputError(path, "a judge record must be an object with an id", task_id=f"#{position}", field="id")
        values = {}
        for name in JUDGE_KEYS:
            value = record.get(name)
            if not is_number(value) or not 0.0 <= value <= 1.0:
                raise InputError(path, f"must be a number in [0, 1], got {value!r}", task_id=tid, field=name)
            values[name] = float(value)
        out[tid] = values
    return out
