"""What the evaluators say of one model, as the site shows it: for every evaluator of the registry
(engine.evaluators) that has a ``display``, its values read with its own ``read`` (the file the score app
joined: named in the results' meta under the evaluator's option, else beside the predictions by its
suffix; the read settings the results' meta records) or computed from the predictions with its
``compute``, handed to its display per task and for the file as a whole. The blocks it gives are checked
to be of the known kinds (engine.evaluators.protocol.Evaluator.display) and their texts cut by the site's rule (replies
at MAX_REPLY, other strings at MAX_TEXT); the viewer names no evaluator.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from engine.contract import JsonObject, TrajectoryFile
from engine.evaluators import evaluators
from engine.evaluators.base import Verdicts
from engine.evaluators.protocol import EntryT, Evaluator, OptionsT, ReadSettings
from engine.judge_results import companion_path
from engine.reports.read import ModelResult
from engine.viewer.text import cut, cut_reply

log = logging.getLogger(__name__)

PARTS = frozenset({"heading", "verdict", "rows", "reply", "error", "note", "badges", "calls", "tags"})
"""The kinds of part a display block may hold."""


@dataclass
class Shown:
    """One model's evaluations as the site shows them: per task id its blocks, and the blocks of the files
    as a whole (a model's page)."""

    tasks: dict[str, list[dict[str, object]]] = field(default_factory=dict)
    model: list[dict[str, object]] = field(default_factory=list)


def evaluator_file(result: ModelResult, e: Evaluator[EntryT, OptionsT]) -> Path | None:
    """An evaluator's file as the score app found it: named in the results' meta under the evaluator's
    option, else ``<predictions stem>_<suffix>.json`` beside the predictions; None when there is none."""
    named = result.meta.get(e.card.option_name)
    if isinstance(named, str) and named:
        path = Path(named)
        if not path.is_file():
            log.warning("%s: the %s file %s named in meta.%s is missing; its per-task details are left out",
                        result.path, e.card.name, path, e.card.option_name)
            return None
        return path
    path = companion_path(Path(str(result.meta["predictions"])), str(e.card.suffix))  # checked by read_run
    return path if path.is_file() else None


def read_settings(result: ModelResult, e: Evaluator[EntryT, OptionsT]) -> ReadSettings:
    """How the score app read the evaluator's file, as the results' meta records it (``<option>_profile``, as
    engine.judge_results writes it)."""
    profile = result.meta.get(f"{e.card.option_name}_profile")
    return ReadSettings(vtb_profile=None if profile is None else str(profile))


def _values(result: ModelResult, e: Evaluator[EntryT, OptionsT], predictions: TrajectoryFile) -> Verdicts | None:
    if e.card.suffix is not None:
        path = evaluator_file(result, e)
        return None if path is None else e.read(path, read_settings(result, e))
    return e.compute(predictions)


def _cell(value: object) -> object:
    if isinstance(value, dict) and "reply" in value:
        return {**cut(value), "reply": cut_reply(value["reply"])}
    if isinstance(value, dict) and "rows" in value:
        return {**cut({k: v for k, v in value.items() if k != "rows"}), "rows": [[_cell(c) for c in row]
                                                                            for row in value["rows"]]}
    if isinstance(value, list):
        return [_cell(v) for v in value]
    return cut(value)


def _block(e: Evaluator[EntryT, OptionsT], block: object) -> dict[str, object]:
    """A display's block, checked to be of the known kinds, its texts cut."""
    if not isinstance(block, dict) or not isinstance(block.get("parts"), list):
        raise ValueError(f"evaluator {e.card.name}: display gave a block without parts: {str(block)[:80]}")
    parts = []
    for part in block["parts"]:
        if not isinstance(part, dict) or part.get("kind") not in PARTS:
            raise ValueError(f"evaluator {e.card.name}: display gave a part of unknown kind: {str(part)[:80]}; "
                             f"expected one of {', '.join(sorted(PARTS))}")
        if part["kind"] == "reply":
            part = {**cut(part), "text": cut_reply(part.get("text"))}
        elif part["kind"] == "rows":
            part = {**cut({k: v for k, v in part.items() if k != "rows"}),
                    "rows": [[_cell(c) for c in row] for row in part.get("rows") or []]}
        else:
            part = cut(part)
        parts.append(part)
    return {"title": cut(str(block.get("title") or e.card.name)), "id": str(block.get("id") or e.card.name),
            "evaluator": e.card.name, "parts": parts}


def evaluations_of(result: ModelResult, predictions: TrajectoryFile, ids: list[str]) -> Shown:
    """The blocks every evaluator with a display gives of a model's tasks (`ids`, in order) and files."""
    shown = Shown()
    for e in evaluators():
        values = _values(result, e, predictions)
        if values is None:
            continue
        shown.model += [_block(e, b) for b in e.display(None, values.meta)]
        for tid in ids:
            if tid in values.per_id or tid in values.detail:
                task = {**values.per_id.get(tid, {}), **values.detail.get(tid, {})}
                blocks = [_block(e, b) for b in e.display(task, values.meta)]
                if blocks:
                    shown.tasks.setdefault(tid, []).extend(blocks)
    return shown


def shown_keys() -> frozenset[str]:
    """Per-task keys of the results that some evaluator owns (its metric keys, their blocks, its other
    columns, its name): its display shows them, so the task view does not list them again."""
    keys: set[str] = set()
    for e in evaluators():
        keys.add(e.card.name)
        keys.update(m.key.split(".", 1)[0] for m in e.card.metrics)
        keys.update(e.card.columns)
    return frozenset(keys)


def task_columns(records: list[JsonObject]) -> list[str]:
    """The evaluators' per-task values that are numbers in some record, in registry order: their metric
    rows that are leaderboard columns, then their other per-task columns."""
    keys = [k for e in evaluators() for k in (*(m.key for m in e.card.metrics if m.column and "." not in m.key),
                                              *e.card.columns)]
    return [k for k in dict.fromkeys(keys)
            if any(isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool) for r in records)]
