"""Call outcomes as the published call analysis counts them (``evaluators.call_outcomes.mode=published``): one
classifier model asked about every call of every entry of the predictions file, repeated ids
included, and the illegal calling format counted once per entry.

The rules (rollout.judges.outcomes) are applied to the same calls, not to decide them but to report
how often they agree with the classifier, per class of the rules. The document has the published
five counts, so the score app reads it as it reads the rules-first one (``per_id`` sums the entries
of a repeated id).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.contract import InputError, atomic_write_json, config_int, read_json
from engine.evaluators.call_outcomes import CALL_CLASSES, CALL_KEYS, UNDECIDED
from engine.evaluators._prompts import OUTCOME
from rollout.judges.calls import judge_call
from rollout.judges.inputs import evaluator_options
from rollout.judges.outcomes import Catalogue, decide, illegal_format
from rollout.judges.pool import JudgePool, JudgeSpec, check_keys, judge_specs

_CONTAINERS = ("data", "items", "results", "predictions")


def file_entries(path: Path) -> list[dict[str, Any]]:
    """Every entry of a predictions file, in file order, repeated ids included: the root list, a
    list under ``data``, ``items``, ``results`` or ``predictions``, or the values of an object of
    id -> entry; InputError naming the file otherwise."""
    root = read_json(path, "predictions file")
    if isinstance(root, dict):
        listed = next((root[k] for k in _CONTAINERS if isinstance(root.get(k), list)), None)
        entries = listed if listed is not None else [{"id": k, **v} if isinstance(v, dict) else v
                                                     for k, v in root.items()]
    elif isinstance(root, list):
        entries = root
    else:
        raise InputError(path, "the root must be a list of entries or an object of them")
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InputError(path, "an entry must be an object", task_id=f"#{position}")
    return entries


def entry_calls(entry: Mapping[str, Any]) -> list[tuple[int, int, dict[str, Any]]]:
    """(step index, call index, call) of every call object of an entry's steps."""
    steps = entry.get("steps")
    return [(si, ci, call) for si, step in enumerate(steps if isinstance(steps, list) else [])
            if isinstance(step, dict) and isinstance(step.get("calls"), list)
            for ci, call in enumerate(step["calls"]) if isinstance(call, dict)]


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


async def classify_entries(pool: JudgePool, spec: JudgeSpec, entries: list[dict[str, Any]],
                           catalogue: Catalogue | None, attempts: int, max_result_chars: int = 0) -> dict[str, Any]:
    """The callanalysis document of every call of these entries, each classified by `spec`."""
    labels, calls, illegal_entries = [], [], []
    for position, entry in enumerate(entries):
        tid = str(entry.get("id"))
        reason = illegal_format(entry)
        if reason:
            illegal_entries.append({"entry": position, "id": tid, "reason": reason})
        for si, ci, call in entry_calls(entry):
            rule = decide(call, catalogue) if isinstance(call.get("name"), str) else None
            labels.append({"id": tid, "entry": position, "step": si, "call": ci, "name": call.get("name"),
                           "rule": rule and rule.label})
            calls.append(call)
    outcomes = await asyncio.gather(*(judge_call(pool, spec, call, attempts, max_result_chars) for call in calls))
    for label, (found, by) in zip(labels, outcomes):
        label["label"], label["by"] = found, by
    per_id: dict[str, dict[str, int]] = {}
    for entry in entries:
        per_id.setdefault(str(entry.get("id")), dict.fromkeys(CALL_KEYS, 0))
    for item in illegal_entries:
        per_id[item["id"]][CALL_KEYS[0]] += 1
    for label in labels:
        if label["label"] is not None:
            per_id[label["id"]][label["label"]] += 1
    totals = {key: sum(counts[key] for counts in per_id.values()) for key in CALL_KEYS}
    undecided = sum(1 for label in labels if label["label"] is None)
    n_calls = len(labels)
    rates = {CALL_KEYS[0]: totals[CALL_KEYS[0]] / len(entries) if entries else None,
             **{key: totals[key] / n_calls if n_calls else None for key in CALL_CLASSES},
             UNDECIDED: undecided / n_calls if n_calls else None}
    return {**totals, UNDECIDED: undecided, "num_samples": len(entries), "total_calls": n_calls, "rates": rates,
            "decided_by": {"classifier": n_calls - undecided, UNDECIDED: undecided},
            "agreement": agreement_of(labels), "illegal": illegal_entries, "per_id": per_id, "calls": labels}


def classifier_config(cfg: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(name, model config) of the classifier: ``evaluators.call_outcomes.classifier`` (a judge of the pool by name, or
    a model config), else the judges file's ``classifier``, else the pool's first judge."""
    pool = cfg["judges"]["pool"]
    chosen = evaluator_options(cfg, "call_outcomes").get("classifier") or cfg["judges"].get("classifier")
    if chosen is None:
        name = next(iter(pool))
        return str(name), dict(pool[name])
    if isinstance(chosen, str):
        if chosen not in pool:
            raise InputError("config", f"no judge {chosen!r} in the pool ({', '.join(map(str, pool))}); give a "
                             "pool judge's name or a model config", field="evaluators.call_outcomes.classifier")
        return chosen, dict(pool[chosen])
    if not isinstance(chosen, Mapping):
        raise InputError("config", "must be a pool judge's name or a model config",
                         field="evaluators.call_outcomes.classifier")
    return "classifier", dict(chosen)


async def published_stage(cfg: Mapping[str, Any], predictions: Path, output: Path, catalogue: Catalogue | None,
                          wanted: set[str]) -> int:
    """Classify every call of every entry (of the ``ids`` wanted, when given) with the classifier and
    write the callanalysis.json; 0, or 1 when some call has no class."""
    calls_cfg = evaluator_options(cfg, "call_outcomes")
    name, model = classifier_config(cfg)
    (spec,) = judge_specs({name: model})
    check_keys([spec])
    entries = [e for e in file_entries(predictions) if not wanted or str(e.get("id")) in wanted]
    pool = JudgePool.from_config(cfg, [spec])
    async with pool:
        document = await classify_entries(pool, spec, entries, catalogue, config_int(cfg, "attempts"),
                                          config_int(calls_cfg, "max_result_chars", minimum=0,
                                                     where="evaluators.call_outcomes.max_result_chars"))
    document["meta"] = {"mode": "published", "predictions": str(predictions),
                        "catalogue": catalogue.source if catalogue else None, "classifier": spec.identity["model"],
                        "prompt_version": pool.rubric(OUTCOME).version,
                        "usage": {spec.name: pool.usage[spec.name].to_json(spec)}}
    atomic_write_json(output, document)
    counts = ", ".join(f"{k} {document[k]}" for k in (*CALL_KEYS, UNDECIDED))
    agree = document["agreement"]["all"]
    print(f"calls (published): {document['total_calls']} call(s) of {len(entries)} entries classified by "
          f"{spec.identity['model']}: {counts}; rules agree on {agree['agree']} of the {agree['rule']} call(s) "
          f"they settle -> {output}")
    return 1 if document[UNDECIDED] else 0
