"""The parsing of a model's replies that the agent and the evaluators share: a JSON object (strict
JSON, a ```json fence allowed) and the tool calls of a reply in the tool-call JSON the agent asks for
(the rollout's executor parses its model's replies with it; the call outcome rules judge a recorded
reply's format by it)."""

from __future__ import annotations

import json
import math
import re
from typing import Any, NoReturn

from engine.contract.jsonio import JsonObject, JsonValue

_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n(.*?)\n?```$", re.DOTALL)


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"not valid JSON ({name} is not a JSON number)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"not valid JSON ({text} is out of range)")
    return value


def _loads(text: str) -> JsonValue:
    """Strict JSON: NaN and infinities are refused (they could not be written to the outputs)."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object of a reply (a ```json fence around it is allowed); ValueError otherwise."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        value = _loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if not isinstance(value, dict):
        raise ValueError("the JSON is not an object")
    return value


def parse_tool_calls(text: str, *, keep_bad_arguments: bool = False) -> list[JsonObject]:
    """The tool calls of a PROCESS reply, as {"name", "arguments"}; ValueError when malformed.

    Arguments given as a JSON string (as some APIs do) are decoded; missing arguments are {}. With
    `keep_bad_arguments`, a call whose arguments are not a JSON object is kept, with the arguments
    as they were written and the reason in ``"problem"``, instead of failing the whole reply.
    """
    obj = parse_json_object(text)
    calls = obj.get("tool_calls")
    if not isinstance(calls, list):
        raise ValueError('the object has no "tool_calls" list')
    out: list[JsonObject] = []
    for i, call in enumerate(calls):
        if not isinstance(call, dict):
            raise ValueError(f"tool_calls[{i}] is not an object")
        name = call.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f'tool_calls[{i}] has no "name" string')
        raw = call.get("arguments", {})
        try:
            arguments = _arguments(raw, i)
        except ValueError as exc:
            if not keep_bad_arguments:
                raise
            out.append({"name": name.strip(), "arguments": raw, "problem": str(exc)})
            continue
        out.append({"name": name.strip(), "arguments": arguments})
    return out


def _arguments(raw: JsonValue, i: int) -> JsonObject:
    """The arguments object of tool_calls[i] (a JSON string decoded, null or "" as {})."""
    arguments: JsonValue = {} if raw is None else raw
    if isinstance(arguments, str):
        try:
            arguments = _loads(arguments) if arguments.strip() else {}
        except ValueError:
            raise ValueError(f'tool_calls[{i}].arguments is a string that is not JSON') from None
    if not isinstance(arguments, dict):
        raise ValueError(f'tool_calls[{i}].arguments is not an object')
    return arguments
