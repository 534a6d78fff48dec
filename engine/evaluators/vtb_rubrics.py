"""VisualToolBench rubrics: per-rubric Met / Not Met verdicts of the judge pool, the weighted rubric score
and the critical-gated pass of each task, and their averages ARS and APR.

A task (the task record) has ``turns``, each ``{prompt, golden_answer, rubrics}`` (a single-turn task
may give ``prompt`` or ``question``, ``golden_answer`` and ``rubrics`` at its top level). A rubric is
``{description, weight: 1..5, critical: bool (optional), category: str or [str] (optional)}``.

- Critical: the rubric's ``critical`` flag when the task gives it, else weight >= 4; a flag that
  disagrees with weight >= 4 is kept and logged (and counted under ``critical_mismatches``).
- Judging: one question per rubric and judge (the question of its turn, the turn's gold answer, the
  rubric and the model's answer to that turn); the reply is ``{"explanation", "judge_result": "Met" |
  "Not Met"}``. A rubric's verdict is the majority of the judges that answered; a tie is Not Met (a
  criterion counts as met only when more judges say so than not). A judge that gives no usable reply
  in its attempts is recorded with its error and counted under ``unanswered``, never as Not Met; a
  rubric no judge answered has no verdict, and its task is not scored until a rerun answers it.
- Task i: s_i = sum_j met_ij * w_ij / sum_j w_ij over all rubrics of all its turns (pooled);
  pass_i = every critical rubric of every turn met. A task without any critical rubric passes only
  when every rubric is met (s_i = 1), and is counted under ``no_critical``. Each turn keeps its own
  score and pass by the same rules.
- ARS = mean of s_i, APR = mean of pass_i over the scored tasks (macro over tasks); per category the
  same over the tasks having rubrics of that category, each task scored on those rubrics alone.

The answer to turn k is the prediction's ``turns[k]`` (a string or an object with ``final_reply``)
when it has one reply per turn, else its final reply for every turn (a rollout that put all turns to
the model in one question answers them in its one reply).

The file ``<predictions stem>_rubrics.json`` is ``{"aggregate", "per_id": {id: entry}, "meta"}``;
`read` also takes the drop-in verdicts list ``[{"id", "rubrics": [{"weight", "critical"?, "met",
"category"?}]}]``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.contract import InputError, read_json
from engine.evaluators.base import (PROFILES, Evaluator, JudgeContext, Metric, TaskInputs, Verdicts, file_entries,
                                    mean_or_none, root_entries)
from engine.evaluators.judging import JudgeFailure, Question, Rubric, first_answer, json_object

log = logging.getLogger(__name__)

NAME = "vtb_rubrics"
SUFFIX = "rubrics"
MET, NOT_MET = "Met", "Not Met"
UNCATEGORIZED = "uncategorized"

METRICS: tuple[Metric, ...] = (
    Metric("rubric_score", "Average Rubric Score", NAME, PROFILES, "judged_mean", False, True, 0.0, 1.0),
    Metric("pass_rate", "Average Pass Rate", NAME, PROFILES, "judged_mean", False, True, 0.0, 1.0),
)
"""ARS and APR: plain means of the tasks' ``rubric_score`` and 0/1 ``pass_rate`` over the scored tasks;
`aggregate` adds the ``rubrics`` block (per category, counts)."""
KEYS: tuple[str, ...] = tuple(m.key for m in METRICS)

RUBRIC = Rubric(
    "vtb_rubric", "vtb-rubric-1",
    "You check one criterion of a rubric against an AI model's answer to a visual question.\n"
    "You are given the question, the gold answer, a single rubric criterion and the model's answer. Decide "
    "whether the answer meets the criterion; judge that criterion alone, nothing else.\n"
    "- Do not require the answer to be correct in ways the criterion does not ask for.\n"
    "- A criterion the answer satisfies implicitly (clearly implied, or shown by its working) is met.\n"
    "- For criteria about writing style or presentation, be lenient.\n"
    "Reply with one JSON object and nothing else: "
    "{\"explanation\": \"<one or two sentences>\", \"judge_result\": \"Met\" or \"Not Met\"}.",
    user="Question:\n{question}\n\nGold answer:\n{gold_answer}\n\nCriterion:\n{rubric}\n\nModel's answer:\n{answer}")


@dataclass(frozen=True)
class RubricItem:
    """One rubric of a task: its text, weight, effective critical flag, the flag the task gave (None
    when absent), its categories and its turn (0-based)."""

    description: str
    weight: int
    critical: bool
    flag: bool | None
    categories: tuple[str, ...]
    turn: int = 0

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


@dataclass(frozen=True)
class TaskScore:
    """A task's (or a turn's) weighted rubric score and pass; both None when some rubric has no verdict."""

    score: float | None
    passed: bool | None
    no_critical: bool


def critical_of(weight: int, flag: bool | None) -> bool:
    """The explicit flag when given, else weight >= 4."""
    return flag if flag is not None else weight >= 4


def task_score(weights: Sequence[int], critical: Sequence[bool], met: Sequence[bool | None]) -> TaskScore:
    """s = sum(met * w) / sum(w); pass = every critical rubric met, or, with no critical rubric, every
    rubric met. None for both when some verdict is None."""
    if not weights:
        raise ValueError("a task needs at least one rubric")
    no_critical = not any(critical)
    if any(m is None for m in met):
        return TaskScore(None, None, no_critical)
    score = sum(w for w, m in zip(weights, met) if m) / sum(weights)
    if no_critical:
        return TaskScore(score, all(met), True)
    return TaskScore(score, all(m for c, m in zip(critical, met) if c), False)


def score_items(items: Sequence[RubricItem], met: Sequence[bool | None]) -> TaskScore:
    """task_score of some rubrics and their verdicts."""
    return task_score([r.weight for r in items], [r.critical for r in items], met)


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


def rubric_item(path: Path | str, raw: Any, task_id: str, where: str, turn: int = 0,
                need_text: bool = True) -> RubricItem:
    """One rubric object, checked (weight an integer 1-5, critical a bool or absent)."""
    if not isinstance(raw, Mapping):
        raise InputError(path, "a rubric must be an object", task_id=task_id, field=where)
    weight = raw.get("weight")
    if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 5:
        raise InputError(path, f"must be an integer 1-5, got {weight!r}", task_id=task_id, field=f"{where}.weight")
    flag = raw.get("critical")
    if flag is not None and not isinstance(flag, bool):
        raise InputError(path, f"must be true, false or absent, got {flag!r}", task_id=task_id,
                         field=f"{where}.critical")
    description = _text(path, raw.get("description"), task_id, f"{where}.description", need_text)
    return RubricItem(description, weight, critical_of(weight, flag), flag,
                      _categories(path, raw.get("category"), task_id, f"{where}.category"), turn)


def _rubric_list(path: Path | str, raw: Any, task_id: str, where: str) -> list[Any]:
    if not isinstance(raw, list) or not raw:
        raise InputError(path, "must be a non-empty list of rubrics", task_id=task_id, field=where)
    return raw


def task_turns(path: Path | str, task: Mapping[str, Any], task_id: str) -> list[Turn]:
    """The turns of a task record (a single-turn task may give its fields at the top level), checked."""
    raw_turns = task.get("turns")
    if raw_turns is None:
        raw_turns, prefix = [{"prompt": task.get("prompt", task.get("question")), **task}], ""
    elif not isinstance(raw_turns, list) or not raw_turns:
        raise InputError(path, "must be a non-empty list of turns", task_id=task_id, field="turns")
    else:
        prefix = "turns"
    turns = []
    for k, raw in enumerate(raw_turns):
        where = f"{prefix}[{k}]." if prefix else ""
        if not isinstance(raw, Mapping):
            raise InputError(path, "a turn must be an object", task_id=task_id, field=f"{prefix}[{k}]")
        rubrics = _rubric_list(path, raw.get("rubrics"), task_id, f"{where}rubrics")
        items = tuple(rubric_item(path, r, task_id, f"{where}rubrics[{j}]", k) for j, r in enumerate(rubrics))
        turns.append(Turn(_text(path, raw.get("prompt"), task_id, f"{where}prompt"),
                          _text(path, raw.get("golden_answer"), task_id, f"{where}golden_answer", False), items))
    return turns


def read_task_records(path: str | Path) -> dict[str, dict[str, Any]]:
    """id -> task record of a tasks file (a list of objects with an id, or an object of id -> object),
    each checked to have turns with rubrics."""
    path = Path(path)
    root = read_json(path, "tasks file")
    if isinstance(root, dict):
        items = [(str(k), v) for k, v in root.items()]
    elif isinstance(root, list):
        items = [(v.get("id") if isinstance(v, dict) else None, v) for v in root]
    else:
        raise InputError(path, "the root must be a list of tasks or an object of id -> task")
    out = {}
    for position, (tid, record) in enumerate(items):
        if isinstance(tid, bool) or not isinstance(tid, (str, int)) or not isinstance(record, dict):
            raise InputError(path, "a task must be an object with an id", task_id=f"#{position}", field="id")
        task_turns(path, record, str(tid))
        out[str(tid)] = record
    return out


def log_mismatches(task_id: str, items: Sequence[RubricItem], level: int = logging.WARNING) -> int:
    """Log the rubrics whose critical flag disagrees with weight >= 4 (the flag is kept); their number."""
    odd = [f"turn {r.turn + 1} weight {r.weight} critical {str(r.flag).lower()}" for r in items if r.mismatch]
    if odd:
        log.log(level, "task %s: %d rubric(s) flagged critical otherwise than weight >= 4 (the flag is kept): %s",
                    task_id, len(odd), "; ".join(odd))
    return len(odd)


def turn_answers(inputs: TaskInputs, n_turns: int) -> list[str]:
    """The model's answer to each turn: the prediction's per-turn replies, else its final reply for all."""
    raw = inputs.prediction.raw if inputs.prediction is not None else {}
    per_turn = raw.get("turns")
    if isinstance(per_turn, list) and len(per_turn) == n_turns:
        answers = []
        for reply in per_turn:
            if isinstance(reply, Mapping):
                reply = reply.get("final_reply", reply.get("final_answer"))
            answers.append(reply if isinstance(reply, str) else "")
        return answers
    return [inputs.final_answer or ""] * n_turns


def parse_verdict(text: str) -> tuple[bool, str]:
    """(met, explanation) of a judge reply ``{"explanation", "judge_result": "Met" | "Not Met"}``;
    ValueError for any other reply."""
    reply = json_object(text)
    result = reply.get("judge_result")
    label = " ".join(result.split()).casefold() if isinstance(result, str) else None
    if label not in (MET.casefold(), NOT_MET.casefold()):
        raise ValueError(f"judge_result must be 'Met' or 'Not Met', got {result!r}")
    explanation = reply.get("explanation")
    return label == MET.casefold(), explanation if isinstance(explanation, str) else ""


def majority(votes: Sequence[bool]) -> bool | None:
    """Met when more judges say Met than Not Met; a tie is Not Met; None when no judge answered."""
    if not votes:
        return None
    return sum(votes) > len(votes) - sum(votes)


_QUOTED = re.compile(r'"([^"]+)"')


def scripted_verdict(payload: Mapping[str, Any], strict: bool = False) -> str:
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
    return '{"explanation": "%s", "judge_result": "%s"}' % (why.replace('"', "'"), MET if met else NOT_MET)


def scripted_answer(payload: dict[str, Any], bias: float) -> str:
    """The offline scripted judge's reply: `scripted_verdict`, matching case exactly for a judge with
    bias <= -0.1 (so judges of a scripted pool can disagree)."""
    return scripted_verdict(payload, strict=bias <= -0.1)


def rubric_payload(turn: Turn, rubric: RubricItem, answer: str) -> dict[str, Any]:
    """What a judge sees of one rubric: the turn's question and gold answer, the criterion, the answer."""
    return {"question": turn.prompt, "gold_answer": turn.golden_answer, "rubric": rubric.description,
            "answer": answer}


async def _one_verdict(ctx: JudgeContext, spec: Any, question: Question) -> dict[str, Any]:
    name = spec.identity["model"]
    try:
        met, explanation = await first_answer(ctx.pool, spec, question, ctx.attempts, parse_verdict)
    except JudgeFailure as exc:
        return {"name": name, "error": str(exc)}
    return {"name": name, "verdict": MET if met else NOT_MET, "explanation": explanation}


def _score_json(score: TaskScore) -> dict[str, Any]:
    return {"score": score.score, "pass": score.passed, "no_critical": score.no_critical}


async def judge(ctx: JudgeContext, inputs: TaskInputs) -> dict[str, Any]:
    """One task's entry: per turn its rubrics, each with every judge's verdict and explanation (or error)
    and the majority verdict, the turn's score and pass, and the pooled score and pass of the task."""
    if inputs.task is None:
        raise InputError("tasks", "no task record for this prediction", task_id=inputs.task_id)
    turns = task_turns("tasks", inputs.task, inputs.task_id)
    log_mismatches(inputs.task_id, [r for turn in turns for r in turn.rubrics])
    answers = turn_answers(inputs, len(turns))
    specs = list(ctx.pool.specs)
    jobs = [(k, j, spec, Question(RUBRIC, rubric_payload(turn, r, answers[k])))
            for k, turn in enumerate(turns) for j, r in enumerate(turn.rubrics) for spec in specs]
    verdicts = await asyncio.gather(*(_one_verdict(ctx, spec, q) for _, _, spec, q in jobs))
    by_rubric: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for (k, j, _, _), verdict in zip(jobs, verdicts):
        by_rubric.setdefault((k, j), []).append(verdict)
    out_turns, pooled, pooled_met = [], [], []
    for k, turn in enumerate(turns):
        rubrics, met_list = [], []
        for j, r in enumerate(turn.rubrics):
            judged = by_rubric[(k, j)]
            met = majority([v["verdict"] == MET for v in judged if "verdict" in v])
            met_list.append(met)
            rubrics.append({"description": r.description, "weight": r.weight, "critical": r.critical,
                            "critical_flag": r.flag, "category": list(r.categories), "met": met, "judges": judged})
        out_turns.append({**_score_json(score_items(turn.rubrics, met_list)), "rubrics": rubrics})
        pooled += turn.rubrics
        pooled_met += met_list
    unanswered = sum(1 for v in verdicts if "error" in v)
    return {**_score_json(score_items(pooled, pooled_met)), "unanswered": unanswered,
            "critical_mismatches": sum(r.mismatch for r in pooled), "turns": out_turns}


def complete(entry: Mapping[str, Any], judges: Sequence[str]) -> bool:
    """Whether an entry needs no rerun: the judges of every rubric are exactly `judges` (an entry of
    another pool is judged again) and each of them answered."""
    for turn in entry.get("turns") or []:
        for rubric in turn.get("rubrics") or []:
            verdicts = [v for v in rubric.get("judges") or [] if isinstance(v, Mapping)]
            if sorted(v.get("name") for v in verdicts) != sorted(judges) or any("verdict" not in v for v in verdicts):
                return False
    return bool(entry.get("turns"))


def _met(path: Path, value: Any, task_id: str, where: str, allow_none: bool) -> bool | None:
    if isinstance(value, bool) or (allow_none and value is None):
        return value
    raise InputError(path, f"must be true or false{' or null' if allow_none else ''}, got {value!r}",
                     task_id=task_id, field=where)


def _record_values(path: Path, task_id: str, record: Mapping[str, Any], own: bool) -> dict[str, Any]:
    """The values of one task: from an entry of this evaluator's file (`own`, per turn) or a drop-in record."""
    if own:
        turns = record.get("turns")
        if not isinstance(turns, list) or not turns:
            raise InputError(path, "must be a non-empty list of turns", task_id=task_id, field="turns")
        blocks = [(k, t.get("rubrics") if isinstance(t, Mapping) else None, f"turns[{k}].rubrics")
                  for k, t in enumerate(turns)]
    else:
        blocks = [(0, record.get("rubrics"), "rubrics")]
    items: list[RubricItem] = []
    met: list[bool | None] = []
    per_turn = []
    for k, rubrics, where in blocks:
        rubrics = _rubric_list(path, rubrics, task_id, where)
        # an entry of this evaluator's file keeps the task's own flag as critical_flag
        given = [{**r, "critical": r.get("critical_flag")} if own and isinstance(r, Mapping) else r for r in rubrics]
        turn_items = [rubric_item(path, r, task_id, f"{where}[{j}]", k, need_text=False) for j, r in enumerate(given)]
        turn_met = [_met(path, r.get("met"), task_id, f"{where}[{j}].met", own) for j, r in enumerate(rubrics)]
        per_turn.append(_score_json(score_items(turn_items, turn_met)))
        items += turn_items
        met += turn_met
    score = score_items(items, met)
    values: dict[str, Any] = {"rubrics": list(zip(items, met)), "turns": per_turn, "no_critical": score.no_critical,
                              "unanswered": record.get("unanswered", 0) if own else 0,
                              "critical_mismatches": sum(r.mismatch for r in items)}
    if score.score is not None:
        values["rubric_score"] = score.score
        values["pass_rate"] = 1.0 if score.passed else 0.0
    return values


def _object_entry(path: Path, task_id: str, entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise InputError(path, "must be an object of id -> entry", field="per_id")
    return entry


def entries(path: Path) -> dict[str, dict[str, Any]]:
    """id -> entry of an earlier file of this evaluator (to resume); empty when there is none."""
    path = Path(path)
    return file_entries(path, "rubric verdicts file", _object_entry) if path.is_file() else {}


def read(path: Path) -> Verdicts:
    """Per task id its ``rubric_score`` and ``pass_rate`` (0 or 1; absent while some rubric has no
    verdict), and as its detail these with its rubrics and their verdicts, per-turn scores and counts;
    from this evaluator's file or a drop-in verdicts list. Critical-flag mismatches are logged (one warning
    per file)."""
    path = Path(path)
    root = read_json(path, "rubric verdicts file")
    own = isinstance(root, dict) and "per_id" in root
    if own:
        records = list(root_entries(path, root, _object_entry).items())
    elif isinstance(root, list):
        records = []
        for position, record in enumerate(root):
            tid = record.get("id") if isinstance(record, dict) else None
            if isinstance(tid, bool) or not isinstance(tid, (str, int)):
                raise InputError(path, "a verdicts record must be an object with an id", task_id=f"#{position}",
                                 field="id")
            records.append((str(tid), record))
    else:
        raise InputError(path, "the root must be a rubric verdicts file {aggregate, per_id, meta} or a list of "
                               "{id, rubrics} records")
    out = Verdicts()
    mismatches = 0
    for tid, record in records:
        values = _record_values(path, tid, record, own)
        mismatches += log_mismatches(tid, [item for item, _ in values["rubrics"]], logging.INFO)
        out.per_id[tid] = {k: values[k] for k in KEYS if k in values}
        out.detail[tid] = values
    if mismatches:
        log.warning("%s: %d rubric(s) flagged critical otherwise than weight >= 4 (the flag is kept; each is "
                    "logged at INFO)", path, mismatches)
    out.totals["critical_mismatches"] = mismatches
    return out


def aggregate(values: Verdicts, ids: Sequence[str]) -> dict[str, Any]:
    """``{"rubrics": {...}}`` over these ids: ARS and APR (means over the scored tasks), per category
    ARS and APR (each task scored on its rubrics of the category), and the counts: tasks scored, tasks
    not scored (a rubric without verdict), tasks without critical rubric, (judge, rubric) pairs the
    judge could not answer, and critical-flag mismatches."""
    present = [values.detail[i] for i in ids if i in values.detail]
    scored = [v for v in present if "rubric_score" in v]
    by_category: dict[str, dict[str, list[float]]] = {}
    for v in scored:
        categories = sorted({c for item, _ in v["rubrics"] for c in item.categories})
        for category in categories:
            pairs = [(item, met) for item, met in v["rubrics"] if category in item.categories]
            score = score_items([p[0] for p in pairs], [p[1] for p in pairs])
            block = by_category.setdefault(category, {"scores": [], "passes": []})
            block["scores"].append(score.score)
            block["passes"].append(1.0 if score.passed else 0.0)
    return {"rubrics": {
        "ARS": mean_or_none([v["rubric_score"] for v in scored]), "APR": mean_or_none([v["pass_rate"] for v in scored]),
        "tasks": len(scored), "unscored": len(present) - len(scored),
        "no_critical": sum(1 for v in scored if v["no_critical"]),
        "unanswered": sum(v["unanswered"] for v in present),
        "critical_mismatches": sum(v["critical_mismatches"] for v in present),
        "by_category": {c: {"ARS": mean_or_none(b["scores"]), "APR": mean_or_none(b["passes"]),
                            "tasks": len(b["scores"])} for c, b in sorted(by_category.items())}}}


def agreement(per_id: Mapping[str, Mapping[str, Any]], top: int = 10) -> dict[str, Any]:
    """The judges' agreement on the rubrics they all answered: Krippendorff's alpha (nominal; None when
    undefined), the share of rubrics each pair of judges agrees on, and the rubrics split most evenly."""
    rows: list[tuple[str, int, int, dict[str, bool]]] = []
    for tid, entry in per_id.items():
        for k, turn in enumerate(entry.get("turns") or []):
            for j, rubric in enumerate(turn.get("rubrics") or []):
                votes = {v["name"]: v["verdict"] == MET for v in rubric.get("judges") or [] if "verdict" in v}
                rows.append((tid, k, j, votes))
    names = sorted({n for *_, votes in rows for n in votes})
    alpha = None
    matrix = [[float(votes[n]) if n in votes else float("nan") for *_, votes in rows] for n in names]
    values = {v for row in matrix for v in row if v == v}
    if len(names) >= 2 and len(rows) >= 2 and len(values) >= 2:
        import krippendorff

        alpha = float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"))
    pairs = []
    for a, b in itertools.combinations(names, 2):
        both = [votes for *_, votes in rows if a in votes and b in votes]
        pairs.append({"judges": [a, b], "agreement": mean_or_none([float(v[a] == v[b]) for v in both]),
                      "rubrics": len(both)})
    split = [(min(sum(v.values()), len(v) - sum(v.values())), tid, k, j, v) for tid, k, j, v in rows if len(v) >= 2]
    split.sort(key=lambda item: (-item[0], item[1], item[2], item[3]))
    return {"judges": names, "rubrics": len(rows), "krippendorff_alpha": alpha, "pairwise": pairs,
            "most_disagreed": [{"id": tid, "turn": k + 1, "rubric": j + 1,
                                "verdicts": {n: MET if m else NOT_MET for n, m in v.items()}}
                               for minority, tid, k, j, v in split[:top] if minority > 0]}


def document(per_id: dict[str, dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    """The rubric verdicts file: the aggregate over its entries, the entries, and the meta with the
    judges' agreement (``meta["agreement_top"]`` most disagreed rubrics, default 10)."""
    values = Verdicts(detail={tid: _record_values(Path("rubrics"), tid, e, True) for tid, e in per_id.items()})
    top = int(meta.get("agreement_top", 10))
    return {"aggregate": aggregate(values, list(per_id))["rubrics"], "per_id": per_id,
            "meta": {**meta, "agreement": agreement(per_id, top)}}


EVALUATOR = Evaluator(name=NAME, reads=frozenset({"prediction", "final_answer", "task"}), metrics=METRICS,
                      suffix=SUFFIX, judge=judge, document=document, entries=entries, read=read, aggregate=aggregate,
                      option="rubrics", position=30, scripted={RUBRIC.purpose: scripted_answer},
                      complete=complete)
