"""Shards of a judge run (``shard=i/n``, rollout.shards): each judges the tasks of its part into its own part
file per evaluator, and the merge (``merge=N``, or the last shard to end) writes the one verdict file an
unsharded run writes.

A part file is the evaluator's own document with a ``part`` object beside it: the shard, the SHA-256 of the
run's inputs (predictions, reference, tasks file), the run's meta (the settings, judges and prompt versions),
the meta the part's run added (failures, incomplete tasks, usage) and its entries as they were judged. The
merge checks every part against this run's meta and inputs, takes each part's entries of its own tasks
and their input keys (rollout.judges.inputs.input_key), adds the judges' usage, and writes the document of all
entries with the meta of one run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from engine.contract import InputError, JsonMapping, JsonObject, JsonValue, dumps_json, read_json
from engine.contract.settings import Shard
from engine.evaluators.protocol import EntryT, Evaluator, OptionsT
from engine.judging import JudgeSpec
from rollout.judges.pool import JudgeUsage
from rollout.judges.verdicts import INPUT_KEYS, export
from rollout.shards import PartPending, check_part, file_sha256, missing_ids, part_path, write_merged

PER_RUN = ("prompt_versions",)
"""Meta keys a run sets while judging (checked among the parts, not against the merging run)."""


def part_inputs(shard: Shard, predictions: Path, gt: Path | None, tasks: str | None) -> JsonObject:
    """The settings of a part besides the run's meta: the shard and the SHA-256 of its input files."""
    return {"shard": str(shard), "predictions": file_sha256(predictions), "gt": file_sha256(gt),
            "tasks": file_sha256(tasks)}


class _Object(dict):
    """A JSON object as read, with the first key it repeats (JSON keeps the last value of a repeated key)."""

    repeated: str | None = None


def _object(pairs: list[tuple[str, object]]) -> _Object:
    obj = _Object(pairs)
    seen: set[str] = set()
    for key, _ in pairs if len(obj) < len(pairs) else ():
        if key in seen:
            obj.repeated = key
            break
        seen.add(key)
    return obj


def repeated_entry(path: Path) -> str | None:
    """The first task id a judge part file's ``part.entries`` holds twice (a valid part file read whole)."""
    root = json.loads(path.read_text(encoding="utf-8-sig"), object_pairs_hook=_object)
    return root["part"]["entries"].repeated


def merge_verdicts(judged: Evaluator[EntryT, OptionsT], output: Path, parts_dir: Path, count: int, order: Sequence[str],
                   meta: JsonMapping, inputs: Callable[[Shard], JsonObject], specs: Sequence[JudgeSpec],
                   names: Sequence[str]) -> Path:
    """Merge the `count` part files of `output` into it; InputError naming a part made with other settings,
    PartPending naming one missing or lacking some of its tasks (judged completely)."""
    entries: dict[str, JsonObject] = {}
    keys: dict[str, JsonValue] = {}
    usage = {s.name: JudgeUsage() for s in specs}
    first: dict[str, Any] | None = None
    base = json.loads(dumps_json({k: v for k, v in meta.items() if k not in PER_RUN}))  # as a part file holds it
    for shard in Shard(0, count).siblings():
        path = part_path(parts_dir, output, shard)
        if not path.is_file():
            raise PartPending(path, f"part {shard} is missing: run shard={shard} with the same settings",
                              field="shard")
        root = read_json(path, "evaluator part file")
        part = root.get("part") if isinstance(root, dict) else None
        if not isinstance(part, dict) or not all(isinstance(part.get(k), dict) for k in ("meta", "extra", "entries")):
            raise InputError(path, f"part {shard} is not a part file of the judge app", field="part")
        found = {**{k: v for k, v in part.items() if k not in ("meta", "extra", "entries")},
                 "meta": {k: v for k, v in part["meta"].items() if k not in PER_RUN}}
        check_part(path, found, {**inputs(shard), "meta": base}, shard)
        if first is None:
            first = part
        check_part(path, {k: part["meta"].get(k) for k in PER_RUN}, {k: first["meta"].get(k) for k in PER_RUN},
                   shard)
        wanted = [i for i in order if shard.owns(i)]
        got = part["entries"]
        twice = repeated_entry(path)
        if twice is not None:
            raise InputError(path, f"part {shard} holds this task twice (its entries repeat the id): a part holds "
                             f"each of its tasks once; remove one, or run shard={shard} again into a fresh part",
                             task_id=twice, field="part.entries")
        missing_ids(path, shard, [i for i in wanted if i in got and judged.complete(got[i], names)], wanted)
        entries.update((i, got[i]) for i in wanted)
        stored = part["extra"].get(INPUT_KEYS)
        if isinstance(stored, dict):
            keys.update((i, stored[i]) for i in wanted if i in stored)
        for name, block in (part["extra"].get("usage") or {}).items():
            if name in usage and isinstance(block, dict):
                usage[name].add(block)
    assert first is not None
    merged: JsonObject = {"failed": {}, INPUT_KEYS: {i: keys[i] for i in order if i in keys}, "incomplete": [],
              "usage": {s.name: usage[s.name].to_json(s) for s in specs}}
    extra: JsonObject = {k: merged[k] for k in first["extra"] if k in merged}
    document = export(judged, {i: entries[i] for i in order if i in entries}, {**first["meta"], **extra})
    write_merged(output, dumps_json(document) + "\n")
    return output
