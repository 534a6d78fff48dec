"""Task Completion and Information Grounding (the M3-Bench judges): the file
``<predictions stem>_taskcompletion.json`` in the published shape ``{"aggregate": {...}, "pre_id":
{id: {"final": TC, "judges": [...], "info_grounding": {"final": IG, "judges": [...]}}}}`` ("per_id"
is accepted for "pre_id"; an entry that is a bare number is a Task Completion alone), or a list of
``{id, task_completion, information_grounding}`` records, or an object of such records keyed by id.
Each is the plain mean over the judged tasks (``judged_mean``); Information Grounding joins the
Average Score. The judge app writes the file (rollout.judges.run), asking every judge of its pool
both questions of each task (`judge`: engine.judging.ensemble, prompts in
engine.judging.prompts); an entry judged by other models than the pool's is judged again. Its
setting in the score app is ``inputs.verdicts.judge=PATH``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, cast

from engine.contract import InputError, JsonMapping, JsonObject, JsonValue, is_number, read_json
from engine.evaluators.base import PROFILES, Metric, TaskInputs, Verdicts, file_meta, format_version
from engine.evaluators.protocol import (
    Card,
    Evaluator,
    EvaluatorOptions,
    JudgeContext,
    Plain,
    ReadSettings,
    RunFiles,
    Verdict,
)
from engine.judging import (
    COMPLETION,
    GROUNDING,
    TASK_COMPLETION,
    entry_scores,
    judge_task,
    judges_agreement,
    mean,
    task_image,
)

log = logging.getLogger(__name__)

NAME = "m3_judges"
TASKCOMPLETION = "taskcompletion"
METRICS: tuple[Metric, ...] = (
    Metric("task_completion", "Task Completion", NAME, PROFILES, "judged_mean", False, True, 0.0, 1.0),
    Metric("information_grounding", "Information Grounding", NAME, PROFILES, "judged_mean", True, True, 0.0, 1.0),
)
JUDGE_KEYS: tuple[str, ...] = tuple(m.key for m in METRICS)
_ENTRY_KEYS = ("pre_id", "per_id")


class Grounding(TypedDict):
    """An entry's Information Grounding: the final score and each judge's."""

    final: float
    judges: list[JsonObject]


class _Scored(TypedDict):
    final: float
    judges: list[JsonObject]


class M3Entry(_Scored, total=False):
    """A task's entry of a taskcompletion.json: Task Completion (``final``, each judge's under ``judges``) and
    its Information Grounding when judged."""

    info_grounding: Grounding


@dataclass
class M3Options(EvaluatorOptions):
    """``evaluators.m3_judges``: the folder a relative ``image`` is under (None: the reference file's), the
    tasks listed as most disagreed per metric, and the file (None: beside the predictions)."""

    images_dir: str | None = None
    agreement_top: int = 10
    output: str | None = None


def _score(path: Path, value: object, task_id: str, where: str) -> float:
    if not is_number(value) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InputError(path, f"must be a number in [0, 1], got {str(value)[:40]!r}", task_id=task_id, field=where)
    return float(value)


def _check_judges(path: Path, task_id: str, block: Mapping[str, object], where: str) -> None:
    """Each judge's score of an entry's ``judges`` list is a finite number (when it has one)."""
    judges = block.get("judges")
    for i, judge in enumerate(judges if isinstance(judges, list) else []):
        if isinstance(judge, dict) and "score" in judge and not is_number(judge["score"]):
            raise InputError(path, f"must be a number, got {str(judge['score'])[:40]!r}", task_id=task_id,
                             field=f"{where}judges[{i}].score")


def _published_entry(path: Path, task_id: str, entry: object) -> M3Entry:
    """One entry of a published taskcompletion.json, checked (a bare number is a Task Completion)."""
    if is_number(entry):
        return {"final": _score(path, entry, task_id, "final"), "judges": []}
    if not isinstance(entry, dict):
        raise InputError(path, "must be an object {final, judges, info_grounding}", task_id=task_id)
    out = cast(M3Entry, {**entry, "final": _score(path, entry.get("final"), task_id, "final")})
    _check_judges(path, task_id, entry, "")
    grounding = entry.get("info_grounding")
    if grounding is not None:
        if not isinstance(grounding, dict):
            raise InputError(path, "must be an object {final, judges}", task_id=task_id, field="info_grounding")
        _check_judges(path, task_id, grounding, "info_grounding.")
        out["info_grounding"] = cast(Grounding, {
            **grounding, "final": _score(path, grounding.get("final"), task_id, "info_grounding.final")})
    return out


def _record_entry(path: Path, task_id: str, record: Mapping[str, object]) -> M3Entry:
    """A {task_completion, information_grounding} record as a published entry."""
    tc, ig = (_score(path, record.get(key), task_id, key) for key in JUDGE_KEYS)
    return {"final": tc, "judges": [], "info_grounding": {"final": ig, "judges": []}}


def _root(path: Path) -> JsonValue:
    root = read_json(path, "judge file")
    format_version(path, root, TASKCOMPLETION)
    return root


def read_taskcompletion(path: str | Path) -> dict[str, M3Entry]:
    """id -> published entry ({final, judges, info_grounding?}) of a judge file in any accepted shape."""
    return _entries_of(Path(path), _root(Path(path)))


def _entries_of(path: Path, root: JsonValue) -> dict[str, M3Entry]:
    if isinstance(root, dict) and any(k in root for k in _ENTRY_KEYS):
        key = next(k for k in _ENTRY_KEYS if k in root)
        entries = root[key]
        if not isinstance(entries, dict):
            raise InputError(path, "must be an object of id -> entry", field=key)
        return {str(tid): _published_entry(path, str(tid), entry) for tid, entry in entries.items()}
    items: list[tuple[str | None, JsonValue]]
    if isinstance(root, dict):
        items = [(str(k), v) for k, v in root.items()]
    elif isinstance(root, list):
        items = [(str(v["id"]) if isinstance(v, dict) and v.get("id") is not None else None, v) for v in root]
    else:
        raise InputError(path, "the root must be a taskcompletion object, a list or an object of judge records")
    out = {}
    for position, (tid, record) in enumerate(items):
        if tid is None or not isinstance(record, dict):
            raise InputError(path, "a judge record must be an object with an id", task_id=f"#{position}", field="id")
        if tid in out:
            log.warning("%s: id %s has more than one judge record (record #%d); the last one is kept", path, tid,
                        position)
        out[tid] = _record_entry(path, tid, record)
    return out


def judge_values(entries: Mapping[str, M3Entry]) -> dict[str, dict[str, float]]:
    """id -> {task_completion, information_grounding (when judged)} of published entries."""
    out = {}
    for tid, entry in entries.items():
        values = {"task_completion": entry["final"]}
        if "info_grounding" in entry and isinstance(entry["info_grounding"], dict):
            values["information_grounding"] = entry["info_grounding"]["final"]
        out[tid] = values
    return out


def taskcompletion_document(entries: Mapping[str, M3Entry], num_total: int, **extra: JsonValue) -> JsonObject:
    """A taskcompletion.json in the published shape: aggregate (rates are means over the judged tasks,
    null when none is judged) and pre_id; `extra` adds top-level keys (e.g. meta)."""
    tc = [e["final"] for e in entries.values()]
    ig = [e["info_grounding"]["final"] for e in entries.values() if isinstance(e.get("info_grounding"), dict)]
    aggregate: JsonObject = {"num_total": num_total, "num_scored": len(entries),
                 "completion_rate": mean(tc) if tc else None,
                 "information_grounding_rate": mean(ig) if ig else None}
    return {"aggregate": aggregate, "pre_id": cast(JsonObject, dict(entries)), **extra}


def reference_entries(path: Path) -> int:
    """The number of task objects in a reference file, repeated ids included (the published num_total)."""
    root = read_json(path, "trajectory file")
    return len(root) if isinstance(root, (list, dict)) else 0


_META_KEYS = ("predictions", "gt", "judges", "prompt_versions", "attempts", "usage", "failed", "input_keys")


def image_of(options: M3Options, files: RunFiles, task: TaskInputs) -> str | None:
    """The task's input image the judges are shown: a relative ``image`` is taken under the option
    ``images_dir``, else the reference file's folder, and refused by the one path rule when it leads out of
    that folder; None when it names none."""
    assert task.prediction is not None
    images = options.images_dir or (files.reference.parent if files.reference is not None else None)
    names = (files.reference or "reference", files.predictions or "predictions")
    return task_image(task.reference, task.prediction, images, names)


def _judged(label: str, block: object) -> list[JsonObject]:
    if not isinstance(block, Mapping):
        return []
    judges = [j for j in block.get("judges") or [] if isinstance(j, Mapping)]
    scores = [float(j["score"]) for j in judges if is_number(j.get("score"))]
    spread = f"{max(scores) - min(scores):.3f}" if len(scores) > 1 else "\u2013"
    rows: list[JsonValue] = [[str(j.get("name") or "?"), f"{j['score']:.3f}" if is_number(j.get("score")) else None,
                              {"reply": j["reply"]} if isinstance(j.get("reply"), str) else ""] for j in judges]
    return [{"kind": "heading", "text": f"{label}: {block['final']:.3f}", "note": f"spread {spread}"},
            {"kind": "rows", "rows": rows}]


def _agreement(agreement: object) -> list[JsonObject]:
    """The judges' agreement per metric of a file's meta, as a model's page shows it."""
    if not isinstance(agreement, Mapping) or not agreement:
        return []
    rows: list[JsonValue] = []
    for metric, v in agreement.items():
        v = v if isinstance(v, Mapping) else {}
        pairs = [p for p in v.get("spearman") or [] if isinstance(p, Mapping)]
        rows.append([str(metric).replace("_", " "), ", ".join(map(str, v.get("judges") or [])), v.get("tasks"),
                     v.get("krippendorff_alpha"),
                     "; ".join("~".join(map(str, p.get("judges") or [])) + " " +
                               (f"{p['rho']:.2f}" if is_number(p.get("rho")) else "\u2013") for p in pairs),
                     [{"task": str(d.get("id")), "text": f"{d.get('id')} ({d['spread']:.2f})" if is_number(
                         d.get("spread")) else str(d.get("id"))} for d in (v.get("most_disagreed") or [])[:5]
                      if isinstance(d, Mapping)]])
    head: list[JsonValue] = ["Metric", "Judges", "Tasks", "Krippendorff's \u03b1", "Spearman's \u03c1 (pairs)",
            "Most disagreed (spread)"]
    return [{"title": "Judge agreement", "id": "agreement", "parts": [{"kind": "rows", "rows": rows, "head": head}]}]


class M3Judges(Plain[M3Entry, M3Options]):
    """Every judge of the pool asks both questions of each task; the file in the published shape, resumed
    but for the entries judged by other models than the pool's."""

    card = Card(name=NAME, reads=frozenset({"prediction", "reference"}), metrics=METRICS, suffix=TASKCOMPLETION,
                option="judge", position=10, rubrics=(COMPLETION, GROUNDING), partial=True)
    options_type = M3Options

    async def verdict(self, ctx: JudgeContext[M3Options], task: TaskInputs) -> Verdict[M3Entry]:
        """One task's entry in the published shape from every judge of the pool, shown the task's input image
        (`image_of`); the pool's JudgeFailure when some judge has no answer."""
        if task.prediction is None or task.reference is None:
            raise ValueError(f"task {task.task_id}: the judges need the prediction and the reference")
        if ctx.pool is None:
            raise ValueError(f"task {task.task_id}: the judges need a pool")
        image = image_of(ctx.options, ctx.files, task)
        entry = await judge_task(ctx.pool, task.reference, task.prediction, ctx.attempts, ctx.max_result_chars,
                                 (image,) if image else ())
        return Verdict(task.task_id, cast(M3Entry, entry))

    def export(self, entries: Mapping[str, M3Entry], meta: JsonMapping) -> JsonObject:
        """The taskcompletion.json of the judge app: the published shape, its meta the run's files, judges,
        prompt versions, attempts, usage, failures and input keys, and the judges' agreement
        (``agreement_top`` most disagreed tasks per metric)."""
        kept: JsonObject = {key: meta[key] for key in _META_KEYS if key in meta}
        top, total = meta.get("agreement_top", 10), meta.get("num_total", len(entries))
        kept["agreement"] = judges_agreement(entries, int(top) if isinstance(top, (int, float)) else 10)
        return taskcompletion_document(entries, int(total) if isinstance(total, (int, float)) else len(entries),
                                       meta=kept)

    def load(self, path: Path) -> dict[str, M3Entry]:
        """The entries of an earlier file in any accepted shape."""
        return read_taskcompletion(path)

    def complete(self, entry: M3Entry, judges: Sequence[str]) -> bool:
        """Whether an entry was judged by the pool's models (one without judges' scores, e.g. a published
        number, stands)."""
        judged = sorted(entry_scores(entry, TASK_COMPLETION))
        return not judged or judged == sorted(judges)

    def task_count(self, reference: Path) -> int:
        """The published ``num_total``: the task objects of the reference file."""
        return reference_entries(reference)

    def input_files(self, options: M3Options, files: RunFiles, task: TaskInputs) -> dict[str, Path]:
        """The task's input image (`image_of`), shown to every judge."""
        if task.prediction is None or task.reference is None:
            return {}
        try:
            image = image_of(options, files, task)
        except InputError:
            return {}
        return {"image": Path(image)} if image else {}

    def read(self, path: Path, settings: ReadSettings) -> Verdicts:
        """Task Completion and Information Grounding per task id of a judge file in any accepted shape; its
        entries as the detail and its meta."""
        root = _root(Path(path))
        entries = _entries_of(Path(path), root)
        return Verdicts(per_id=judge_values(entries), detail=cast(dict[str, dict[str, object]], entries),
                        meta=file_meta(root))

    def display(self, task: JsonMapping | None, meta: JsonMapping) -> list[JsonObject]:
        """The viewer's blocks: per task both scores with each judge's score and reply; for the file, the
        judges' agreement."""
        if task is None:
            return _agreement(meta.get("agreement"))
        return [{"title": "Judges", "id": "judges", "parts": [*_judged("Task Completion", task),
                                                              *_judged("Information Grounding",
                                                                       task.get("info_grounding"))]}]


EVALUATOR: Evaluator[M3Entry, M3Options] = M3Judges()
