"""Task Completion and Information Grounding of one task from the judge pool (the published arithmetic).

Each judge answers each metric with one number: the one in the first ``\\boxed{}`` of its reply, else
its first number; a reply without a usable number in range is a failed attempt, and a judge has
``attempts`` attempts (5 in the published script; cached replies are read first, and a rerun gives a
judge that failed as many fresh attempts). Task Completion (0-10) is divided by 10. Per task
and metric the judges' scores are sorted, the lowest and the highest dropped when there are three or
more, and the rest averaged (the reducer ``trimmed_mean``). A task where some judge still fails is not
scored: it is reported, never zero-filled, and a rerun tries it again. The judges' agreement per metric
is taken at the interval level (engine.judging.inter_rater).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.contract import JsonObject, Trajectory, contained_path
from engine.judging.inter_rater import agreement, judges_matrix
from engine.judging.prompts import (
    COMPLETION,
    GROUNDING,
    INFORMATION_GROUNDING,
    TASK_COMPLETION,
    completion_payload,
    grounding_payload,
)
from engine.judging.questions import JudgeFailure, JudgeSpec, Pool, Question, first_answer, parse_score
from engine.judging.reducers import reducer

M3_REDUCER = "trimmed_mean"
"""How the judges' scores of a task and metric become one (engine.judging.reducers)."""


async def judge_score(pool: Pool, spec: JudgeSpec, question: Question, attempts: int) -> float:
    """One judge's score of a question (divided by the rubric's scale); JudgeFailure when it has none."""
    rubric = question.rubric
    return await first_answer(pool, spec, question, attempts,
                              lambda reply: parse_score(reply, rubric.low, rubric.high) / rubric.scale)


def question_of(reference: Trajectory | None, prediction: Trajectory) -> str:
    """The task question: the reference's (as the published script takes it), else the prediction's."""
    for source in (reference, prediction):
        question = source.raw.get("question") if source is not None else None
        if isinstance(question, str) and question.strip():
            return question
    return ""


def task_image(reference: Trajectory | None, prediction: Trajectory, images_dir: str | Path | None,
               files: tuple[str | Path, str | Path] = ("reference", "predictions")) -> str | None:
    """The absolute path of the task's input image (the reference's ``image``, else the prediction's),
    taken under images_dir by the one path rule (engine.contract.contained_path): InputError naming the
    file of `files` (reference, predictions) it came from, the task and ``image`` when it is absolute or
    leads out of that folder; None when the task names none."""
    for source, file in zip((reference, prediction), files):
        image = source.raw.get("image") if source is not None else None
        if isinstance(image, str) and image.strip():
            return str(contained_path(images_dir or ".", image, file=file, task=prediction.id, field="image",
                                      folder="images folder"))
    return None


def task_questions(reference: Trajectory, prediction: Trajectory, max_result_chars: int = 0,
                   images: tuple[str, ...] = ()) -> list[Question]:
    """The task's two questions: Task Completion (prediction only) and Information Grounding, each
    shown `images` (the task's input image) besides those its payload names."""
    question = question_of(reference, prediction)
    return [Question(COMPLETION, completion_payload(question, prediction.raw, max_result_chars), images),
            Question(GROUNDING, grounding_payload(question, reference.raw, prediction.raw, max_result_chars),
                     images)]


def _scored(specs: Sequence[JudgeSpec], scores: list[float]) -> JsonObject:
    return {"final": reducer(M3_REDUCER)(scores),
            "judges": [{"name": s.identity["model"], "score": v} for s, v in zip(specs, scores)]}


async def judge_task(pool: Pool, reference: Trajectory, prediction: Trajectory, attempts: int,
                     max_result_chars: int = 0, images: tuple[str, ...] = ()) -> JsonObject:
    """The task's entry in the published shape ({final, judges, info_grounding: {final, judges}}), every
    judge asked both questions at once (shown `images`); JudgeFailure naming every judge that failed."""
    questions = task_questions(reference, prediction, max_result_chars, images)
    specs = pool.specs
    outcomes = await asyncio.gather(*(judge_score(pool, spec, q, attempts) for q in questions for spec in specs),
                                    return_exceptions=True)
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    scores = [o for o in outcomes if not isinstance(o, BaseException)]
    for failure in failures:
        if not isinstance(failure, JudgeFailure):
            raise failure
    if failures:
        raise JudgeFailure("; ".join(map(str, failures)))
    n = len(specs)
    completion, grounding = scores[:n], scores[n:]
    return {**_scored(specs, completion), "info_grounding": _scored(specs, grounding)}


def entry_scores(entry: Mapping[str, Any], purpose: str) -> dict[str, float]:
    """judge name -> score of a published entry, for Task Completion or Information Grounding."""
    block = entry.get("info_grounding") if purpose == GROUNDING.purpose else entry
    judges = block.get("judges") if isinstance(block, Mapping) else None
    return {j["name"]: float(j["score"]) for j in judges or [] if isinstance(j, Mapping)
            and isinstance(j.get("name"), str) and isinstance(j.get("score"), (int, float))}


def metric_agreement(scores: dict[str, dict[str, float]], top: int) -> dict[str, Any]:
    """Agreement (interval) of one metric from task id -> {judge: score}: alpha, Spearman's rho of each
    pair of judges, and the `top` tasks whose judges' scores spread widest."""
    ids = sorted(scores)
    names, matrix = judges_matrix([scores[t] for t in ids])
    found = agreement(matrix, "interval", ids)
    return {"judges": names, "tasks": len(ids), "krippendorff_alpha": found.alpha,
            "spearman": [{"judges": [names[p.first], names[p.second]], "rho": p.value, "tasks": p.items}
                         for p in found.pairs],
            "most_disagreed": [{"id": ids[d.item], "spread": d.disagreement, "scores": scores[ids[d.item]]}
                               for d in found.ranked[:top]]}


def judges_agreement(entries: Mapping[str, Mapping[str, Any]], top: int = 10) -> dict[str, Any]:
    """Per metric (task_completion, information_grounding), the agreement of the judges of these entries."""
    out = {}
    for purpose in (TASK_COMPLETION, INFORMATION_GROUNDING):
        scores = {tid: s for tid, e in entries.items() if (s := entry_scores(e, purpose))}
        out[purpose] = metric_agreement(scores, top)
    return out
