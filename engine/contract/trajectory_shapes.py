"""The other shapes a trajectory record may arrive in: VisualToolBench's model responses, read as
trajectory objects, and OpenAI-style chat messages, named in the error that says a record has no steps."""

from __future__ import annotations

from pathlib import Path

from engine.contract.errors import InputError
from engine.contract.jsonio import JsonMapping, JsonObject, JsonValue, dumps_json
from engine.contract.trajectory import set_steps

VTB_ANSWER = "model_answer"
"""The reply field of VisualToolBench's model-response records (its scripts/run_model_response_*.py)."""


def _vtb_calls(path: Path, task_id: str, where: str, listed: JsonValue) -> list[JsonValue]:
    """The calls of a VisualToolBench ``tool_use_list`` ([{function_name, function_args, observation}]) as
    call objects; an observation that is an object with an ``error`` key (how its tool loop records a
    failed call) sets ``is_error``."""
    if listed in (None, {}):
        return []
    if not isinstance(listed, list):
        raise InputError(path, f"must be a list of tool uses, got {type(listed).__name__}", task_id=task_id,
                         field=where)
    calls: list[JsonValue] = []
    for i, use in enumerate(listed):
        if not isinstance(use, dict):
            raise InputError(path, "a tool use must be an object", task_id=task_id, field=f"{where}[{i}]")
        observation = use.get("observation")
        calls.append({"name": use.get("function_name"), "arguments": use.get("function_args"),
                      "is_error": isinstance(observation, dict) and "error" in observation,
                      "result": observation if isinstance(observation, str) else dumps_json(observation)})
    return calls


def vtb_response(path: Path, task_id: str, obj: JsonMapping) -> JsonObject | None:
    """A VisualToolBench model-response record (single-turn: ``model_answer`` and ``tool_use_list`` at
    its top level; multi-turn: ``turns`` of such objects) as a trajectory object: one step per tool use,
    ``final_reply`` the last turn's answer and ``turns`` each turn's ``{"final_reply"}``; None for any
    other object."""
    turns = obj.get("turns")
    listed: list[tuple[JsonMapping, str]]
    if VTB_ANSWER in obj:
        listed = [(obj, "")]
    elif isinstance(turns, list) and turns and all(isinstance(t, dict) and VTB_ANSWER in t for t in turns):
        listed = [(t, f"turns[{k}].") for k, t in enumerate(turns) if isinstance(t, dict)]
    else:
        return None
    steps = [[call] for turn, where in listed
             for call in _vtb_calls(path, task_id, f"{where}tool_use_list", turn.get("tool_use_list"))]
    record = {k: v for k, v in obj.items() if k not in ("turns", VTB_ANSWER)}
    record["final_reply"] = listed[-1][0][VTB_ANSWER]
    if VTB_ANSWER not in obj:
        record["turns"] = [{"final_reply": turn[VTB_ANSWER]} for turn, _ in listed]
    return set_steps(record, steps)


STEPS_SHAPE = ('{"id": ..., "steps": [{"step": 1, "calls": [{"name": "server/tool", "arguments": {...}}]}], '
               '"final_reply": ...}')
"""The shape of a trajectory record, as the published files hold it."""


def shape_hint(obj: JsonMapping) -> str:
    """What a record without steps looks like instead, when it is a known other shape (OpenAI's chat
    messages with tool_calls), with the shape expected; else nothing."""
    messages = obj.get("messages")
    if isinstance(messages, list) and any(isinstance(m, dict) and "role" in m for m in messages):
        calls = 0
        for m in messages:
            made = m.get("tool_calls") if isinstance(m, dict) else None
            calls += len(made) if isinstance(made, list) else 0
        return (f" (it holds OpenAI-style chat 'messages' with {calls} tool_call(s); a prediction record puts "
                f"each step's calls in 'steps': {STEPS_SHAPE}, each call's function name and its arguments as "
                "an object)")
    return f" (expected {STEPS_SHAPE})"
