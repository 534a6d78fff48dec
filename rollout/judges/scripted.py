"""Scripted judges for the demo, the tests and the benchmark: a judging policy for ScriptedChatServer.

The scores follow from the payload, so they are deterministic and plausible: Task Completion gives 3
for a run with steps, up to 3 for the share of calls that did not fail, and 4 for a final reply;
Information Grounding is the share of the reference's calls whose tool the prediction also called;
a call's class comes from the outcome rules (4 when they see no error, 2 when they cannot tell); a
VisualToolBench rubric is Met when the answer has the criterion's quoted phrases
(`engine.evaluators.vtb_rubrics.scripted_reply`; a judge with bias <= -0.1 matches case exactly); an
answer agrees with the ground truth when its normalized text contains the normalized ground truth.
``bias`` shifts every score (by bias x 10 for Task Completion, clipped to the range), so judges of a
scripted pool differ.

Run ``python -m rollout.judges.scripted`` to serve scripted judges from another process (any model
name is answered); it prints the base URL on its first line.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from typing import Any

from engine.evaluators.vtb_rubrics import RUBRIC, scripted_reply
from engine.evaluators.answer_equivalence import PROMPT as ANSWER
from rollout.judges.outcomes import CLASS_OF_DIGIT, decide, error_state, result_text
from rollout.judges.prompts import COMPLETION, GROUNDING, OUTCOME
from rollout.scripted import message_texts, serve

_DIGIT_OF_CLASS = {label: digit for digit, label in CLASS_OF_DIGIT.items()}


def _calls(steps: Any) -> list[dict[str, Any]]:
    return [c for step in steps or [] if isinstance(step, dict) for c in step.get("calls") or []
            if isinstance(c, dict)]


def completion_score(prediction: dict[str, Any]) -> float:
    """The scripted Task Completion (0-10) of a prediction payload."""
    calls = _calls(prediction.get("steps"))
    ok = sum(1 for c in calls if error_state(c, result_text(c.get("result")))[0] is not True)
    final = prediction.get("final_reply")
    return 3.0 * bool(calls) + (3.0 * ok / len(calls) if calls else 0.0) + 4.0 * bool(isinstance(final, str)
                                                                                      and final.strip())


def grounding_score(reference: dict[str, Any], prediction: dict[str, Any]) -> float:
    """The scripted Information Grounding (0-1): the share of reference calls matched by tool name."""
    wanted = Counter(c.get("name") for c in _calls(reference.get("steps")))
    made = Counter(c.get("name") for c in _calls(prediction.get("steps")))
    total = sum(wanted.values())
    return sum((wanted & made).values()) / total if total else 1.0


def normalized(text: str) -> str:
    """Lower case, punctuation (except decimal points) dropped, whitespace collapsed."""
    return " ".join(re.sub(r"[^\w.]|\.(?!\d)", " ", text.lower()).split())


def answers_agree(reference: str, answer: str) -> bool:
    """The scripted answer equivalence: the normalized reference occurs in the normalized answer."""
    return f" {normalized(reference)} " in f" {normalized(answer)} "


class JudgePolicy:
    """Replies of a scripted judge to the judge prompts (rollout.judges.prompts), shifted by `bias`."""

    def __init__(self, bias: float = 0.0) -> None:
        self.bias = bias

    def __call__(self, request: dict[str, Any]) -> str:
        """The reply to a judge request: \\boxed{score}, a class digit or a rubric verdict."""
        texts = message_texts(request)
        system = texts[0][1] if texts else ""
        if system == RUBRIC.system:
            return scripted_reply(texts[-1][1], strict=self.bias <= -0.1)
        payload = json.loads(texts[-1][1]) if texts else {}
        if system == COMPLETION.system:
            score = min(10.0, max(0.0, completion_score(payload["prediction"]) + 10.0 * self.bias))
            return f"\\boxed{{{score:.2f}}}"
        if system == GROUNDING.system:
            score = min(1.0, max(0.0, grounding_score(payload["reference"], payload["prediction"]) + self.bias))
            return f"\\boxed{{{score:.3f}}}"
        if system == ANSWER.system:
            agree = answers_agree(str(payload["reference_answer"]), str(payload["agent_answer"]))
            return (f"The reference answer is {'' if agree else 'not '}contained in the agent's answer."
                    f"\n{{\"score\": {int(agree)}}}")
        if system == OUTCOME.system:
            decision = decide(payload, None)
            return str(_DIGIT_OF_CLASS[decision.label] if decision else 2)
        return "I only judge."


def main() -> None:
    """Serve the judging policy until interrupted; the first line printed is the base URL."""
    parser = argparse.ArgumentParser(description="Scripted judges on loopback (rollout.judges.scripted).")
    parser.add_argument("--bias", type=float, default=0.0, help="shift of every score")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before each reply")
    args = parser.parse_args()
    serve(JudgePolicy(args.bias), args.delay)


if __name__ == "__main__":
    main()
