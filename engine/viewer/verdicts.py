"""The judges' and evaluators' files of one model as the site shows them, each read with its own
evaluator's checks: per-call outcome classes (callanalysis), the M3 judges' scores and replies
(taskcompletion), rubric verdicts, answer equivalence and verifier checks. Replies are cut at
MAX_REPLY, other strings at MAX_TEXT.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.contract import InputError, is_number, read_json
from engine.evaluators import answer_equivalence, evaluator, verifiers, vtb_rubrics
from engine.evaluators.m3_judges import read_taskcompletion
from engine.evaluators.vtb_records import GROUPS as VTB_GROUPS
from engine.evaluators.vtb_scoring import DEFAULT_PROFILE as DEFAULT_VTB_PROFILE
from engine.judge_results import companion_path
from engine.reports.read import ModelResult
from engine.viewer.text import cut, cut_reply

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Verdicts:
    """One model's judged details, per task id (each empty when its file is absent)."""

    outcomes: dict[str, dict[tuple[int, int], str]]  # id -> (step, call) -> outcome class
    illegal: dict[str, str]                           # id -> illegal calling format reason
    judges: dict[str, Any]                            # id -> {tc, ig}
    judge_meta: dict[str, Any]
    rubrics: dict[str, dict[str, Any]]
    answers: dict[str, dict[str, Any]]
    checks: dict[str, dict[str, Any]]


def verdicts_of(result: ModelResult) -> Verdicts:
    """The files of a model's results (named in its meta, else beside its predictions), read and checked."""
    outcomes, illegal = _outcomes(_meta_path(result, "calls"))
    judges, judge_meta = _judges(_meta_path(result, "judge"))
    return Verdicts(outcomes, illegal, judges, judge_meta, _rubrics(_evaluator_path(result, vtb_rubrics.NAME), vtb_profile(result)),
                    _answers(_evaluator_path(result, answer_equivalence.NAME)),
                    _checks(_evaluator_path(result, verifiers.NAME)))


def _number(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def _outcomes(path: Path | None) -> tuple[dict[str, dict[tuple[int, int], str]], dict[str, str]]:
    """(id -> (step, call) -> outcome class, id -> illegal format reason) of a callanalysis file's per-call labels."""
    if path is None:
        return {}, {}
    root = read_json(path, "call outcomes file")
    labels: dict[str, dict[tuple[int, int], str]] = {}
    calls = root.get("calls") if isinstance(root, dict) else None
    for i, label in enumerate(calls if isinstance(calls, list) else []):
        if not (isinstance(label, dict) and isinstance(label.get("step"), int) and isinstance(label.get("call"), int)):
            raise InputError(path, "a call label needs integer 'step' and 'call'", field=f"calls[{i}]")
        labels.setdefault(str(label.get("id")), {})[(label["step"], label["call"])] = label.get("label") or "undecided"
    illegal = root.get("illegal") if isinstance(root, dict) else None
    return labels, {str(k): str(v) for k, v in (illegal or {}).items()} if isinstance(illegal, dict) else {}


def _judges(path: Path | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(id -> {tc, ig: {final, judges: [{name, score, reply?}]}}, meta with agreement) of a taskcompletion file."""
    if path is None:
        return {}, {}
    entries = read_taskcompletion(path)
    root = read_json(path, "judge file")
    meta = root.get("meta") if isinstance(root, dict) and isinstance(root.get("meta"), dict) else {}

    def block(b: Any) -> dict[str, Any] | None:
        if not isinstance(b, dict):
            return None
        judges = [{k: cut_reply(v) if k == "reply" else cut(v) for k, v in j.items() if k in ("name", "score", "reply")}
                  for j in b.get("judges") or [] if isinstance(j, dict)]
        return {"final": _number(b.get("final")), "judges": judges}

    per_id = {tid: {"tc": block(e), "ig": block(e.get("info_grounding"))} for tid, e in entries.items()}
    keep = {k: cut(meta[k]) for k in ("judges", "prompt_versions", "agreement", "failed") if k in meta}
    return per_id, keep


def _meta_path(result: ModelResult, key: str) -> Path | None:
    value = result.meta.get(key)
    if not isinstance(value, str) or not value:
        return None
    path = Path(value)
    if not path.is_file():
        log.warning("%s: the %s file %s named in meta.%s is missing; its per-task details are left out",
                    result.path, "judge" if key == "judge" else "call outcomes", path, key)
        return None
    return path


def _evaluator_path(result: ModelResult, name: str) -> Path | None:
    """An evaluator's file as the score app found it: named in the results' meta under the evaluator's
    option, else ``<predictions stem>_<suffix>.json`` beside the predictions; None when there is none."""
    e = evaluator(name)
    if isinstance(result.meta.get(e.option), str) and result.meta[e.option]:
        path = Path(result.meta[e.option])
        if not path.is_file():
            log.warning("%s: the %s file %s named in meta.%s is missing; its per-task details are left out",
                        result.path, name, path, e.option)
            return None
        return path
    path = companion_path(Path(result.meta["predictions"]), str(e.suffix))
    return path if path.is_file() else None


def _rubrics(path: Path | None, profile: str = DEFAULT_VTB_PROFILE) -> dict[str, dict[str, Any]]:
    """id -> {score, pass, no_critical, unanswered, turns: [{score, pass, rubrics: [{d, w, c, k, m, j}]}]}
    of a rubric verdicts file (or a drop-in verdicts list): per rubric its description, weight,
    categories, critical, verdict (true, false, null) and the judges' [name, verdict, explanation or
    error] (the judges only in the evaluator's own file)."""
    if path is None:
        return {}
    values = vtb_rubrics.read(path, profile)
    root = read_json(path, "rubric verdicts file")
    raw = {str(k): v for k, v in root["per_id"].items()} if isinstance(root, dict) else {}  # checked by read
    out = {}
    for tid, detail in values.detail.items():
        turns = [{"score": t["score"], "pass": t["pass"], "rubrics": []} for t in detail["turns"]]
        counters = [0] * len(turns)
        for item, met in detail["rubrics"]:
            j = counters[item.turn]
            counters[item.turn] += 1
            judged = raw[tid]["turns"][item.turn]["rubrics"][j].get("judges") if tid in raw else []
            turns[item.turn]["rubrics"].append({
                "d": cut(item.description), "w": item.weight, "c": list(item.categories), "k": item.critical,
                "m": met, "j": [[str(v.get("name")), v.get("verdict"), cut_reply(v.get("explanation", v.get("error")))]
                                for v in judged or [] if isinstance(v, dict)]})
        score = detail.get("rubric_score")
        out[tid] = {"score": score, "pass": None if score is None else detail["pass_rate"] == 1.0,
                    "no_critical": detail["no_critical"], "unanswered": detail["unanswered"], "turns": turns}
    return out


def vtb_profile(result: ModelResult) -> str:
    """The VisualToolBench profile a model's results were scored under."""
    return str(result.meta.get(f"{vtb_rubrics.EVALUATOR.option}_profile") or DEFAULT_VTB_PROFILE)


def vtb_breakdowns(result: ModelResult) -> dict[str, Any] | None:
    """A model's VisualToolBench results as its report tables give them (engine.reports.vtb): APR and ARS
    overall and per single/multi-turn, domain (STEM merged) and evaluation focus, with the profile; None
    for a model without rubric verdicts."""
    block = result.aggregate.get("rubrics")
    if not isinstance(block, dict):
        return None
    return {"profile": block.get("profile"), "overall": {k: block.get(k) for k in ("APR", "ARS", "tasks")},
            **{f"by_{group}": block.get(f"by_{group}") or {} for group in VTB_GROUPS}}


def _answers(path: Path | None) -> dict[str, dict[str, Any]]:
    """id -> {level, score (0, 1, null when skipped), judges: [[name, score, reply or null]], reason} of
    an answer equivalence file (replies cut at MAX_REPLY)."""
    if path is None:
        return {}
    out = {}
    for tid, e in answer_equivalence.entries(path).items():
        scores = e.get("judges") if isinstance(e.get("judges"), dict) else {}
        replies = e.get("replies") if isinstance(e.get("replies"), dict) else {}
        out[tid] = {"level": e.get("level"), "score": e.get("score"), "reason": cut(e.get("reason")),
                    "judges": [[str(k), v, cut_reply(replies.get(k))] for k, v in scores.items()]}
    return out


def _checks(path: Path | None) -> dict[str, dict[str, Any]]:
    """id -> {check, checks (0/1 each, null with an evaluator error), passed, error, reason} of a
    verifier file."""
    if path is None:
        return {}
    return {tid: {k: cut(e.get(k)) for k in ("check", "checks", "passed", "error", "reason")}
            for tid, e in verifiers.entries(path).items()}
