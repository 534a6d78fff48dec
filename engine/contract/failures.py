"""A task that did not finish: the ``error`` object of its prediction record, and who failed.

Every task of a rollout ends with a record: finished (no ``error``), or failed with
``"error": {"kind", "reason", "attempts"}``. The kind says whose failure it was:

- ``agent``: the model's own unusable output (a PROCESS reply that is not tool-call JSON even after the
  retry it was given). The model's failure: the record is scored as it is, with its steps so far;
- ``model_api``: the model API still failed after its retries (or refused the request);
- ``server``: an MCP server the task called was not running;
- ``cut_short``: the run was stopped before the task ended;
- ``replay``: a replayed run asked for something its cache does not hold.

Every kind but ``agent`` is a loss to the infrastructure: reported apart (counted and named), left
out of the scores, and retried by a rerun, which leaves finished and agent-failed tasks alone.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Mapping

from engine.contract.errors import InputError, shown
from engine.contract.jsonio import JsonObject
from engine.contract.trajectory import TrajectoryFile

log = logging.getLogger(__name__)

AGENT, MODEL_API, SERVER, CUT_SHORT, REPLAY = "agent", "model_api", "server", "cut_short", "replay"
ERROR_KINDS = (AGENT, MODEL_API, SERVER, CUT_SHORT, REPLAY)
_SERVER_DOWN = re.compile(r"^Error: MCP server '([^']*)' is not running")


def task_error(kind: str, reason: str, attempts: int = 0) -> JsonObject:
    """The ``error`` object of a record: whose failure (`kind`), why in one line, and the attempts made."""
    if kind not in ERROR_KINDS:
        raise ValueError(f"unknown error kind {kind!r} (expected one of {', '.join(ERROR_KINDS)})")
    return {"kind": kind, "reason": " ".join(reason.split()), "attempts": int(attempts)}


def record_error(record: Mapping[str, object] | None) -> tuple[str, str] | None:
    """(kind, reason) of a record's ``error`` (None when it has none); an error that is not an object,
    or has no known kind, is an infrastructure loss of kind "unknown"."""
    error = record.get("error") if record is not None else None
    if error is None:
        return None
    if not isinstance(error, Mapping):
        return "unknown", str(error)
    kind, reason = error.get("kind"), error.get("reason", error.get("message"))
    return (kind if kind in ERROR_KINDS else "unknown"), str(reason if reason is not None else "")


def is_lost(record: Mapping[str, object] | None) -> bool:
    """Whether a record is a task lost to the infrastructure (an error of any kind but agent)."""
    error = record_error(record)
    return error is not None and error[0] != AGENT


def lost_tasks(records: Mapping[str, Mapping[str, object]]) -> dict[str, tuple[str, str]]:
    """id -> (kind, reason) of the records lost to the infrastructure, in the given order."""
    out = {}
    for task_id, record in records.items():
        error = record_error(record)
        if error is not None and error[0] != AGENT:
            out[task_id] = error
    return out


def server_down(record: Mapping[str, object]) -> str | None:
    """The first server a record's calls were told is not running (the rollout's "Error: MCP server
    '<name>' is not running" result), or None."""
    steps = record.get("steps")
    for step in steps if isinstance(steps, list) else []:
        calls = step.get("calls") if isinstance(step, Mapping) else None
        for call in calls if isinstance(calls, list) else []:
            result = call.get("result") if isinstance(call, Mapping) else None
            m = _SERVER_DOWN.match(result) if isinstance(result, str) else None
            if m:
                return m.group(1)
    return None


def without_lost(predictions: TrajectoryFile) -> tuple[TrajectoryFile, dict[str, tuple[str, str]]]:
    """The predictions less the tasks lost to the infrastructure, which are reported apart: counted and
    named in a warning, and returned as id -> (kind, reason). Agent failures stay (the model's outcome)."""
    lost = lost_tasks({tid: t.raw for tid, t in predictions.tasks.items()})
    if not lost:
        return predictions, lost
    kinds = sorted({kind for kind, _ in lost.values()})
    counts = ", ".join(f"{kind} {sum(1 for k, _ in lost.values() if k == kind)}" for kind in kinds)
    names = ", ".join(f"{tid} ({kind})" for tid, (kind, _) in list(lost.items())[:10])
    log.warning("%s: %d task(s) lost to the infrastructure are left out (%s; a rerun of the rollout retries "
                "them): %s%s", predictions.path, len(lost), counts, names, " ..." if len(lost) > 10 else "")
    kept = {tid: t for tid, t in predictions.tasks.items() if tid not in lost}
    return dataclasses.replace(predictions, tasks=kept), lost


def scorable(predictions: TrajectoryFile) -> TrajectoryFile:
    """The predictions to score: `without_lost`; an InputError saying so (and naming the first loss) when
    every task of the file was lost to the infrastructure, so nothing is left to score."""
    kept, lost = without_lost(predictions)
    if lost and not kept.tasks:
        first, (kind, reason) = next(iter(lost.items()))
        raise InputError(predictions.path, f"nothing to score: every one of its {len(lost)} task(s) was lost to the "
                         f"infrastructure (first: {shown(first)}, {kind}: {shown(reason)}); a rerun of the rollout "
                         "retries them")
    return kept
