"""Answer equivalence (MCPVerse's outcome check for textual ground truth): an LLM judge says whether the
agent's final answer agrees with the task's ground truth; the Success Rate per complexity level and their
macro mean.

Two readings of the judge's reply and of the levels, ``evaluators.answer_equivalence.parser``:

- ``published`` (the default; MCPVerse's ``mcpverse/judger.py``, ``runner.py`` and ``stats.py``): the
  judge is asked with a prompt laid out as the published one (reason first, then the score in a fenced
  ```json block); the score is the ``score`` of the FIRST fenced ```json {...}``` block, as JSON, and may
  be fractional (0.5), boolean (true is 1) or a numeric string ("1"); a reply without such a block, or
  whose score is no number in [0, 1], is unusable; one judge (the pool's first: the reducer ``first``);
  a task's level may be any label or none, each one group of the macro mean (a task with no level is its
  own group);
- ``strict`` (the project's reading): the score is the LAST ``"score": 0|1`` of a JSON-like object
  anywhere in the reply (fenced or not); only 0 and 1; every judge of the pool, the reducer ``majority``
  (a tie is 0); the level must be L1, L2 or L3.

Per task (an entry of ``<predictions stem>_answers.json``):

- no ground truth (``ground_truth`` null or absent): skipped, no judge is asked; counted apart, never 0;
  a ground truth that is not a non-empty string or finite number (NaN) is refused;
- a time-dependent answer (``answer_template``: MCPVerse's ``templates/<id>.py``, whose
  ``get_reference()`` fetches it): the template runs at scoring time in its own process (as check
  scripts run, ``timeout``), its answer is the ground truth, recorded with ``reference_fetched_at``;
  a template that fails, or returns what a tasks file's ground truth could not be (nothing, NaN, a list),
  leaves the task unjudged with its ``error`` (counted apart);
- a state check (``eval_script``: MCPVerse's ``eval_scripts/Q*.py``, ``run_test(pred, path)``): the
  script runs in its own process with a time limit (engine.evaluators.verifiers), ``path`` being the
  task's ground truth resolved in the task's final workspace; E = 1 when it returns a true value; a
  script that raises, hangs or dies is an ``error``: E = 0 under ``published`` (as its runner counts
  it), no E under ``strict``, named in the entry either way;
- no prediction (the agent run crashed or never ended) or no final answer: E = 0, no judge is asked;
- otherwise the judge reasons, then answers; a reply without a usable score is a failed attempt
  (retried up to the attempts setting); a judge that never answers leaves the task unjudged (listed in
  ``meta.failed``, judged again by the next run), never 0.

Aggregate over the judged tasks (skipped and erred ones excluded): ``answer_sr_l1``/``_l2``/``_l3`` =
mean E of the tasks of that level (null when the level has none); ``answer_sr`` = the macro mean over
the level groups present (MCPVerse's SR is (SR_L1 + SR_L2 + SR_L3) / 3; a level with no judged task is
left out of the mean, not counted as 0; under ``published`` a task without a level, or with another
label, forms its own group as ``stats.py``'s groupby does); ``answer_sr_micro`` = mean E over all judged
tasks, for reference; ``answer_judged`` and ``answer_skipped`` count the tasks.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypedDict, cast

from engine.contract import InputError, JsonMapping, JsonObject, JsonValue
from engine.contract.settings import Judges
from engine.evaluators.answer_parsing import (
    ODD_SCORES,
    PROMPT,
    PUBLISHED_PROMPT,
    REDUCERS,
    parse_published,
    parse_verdict,
    parser_of,
    published_oddity,
    scripted_answer,
)
from engine.evaluators.answer_rates import LEVELS, NO_LEVEL, level_rates, success_rates
from engine.evaluators.base import (
    PROFILES,
    Metric,
    PoolJudge,
    TaskInputs,
    Verdicts,
    file_document,
    file_entries,
    pool_judge,
)
from engine.evaluators.check_scripts import (
    CheckFailed,
    run_check,
    script_imports,
    skipped_note,
    task_script,
    task_workspace,
)
from engine.evaluators.protocol import (
    Card,
    Evaluator,
    EvaluatorOptions,
    JudgeContext,
    Plain,
    ReadSettings,
    RunFiles,
    ScriptedAnswer,
    Verdict,
)
from engine.judging import Question, SandboxSettings, check_settings, first_answer, reducer

log = logging.getLogger(__name__)

NAME = "answer_equivalence"
SUFFIX = "answers"


@dataclass
class AnswerOptions(EvaluatorOptions):
    """``evaluators.answer_equivalence``: the reading (published | strict, checked where it is read) and the
    seconds a check script or answer template may run."""

    parser: str = "published"
    timeout: float = 60


class _Answered(TypedDict):
    level: str | None
    score: float | None
    judges: dict[str, float]


class AnswerEntry(_Answered, total=False):
    """A task's entry: level, score (null: skipped or erred), each judge's score and reply, why no judge was
    asked, the check script's or answer template's error, a fetched ground truth, the odd replies."""

    replies: dict[str, str]
    reason: str
    error: str
    ground_truth: str
    reference_fetched_at: str
    odd_scores: dict[str, int]

_OUTPUTS = re.compile(r"^\./outputs/\{OUTPUT_SUB_FOLDER\}/task_outputs(?=/|$)/?")
"""The published runner's output folder in a check script's path: the task's workspace here."""


def usable_truth(value: object) -> bool:
    """Whether a ground truth (a tasks file's, or what an answer template returned) can be judged against:
    a non-empty string or a finite number (NaN, infinities, booleans, lists and blanks cannot)."""
    return (isinstance(value, (str, int, float)) and not isinstance(value, bool)
            and not (isinstance(value, float) and not math.isfinite(value)) and bool(str(value).strip()))


def task_fields(where: Path | str, task_id: str, task: Mapping[str, Any] | None,
                parser: str) -> tuple[str | None, str | None, str]:
    """The task's level, ground truth and question, checked (InputError naming the tasks file `where`); a task
    without ground truth needs no level, nor does any task under the published reading."""
    task = task or {}
    truth = task.get("ground_truth")
    if truth is not None and not usable_truth(truth):
        raise InputError(where, f"must be a non-empty string, a finite number or null, got {truth!r}",
                         task_id=task_id, field="ground_truth")
    level = task.get("level")
    if parser == "published":
        if level is not None and (not isinstance(level, str) or not level.strip()):
            raise InputError(where, f"must be a level label or null, got {level!r}", task_id=task_id,
                             field="level")
    elif level not in LEVELS and (truth is not None or level is not None):
        raise InputError(where, f"must be one of {', '.join(LEVELS)}, got {level!r}", task_id=task_id,
                         field="level")
    question = task.get("question")
    if not isinstance(question, str) or not question.strip():
        raise InputError(where, "missing or empty text", task_id=task_id, field="question")
    return level, None if truth is None else str(truth), question


async def _fetched_truth(ctx: JudgeContext[AnswerOptions], inputs: TaskInputs, settings: SandboxSettings
                         ) -> dict[str, Any]:
    """The ground truth a task's answer template gives now: {"ground_truth", "reference_fetched_at"}, or
    {"error"} when the template fails."""
    tasks_file = ctx.files.tasks or Path("tasks file")
    module = task_script(tasks_file, inputs.task_id, (inputs.task or {})["answer_template"], "answer_template")
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    try:
        value, _ = await run_check(module, module.parent.parent, None, None, None, settings,
                                   call=("get_reference", []), package=True)
    except ValueError as exc:
        return {"error": f"answer template: {exc}"}
    if not usable_truth(value):
        return {"error": f"answer template: returned {repr(value)[:80]}, no answer (a ground truth is a non-empty "
                         "string or a finite number)"}
    return {"ground_truth": str(value), "reference_fetched_at": when}


async def _state_check(ctx: JudgeContext[AnswerOptions], inputs: TaskInputs, truth: str | None, parser: str,
                       settings: SandboxSettings) -> dict[str, Any]:
    """A task's check script run on its answer and its workspace: {"score"} or {"score", "error"}."""
    tasks_file = ctx.files.tasks or Path("tasks file")
    module = task_script(tasks_file, inputs.task_id, (inputs.task or {})["eval_script"], "eval_script")
    workspace = task_workspace(inputs.workspace, inputs.task_id)
    # the check gets a copy of the workspace: "{workspace}" in an argument is that copy's path
    target = ("{workspace}/" + _OUTPUTS.sub("", truth)) if truth and _OUTPUTS.match(truth) and workspace else truth
    try:
        passed, skipped = await run_check(module, module.parent.parent, None, workspace, None, settings,
                                          call=("run_test", [inputs.final_answer, target]), package=True)
    except CheckFailed as exc:
        _log_skipped(inputs.task_id, exc.skipped)
        return {"score": 0 if parser == "published" else None, "error": f"check script: {exc}"}
    _log_skipped(inputs.task_id, skipped)
    return {"score": int(bool(passed))}


def _log_skipped(task_id: str, skipped: Sequence[str]) -> None:
    """A warning naming the entries of the task's workspace left out of its check script's copy."""
    if skipped:
        log.warning("%s: task %s: %s", NAME, task_id, skipped_note(skipped))


async def judge(ctx: JudgeContext[AnswerOptions], inputs: TaskInputs) -> dict[str, object]:
    """One task's entry: level, score (0, 1, a fraction under the published reading, or null when skipped
    or erred), each judge's score and reply, and why no judge was asked when none was."""
    parser = parser_of({"parser": ctx.options.parser})
    level, truth, question = task_fields(ctx.files.tasks or "tasks file", inputs.task_id, inputs.task, parser)
    task = inputs.task or {}
    settings = check_settings({"timeout": ctx.options.timeout}, f"evaluators.{NAME}")
    fetched: dict[str, Any] = {}
    if task.get("answer_template") is not None:
        fetched = await _fetched_truth(ctx, inputs, settings)
        if "error" in fetched:
            return {"level": level, "score": None, "judges": {}, "error": fetched["error"]}
        truth = fetched["ground_truth"]
    if task.get("eval_script") is not None:
        if inputs.prediction is None:
            return {"level": level, "score": 0, "judges": {}, "reason": "no prediction (the agent run did not end)"}
        return {"level": level, "judges": {}, **await _state_check(ctx, inputs, truth, parser, settings)}
    if truth is None:
        return {"level": level, "score": None, "judges": {}, "reason": "no ground truth (skipped)"}
    if inputs.prediction is None:
        return {"level": level, "score": 0, "judges": {}, "reason": "no prediction (the agent run did not end)",
                **fetched}
    answer = inputs.final_answer
    if answer is None or not answer.strip():
        return {"level": level, "score": 0, "judges": {}, "reason": "no final answer", **fetched}
    prompt, parse = (PUBLISHED_PROMPT, parse_published) if parser == "published" else (PROMPT, parse_verdict)
    assert ctx.pool is not None
    ask = Question(prompt, {"question": question, "reference_answer": truth, "agent_answer": answer})
    specs = list(ctx.pool.specs)[:1] if parser == "published" else list(ctx.pool.specs)
    odd: dict[str, int] = {}

    def read_reply(text: str) -> tuple[float, str]:
        kind = published_oddity(text)
        if kind is not None:
            odd[kind] = odd.get(kind, 0) + 1
        return parse(text), text

    answers = await asyncio.gather(*(first_answer(ctx.pool, spec, ask, ctx.attempts, read_reply)
                                     for spec in specs), return_exceptions=True)
    got: list[tuple[float, str]] = []
    for outcome in answers:
        if isinstance(outcome, BaseException):
            raise outcome
        got.append(outcome)
    names = [spec.identity["model"] for spec in specs]
    scores = {name: score for name, (score, _) in zip(names, got, strict=True)}
    score = reducer(REDUCERS[parser])(list(scores.values()))
    return {"level": level, "score": score, "judges": scores, **fetched, **({"odd_scores": odd} if odd else {}),
            "replies": {name: reply for name, (_, reply) in zip(names, got, strict=True)}}


def _check_entry(path: Path, task_id: str, entry: object) -> AnswerEntry:
    if not isinstance(entry, dict):
        raise InputError(path, "must be an object {level, score, judges}", task_id=task_id)
    level = entry.get("level")
    if level is not None and (not isinstance(level, str) or not level.strip()):
        raise InputError(path, f"must be a level label or null, got {level!r}", task_id=task_id, field="level")
    score = entry.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))
                              or not 0.0 <= score <= 1.0):
        raise InputError(path, f"must be a number in [0, 1] or null, got {score!r}", task_id=task_id, field="score")
    return cast(AnswerEntry, entry)


_RATE, _COUNT = (0.0, 1.0), (0.0, None)
METRICS: tuple[Metric, ...] = tuple(
    Metric(key, label, NAME, PROFILES, "evaluator", False, False, bounds[0], bounds[1],
           "higher" if bounds == _RATE else "none")
    for key, label, bounds in (
        ("answer_sr", "SR", _RATE), ("answer_sr_l1", "SR L1", _RATE), ("answer_sr_l2", "SR L2", _RATE),
        ("answer_sr_l3", "SR L3", _RATE), ("answer_sr_micro", "SR (micro)", _RATE),
        ("answer_judged", "Answers Judged", _COUNT), ("answer_skipped", "Answers Skipped", _COUNT)))
"""The Success Rates (per level, their macro mean, the micro mean) and the counts, by `aggregate`; not
leaderboard columns (the report's outcome checks table has them)."""

class AnswerEquivalence(Plain[AnswerEntry, AnswerOptions]):
    """A judge compares each final answer with the ground truth (the pool's first alone under the published
    reading); check scripts and answer templates run in their own processes, their content in the input key."""

    card = Card(name=NAME, reads=frozenset({"final_answer", "prediction", "task", "workspace"}), metrics=METRICS,
                suffix=SUFFIX, position=50, all_tasks=True, columns=("answer_level", "answer_success"),
                asked=(PROMPT, PUBLISHED_PROMPT), task_files=("eval_script", "answer_template"))
    options_type = AnswerOptions

    async def verdict(self, ctx: JudgeContext[AnswerOptions], task: TaskInputs) -> Verdict[AnswerEntry]:
        """One task's entry (`judge`)."""
        return Verdict(task.task_id, cast(AnswerEntry, await judge(ctx, task)))

    def input_files(self, options: AnswerOptions, files: RunFiles, task: TaskInputs) -> dict[str, Path]:
        """The modules of its check script's and answer template's packages that they import
        (`script_imports`)."""
        found: dict[str, Path] = {}
        for name in self.card.task_files:
            value = (task.task or {}).get(name)
            if value is None:
                continue
            try:
                script = task_script(files.tasks or Path("tasks file"), task.task_id, value, name)
            except InputError:
                return {}
            found.update(script_imports(script, script.parent.parent, package=True))
        return found

    def export(self, entries: Mapping[str, AnswerEntry], meta: JsonMapping) -> JsonObject:
        """The file: aggregate (over every entry; with the SR of every level group, the ids whose check
        script or answer template failed and the counts of ODD_SCORES replies), per_id and meta."""
        levels = {i: e["level"] for i, e in entries.items()}
        rates = success_rates(levels, {i: e["score"] for i, e in entries.items()})
        groups: dict[str, list[float]] = {}
        for i, e in entries.items():
            if e["score"] is not None:
                groups.setdefault(NO_LEVEL if levels[i] is None else str(levels[i]), []).append(e["score"])
        rates["levels"] = {level: rate for level, rate in level_rates(groups).items()}
        rates["error_ids"] = [i for i, e in entries.items() if e.get("error")]
        for kind in ODD_SCORES:
            rates[kind] = sum(int((e.get("odd_scores") or {}).get(kind, 0)) for e in entries.values())
        parser = parser_of(meta)
        prompt = PUBLISHED_PROMPT if parser == "published" else PROMPT
        return {"aggregate": rates, "per_id": cast(JsonObject, dict(entries)),
                "meta": {**meta, "parser": parser, "prompt_version": prompt.version}}

    def load(self, path: Path) -> dict[str, AnswerEntry]:
        """The checked entries of an earlier file (to resume), id -> entry."""
        return file_entries(path, "answer equivalence file", _check_entry, SUFFIX)

    def one_judge(self, options: AnswerOptions, judges: Judges) -> PoolJudge | None:
        """The pool's first judge under the published reading (it alone is asked), else None (every judge)."""
        return pool_judge(judges) if parser_of({"parser": options.parser}) == "published" else None

    def check_task(self, options: AnswerOptions, files: RunFiles, task_id: str, task: JsonMapping | None) -> None:
        """Raise the InputError the judge would raise on this task's fields (the judge app checks every task
        before the first judge is asked), and on the scripts it names."""
        where = files.tasks or Path("tasks file")
        task_fields(where, task_id, task, parser_of({"parser": options.parser}))
        for name in ("answer_template", "eval_script"):
            if (task or {}).get(name) is not None:
                task_script(where, task_id, (task or {})[name], name)

    def read(self, path: Path, settings: ReadSettings) -> Verdicts:
        """Per task: ``answer_level``, and ``answer_success`` (0/1, or a fraction a published judge gave)
        unless it was skipped or erred; its entry as the detail, and the file's meta."""
        found, meta = file_document(Path(path), "answer equivalence file", _check_entry, SUFFIX)
        out = Verdicts(meta=meta)
        for tid, entry in found.items():
            values: dict[str, JsonValue] = {"answer_level": entry["level"]}
            if entry["score"] is not None:
                values["answer_success"] = entry["score"]
            out.per_id[tid] = values
            out.detail[tid] = dict(entry)
        return out

    def aggregate(self, verdicts: Verdicts, ids: Sequence[str]) -> JsonObject:
        """`success_rates` over these ids (ids without an entry are left out), and the counts of ODD_SCORES
        replies among them when not zero."""
        known = [i for i in ids if i in verdicts.per_id]
        out = success_rates({i: verdicts.per_id[i]["answer_level"] for i in known},
                            {i: verdicts.per_id[i].get("answer_success") for i in known})
        for kind in ODD_SCORES:
            count = sum(int((verdicts.detail.get(i, {}).get("odd_scores") or {}).get(kind, 0)) for i in known)
            if count:
                out[kind] = count
        return out

    def display(self, task: JsonMapping | None, meta: JsonMapping) -> list[JsonObject]:
        """The viewer's block of a task: its level, E (1, 0, or skipped) with the reason, each judge's score
        and reply."""
        if task is None or "level" not in task:
            return []
        score = task.get("score")
        judges, replied = task.get("judges"), task.get("replies")
        scores: JsonMapping = judges if isinstance(judges, Mapping) else {}
        replies: JsonMapping = replied if isinstance(replied, Mapping) else {}
        reason, level = task.get("reason"), task.get("level") or "\u2013"
        return [{"title": "Answer equivalence", "id": "answer", "parts": [
            {"kind": "verdict", "label": f"level {level} \u00b7 E =",
             "pass": None if score is None else bool(score), "text": "skipped" if score is None else f"{score:g}",
             "note": str(reason) if reason else ""},
            {"kind": "rows", "rows": [[str(name), v, {"reply": replies.get(name)} if isinstance(replies.get(name), str)
                                       else None] for name, v in scores.items()]}]}]

    def scripted_answer(self, purpose: str) -> ScriptedAnswer | None:
        """The scripted judge's reply to either prompt (answer_parsing.scripted_answer)."""
        return scripted_answer if purpose == NAME else None


EVALUATOR: Evaluator[AnswerEntry, AnswerOptions] = AnswerEquivalence()
