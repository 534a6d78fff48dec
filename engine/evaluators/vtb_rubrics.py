"""VisualToolBench rubrics: one question per rubric and judge (the turn's question and gold answer, one
criterion and the model's answer to that turn), the judges' labels recorded per rubric, and from them the
weighted rubric score and critical-gated pass of each task and their averages ARS and APR, under the
profile ``published`` (VisualToolBench's published judge scripts, the default) or ``strict`` (the project's
stricter reading); engine.evaluators.vtb_scoring states both.

A task is read in this project's shape or VisualToolBench's released one (engine.evaluators.vtb_records).
The answer to turn k is the prediction's ``turns[k]`` (a string or an object with ``final_reply``) when it
has a non-empty ``turns`` list: a turn without a reply there was never answered and is not judged. A
prediction without ``turns`` answers every turn with its final reply (a rollout that put all turns to the
model in one question answers them in its one reply).

A judge's reply is ``{"explanation", "judge_result": label}``; any label is recorded as given (a reply
without a JSON object holding ``judge_result`` is a failed attempt, and a judge without usable reply in its
attempts is recorded with its error). The file ``<predictions stem>_rubrics.json`` is ``{"aggregate",
"per_id": {id: entry}, "meta"}``; `read` also takes a drop-in verdicts list and VisualToolBench's judge
results (engine.evaluators.vtb_files).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from engine.contract import InputError, JsonMapping, JsonObject, JsonValue
from engine.contract.settings import Judges
from engine.evaluators.base import PROFILES as METRIC_PROFILES
from engine.evaluators.base import Metric, PoolJudge, TaskInputs, Verdicts, pool_judge
from engine.evaluators.protocol import (
    Card,
    Evaluator,
    EvaluatorOptions,
    JudgeContext,
    Plain,
    ReadSettings,
    ScriptedAnswer,
    TaskRecord,
    Verdict,
)
from engine.evaluators.vtb_files import SUFFIX, entries, own_verdicts, read_verdicts
from engine.evaluators.vtb_records import RubricItem, Turn, log_mismatches, read_task_records, task_groups, task_turns
from engine.evaluators.vtb_scoring import (
    DEFAULT_PROFILE,
    FAILED,
    MET,
    NOT_MET,
    ODD_REPLIES,
    aggregate_values,
    check_profile,
    rubric_outcome,
    task_values,
)
from engine.judging import JudgeFailure, JudgeSpec, Question, Rubric, first_answer, json_object, judges_matrix
from engine.judging import agreement as agreement_of

NAME = "vtb_rubrics"

METRICS: tuple[Metric, ...] = (
    Metric("rubric_score", "Average Rubric Score", NAME, METRIC_PROFILES, "judged_mean", False, True, 0.0, 1.0),
    Metric("pass_rate", "Average Pass Rate", NAME, METRIC_PROFILES, "judged_mean", False, True, 0.0, 1.0),
)
"""ARS and APR: plain means of the tasks' ``rubric_score`` and 0/1 ``pass_rate`` over the scored tasks;
`aggregate` adds the ``rubrics`` block (counts, per category, domain, evaluation focus, single/multi-turn)."""

RUBRIC = Rubric(
    "vtb_rubric", "vtb-rubric-2",
    "You are grading one answer against one rubric criterion.\n"
    "You receive a question, its reference (gold) answer, a single criterion and the answer of the model "
    "under evaluation. Decide whether the model's answer satisfies the criterion, using the reference answer "
    "only where the criterion needs it, and nothing else.\n"
    "Keep in mind:\n"
    "- The answer need not be right where the criterion does not ask for correctness. A criterion asking the "
    "model to show its working is satisfied by an answer that shows it, even if the result is wrong.\n"
    "- Be lenient with criteria about style or presentation: an answer asked to be brief that runs somewhat "
    "longer than the reference, yet stays reasonable, satisfies it.\n"
    "- An answer may satisfy a criterion without using its words: a criterion about knowing that plants make "
    "food from light is satisfied by an answer that explains this without naming photosynthesis, as long as "
    "the answer is sensible.\n"
    "Reply with one JSON object and nothing else: "
    "{\"explanation\": \"<a short reason>\", \"judge_result\": \"Met\" or \"Not Met\"}.",
    user="Question:\n{question}\n\nGold answer:\n{gold_answer}\n\nCriterion:\n{rubric}\n\nModel's answer:\n{answer}")


@dataclass
class VtbOptions(EvaluatorOptions):
    """``evaluators.vtb_rubrics`` (conf/judge/evaluators/vtb_rubrics.yaml): the profile (published | strict,
    checked where it is read), the attempts per judge and rubric, the rubrics listed as most disagreed, and
    the file (None: beside the predictions)."""

    profile: str = DEFAULT_PROFILE
    attempts: int = 3
    agreement_top: int = 10
    output: str | None = None


RubricEntry = dict[str, JsonValue]
"""A task's entry of the rubrics file: score, pass, counts, breakdown fields, profile and per turn its rubrics
with every judge's label (engine.evaluators.vtb_files reads it back)."""


def profile_of(options: JsonMapping) -> str:
    """The profile an evaluator config entry names (``profile``; default published), checked."""
    try:
        return check_profile(str(options.get("profile") or DEFAULT_PROFILE))
    except ValueError as exc:
        raise InputError("config", str(exc), field=f"evaluators.{NAME}.profile") from None


def turn_answers(inputs: TaskInputs, n_turns: int) -> list[str | None]:
    """The model's answer to each turn (None: never answered): the prediction's per-turn replies when it
    has a non-empty ``turns`` list, else its final reply for every turn."""
    raw = inputs.prediction.raw if inputs.prediction is not None else {}
    per_turn = raw.get("turns")
    if isinstance(per_turn, list) and per_turn:
        answers: list[str | None] = []
        for k in range(n_turns):
            reply = per_turn[k] if k < len(per_turn) else None
            if isinstance(reply, Mapping):
                reply = reply.get("final_reply", reply.get("final_answer"))
            answers.append(reply if isinstance(reply, str) else None)
        return answers
    return [inputs.final_answer or ""] * n_turns


def parse_verdict(text: str) -> tuple[JsonValue, str]:
    """(label, explanation) of a judge reply ``{"explanation", "judge_result": label}``, the label as
    given; ValueError for a reply without such an object."""
    reply = json_object(text)
    if "judge_result" not in reply:
        raise ValueError(f"no judge_result in {text[:80]!r}")
    explanation = reply.get("explanation")
    return reply["judge_result"], explanation if isinstance(explanation, str) else ""


_QUOTED = re.compile(r'"([^"]+)"')


def scripted_verdict(payload: JsonMapping, strict: bool = False) -> str:
    """A scripted judge's reply to the rubric prompt: Met when every double-quoted phrase of the
    criterion appears in the answer (ignoring case unless `strict`), or, for a criterion without one,
    when the answer is not empty."""
    answer = str(payload.get("answer") or "")
    phrases = _QUOTED.findall(str(payload.get("rubric") or ""))
    fold = (lambda s: s) if strict else str.casefold
    if phrases:
        met = all(fold(p) in fold(answer) for p in phrases)
        why = "the answer states " + ", ".join(phrases) if met else "the answer lacks " + ", ".join(
            p for p in phrases if fold(p) not in fold(answer))
    else:
        met = bool(answer.strip())
        why = "the answer is given" if met else "there is no answer"
    explanation = why.replace('"', "'")
    return f'{{"explanation": "{explanation}", "judge_result": "{MET if met else NOT_MET}"}}'


def scripted_reply(payload: JsonObject, bias: float) -> str:
    """The offline scripted judge's reply: `scripted_verdict`, matching case exactly for a judge with
    bias <= -0.1 (so judges of a scripted pool can disagree)."""
    return scripted_verdict(payload, strict=bias <= -0.1)


def rubric_payload(turn: Turn, rubric: RubricItem, answer: str) -> JsonObject:
    """What a judge sees of one rubric: the turn's question and gold answer, the criterion, the answer."""
    return {"question": turn.prompt, "gold_answer": turn.golden_answer, "rubric": rubric.description,
            "answer": answer}


def published_oddity(text: str | None) -> str | None:
    """Which of ODD_REPLIES a judge reply is (an empty one, or one fenced with ``` that is no JSON as it
    stands), else None."""
    body = (text or "").strip()
    if not body:
        return "empty_replies"
    if "```" in body:
        try:
            json.loads(body)
        except ValueError:
            return "fenced_replies"
    return None


async def _one_verdict(ctx: JudgeContext[VtbOptions], spec: JudgeSpec, question: Question, odd: dict[str, int]
                       ) -> dict[str, Any]:
    name = spec.identity["model"]

    def read_reply(text: str) -> tuple[JsonValue, str]:
        kind = published_oddity(text)
        if kind is not None:
            odd[kind] = odd.get(kind, 0) + 1
        return parse_verdict(text)

    assert ctx.pool is not None
    try:
        label, explanation = await first_answer(ctx.pool, spec, question, ctx.attempts, read_reply)
    except JudgeFailure as exc:
        return {"name": name, "error": str(exc)}
    return {"name": name, "verdict": label, "explanation": explanation}


def _entry_values(tid: str, entry: Mapping[str, Any], profile: str) -> dict[str, Any]:
    return task_values(own_verdicts(Path(SUFFIX), tid, entry, profile)[0], profile)


def _complete(entry: Mapping[str, Any], judges: Sequence[str]) -> bool:
    """Whether an entry needs no rerun: the judges of every rubric of every answered turn are exactly
    `judges` (an entry of another pool is judged again) and each of them answered."""
    for turn in entry.get("turns") or []:
        if not isinstance(turn, Mapping) or turn.get("answered") is False:
            continue
        for rubric in turn.get("rubrics") or []:
            verdicts = [v for v in rubric.get("judges") or [] if isinstance(v, Mapping)]
            names = [name for v in verdicts if isinstance(name := v.get("name"), str)]
            if len(names) != len(verdicts) or sorted(names) != sorted(judges) or \
                    any("verdict" not in v for v in verdicts):
                return False
    return bool(entry.get("turns"))


async def _judge(ctx: JudgeContext[VtbOptions], inputs: TaskInputs) -> dict[str, Any]:
    """One task's entry (`VtbRubrics.verdict`)."""
    where = ctx.files.tasks or "tasks file"
    if inputs.task is None:
        raise InputError(where, "no task record for this prediction", task_id=inputs.task_id)
    assert ctx.pool is not None
    profile = profile_of({"profile": ctx.options.profile})
    turns = task_turns(where, inputs.task, inputs.task_id, profile)
    log_mismatches(inputs.task_id, [r for turn in turns for r in turn.rubrics], profile)
    answers = turn_answers(inputs, len(turns))
    specs = list(ctx.pool.specs)
    jobs = [(k, j, spec, Question(RUBRIC, rubric_payload(turn, r, answers[k] or "")))
            for k, turn in enumerate(turns) if answers[k] is not None for j, r in enumerate(turn.rubrics)
            for spec in specs]
    odd: dict[str, int] = {}
    verdicts = await asyncio.gather(*(_one_verdict(ctx, spec, q, odd) for _, _, spec, q in jobs))
    by_rubric: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for (k, j, _, _), verdict in zip(jobs, verdicts):
        by_rubric.setdefault((k, j), []).append(verdict)
    out_turns: list[dict[str, Any]] = []
    for k, turn in enumerate(turns):
        rubrics = []
        for j, r in enumerate(turn.rubrics):
            judged = by_rubric.get((k, j), [])
            votes = [v["verdict"] if "verdict" in v else FAILED for v in judged]
            met = rubric_outcome(votes, profile) if answers[k] is not None else None
            rubrics.append({"description": r.description, "weight": r.weight, "critical": r.critical,
                            "critical_flag": r.flag, "category": list(r.categories),
                            **({"rubric_id": r.rid} if r.rid is not None else {}),
                            "met": met if isinstance(met, bool) else None, "judges": judged})
        out_turns.append({"answered": answers[k] is not None, "rubrics": rubrics})
    entry: dict[str, Any] = {**task_groups(inputs.task, len(turns)), "profile": profile, "turns": out_turns,
                             **({"odd_replies": {k: odd[k] for k in ODD_REPLIES if k in odd}} if odd else {})}
    values = _entry_values(inputs.task_id, entry, profile)
    for out_turn, scored in zip(out_turns, values["turns"]):
        out_turn.update(scored)
    return {"score": values.get("rubric_score"), "pass": None if "pass_rate" not in values else
            values["pass_rate"] == 1.0, "no_critical": values["no_critical"], "unanswered": values["unanswered"],
            "other_labels": values["other_labels"], "critical_mismatches": values["critical_mismatches"], **entry}


def agreement(per_id: Mapping[str, Mapping[str, Any]], top: int = 10) -> dict[str, Any]:
    """The judges' agreement (nominal) on the rubrics they answered: Krippendorff's alpha (None when
    undefined), the share of rubrics each pair of judges agrees on, and the `top` rubrics the fewest
    judges leave the majority of, among those some judge does (engine.judging.inter_rater)."""
    rows: list[tuple[str, int, int]] = []
    ratings: list[dict[str, float]] = []
    for tid, entry in per_id.items():
        for k, turn in enumerate(entry.get("turns") or []):
            for j, rubric in enumerate(turn.get("rubrics") or []):
                rows.append((tid, k, j))
                ratings.append({v["name"]: float(v["verdict"] == MET) for v in rubric.get("judges") or []
                                if "verdict" in v})
    names, matrix = judges_matrix(ratings)
    found = agreement_of(matrix, "nominal", rows)
    return {"judges": names, "rubrics": len(rows), "krippendorff_alpha": found.alpha,
            "pairwise": [{"judges": [names[p.first], names[p.second]], "agreement": p.value, "rubrics": p.items}
                         for p in found.pairs],
            "most_disagreed": [{"id": rows[d.item][0], "turn": rows[d.item][1] + 1, "rubric": rows[d.item][2] + 1,
                                "verdicts": {n: MET if m else NOT_MET for n, m in ratings[d.item].items()}}
                               for d in found.ranked[:top] if d.disagreement > 0]}


def _passed(value: object) -> str:
    return "pass" if value is True else "fail" if value is False else "not scored"


def _verdict(met: object) -> JsonObject:
    return {"badge": "Met" if met is True else "Not Met" if met is False else "no verdict",
            "pass": met if isinstance(met, bool) else None}


def _judges_cell(judged: Any) -> Any:
    votes = [v for v in judged or [] if isinstance(v, Mapping)]
    if not votes:
        return None
    marks = " ".join("\u2713" if v.get("verdict") == MET else "\u2717" if v.get("verdict") else "?" for v in votes)
    return {"details": marks, "rows": [[str(v.get("name")), str(v.get("verdict") or "no answer"),
                                        {"reply": v.get("explanation", v.get("error"))}] for v in votes]}


def _display(task: Mapping[str, Any] | None) -> list[JsonObject]:
    """The viewer's block of a task (`VtbRubrics.display`)."""
    if task is None or "turns" not in task:
        return []
    score, judges = task.get("rubric_score"), task.get("judges") or []
    passed = None if score is None else task.get("pass_rate") == 1.0
    note = " (no critical rubric)" if task.get("no_critical") else ""
    note += f" \u00b7 {task['unanswered']} judge answer(s) missing" if task.get("unanswered") else ""
    parts: list[dict[str, Any]] = [{"kind": "verdict", "label": "weighted score " + (
        "\u2013" if score is None else f"{score:.3f}"), "pass": passed, "text": _passed(passed), "note": note}]
    turns = task["turns"]
    rows: list[list[list[Any]]] = [[] for _ in turns]
    marked: list[list[int]] = [[] for _ in turns]
    for item, met in task.get("rubrics") or []:
        j = len(rows[item.turn])
        judged = judges[item.turn][j] if item.turn < len(judges) and j < len(judges[item.turn]) else None
        if item.critical and met is False:
            marked[item.turn].append(j)
        rows[item.turn].append([item.description or "\u2013", item.weight, ", ".join(item.categories),
                                {"badge": "critical", "pass": None} if item.critical else "", _verdict(met),
                                _judges_cell(judged)])
    for k, turn in enumerate(turns):
        if len(turns) > 1:
            turn_score = "\u2013" if turn.get("score") is None else f"{turn['score']:.3f}"
            parts.append({"kind": "heading", "text": f"Turn {k + 1}: {turn_score}, {_passed(turn.get('pass'))}"})
        parts.append({"kind": "rows", "head": ["Rubric", "Weight", "Category", "Critical", "Verdict", "Judges"],
                      "rows": rows[k], "marked": marked[k]})
    if any(marked):
        parts.append({"kind": "tags", "tags": [["critical_failed", "failed a critical rubric"]]})
    return [{"title": "Rubrics", "id": "rubrics", "parts": cast(list[JsonValue], parts)}]


class VtbRubrics(Plain[RubricEntry, VtbOptions]):
    """One question per rubric and judge (the pool's first alone under the published profile); the tasks
    file in either shape."""

    card = Card(name=NAME, reads=frozenset({"prediction", "final_answer", "task"}), metrics=METRICS, suffix=SUFFIX,
                option="rubrics", position=30, asked=(RUBRIC,), partial=True)
    options_type = VtbOptions

    async def verdict(self, ctx: JudgeContext[VtbOptions], task: TaskInputs) -> Verdict[RubricEntry]:
        """One task's entry: its breakdown fields, per turn whether it was answered and its rubrics, each with
        every judge's label and explanation (or error) and its verdict under the profile (``met``: true,
        false, null), the turns' and the task's score and pass, and the counts."""
        return Verdict(task.task_id, await _judge(ctx, task))

    def export(self, entries: Mapping[str, RubricEntry], meta: JsonMapping) -> JsonObject:
        """The rubric verdicts file: the aggregate over its entries under the run's profile, the entries, and
        the meta with the judges' agreement (``meta["agreement_top"]`` most disagreed rubrics, default 10)."""
        profile = profile_of(meta)
        values = [_entry_values(tid, e, profile) for tid, e in entries.items()]
        top = meta.get("agreement_top", 10)
        return {"aggregate": aggregate_values(values), "per_id": cast(JsonObject, dict(entries)),
                "meta": {**meta, "profile": profile,
                         "agreement": agreement(entries, int(top) if isinstance(top, (int, float)) else 10)}}

    def load(self, path: Path) -> dict[str, RubricEntry]:
        """The entries of an earlier rubrics file (engine.evaluators.vtb_files.entries)."""
        return entries(path)

    def complete(self, entry: RubricEntry, judges: Sequence[str]) -> bool:
        """Whether an entry needs no rerun: the judges of every rubric of every answered turn are exactly
        `judges` (an entry of another pool is judged again) and each of them answered."""
        return _complete(entry, judges)

    def one_judge(self, options: VtbOptions, judges: Judges) -> PoolJudge | None:
        """The pool's first judge under the published profile (its label alone counts), else None (every
        judge)."""
        return pool_judge(judges) if profile_of({"profile": options.profile}) == "published" else None

    def read_tasks(self, path: Path) -> dict[str, TaskRecord]:
        """The tasks file in this project's shape or VisualToolBench's released one."""
        return read_task_records(path)

    def read(self, path: Path, settings: ReadSettings) -> Verdicts:
        """Per task id its ``rubric_score`` and ``pass_rate`` under the profile (default published), with its
        detail (engine.evaluators.vtb_files.read_verdicts)."""
        return read_verdicts(Path(path), check_profile(settings.vtb_profile or DEFAULT_PROFILE))

    def aggregate(self, verdicts: Verdicts, ids: Sequence[str]) -> JsonObject:
        """``{"rubrics": {...}}`` over these ids (engine.evaluators.vtb_scoring.aggregate_values)."""
        return {"rubrics": aggregate_values([verdicts.detail[i] for i in ids if i in verdicts.detail])}

    def display(self, task: JsonMapping | None, meta: JsonMapping) -> list[JsonObject]:
        """The viewer's block of a task: its weighted score and pass, per turn each rubric (description,
        weight, categories, critical) with its verdict and the judges' verdicts and explanations (the judges
        only in this evaluator's own file)."""
        return _display(task)

    def scripted_answer(self, purpose: str) -> ScriptedAnswer | None:
        """The scripted judge's reply to the rubric prompt (`scripted_reply`)."""
        return scripted_reply if purpose == RUBRIC.purpose else None


EVALUATOR: Evaluator[RubricEntry, VtbOptions] = VtbRubrics()
