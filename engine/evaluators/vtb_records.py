"""VisualToolBench task records: their turns, each turn's prompt, gold answer and rubrics, and the task
fields the results are broken down by (domain, evaluation focus, single- or multi-turn).

Two task shapes are read as they are:

- this project's: ``{"id", "turns": [{"prompt", "golden_answer", "rubrics": [rubric, ...]}], "domain"?,
  "eval_focus"?}`` (a single-turn task may give ``prompt`` or ``question``, ``golden_answer`` and
  ``rubrics`` at its top level);
- VisualToolBench's released one (its ``download_dataset.py`` and inference scripts): ``{"id" (or
  "task_id"), "turncase", "prompt_category", "eval_focus", "turn_prompts": [str], "turn_golden_answers":
  [str], "rubrics_by_turn": [JSON text of {rubric id: rubric}], "image_paths", "images_by_turn_paths"}``.

A rubric is ``{description, weight: 1..5 (an integer, ``4.0`` or the text ``"5"``), critical?, category?}``:
``critical`` is true/false or the released "yes"/"no"; ``category`` a name or a list of names. Rubrics come as
a list, or as an object of rubric id -> rubric (the released shape), or as JSON text of either; a rubric id
given twice in one JSON text is refused, as is a task id given twice in one file.

Which rubrics are critical depends on the profile (engine.evaluators.vtb_scoring): weight >= 4 as
published, the task's own flag first in the strict profile.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.contract import InputError, task_records

log = logging.getLogger(__name__)

UNCATEGORIZED = "uncategorized"
UNSPECIFIED = "unspecified"
SINGLE_TURN, MULTI_TURN = "single-turn", "multi-turn"
STEM_DOMAINS: frozenset[str] = frozenset({"chemistry", "maths", "biology", "engineering", "physics"})
"""The released ``prompt_category`` values the published analysis reports together as STEM."""
STEM = "STEM"
GROUPS: tuple[str, ...] = ("domain", "eval_focus", "turncase")
TURN_MARKER = re.compile(r"\[Turn (\d+)\]")
"""The turn markers of the earlier one-prompt schema (all turns in one prompt)."""
"""The task fields results are broken down by."""


@dataclass(frozen=True)
class RubricItem:
    """One rubric of a task: its text, weight, effective critical flag (by the profile's rule), the flag
    the task gave (None when absent), its categories, its turn (0-based) and its id (when the task
    names its rubrics)."""

    description: str
    weight: int | float
    critical: bool
    flag: bool | None
    categories: tuple[str, ...]
    turn: int = 0
    rid: str | None = None

    @property
    def mismatch(self) -> bool:
        """The task's critical flag disagrees with weight >= 4."""
        return self.flag is not None and self.flag != (self.weight >= 4)


@dataclass(frozen=True)
class Turn:
    """One turn of a task: the prompt, the gold answer and the rubrics."""

    prompt: str
    golden_answer: str
    rubrics: tuple[RubricItem, ...]


def critical_of(weight: float, flag: bool | None, profile: str) -> bool:
    """Published: weight >= 4 (the flag is never read); strict: the flag when given, else weight >= 4."""
    return flag if profile == "strict" and flag is not None else weight >= 4


def _text(path: Path | str, value: Any, task_id: str, where: str, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise InputError(path, f"must be a string, got {value!r}", task_id=task_id, field=where)
    return value


def _categories(path: Path | str, value: Any, task_id: str, where: str) -> tuple[str, ...]:
    if value is None:
        return (UNCATEGORIZED,)
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values or not all(isinstance(v, str) and v for v in values):
        raise InputError(path, f"must be a category name or a list of them, got {value!r}", task_id=task_id,
                         field=where)
    return tuple(values)


def critical_flag(path: Path | str, value: Any, task_id: str, where: str) -> bool | None:
    """A rubric's critical flag: true/false, the released "yes"/"no", or absent (None)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("yes", "no"):
        return value.strip().lower() == "yes"
    raise InputError(path, f"must be true, false, \"yes\", \"no\" or absent, got {value!r}", task_id=task_id,
                     field=where)


def rubric_weight(path: Path | str, value: Any, task_id: str, where: str) -> int | float:
    """A rubric's weight, a number in [1, 5]: an integer, a float (``4.0`` is 4, as the published scripts'
    arithmetic takes it) or a numeric string (``"5"``, read as its number with a warning: the published
    scripts stop on it); InputError naming the field otherwise."""
    number = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not 1 <= number <= 5:
        raise InputError(path, f"must be a number 1-5, got {value!r}", task_id=task_id, field=where)
    if isinstance(value, str):
        log.warning("%s: task %s, field %s: weight given as text %r, read as %g (VisualToolBench's judge scripts "
                    "stop on it)", path, task_id, where, value, number)
    return int(number) if float(number).is_integer() else float(number)


def rubric_item(path: Path | str, raw: Any, task_id: str, where: str, turn: int = 0, need_text: bool = True,
                profile: str = "published", rid: str | None = None) -> RubricItem:
    """One rubric object, checked (weight a number 1-5, rubric_weight; critical a flag or absent)."""
    if not isinstance(raw, Mapping):
        raise InputError(path, "a rubric must be an object", task_id=task_id, field=where)
    weight = rubric_weight(path, raw.get("weight"), task_id, f"{where}.weight")
    flag = critical_flag(path, raw.get("critical"), task_id, f"{where}.critical")
    description = _text(path, raw.get("description"), task_id, f"{where}.description", need_text)
    return RubricItem(description, weight, critical_of(weight, flag, profile), flag,
                      _categories(path, raw.get("category"), task_id, f"{where}.category"), turn, rid)


def _unique_object(path: Path | str, task_id: str, where: str) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """A JSON object hook refusing a key given twice (a rubric id) with an InputError naming the field."""

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise InputError(path, f"rubric id {key!r} is given twice", task_id=task_id, field=where)
            seen[key] = value
        return seen
    return hook


def rubric_entries(path: Path | str, raw: Any, task_id: str, where: str) -> list[tuple[str | None, Any]]:
    """(rubric id or None, rubric) of a turn's rubrics: a non-empty list, an object of id -> rubric, or
    JSON text of either (a repeated id refused)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw, object_pairs_hook=_unique_object(path, task_id, where))
        except InputError:
            raise
        except ValueError:
            raise InputError(path, "must be JSON text of rubrics", task_id=task_id, field=where) from None
    if isinstance(raw, Mapping) and raw:
        return [(str(k), v) for k, v in raw.items()]
    if isinstance(raw, list) and raw:
        return [(None, v) for v in raw]
    raise InputError(path, "must be a non-empty list (or object) of rubrics", task_id=task_id, field=where)


def _released_turns(path: Path | str, task: Mapping[str, Any], task_id: str) -> list[dict[str, Any]]:
    prompts = task.get("turn_prompts")
    if not isinstance(prompts, list) or not prompts:
        raise InputError(path, "must be a non-empty list of prompts", task_id=task_id, field="turn_prompts")
    rubrics = task.get("rubrics_by_turn")
    if not isinstance(rubrics, list) or len(rubrics) != len(prompts):
        raise InputError(path, f"must be a list of {len(prompts)} rubric set(s), one per turn prompt",
                         task_id=task_id, field="rubrics_by_turn")
    answers = task.get("turn_golden_answers") or []
    if not isinstance(answers, list):
        raise InputError(path, "must be a list of gold answers", task_id=task_id, field="turn_golden_answers")
    return [{"prompt": p, "golden_answer": answers[k] if k < len(answers) else None, "rubrics": rubrics[k],
             "_where": (f"turn_prompts[{k}]", f"turn_golden_answers[{k}]", f"rubrics_by_turn[{k}]")}
            for k, p in enumerate(prompts)]


def task_turns(path: Path | str, task: Mapping[str, Any], task_id: str, profile: str = "published") -> list[Turn]:
    """The turns of a task record in either shape, checked."""
    raw_turns = task.get("turns")
    if raw_turns is None and "turn_prompts" in task:
        listed = _released_turns(path, task, task_id)
    elif raw_turns is None:
        listed = [{"prompt": task.get("prompt", task.get("question")), "golden_answer": task.get("golden_answer"),
                   "rubrics": task.get("rubrics"), "_where": ("prompt", "golden_answer", "rubrics")}]
    elif not isinstance(raw_turns, list) or not raw_turns:
        raise InputError(path, "must be a non-empty list of turns", task_id=task_id, field="turns")
    else:
        listed = []
        for k, raw in enumerate(raw_turns):
            if not isinstance(raw, Mapping):
                raise InputError(path, "a turn must be an object", task_id=task_id, field=f"turns[{k}]")
            listed.append({**raw, "_where": tuple(f"turns[{k}].{f}" for f in ("prompt", "golden_answer", "rubrics"))})
    turns = []
    for k, raw in enumerate(listed):
        at_prompt, at_answer, at_rubrics = raw["_where"]
        items = tuple(rubric_item(path, r, task_id, f"{at_rubrics}[{rid if rid is not None else j}]", k,
                                  profile=profile, rid=rid)
                      for j, (rid, r) in enumerate(rubric_entries(path, raw.get("rubrics"), task_id, at_rubrics)))
        turns.append(Turn(_text(path, raw.get("prompt"), task_id, at_prompt),
                          _text(path, raw.get("golden_answer"), task_id, at_answer, False), items))
    return turns


def _group_value(record: Mapping[str, Any], *keys: str) -> str:
    for key in keys:
        value = record.get(key)
        if isinstance(value, str) and value:
            return value
    return UNSPECIFIED


def task_groups(record: Mapping[str, Any], n_turns: int | None = None) -> dict[str, str]:
    """A task's breakdown fields: domain (``prompt_category``, else ``domain``), evaluation focus
    (``eval_focus``) and ``turncase`` (else single-turn for one turn, multi-turn for more)."""
    turncase = _group_value(record, "turncase")
    if turncase == UNSPECIFIED and n_turns is not None:
        turncase = SINGLE_TURN if n_turns == 1 else MULTI_TURN
    return {"domain": _group_value(record, "prompt_category", "domain"),
            "eval_focus": _group_value(record, "eval_focus"),
            "turncase": turncase}


def domain_group(domain: str) -> str:
    """The domain a result is reported under: chemistry, maths, biology, engineering and physics
    (exactly these names) as STEM, the others as they are."""
    return STEM if domain in STEM_DOMAINS else domain


def record_id(record: Any) -> Any:
    """A task record's id: ``id``, else ``task_id`` (both names occur in released files)."""
    return record.get("id", record.get("task_id")) if isinstance(record, Mapping) else None


def listed_records(path: Path, root: Any, what: str) -> list[tuple[str, Any]]:
    """(id, record) of a file's root (a list of objects with an id, or an object of id -> object); a
    record without an id, or an id given twice, is refused."""
    if isinstance(root, dict):
        items = [(str(k), v) for k, v in root.items()]
    elif isinstance(root, list):
        items = []
        for position, record in enumerate(root):
            tid = record_id(record)
            if isinstance(tid, bool) or not isinstance(tid, (str, int)):
                raise InputError(path, f"a {what} must be an object with an id", task_id=f"#{position}", field="id")
            items.append((str(tid), record))
    else:
        raise InputError(path, f"the root must be a list of {what}s or an object of id -> {what}")
    seen: set[str] = set()
    for position, (tid, _) in enumerate(items):
        if tid in seen:
            raise InputError(path, f"the id is given twice (again at position {position})", task_id=tid, field="id")
        seen.add(tid)
    return items


def read_task_records(path: str | Path) -> dict[str, dict[str, Any]]:
    """id -> task record of a tasks file (engine.contract.task_records), each checked to have turns with
    rubrics (either shape)."""
    path = Path(path)
    records = task_records(path)
    marked = 0
    for tid, record in records.items():
        turns = task_turns(path, record, tid)
        marked += len(turns) == 1 and len(set(TURN_MARKER.findall(turns[0].prompt))) > 1
    if marked:
        log.warning("%s: %d task(s) give several turns in one prompt ([Turn N] markers, the earlier one-prompt "
                    "schema): each is put and judged as one turn, as VisualToolBench's scripts send it", path, marked)
    return records


def log_mismatches(task_id: str, items: Sequence[RubricItem], profile: str, level: int = logging.DEBUG) -> int:
    """Log the rubrics whose critical flag disagrees with weight >= 4 (at DEBUG: the reader of a verdicts file
    sums them up in one warning); their number."""
    odd = [f"turn {r.turn + 1} weight {r.weight} critical {str(r.flag).lower()}" for r in items if r.mismatch]
    if odd:
        rule = "the flag is kept" if profile == "strict" else "weight >= 4 decides, as published"
        log.log(level, "task %s: %d rubric(s) flagged critical otherwise than weight >= 4 (%s): %s",
                task_id, len(odd), rule, "; ".join(odd))
    return len(odd)
