"""Canonical call texts: what the sentence encoder sees for each call."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from engine.contract import InputError, Trajectory, TrajectoryFile, canonical_json, shown
from engine.metricspec import PROFILES, Profile

log = logging.getLogger(__name__)


def profile_text(name: str, arguments_text: str, profile: Profile = "reference") -> str:
    """A call's text from its canonical arguments text: that text (`reference`) or `name(text)` (`paper`)."""
    if profile == "reference":
        return arguments_text
    if profile == "paper":
        return f"{name}({arguments_text})"
    raise ValueError(f"unknown metrics profile {profile!r}; expected one of {', '.join(PROFILES)}")


def call_text(name: str, arguments: object, profile: Profile = "reference") -> str:
    """The text of one call: its arguments (`reference`) or `name(arguments)` (`paper`)."""
    return profile_text(name, canonical_json(arguments), profile)


@dataclass
class SweepTables:
    """Every scored call of a sweep as flat arrays, plus the distinct texts to embed.

    GT calls are laid out task by task in global call order; predicted calls sample by
    sample (a sample is one prediction file's trajectory for one scored id against one reference).
    A predicted call that was never made (`Call.made` false: an illegal-format call) counts in its
    sample's calls but has rank -1, as a tool the GT task lacks: it is in no bucket, never matched.
    With several references, a task id has one task row per reference (`task_ref`, in reference
    order) and each prediction one sample per reference of its task (`sample_ref`).
    """

    texts: list[str]
    task_ids: list[str]
    task_types: list[str | None]
    gt_tasks: list[Trajectory]
    gt_task: np.ndarray
    gt_rank: np.ndarray
    gt_step: np.ndarray
    gt_index: np.ndarray
    gt_text: np.ndarray
    task_calls: np.ndarray
    task_steps: np.ndarray
    task_sq_step_calls: np.ndarray
    sample_file: np.ndarray
    sample_task: np.ndarray
    sample_pred: list[Trajectory]
    pred_sample: np.ndarray
    pred_rank: np.ndarray
    pred_step: np.ndarray
    pred_index: np.ndarray
    pred_text: np.ndarray
    sample_calls: np.ndarray
    sample_steps: np.ndarray
    task_ref: np.ndarray | None = None
    sample_ref: np.ndarray | None = None

    @property
    def several_references(self) -> bool:
        """Whether some task has more than one reference."""
        return self.task_ref is not None and bool((self.task_ref > 0).any())

    def samples_of(self, file_index: int) -> np.ndarray:
        """Sample indices that belong to one prediction file."""
        return np.flatnonzero(self.sample_file == file_index)

    @property
    def num_samples(self) -> int:
        """Number of (prediction file, id) pairs scored."""
        return len(self.sample_task)


def _examples(ids: list[str], limit: int = 5) -> str:
    return ", ".join(shown(i) for i in ids[:limit]) + (", ..." if len(ids) > limit else "")


def _no_shared_id_hint(gt: TrajectoryFile, pred: TrajectoryFile) -> str:
    """Why a prediction file may share no id with the GT: number-typed ids, leading zeros."""
    def unpadded(task_id: str) -> str:
        return (task_id.lstrip("0") or "0") if task_id.isdigit() else task_id

    gt_of = {unpadded(i): i for i in gt.tasks}
    padded = [(gt_of[unpadded(p)], p) for p in pred.tasks if unpadded(p) in gt_of]
    numbers = sum(isinstance(t.raw.get("id"), int) for t in pred.tasks.values())
    hints = []
    if padded:
        hints.append(f"{len(padded)} id(s) agree once leading zeros are dropped (GT {padded[0][0]!r}, "
                     f"prediction {padded[0][1]!r})")
    if numbers:
        hints.append(f"{numbers} prediction id(s) are JSON numbers, which lose leading zeros: "
                     "write ids as strings")
    return "; ".join(hints) if hints else (f"GT ids look like {_examples(sorted(gt.tasks), 2)}, "
                                           f"prediction ids like {_examples(sorted(pred.tasks), 2)}")


def scored_ids(gt: TrajectoryFile, pred: TrajectoryFile) -> list[str]:
    """Ids present in both files, in ascending string order; warns about the rest.

    A prediction file sharing no id with the GT is an InputError with a hint.
    """
    common = sorted(set(gt.tasks) & set(pred.tasks))
    if not common:
        if not pred.tasks or not gt.tasks:
            raise InputError(pred.path if gt.tasks else gt.path, "nothing to score: the file holds no task")
        raise InputError(pred.path, f"none of its {len(pred.tasks)} task id(s) is in the GT "
                                    f"({gt.path}, {len(gt.tasks)} ids): {_no_shared_id_hint(gt, pred)}")
    no_pred = sorted(set(gt.tasks) - set(pred.tasks))
    not_in_gt = sorted(set(pred.tasks) - set(gt.tasks))
    if no_pred or not_in_gt:
        log.warning("%s: %d of %d id(s) scored; %d GT id(s) have no prediction%s; %d predicted id(s) "
                    "are not in the GT%s", pred.path, len(common), len(gt.tasks), len(no_pred),
                    f" ({_examples(no_pred)})" if no_pred else "", len(not_in_gt),
                    f" ({_examples(not_in_gt)})" if not_in_gt else "")
    return common


def warn_not_made(pred: TrajectoryFile, ids: Sequence[str]) -> int:
    """Warn how many of the scored tasks' predicted calls were never made (illegal format); their count."""
    tasks = [pred.tasks[tid] for tid in ids]
    unmade = [sum(not c.made for c in t.calls) for t in tasks]
    total = sum(unmade)
    if total:
        log.warning("%s: %d of %d predicted call(s), in %d task(s), were never made (illegal format: arguments "
                    "not a JSON object): counted as predicted calls, never matched", pred.path, total,
                    sum(t.num_calls for t in tasks), sum(1 for n in unmade if n))
    return total


def flatten_sweep(gt: TrajectoryFile, preds: list[TrajectoryFile], profile: Profile = "reference",
                  alternatives: Mapping[str, Sequence[Trajectory]] | None = None) -> SweepTables:
    """Serialize every call of the GT and of all prediction files into flat tables.

    Each distinct text appears once in `texts`, so the GT is embedded once however
    many prediction files are scored. `alternatives` gives an id its references in order (default:
    the GT's task alone); every prediction of the id is laid out once per reference.
    """
    text_row: dict[str, int] = {}
    per_file_ids = [scored_ids(gt, p) for p in preds]
    ids = sorted(set().union(*per_file_ids)) if per_file_ids else []
    refs_of = {tid: tuple((alternatives or {}).get(tid) or (gt.tasks[tid],)) for tid in ids}
    rows = [(tid, r, ref) for tid in ids for r, ref in enumerate(refs_of[tid])]
    task_ids = [tid for tid, _, _ in rows]
    task_of: dict[str, list[int]] = {}
    for t, tid in enumerate(task_ids):
        task_of.setdefault(tid, []).append(t)

    g_task, g_rank, g_step, g_index, g_text = [], [], [], [], []
    task_calls, task_steps, task_sq, gt_tasks, ranks_of = [], [], [], [], []
    for t, (_, _, task) in enumerate(rows):
        gt_tasks.append(task)
        ranks: dict[str, int] = {}
        index = 0
        sq = 0
        for s, step in enumerate(task.steps):
            sq += len(step.calls) * len(step.calls)
            for call in step.calls:
                rank = ranks.setdefault(call.name, len(ranks))
                g_task.append(t)
                g_rank.append(rank)
                g_step.append(s)
                g_index.append(index)
                g_text.append(text_row.setdefault(profile_text(call.name, call.text, profile), len(text_row)))
                index += 1
        ranks_of.append(ranks)
        task_calls.append(index)
        task_steps.append(len(task.steps))
        task_sq.append(sq)

    s_task: list[int] = []
    s_file, s_pred, s_calls, s_steps = [], [], [], []
    p_sample, p_rank, p_step, p_index, p_text = [], [], [], [], []
    for f, (pred, file_ids) in enumerate(zip(preds, per_file_ids)):
        warn_not_made(pred, file_ids)
        for tid, t in ((i, t) for i in file_ids for t in task_of[i]):
            sample = len(s_task)
            ranks = ranks_of[t]
            task = pred.tasks[tid]
            s_file.append(f)
            s_task.append(t)
            s_pred.append(task)
            index = 0
            for s, step in enumerate(task.steps):
                for call in step.calls:
                    p_sample.append(sample)
                    p_rank.append(ranks.get(call.name, -1) if call.made else -1)  # never made: in no bucket
                    p_step.append(s)
                    p_index.append(index)
                    p_text.append(text_row.setdefault(profile_text(call.name, call.text, profile),
                                                      len(text_row)))
                    index += 1
            s_calls.append(index)
            s_steps.append(len(task.steps))

    def arr(values: list[int]) -> np.ndarray:
        return np.asarray(values, dtype=np.int64)

    return SweepTables(
        texts=list(text_row), task_ids=task_ids,
        task_types=[t.type for t in gt_tasks], gt_tasks=gt_tasks,
        gt_task=arr(g_task), gt_rank=arr(g_rank), gt_step=arr(g_step), gt_index=arr(g_index),
        gt_text=arr(g_text), task_calls=arr(task_calls),
        task_steps=arr(task_steps), task_sq_step_calls=arr(task_sq),
        sample_file=arr(s_file), sample_task=arr(s_task), sample_pred=s_pred,
        pred_sample=arr(p_sample), pred_rank=arr(p_rank), pred_step=arr(p_step),
        pred_index=arr(p_index), pred_text=arr(p_text),
        sample_calls=arr(s_calls), sample_steps=arr(s_steps),
        task_ref=arr([r for _, r, _ in rows]), sample_ref=arr([rows[t][1] for t in s_task]))
