"""Call outcomes as the published call analysis counts them (``evaluators.call_outcomes.mode=published``):
one classifier model asked about every call of every entry of the predictions file, repeated ids
included, and the illegal calling format counted once per entry.

The rules (engine.evaluators._call_rules) are applied to the same calls, not to decide them but to
report how often they agree with the classifier, per class of the rules. The document has the
published five counts, so the score app reads it as it reads the rules-first one (``per_id`` sums the
entries of a repeated id). A task's entry here: the file positions of its objects, their illegal
formats and their calls' labels; the document puts them back in file order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from engine.evaluators._call_rules import CALL_CLASSES, UNDECIDED, Catalogue, decide, illegal_format, tally


def entry_calls(entry: Mapping[str, Any]) -> list[tuple[int, int, dict[str, Any]]]:
    """(step index, call index, call) of every call object of an entry's steps."""
    steps = entry.get("steps")
    return [(si, ci, call) for si, step in enumerate(steps if isinstance(steps, list) else [])
            if isinstance(step, dict) and isinstance(step.get("calls"), list)
            for ci, call in enumerate(step["calls"]) if isinstance(call, dict)]


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


def agreement_of(labels: list[dict[str, Any]]) -> dict[str, Any]:
    """Per class of the rules: the calls a rule settled in that class, how many of them the
    classifier put in the same class, and the rate; plus the calls no rule settles."""
    ruled = Counter(label["rule"] for label in labels if label["rule"] and label["label"])
    agree = Counter(label["rule"] for label in labels if label["rule"] and label["rule"] == label["label"])
    per_class = {key: {"rule": ruled[key], "agree": agree[key],
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
