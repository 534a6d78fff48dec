"""Scripted judges for the demo, the tests and the benchmark: a judging policy for ScriptedChatServer.

The scores follow from the payload, so they are deterministic and plausible: Task Completion gives 3
for a run with steps, up to 3 for the share of calls that did not fail, and 4 for a final reply;
Information Grounding is the share of the reference's calls whose tool the prediction also called;
a call's class comes from the outcome rules (4 when they see no error, 2 when they cannot tell).
``bias`` shifts every score (by bias x 10 for Task Completion, clipped to the range), so judges of a
scripted pool differ.

A request names its rubric by the ``purpose`` marker of its system message and carries its payload as the
``payload`` marker of its user message (engine.judging.questions.Rubric.messages; a request without it has
the payload as its user message's JSON); the answer of each purpose is registered with `register_answer`, so a
new rubric adds its scripted answer where it is defined: an evaluator declares its answers in its own module
(``Evaluator.scripted_answer``), and they are registered here. Importing this module registers the scripted
policy ``judge`` (its ``bias`` from the model config), the answers of the built-in rubrics and those of
every evaluator.

Run ``python -m rollout.judges.scripted`` to serve scripted judges from another process (any model
name is answered); it prints the base URL on its first line.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Mapping

from engine.contract import JsonMapping, JsonObject, JsonValue
from engine.contract.settings import ModelConfig
from engine.evaluators import evaluators
from engine.evaluators.protocol import ScriptedAnswer
from engine.judging import (
    CALL_OUTCOME,
    CLASS_OF_DIGIT,
    INFORMATION_GROUNDING,
    TASK_COMPLETION,
    decide,
    error_state,
    result_text,
)
from rollout.models.loopback import message_texts, register_policy, serve

_DIGIT_OF_CLASS = {label: digit for digit, label in CLASS_OF_DIGIT.items()}
_ANSWERS: dict[str, ScriptedAnswer] = {}


def register_answer(purpose: str, answer: ScriptedAnswer) -> None:
    """Make scripted judges answer requests of rubric `purpose` with `answer(payload, bias)`."""
    _ANSWERS[purpose] = answer


def _calls(steps: JsonValue) -> list[JsonObject]:
    return [c for step in (steps if isinstance(steps, list) else []) if isinstance(step, dict)
            for c in _listed(step.get("calls")) if isinstance(c, dict)]


def _listed(value: JsonValue) -> list[JsonValue]:
    return value if isinstance(value, list) else []


def _object(value: JsonValue) -> JsonMapping:
    return value if isinstance(value, Mapping) else {}


def completion_score(prediction: JsonMapping) -> float:
    """The scripted Task Completion (0-10) of a prediction payload."""
    calls = _calls(prediction.get("steps"))
    ok = sum(1 for c in calls if error_state(c, result_text(c.get("result")))[0] is not True)
    final = prediction.get("final_reply")
    return 3.0 * bool(calls) + (3.0 * ok / len(calls) if calls else 0.0) + 4.0 * bool(isinstance(final, str)
                                                                                      and final.strip())


def grounding_score(reference: JsonMapping, prediction: JsonMapping) -> float:
    """The scripted Information Grounding (0-1): the share of reference calls matched by tool name."""
    wanted = Counter(c.get("name") for c in _calls(reference.get("steps")))
    made = Counter(c.get("name") for c in _calls(prediction.get("steps")))
    total = sum(wanted.values())
    return sum((wanted & made).values()) / total if total else 1.0


def completion_answer(payload: JsonObject, bias: float) -> str:
    """The scripted Task Completion reply, \\boxed{score} with score in [0, 10]."""
    score = min(10.0, max(0.0, completion_score(_object(payload["prediction"])) + 10.0 * bias))
    return f"\\boxed{{{score:.2f}}}"


def grounding_answer(payload: JsonObject, bias: float) -> str:
    """The scripted Information Grounding reply, \\boxed{share} with share in [0, 1]."""
    score = min(1.0, max(0.0, grounding_score(_object(payload["reference"]), _object(payload["prediction"])) + bias))
    return f"\\boxed{{{score:.3f}}}"


def outcome_answer(payload: JsonObject, bias: float) -> str:
    """The scripted call class digit: the outcome rules' class, 2 when they cannot tell."""
    decision = decide(payload, None)
    return str(_DIGIT_OF_CLASS[decision.label] if decision else 2)


class JudgePolicy:
    """Replies of a scripted judge to the judge prompts, by the request's rubric purpose, shifted by `bias`."""

    def __init__(self, bias: float = 0.0) -> None:
        self.bias = bias

    def __call__(self, request: JsonObject) -> str:
        """The reply to a judge request: the registered answer of its purpose."""
        listed = request.get("messages")
        messages = listed if isinstance(listed, list) else []
        purpose = messages[0].get("purpose") if messages and isinstance(messages[0], dict) else None
        answer = _ANSWERS.get(purpose) if isinstance(purpose, str) else None
        if answer is None:
            return "I only judge."
        payload = messages[-1].get("payload") if isinstance(messages[-1], dict) else None
        if not isinstance(payload, dict):
            payload = json.loads(message_texts(request)[-1][1])
        return answer(payload, self.bias)


def judge_policy(model: ModelConfig) -> JudgePolicy:
    """The scripted judge of a model config (its ``bias``)."""
    return JudgePolicy(model.bias)


register_answer(TASK_COMPLETION, completion_answer)
register_answer(INFORMATION_GROUNDING, grounding_answer)
register_answer(CALL_OUTCOME, outcome_answer)


def register_evaluator_answers() -> None:
    """Register the scripted answers every evaluator declares for the prompts it asks
    (``Evaluator.scripted_answer``)."""
    for found in evaluators():
        for rubric in (*found.card.rubrics, *found.card.asked):
            answer = found.scripted_answer(rubric.purpose)
            if answer is not None:
                register_answer(rubric.purpose, answer)


register_evaluator_answers()
register_policy("judge", judge_policy)


def main() -> None:
    """Serve the judging policy until interrupted; the first line printed is the base URL."""
    parser = argparse.ArgumentParser(description="Scripted judges on loopback (rollout.judges.scripted).")
    parser.add_argument("--bias", type=float, default=0.0, help="shift of every score")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before each reply")
    args = parser.parse_args()
    serve(JudgePolicy(args.bias), args.delay)


if __name__ == "__main__":
    main()
