"""Per-call outcomes (paper Figure 6) by rules, and the illegal calling format of a sample.

Every predicted call gets one of the four classes of the published call analysis: unknown tool,
invalid arguments, resource not found, success. Rules decide first, in this order:

1. ``catalogue``: the tool is not in the tool catalogue (its server is unknown, or the server does not
   have it) -> unknown tool. Servers that failed to start when the catalogue was taken are not judged so.
2. The call's error state: an in-band error object as the result (``{"error": ...}``,
   ``{"isError": true}``) or an error prefix of its text (``Error``, ``[Tool error]``, ``MCP error``,
   ``Unknown tool``, ``HTTP 4xx``), else its ``is_error`` flag when recorded. A result that is no error -> success
   (``no-error``); without a flag, a text that merely mentions error words is left undecided.
3. For an error, its message: unknown-tool texts (``Unknown tool``, ``not available in this task``,
   ``Tool X not found``) -> unknown tool (``unknown-tool-text``); invalid-argument texts (-32602,
   ``Invalid arguments``, pydantic's ``validation error for``, ``Field required``, HTTP 400, a path
   outside the task workspace) -> invalid arguments (``invalid-arguments-text``); arguments the tool's
   input schema rejects -> invalid arguments (``schema``); 404 / ``not found`` / ``no such file`` ->
   resource not found (``not-found-text``).

What no rule settles goes to an LLM judge (engine.evaluators.call_outcomes). The tool catalogue is
built by the judge app (rollout.judges.catalogue: a servers config, a recorded catalogue or a tools
JSON) and reaches the evaluator in its judge context.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.contract.replies import parse_tool_calls

CALL_CLASSES: tuple[str, ...] = ("unknown_tool", "invalid_arguments", "resource_not_found", "success")
"""The four per-call classes, in the published order (1 unknown tool ... 4 success)."""
UNKNOWN_TOOL, INVALID_ARGUMENTS, RESOURCE_NOT_FOUND, SUCCESS = CALL_CLASSES
CLASS_OF_DIGIT: dict[int, str] = dict(enumerate(CALL_CLASSES, 1))
"""The published class numbers: 1 unknown tool, 2 invalid arguments, 3 resource not found, 4 success."""
ILLEGAL_CALLING = "illegal_calling"
"""The count of illegal calling formats, first of the published five counts: samples with one (the
published count), and in the rules-first document also each call never made, whose label it is."""
NOT_MADE_RULE = "not-made"
"""The rule that labels a call the rollout never made (engine.contract.call_made) an illegal-format call."""
UNDECIDED = "undecided"
"""A call the judge gave no class in its attempts: counted apart, never put in a class."""


def tally(ids: Iterable[str], illegal_ids: Iterable[str], labels: Sequence[Mapping[str, Any]], samples: int
          ) -> tuple[dict[str, Any], dict[str, dict[str, int]]]:
    """(the counts of a call analysis: the five published counts, the undecided calls, ``num_samples``,
    ``total_calls`` and ``rates``, illegal format per sample and the rest per call; per id, in the order of
    `ids`, its five counts) of the illegal formats (an id once per sample that has one) and the call labels
    ({id, label}; label None: undecided; label ILLEGAL_CALLING: a call never made, counted with the
    illegal formats).

    >>> head, per_id = tally(["a", "b"], ["b"], [{"id": "a", "label": "success"}, {"id": "a", "label": None}], 2)
    >>> head["illegal_calling"], head["success"], head["undecided"], head["rates"]["success"], per_id["b"]
    (1, 1, 1, 0.5, {'illegal_calling': 1, 'unknown_tool': 0, 'invalid_arguments': 0, 'resource_not_found': 0, \
'success': 0})
    """
    keys = (ILLEGAL_CALLING, *CALL_CLASSES)
    per_id = {tid: dict.fromkeys(keys, 0) for tid in ids}
    for tid in illegal_ids:
        per_id[tid][ILLEGAL_CALLING] += 1
    for label in labels:
        if label["label"] is not None:
            per_id[label["id"]][label["label"]] += 1
    totals = {key: sum(counts[key] for counts in per_id.values()) for key in keys}
    undecided = sum(1 for label in labels if label["label"] is None)
    calls = len(labels)
    rates = {ILLEGAL_CALLING: totals[ILLEGAL_CALLING] / samples if samples else None,
             **{key: totals[key] / calls if calls else None for key in CALL_CLASSES},
             UNDECIDED: undecided / calls if calls else None}
    return {**totals, UNDECIDED: undecided, "num_samples": samples, "total_calls": calls, "rates": rates}, per_id


def _any(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


_UNKNOWN_TOOL_TEXT = _any(r"\bunknown tool\b", r"\bunknown (?:mcp )?server\b", r"\bis not available in this task\b",
                          r"\btool\s+['\"]?[\w./:-]+['\"]?\s+(?:was\s+|is\s+)?not found\b", r"\bno such tool\b",
                          r"\btool not found\b", r"\bmethod not found\b", r"-32601\b")
_INVALID_ARGUMENTS_TEXT = _any(r"-32602\b", r"\binvalid (?:arguments?|params|parameters?|input|request parameters)\b",
                               r"\bvalidation errors? for\b", r"\bfield required\b", r"\bis a required property\b",
                               r"\bmissing (?:\d+ )?required (?:positional |keyword )?(?:arguments?|parameters?|"
                               r"propert(?:y|ies)|fields?)\b", r"\bunexpected keyword argument\b",
                               r"\binput should be\b", r"\bhttp 400\b", r"\b400 bad request\b", r"\bbad request\b",
                               r"\bstatus(?: code)?\W{0,3}400\b", r"\bis outside the task workspace\b")
_NOT_FOUND_TEXT = _any(r"\b404\b", r"\bnot found\b", r"\bno such file\b", r"\bdoes ?n[o']t exist\b", r"\benoent\b",
                       r"\bfilenotfounderror\b", r"\bno (?:results?|records?|matches|data|entries) (?:were )?found\b",
                       r"\bcould not (?:be )?(?:find|found|locate)\b")
_ERROR_START = re.compile(r"^\s*(?:error\b|\[tool error\]|mcp error\b|exception\b|traceback\b|failed\b|failure\b|"
                          r"unknown tool\b|http [45]\d\d\b|[45]\d\d (?:client|server) error\b)", re.IGNORECASE)
_ERROR_WORDS = re.compile(r"\berror\b|\bfail(?:ed|ure)?\b|\binvalid\b|\bnot found\b|\b404\b|\bexception\b|"
                          r"\bdenied\b|\bunauthori[sz]ed\b|\bforbidden\b|\btimed? ?out\b|"
                          r"\bno (?:results?|records?|matches|data|entries) (?:were )?found\b", re.IGNORECASE)


@dataclass(frozen=True)
class Decision:
    """A call's class and the rule that gave it."""

    label: str
    rule: str


@dataclass
class Catalogue:
    """The tools a run could call: "server/tool" -> input schema (None when unknown), and the servers
    that were not running when it was taken (their calls are not judged by the catalogue)."""

    tools: dict[str, dict[str, Any] | None]
    unavailable: frozenset[str] = frozenset()
    source: str = ""
    _validators: dict[str, Any] = field(default_factory=dict, repr=False)

    def knows(self, name: str) -> bool | None:
        """Whether the tool exists; None when its server was not running."""
        if name in self.tools:
            return True
        return None if name.split("/", 1)[0] in self.unavailable else False

    def arguments_valid(self, name: str, arguments: Any) -> bool | None:
        """Whether the arguments validate against the tool's input schema; None without a usable schema."""
        if name not in self._validators:
            self._validators[name] = _validator(self.tools.get(name))
        validator = self._validators[name]
        if validator is None:
            return None
        return validator.is_valid({} if arguments is None else arguments)


def _validator(schema: dict[str, Any] | None) -> Any:
    """A jsonschema validator of a tool's input schema (None when there is none or it is not valid)."""
    if not isinstance(schema, dict) or not schema:
        return None
    import jsonschema

    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        return None
    return cls(schema)


def result_text(result: Any) -> str:
    """A call's result as text (JSON for structured results, "" when there is none)."""
    if result is None:
        return ""
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, sort_keys=True)


def in_band_error(text: str) -> str | None:
    """The error of a result that is a JSON object reporting one ({"error": ...}, {"isError": true})."""
    body = text.strip()
    if not body.startswith("{"):
        return None
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    error = obj.get("error")
    if error not in (None, False, "", [], {}):
        return error if isinstance(error, str) else json.dumps(error, ensure_ascii=False, sort_keys=True)
    if obj.get("isError") is True or obj.get("is_error") is True:
        return body
    return None


def error_state(call: Mapping[str, Any], text: str) -> tuple[bool | None, str]:
    """(is it an error: True, False, or None when the text cannot tell; the error's message)."""
    band = in_band_error(text)
    if band is not None:
        return True, band
    if _ERROR_START.search(text):
        return True, text
    flag = call.get("is_error")
    if isinstance(flag, bool):
        return flag, text
    if not text.strip() or _ERROR_WORDS.search(text):
        return None, text
    return False, text


def decide(call: Mapping[str, Any], catalogue: Catalogue | None) -> Decision | None:
    """The class of a call by the rules (module docstring), or None when no rule settles it."""
    name = str(call.get("name") or "").strip()
    if catalogue is not None and catalogue.knows(name) is False:
        return Decision(UNKNOWN_TOOL, "catalogue")
    error, message = error_state(call, result_text(call.get("result")))
    if error is False:
        return Decision(SUCCESS, "no-error")
    if error is None:
        return None
    if _UNKNOWN_TOOL_TEXT.search(message):
        return Decision(UNKNOWN_TOOL, "unknown-tool-text")
    if _INVALID_ARGUMENTS_TEXT.search(message):
        return Decision(INVALID_ARGUMENTS, "invalid-arguments-text")
    if catalogue is not None and catalogue.arguments_valid(name, call.get("arguments")) is False:
        return Decision(INVALID_ARGUMENTS, "schema")
    if _NOT_FOUND_TEXT.search(message):
        return Decision(RESOURCE_NOT_FOUND, "not-found-text")
    return None


def illegal_format(sample: Mapping[str, Any], per_call: bool = False) -> str | None:
    """Why a sample counts as an illegal calling format (at most once), or None.

    The published shape: a dialogue turn whose ``work.tool_calls`` is an empty list. This project's
    rollout: an assistant reply of the PROCESS phase that is not the tool-call JSON asked for (the
    executor then asks once more, or ends the steps). `per_call` (the rules-first count, where each
    call never made is an illegal-format call of its own): a reply whose only fault is calls with
    arguments that are not a JSON object does not count the sample too.
    """
    dialogue = sample.get("dialogue")
    if not isinstance(dialogue, list):
        return None
    for turn in dialogue:
        if not isinstance(turn, Mapping):
            continue
        work = turn.get("work")
        if isinstance(work, Mapping) and work.get("tool_calls") == []:
            return "a turn's work.tool_calls is empty"
        content = turn.get("content")
        if turn.get("role") == "assistant" and turn.get("phase") == "process" and isinstance(content, str):
            try:
                parse_tool_calls(content, keep_bad_arguments=per_call)
            except ValueError as exc:
                return f"a PROCESS reply is not tool-call JSON ({exc})"
    return None
