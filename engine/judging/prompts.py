"""The judges' prompts, versioned (a rubric, its reply parsing and the judging helpers are
engine.judging.questions's).

A rubric's version is part of every cached reply's key: change a prompt's text, change its version,
and the replies to the old text are no longer used.
"""

from __future__ import annotations

from engine.contract import JsonMapping, JsonObject, JsonValue
from engine.judging.questions import Rubric

TASK_COMPLETION = "task_completion"
INFORMATION_GROUNDING = "information_grounding"
CALL_OUTCOME = "call_outcome"


COMPLETION = Rubric(
    TASK_COMPLETION, "tc-1",
    "You grade how well an AI agent completed a task with tools served over the Model Context Protocol.\n"
    "You are given the task question and the agent's run only: its steps, each with the tool calls made and "
    "their results, and its final reply. There is no reference solution: judge the run on its own.\n"
    "Give a score from 0 to 10, the sum of three parts:\n"
    "- Planning, 0 to 3: is the plan of tool calls clear, complete and well organized?\n"
    "- Process, 0 to 3: did the calls return useful feedback and intermediate results; were the tools used "
    "effectively?\n"
    "- Final result, 0 to 4: how far does the final output accomplish the task? Partial credit is allowed.\n"
    "Answer with the score alone, written as \\boxed{S} where S is a number from 0 to 10, and nothing else.",
    0.0, 10.0, 10.0)

GROUNDING = Rubric(
    INFORMATION_GROUNDING, "ig-1",
    "You check how well an AI agent's tool calls cover the key steps of a reference solution.\n"
    "You are given the task question, the reference steps and the agent's predicted steps.\n"
    "Let G be the share of the reference's key steps that the prediction covers:\n"
    "- a reference step is covered when the prediction has an equivalent step: paraphrased arguments, "
    "equivalent calls and small changes of order count as covered;\n"
    "- extra steps in the prediction cost nothing;\n"
    "- each missing or clearly deviating key step lowers G by its share of the reference steps.\n"
    "Answer with G alone, written as \\boxed{G} where G is a number from 0 to 1, and nothing else.",
    0.0, 1.0)

OUTCOME = Rubric(
    CALL_OUTCOME, "call-1",
    "You classify one call that an AI agent made to a tool served over the Model Context Protocol.\n"
    "You are given the tool's name, the arguments and the result. Answer with exactly one digit:\n"
    "1 = Unknown tool: the named tool does not exist or was not offered to the agent.\n"
    "2 = Invalid arguments: the tool exists but the arguments are missing, malformed or rejected "
    "(schema or validation errors, HTTP 400, \"invalid arguments\" errors).\n"
    "3 = Resource not found: the tool's backend could not find the requested resource or route "
    "(HTTP 404, \"not found\" from upstream).\n"
    "4 = Successful call: the result is a normal response, not an error.\n"
    "Answer with the digit alone.",
    1.0, 4.0)

def _cut(text: JsonValue, limit: int) -> JsonValue:
    if not limit or not isinstance(text, str) or len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters]"


def run_steps(steps: JsonValue, max_result_chars: int = 0) -> JsonValue:
    """Steps of a run as judges see them: results cut to max_result_chars (0: whole)."""
    if not max_result_chars or not isinstance(steps, list):
        return steps
    return [{**step, "calls": [{**c, "result": _cut(c["result"], max_result_chars)} if isinstance(c, dict)
                               and "result" in c else c for c in _listed(step.get("calls"))]}
            if isinstance(step, dict) else step for step in steps]


def _listed(value: JsonValue) -> list[JsonValue]:
    return value if isinstance(value, list) else []


def completion_payload(question: str, prediction: JsonMapping, max_result_chars: int = 0) -> JsonObject:
    """What a Task Completion judge sees: the question and the prediction (never the reference)."""
    return {"question": question,
            "prediction": {"id": prediction.get("id"), "steps": run_steps(prediction.get("steps"), max_result_chars),
                           "final_reply": prediction.get("final_reply")}}


def grounding_payload(question: str, reference: JsonMapping, prediction: JsonMapping,
                      max_result_chars: int = 0) -> JsonObject:
    """What an Information Grounding judge sees: the question, the reference steps and the prediction."""
    return {"question": question, "reference": {"id": reference.get("id"), "steps": reference.get("steps")},
            **completion_payload(question, prediction, max_result_chars)}


def outcome_payload(call: JsonMapping, max_result_chars: int = 0) -> JsonObject:
    """What a call outcome judge sees: the call's name, arguments and result (and its error flag when known)."""
    payload: JsonObject = {"name": call.get("name"), "arguments": call.get("arguments"),
               "result": _cut(call.get("result"), max_result_chars)}
    if isinstance(call.get("is_error"), bool):
        payload["is_error"] = call["is_error"]
    return payload
