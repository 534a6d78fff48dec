"""Call outcomes (the paper's Figure 6): the file ``<predictions stem>_callanalysis.json`` in the
published shape, the five counts ``illegal_calling`` (samples with an illegal calling format; under
rules also each call never made), ``unknown_tool``, ``invalid_arguments``, ``resource_not_found`` and
``success`` (predicted calls of each class), optionally with ``per_id`` counts per task (as the judge
app writes it). Counts are summed per family and overall; a file that gives only totals gives the
aggregate. Its setting in the score app is ``inputs.verdicts.calls=PATH``.

The judge app writes the file (`judge` per task, `document`): under ``mode=rules`` (the default) the
rules decide each call first (engine.judging.call_rules, against the run's tool catalogue), then
one judge of the pool (``judge``, default the first) the calls no rule settles; a call it gives no class
in its attempts stays ``undecided``, counted apart, and its task is judged again by a rerun, which
resumes the other tasks from the file (`entries`) unless the file was made under another mode,
catalogue or judge. Under ``mode=published`` one classifier is asked about every call of every entry
of the file (`classified_entry`, `classified_document`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, cast

from engine.contract import InputError, JsonMapping, JsonObject, JsonValue, call_made, check_choice, read_json
from engine.contract.settings import Judges, model_node
from engine.evaluators.base import (
    PROFILES,
    Metric,
    PoolJudge,
    TaskInputs,
    Verdicts,
    file_meta,
    format_version,
    pool_judge,
)
from engine.evaluators.protocol import Card, Evaluator, EvaluatorOptions, JudgeContext, Plain, ReadSettings, Verdict
from engine.judging import (
    CALL_CLASSES,
    CALL_OUTCOME,
    CLASS_OF_DIGIT,
    ILLEGAL_CALLING,
    NOT_MADE_RULE,
    OUTCOME,
    UNDECIDED,
    Catalogue,
    Decision,
    JudgeFailure,
    Question,
    decide,
    first_answer,
    illegal_format,
    outcome_payload,
    parse_class,
    tally,
)

NAME = "call_outcomes"
CALLANALYSIS = "callanalysis"
METRICS: tuple[Metric, ...] = (
    Metric("illegal_calling", "Illegal Calling Format", NAME, PROFILES, "sum", False, False, 0.0, None, "none"),
    Metric("unknown_tool", "Unknown Tool Invocation", NAME, PROFILES, "sum", False, False, 0.0, None, "none"),
    Metric("invalid_arguments", "Invalid Invocation Arguments", NAME, PROFILES, "sum", False, False, 0.0, None, "none"),
    Metric("resource_not_found", "Resource Not Found", NAME, PROFILES, "sum", False, False, 0.0, None, "none"),
    Metric("success", "Successful Call", NAME, PROFILES, "sum", False, False, 0.0, None, "none"),
)
CALL_KEYS: tuple[str, ...] = tuple(m.key for m in METRICS)
assert CALL_KEYS == (ILLEGAL_CALLING, *CALL_CLASSES), "the metric rows follow the published counts"
MODES: tuple[str, ...] = ("rules", "published")


class CallEntry(TypedDict, total=False):
    """A task's entry: under rules its illegal calling format (a reason or None) and a label per call
    ({id, step, call, name, label, by}); under published the file positions of its objects (``entries``), their
    illegal formats and their calls' labels."""

    illegal: JsonValue
    calls: list[JsonObject]
    entries: list[int]


@dataclass
class CallOptions(EvaluatorOptions):
    """``evaluators.call_outcomes`` (conf/judge/evaluators/call_outcomes.yaml): its file, the tool catalogue,
    the mode (rules | published, checked where it is read), the pool judge for the calls no rule settles, the
    published classifier (a pool judge's name or a model config), how much of a tool result the judge sees."""

    output: str | None = None
    catalogue: str | None = "auto"
    mode: str = "rules"
    judge: str | None = None
    classifier: Any = None
    max_result_chars: int = 2000


def _count(path: Path, value: object, where: str, task_id: str | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(path, f"must be a count (an integer >= 0), got {value!r}", task_id=task_id, field=where)
    return value


def read_callanalysis(path: str | Path) -> Verdicts:
    """The call outcome counts of a callanalysis.json: file totals, and per task when it has per_id."""
    path = Path(path)
    root = read_json(path, "call outcomes file")
    if not isinstance(root, dict):
        raise InputError(path, "the root must be an object of call outcome counts")
    format_version(path, root, CALLANALYSIS)
    totals = {key: _count(path, root.get(key), key) for key in CALL_KEYS}
    per_id = root.get("per_id")
    if per_id is None:
        return Verdicts(totals=totals, detail=_labels(path, root), meta=file_meta(root))
    if not isinstance(per_id, dict):
        raise InputError(path, "must be an object of id -> counts", field="per_id")
    counts: dict[str, dict[str, JsonValue]] = {}
    for tid, block in per_id.items():
        if not isinstance(block, dict):
            raise InputError(path, "must be an object of counts", task_id=str(tid), field="per_id")
        counts[str(tid)] = {key: _count(path, block.get(key), key, str(tid)) for key in CALL_KEYS}
    return Verdicts(per_id=counts, detail=_labels(path, root), meta=file_meta(root))


def _labels(path: Path, root: JsonMapping) -> dict[str, dict[str, Any]]:
    """id -> {calls: its call labels, illegal: its illegal format reason} of the judge app's file."""
    out: dict[str, dict[str, Any]] = {}
    calls = root.get("calls")
    for i, label in enumerate(calls if isinstance(calls, list) else []):
        if not (isinstance(label, dict) and all(isinstance(label.get(k), int) for k in ("step", "call"))):
            raise InputError(path, "a call label needs integer 'step' and 'call'", field=f"calls[{i}]")
        out.setdefault(str(label.get("id")), {"calls": []})["calls"].append(label)
    illegal = root.get("illegal")
    for tid, reason in (illegal.items() if isinstance(illegal, dict) else ()):
        out.setdefault(str(tid), {"calls": []})["illegal"] = str(reason)
    return out


_SHOWN = {"illegal_calling": "illegal calling format", "unknown_tool": "unknown tool",
          "invalid_arguments": "invalid arguments", "resource_not_found": "resource not found", "success": "success",
          UNDECIDED: UNDECIDED}
NOT_MADE_SHOWN = "not made (illegal format)"
"""How the viewer names a call never made, beside it."""


def outcome_document(labels: list[dict[str, Any]], illegal: dict[str, str], sample_ids: list[str],
                     **meta: Any) -> dict[str, Any]:
    """The callanalysis.json: the published five counts first (``illegal_calling``: the samples with an
    illegal format plus the calls never made), then undecided calls, sizes, rates (illegal format per
    sample, classes per call), the calls never made (``illegal_calls``), what decided the labels,
    per-task counts and the labels."""
    head, per_id = tally(sample_ids, illegal, labels, len(sample_ids))
    decided = Counter(str(label["by"]).split(":", 1)[0] for label in labels)
    not_made = sum(1 for label in labels if label["label"] == ILLEGAL_CALLING)
    return {**head, "illegal_calls": not_made,
            "decided_by": {"rule": decided["rule"], "judge": decided["judge"], UNDECIDED: decided[UNDECIDED]},
            "illegal": illegal, "per_id": per_id, "calls": labels,
            "meta": meta}


# The published classifier (mode=published): one classifier model asked about every call of every entry
# of the predictions file, repeated ids included, and the illegal calling format counted once per entry.
# The rules are applied to the same calls, not to decide them but to report how often they agree with the
# classifier, per class of the rules. The document has the published five counts, so the score app reads
# it as it reads the rules-first one (per_id sums the entries of a repeated id). A task's entry here: the
# file positions of its objects, their illegal formats and their calls' labels; the document puts them
# back in file order.

def entry_calls(entry: JsonMapping) -> list[tuple[int, int, JsonObject]]:
    """(step index, call index, call) of every call object of an entry's steps."""
    steps = entry.get("steps")
    return [(si, ci, call) for si, step in enumerate(steps if isinstance(steps, list) else [])
            if isinstance(step, dict) and isinstance(calls := step.get("calls"), list)
            for ci, call in enumerate(calls) if isinstance(call, dict)]


def classified_entry(task_id: str, objects: Sequence[tuple[int, Mapping[str, Any]]], catalogue: Catalogue | None
                     ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(a task's entry, its labels not yet classified; the calls they label, in the same order) of the
    objects of the predictions file under the task's id (position, object)."""
    labels, calls, illegal = [], [], []
    for position, entry in objects:
        reason = illegal_format(entry)
        if reason:
            illegal.append({"entry": position, "id": task_id, "reason": reason})
        for si, ci, call in entry_calls(entry):
            rule = decide(call, catalogue) if isinstance(call.get("name"), str) else None
            labels.append({"id": task_id, "entry": position, "step": si, "call": ci, "name": call.get("name"),
                           "rule": rule and rule.label})
            calls.append(call)
    return {"entries": [position for position, _ in objects], "illegal": illegal, "calls": labels}, calls


def agreement_of(labels: Sequence[JsonMapping]) -> JsonObject:
    """Per class of the rules: the calls a rule settled in that class, how many of them the
    classifier put in the same class, and the rate; plus the calls no rule settles."""
    ruled = Counter(label["rule"] for label in labels if label["rule"] and label["label"])
    agree = Counter(label["rule"] for label in labels if label["rule"] and label["rule"] == label["label"])
    per_class: JsonObject = {key: {"rule": ruled[key], "agree": agree[key],
                                   "rate": agree[key] / ruled[key] if ruled[key] else None} for key in CALL_CLASSES}
    total, same = sum(ruled.values()), sum(agree.values())
    return {**per_class, "all": {"rule": total, "agree": same, "rate": same / total if total else None},
            "no_rule": sum(1 for label in labels if label["rule"] is None)}


def classified_document(per_task: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The callanalysis document of the tasks' classified entries, in file order: the five counts,
    undecided calls, sizes, rates (illegal format per entry, classes per call), what decided the labels,
    the rules' agreement with the classifier, the illegal entries, per-id counts and the labels."""
    first = {tid: min(e["entries"], default=0) for tid, e in per_task.items()}
    n_entries = sum(len(e["entries"]) for e in per_task.values())
    illegal = sorted((item for e in per_task.values() for item in e["illegal"]), key=lambda item: item["entry"])
    labels = sorted((label for e in per_task.values() for label in e["calls"]), key=lambda label: label["entry"])
    head, per_id = tally(sorted(per_task, key=first.__getitem__), [item["id"] for item in illegal], labels, n_entries)
    undecided = head[UNDECIDED]
    return {**head, "decided_by": {"classifier": len(labels) - undecided, UNDECIDED: undecided},
            "agreement": agreement_of(labels), "illegal": illegal, "per_id": per_id, "calls": labels}


def mode_of(options: Mapping[str, Any]) -> str:
    """The ``mode`` of a config entry (default rules), checked."""
    return check_choice(options.get("mode") or "rules", list(MODES), "calls mode", f"evaluators.{NAME}.mode")


async def judge_call(ctx: JudgeContext[CallOptions], call: Mapping[str, Any]) -> tuple[str | None, str]:
    """(class, what decided it) of one call from the context's one judge; (None, "undecided: ...") when
    it gives none."""
    if ctx.pool is None:
        raise ValueError("the call judge needs a pool")
    spec = ctx.pool.specs[0]
    question = Question(OUTCOME, outcome_payload(dict(call), ctx.max_result_chars))
    try:
        digit = await first_answer(ctx.pool, spec, question, ctx.attempts, parse_class)
    except JudgeFailure as exc:
        return None, f"{UNDECIDED}: {exc}"
    return CLASS_OF_DIGIT[digit], f"judge:{spec.name}"


async def judge_labels(ctx: JudgeContext[CallOptions], labels: Sequence[JsonObject],
                       calls: Sequence[Mapping[str, Any]]) -> None:
    """Give each label the class the context's one judge gives its call, and what decided it (in place)."""
    for label, (found, by) in zip(labels, await asyncio.gather(*(judge_call(ctx, c) for c in calls))):
        label["label"], label["by"] = found, by


class CallOutcomes(Plain[CallEntry, CallOptions]):
    """The rules first, one judge for the calls they leave (or the published classifier for every call);
    resumed unless made under another mode, catalogue or judge."""

    card = Card(name=NAME, reads=frozenset({"prediction", "file_entries", "catalogue"}), metrics=METRICS,
                suffix=CALLANALYSIS, option="calls", position=20, rubrics=(OUTCOME,), asks_always=False, partial=True)
    options_type = CallOptions

    async def verdict(self, ctx: JudgeContext[CallOptions], task: TaskInputs) -> Verdict[CallEntry]:
        """One task's entry: its illegal calling format (a reason or None) and a label per call, in order
        ({id, step, call, name, label, by}: ``rule:<rule>``, ``judge:<name>`` or ``undecided: ...``; a call
        never made is labelled ``illegal_calling`` by ``rule:not-made`` and never asked about);
        under published, the entry of every object of the file under its id (`classified_entry`)."""
        if mode_of({"mode": ctx.options.mode}) == "published":
            found, made = classified_entry(task.task_id, task.file_entries, ctx.catalogue)
            await judge_labels(ctx, found["calls"], made)
            return Verdict(task.task_id, cast(CallEntry, found))
        raw = task.prediction.raw if task.prediction is not None else {}
        labels: list[JsonObject] = []
        calls: list[Mapping[str, Any]] = []
        for si, step in enumerate(raw.get("steps") or []):
            for ci, call in enumerate(step.get("calls") or []):
                decision = (decide(call, ctx.catalogue) if call_made(call)
                            else Decision(ILLEGAL_CALLING, NOT_MADE_RULE))
                labels.append({"id": task.task_id, "step": si, "call": ci, "name": call["name"].strip(),
                               "label": decision.label if decision else None,
                               "by": f"rule:{decision.rule}" if decision else None})
                calls.append(call)
        todo = [i for i, label in enumerate(labels) if label["label"] is None]
        await judge_labels(ctx, [labels[i] for i in todo], [calls[i] for i in todo])
        return Verdict(task.task_id, {"illegal": illegal_format(raw, per_call=True), "calls": labels})

    def export(self, entries: Mapping[str, CallEntry], meta: JsonMapping) -> JsonObject:
        """The callanalysis.json of the tasks' entries (`outcome_document`, or the published classifier's
        document), its meta the predictions, the catalogue's source, the judge (the classifier's model under
        published), the prompt version, the judge's usage and the input keys."""
        judges = meta.get("judges")
        first = judges[0] if isinstance(judges, list) and judges and isinstance(judges[0], dict) else {}
        versions = meta.get("prompt_versions")
        version = versions.get(CALL_OUTCOME) if isinstance(versions, dict) else None
        if mode_of(meta) == "published":
            return {**classified_document(entries), "meta": {
                "mode": "published", "predictions": meta.get("predictions"),
                "catalogue": meta.get("catalogue"), "classifier": first.get("model"), "prompt_version": version,
                "usage": meta.get("usage", {}), "input_keys": meta.get("input_keys", {})}}
        labels = [label for entry in entries.values() for label in entry["calls"]]
        illegal = {tid: cast(str, entry["illegal"]) for tid, entry in entries.items() if entry["illegal"]}
        return outcome_document(labels, illegal, list(entries), predictions=meta.get("predictions"),
                                catalogue=meta.get("catalogue"), judge=first.get("name"), prompt_version=version,
                                usage=meta.get("usage", {}), input_keys=meta.get("input_keys", {}))

    def load(self, path: Path) -> dict[str, CallEntry]:
        """The tasks' entries of an earlier file of the judge app under rules (to resume); none of a file of
        the published classifier or of counts alone (every task is judged anew)."""
        root = read_json(path, "call outcomes file")
        format_version(path, root, CALLANALYSIS)
        meta = root.get("meta") if isinstance(root, dict) else None
        if not isinstance(root, dict) or not isinstance(root.get("calls"), list) or (
                isinstance(meta, dict) and meta.get("mode") == "published"):
            return {}
        illegal = root.get("illegal") or {}
        per_id = root.get("per_id")
        if not isinstance(illegal, dict) or not isinstance(per_id, dict):
            raise InputError(path, "must be an object of id -> " + ("reason" if not isinstance(illegal, dict)
                                                                      else "counts"),
                             field="illegal" if not isinstance(illegal, dict) else "per_id")
        out: dict[str, CallEntry] = {str(tid): {"illegal": illegal.get(tid), "calls": []} for tid in per_id}
        for i, label in enumerate(root["calls"]):
            if not isinstance(label, dict) or str(label.get("id")) not in out or \
                    label.get("label") not in (None, ILLEGAL_CALLING, *CALL_CLASSES):
                raise InputError(path, "must be a call label {id, step, call, name, label, by} of a task of per_id",
                                 field=f"calls[{i}]")
            out[str(label["id"])]["calls"].append(label)
        return out

    def complete(self, entry: CallEntry, judges: Sequence[str]) -> bool:
        """Whether every call of an entry has a class (an undecided one is judged again; the judge is the
        file's, see `stale`)."""
        return all(isinstance(label, Mapping) and label.get("label") is not None for label in entry.get("calls") or [])

    def stale(self, earlier: JsonMapping, now: JsonMapping) -> str | None:
        """Why an earlier file's entries cannot be resumed under this run's meta: another mode, catalogue
        or judge; None when they can."""
        judges = now.get("judges")
        judge_now = judges[0].get("name") if isinstance(judges, list) and judges and isinstance(judges[0], dict) \
            else None
        for what, before, after in (("mode", earlier.get("mode") or "rules", mode_of(now)),
                                    ("catalogue", earlier.get("catalogue"), now.get("catalogue")),
                                    ("judge", earlier.get("judge"), judge_now)):
            if before != after:
                return f"it was made with {what} {before!r}, this run's is {after!r}"
        return None

    def one_judge(self, options: CallOptions, judges: Judges) -> PoolJudge:
        """The one judge asked: under rules the pool judge ``judge`` (default the first); under published the
        ``classifier`` (a pool judge's name or a model config, refused by a line naming its setting), else
        the pool's ``classifier``, else the pool's first judge."""
        if mode_of({"mode": options.mode}) == "rules":
            return pool_judge(judges, options.judge, f"evaluators.{NAME}.judge")
        where, chosen = f"evaluators.{NAME}.classifier", options.classifier
        if not chosen and judges.classifier is not None:
            return PoolJudge("classifier", judges.classifier, "judges.classifier")
        if not chosen or isinstance(chosen, str):
            return pool_judge(judges, chosen or None, where)
        if not isinstance(chosen, Mapping):
            raise InputError("config", "must be a pool judge's name or a model config", field=where)
        return PoolJudge("classifier", model_node(chosen, where), where)

    def read(self, path: Path, settings: ReadSettings) -> Verdicts:
        """The call outcome counts of a callanalysis.json: file totals, and per task when it has per_id."""
        return read_callanalysis(path)

    def display(self, task: JsonMapping | None, meta: JsonMapping) -> list[JsonObject]:
        """The viewer's blocks of a task: each predicted call's class beside it, the counts, the illegal
        format."""
        if task is None:
            return []
        def shown(label: str) -> str:
            return NOT_MADE_SHOWN if label == ILLEGAL_CALLING else _SHOWN.get(label, label)

        calls = task.get("calls")
        objects = [c for c in (calls if isinstance(calls, list) else []) if isinstance(c, dict)]
        keys = [str(c.get("label") or UNDECIDED) for c in objects]
        labels: list[list[JsonValue]] = [[c["step"], c["call"], key, shown(key)] for c, key in zip(objects, keys)]
        tags = sorted(set(keys) | {k for k in CALL_KEYS if task.get(k)})
        parts: list[JsonValue] = [{"kind": "calls", "labels": cast(JsonValue, labels)},
                                       {"kind": "tags", "tags": [[k, _SHOWN.get(k, k)] for k in tags]},
                                       {"kind": "rows", "head": [_SHOWN[k] for k in CALL_KEYS],
                                        "rows": [[task.get(k) for k in CALL_KEYS]]}]
        if task.get("illegal"):
            parts.append({"kind": "verdict", "label": "calling format", "pass": False, "text": "illegal",
                          "note": task["illegal"]})
        return [{"title": "Call outcomes", "id": "call-outcomes", "parts": parts}]


EVALUATOR: Evaluator[CallEntry, CallOptions] = CallOutcomes()
