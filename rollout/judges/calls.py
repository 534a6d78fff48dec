"""Call outcomes of a prediction file: the rules first, one LLM judge for the calls no rule settles
(the callanalysis.json they make is engine.evaluators.call_outcomes').

Each label records what decided it: ``rule:<rule>`` (see rollout.judges.outcomes), ``judge:<name>``,
or ``undecided`` when the judge gave no class in its attempts (such calls are counted apart, never
put in a class).
"""

from __future__ import annotations

import asyncio
from typing import Any

from engine.contract import TrajectoryFile
from engine.evaluators.call_outcomes import UNDECIDED
from engine.evaluators._judging import JudgeFailure, Question, first_answer, parse_class
from engine.evaluators._prompts import OUTCOME, outcome_payload
from rollout.judges.outcomes import CLASS_OF_DIGIT, Catalogue, decide, illegal_format
from rollout.judges.pool import JudgePool, JudgeSpec

def rule_labels(predictions: TrajectoryFile, catalogue: Catalogue | None
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]:
    """(a label per predicted call, in file order; the calls themselves; id -> why the sample has an
    illegal calling format). Calls no rule settles have label None."""
    labels, calls, illegal = [], [], {}
    for tid, trajectory in predictions.tasks.items():
        reason = illegal_format(trajectory.raw)
        if reason:
            illegal[tid] = reason
        for si, step in enumerate(trajectory.raw.get("steps") or []):
            for ci, call in enumerate(step.get("calls") or []):
                decision = decide(call, catalogue)
                labels.append({"id": tid, "step": si, "call": ci, "name": call["name"].strip(),
                               "label": decision and decision.label,
                               "by": decision and f"rule:{decision.rule}"})
                calls.append(call)
    return labels, calls, illegal


async def judge_call(pool: JudgePool, spec: JudgeSpec, call: dict[str, Any], attempts: int,
                     max_result_chars: int = 0) -> tuple[str | None, str]:
    """(class, what decided it) of one call from the judge; (None, "undecided: ...") when it gives none."""
    question = Question(OUTCOME, outcome_payload(call, max_result_chars))
    try:
        digit = await first_answer(pool, spec, question, attempts, parse_class)
    except JudgeFailure as exc:
        return None, f"{UNDECIDED}: {exc}"
    return CLASS_OF_DIGIT[digit], f"judge:{spec.name}"


async def judge_undecided(pool: JudgePool, spec: JudgeSpec, labels: list[dict[str, Any]],
                          calls: list[dict[str, Any]], attempts: int, max_result_chars: int = 0) -> None:
    """Give the judge's class to every label no rule settled (in place)."""
    todo = [i for i, label in enumerate(labels) if label["label"] is None]
    outcomes = await asyncio.gather(*(judge_call(pool, spec, calls[i], attempts, max_result_chars) for i in todo))
    for i, (label, by) in zip(todo, outcomes):
        labels[i]["label"], labels[i]["by"] = label, by
