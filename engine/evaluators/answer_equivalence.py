"""Answer equivalence (MCPVerse's outcome check for textual ground truth): LLM judges say whether the
agent's final answer agrees with the task's ground truth, 0 or 1; the Success Rate per complexity level
and their macro mean.

Per task (an entry of ``<predictions stem>_answers.json``):

- no ground truth (``ground_truth`` null or absent): skipped, no judge is asked; counted apart, never 0
  (``level``, one of L1/L2/L3, is required of the tasks with ground truth only);
- no prediction (the agent run crashed or never ended) or no final answer: E = 0, no judge is asked;
- otherwise every judge of the pool reasons, then answers ``{"score": 0}`` or ``{"score": 1}``; a reply
  without a usable score is a failed attempt (retried up to the attempts setting); a judge that never
  answers leaves the task unjudged (listed in ``meta.failed``, judged again by the next run), never 0;
- the task's E is the majority of the judges' scores; a tie (as many 0s as 1s) is E = 0: the answer
  is equivalent only when more judges say so than not.

Aggregate over the judged tasks (skipped ones excluded): ``answer_sr_l1``/``_l2``/``_l3`` = mean E of
the tasks of that level (null when the level has none); ``answer_sr`` = the macro mean over the levels
present (MCPVerse's SR is (SR_L1 + SR_L2 + SR_L3) / 3; a level with no judged task is left out of the
mean, not counted as 0); ``answer_sr_micro`` = mean E over all judged tasks, for reference;
``answer_judged`` and ``answer_skipped`` count the tasks.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.contract import InputError
from engine.evaluators.base import (PROFILES, Evaluator, JudgeContext, Metric, TaskInputs, Verdicts, file_entries,
                                    mean_or_none)
from engine.evaluators.judging import Question, Rubric, first_answer

NAME = "answer_equivalence"
SUFFIX = "answers"
LEVELS: tuple[str, ...] = ("L1", "L2", "L3")

PROMPT = Rubric(
    NAME, "ae-1",
    "You decide whether an AI agent's final answer to a question agrees with the reference answer.\n"
    "You are given the question, the reference answer and the agent's answer, as JSON.\n"
    "The answers agree when they say the same thing: the same facts, values and conclusions. Wording, "
    "order, formatting, units written differently and rounding that keeps the reference's precision do not "
    "matter; a missing, extra or contradicting key fact does. An answer that hedges between several "
    "values, or says the task could not be done, does not agree.\n"
    "First explain your reasoning in a few sentences. Then end your reply with one line of JSON: "
    "{\"score\": 1} when the answers agree, {\"score\": 0} when they do not.")

_SCORE = re.compile(r"""["']?score["']?\s*[:=]\s*["']?\s*([01](?:\.0+)?)\s*["']?\s*[,}]""")


def parse_verdict(text: str) -> int:
    """The 0/1 of a judge reply: the last ``"score": 0|1`` of a JSON-like object in it (the reasoning
    comes first); ValueError when there is none."""
    found = _SCORE.findall(text or "")
    if not found:
        raise ValueError(f"no {{\"score\": 0|1}} in {(text or '')[-80:]!r}")
    return int(float(found[-1]))


def majority(scores: Sequence[int]) -> int:
    """1 when more judges said 1 than 0, else 0 (a tie is 0)."""
    return int(2 * sum(scores) > len(scores))


def _task_fields(ctx: JudgeContext, inputs: TaskInputs) -> tuple[str | None, str | None, str]:
    """The task's level, ground truth and question, checked (InputError naming the tasks file); a task
    without ground truth needs no level."""
    where = ctx.options.get("tasks_file", "tasks file")
    task = inputs.task or {}
    truth = task.get("ground_truth")
    if truth is not None and (not isinstance(truth, (str, int, float)) or isinstance(truth, bool)
                              or not str(truth).strip()):
        raise InputError(where, f"must be a non-empty string or null, got {truth!r}", task_id=inputs.task_id,
                         field="ground_truth")
    level = task.get("level")
    if level not in LEVELS and (truth is not None or level is not None):
        raise InputError(where, f"must be one of {', '.join(LEVELS)}, got {level!r}", task_id=inputs.task_id,
                         field="level")
    question = task.get("question")
    if not isinstance(question, str) or not question.strip():
        raise InputError(where, "missing or empty text", task_id=inputs.task_id, field="question")
    return level, None if truth is None else str(truth), question


async def judge(ctx: JudgeContext, inputs: TaskInputs) -> dict[str, Any]:
    """One task's entry: level, score (0, 1, or null when skipped), each judge's score and reply, and why
    no judge was asked when none was."""
    level, truth, question = _task_fields(ctx, inputs)
    if truth is None:
        return {"level": level, "score": None, "judges": {}, "reason": "no ground truth (skipped)"}
    if inputs.prediction is None:
        return {"level": level, "score": 0, "judges": {}, "reason": "no prediction (the agent run did not end)"}
    answer = inputs.final_answer
    if answer is None or not answer.strip():
        return {"level": level, "score": 0, "judges": {}, "reason": "no final answer"}
    ask = Question(PROMPT, {"question": question, "reference_answer": truth, "agent_answer": answer})
    specs = list(ctx.pool.specs)
    answers = await asyncio.gather(*(first_answer(ctx.pool, spec, ask, ctx.attempts, _scored_reply)
                                     for spec in specs), return_exceptions=True)
    for outcome in answers:
        if isinstance(outcome, BaseException):
            raise outcome
    names = [spec.identity["model"] for spec in specs]
    scores = {name: score for name, (score, _) in zip(names, answers, strict=True)}
    return {"level": level, "score": majority(list(scores.values())), "judges": scores,
            "replies": {name: reply for name, (_, reply) in zip(names, answers, strict=True)}}


def _scored_reply(text: str) -> tuple[int, str]:
    """(the 0/1 of a judge reply, the reply as given); ValueError as `parse_verdict`."""
    return parse_verdict(text), text


def _check_entry(path: Path, task_id: str, entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise InputError(path, "must be an object {level, score, judges}", task_id=task_id)
    if entry.get("level") not in LEVELS and not (entry.get("level") is None and entry.get("score") is None):
        raise InputError(path, f"must be one of {', '.join(LEVELS)}, got {entry.get('level')!r}", task_id=task_id,
                         field="level")
    score = entry.get("score")
    if score is not None and (isinstance(score, bool) or score not in (0, 1)):
        raise InputError(path, f"must be 0, 1 or null, got {score!r}", task_id=task_id, field="score")
    return entry


def entries(path: Path) -> dict[str, dict[str, Any]]:
    """The checked entries of an earlier file (to resume), id -> entry."""
    return file_entries(path, "answer equivalence file", _check_entry)


def read(path: Path) -> Verdicts:
    """Per task: ``answer_level``, and ``answer_success`` (0/1) unless it was skipped."""
    out = Verdicts()
    for tid, entry in entries(Path(path)).items():
        values: dict[str, Any] = {"answer_level": entry["level"]}
        if entry["score"] is not None:
            values["answer_success"] = int(entry["score"])
        out.per_id[tid] = values
    return out


def success_rates(levels: Mapping[str, str], scores: Mapping[str, int | None]) -> dict[str, Any]:
    """SR per level, their macro mean over the levels present, the micro mean, and the counts, of tasks
    given by id -> level and id -> score (None: skipped)."""
    judged = [i for i in scores if scores[i] is not None]
    out: dict[str, Any] = {}
    per_level = {}
    for level in LEVELS:
        values = [scores[i] for i in judged if levels[i] == level]
        per_level[level] = mean_or_none(values)
        out[f"answer_sr_{level.lower()}"] = per_level[level]
    present = [v for v in per_level.values() if v is not None]
    out["answer_sr"] = mean_or_none(present)
    out["answer_sr_micro"] = mean_or_none([scores[i] for i in judged])
    out["answer_judged"] = len(judged)
    out["answer_skipped"] = len(scores) - len(judged)
    return out


def aggregate(verdicts: Verdicts, ids: Sequence[str]) -> dict[str, Any]:
    """`success_rates` over these ids (ids without an entry are left out)."""
    known = [i for i in ids if i in verdicts.per_id]
    return success_rates({i: verdicts.per_id[i]["answer_level"] for i in known},
                         {i: verdicts.per_id[i].get("answer_success") for i in known})


def document(per_id: dict[str, dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    """The file: aggregate (over every entry), per_id and meta."""
    rates = success_rates({i: e["level"] for i, e in per_id.items()}, {i: e["score"] for i, e in per_id.items()})
    return {"aggregate": rates, "per_id": per_id, "meta": {**meta, "prompt_version": PROMPT.version}}


def normalized(text: str) -> str:
    """Lower case, punctuation (except decimal points) dropped, whitespace collapsed."""
    return " ".join(re.sub(r"[^\w.]|\.(?!\d)", " ", text.lower()).split())


def scripted_answer(payload: dict[str, Any], bias: float) -> str:
    """The offline scripted judge's reply: the answers agree when the normalized reference answer occurs
    in the normalized agent answer."""
    agree = f" {normalized(str(payload['reference_answer']))} " in f" {normalized(str(payload['agent_answer']))} "
    return (f"The reference answer is {'' if agree else 'not '}contained in the agent's answer."
            f"\n{{\"score\": {int(agree)}}}")


_RATE, _COUNT = (0.0, 1.0), (0.0, None)
METRICS: tuple[Metric, ...] = tuple(
    Metric(key, label, NAME, PROFILES, "evaluator", False, False, *bounds) for key, label, bounds in (
        ("answer_sr", "SR", _RATE), ("answer_sr_l1", "SR L1", _RATE), ("answer_sr_l2", "SR L2", _RATE),
        ("answer_sr_l3", "SR L3", _RATE), ("answer_sr_micro", "SR (micro)", _RATE),
        ("answer_judged", "Answers Judged", _COUNT), ("answer_skipped", "Answers Skipped", _COUNT)))
"""The Success Rates (per level, their macro mean, the micro mean) and the counts, by `aggregate`; not
leaderboard columns (the report's outcome checks table has them)."""

EVALUATOR = Evaluator(name=NAME, reads=frozenset({"final_answer", "prediction", "task"}), metrics=METRICS,
                      suffix=SUFFIX, judge=judge, document=document, entries=entries, read=read,
                      aggregate=aggregate, position=50, scripted={NAME: scripted_answer}, all_tasks=True,
                      columns=("answer_level", "answer_success"))
