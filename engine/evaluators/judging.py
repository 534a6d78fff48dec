"""What a judging evaluator needs to ask the judge pool, importing nothing of the rollout side: a
rubric (the system prompt, its version, the range of the number it answers), a question (a rubric and
its payload), the parsing of a judge's reply, `first_answer` and `JudgeFailure`. The pool itself is the
judge app's (rollout.judges.pool.JudgePool), handed to an evaluator in its `JudgeContext`.

A rubric's version is part of every cached reply's key: change a prompt's text, change its version,
and the replies to the old text are no longer used.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from engine.contract import digest

T = TypeVar("T")


class JudgeFailure(Exception):
    """A judge gave no usable answer (bad replies in every attempt, or an API error past its retries)."""


@dataclass(frozen=True)
class Rubric:
    """What a judge is asked: the system prompt, its version, the range of the number it answers (a
    rubric answered otherwise, e.g. by a JSON verdict, keeps the defaults), and the user message's
    template (``user``, filled from the payload's fields with str.format; empty: the payload as JSON)."""

    purpose: str
    version: str
    system: str
    low: float = 0.0
    high: float = 1.0
    scale: float = 1.0
    user: str = ""

    def messages(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        """The request: the system prompt, then the user message. The system message carries the
        rubric's ``purpose`` and the user message the ``payload`` as markers: API drivers send role and
        content only, the scripted driver passes them on, so a scripted judge answers by purpose and
        payload, not by prompt text."""
        content = self.user.format(**payload) if self.user else json.dumps(payload, ensure_ascii=False)
        return [{"role": "system", "content": self.system, "purpose": self.purpose},
                {"role": "user", "content": content, "payload": payload}]


@dataclass(frozen=True)
class Question:
    """What a judge is asked: a rubric and its payload (with the payload's digest, computed once)."""

    rubric: Rubric
    payload: dict[str, Any]
    payload_digest: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "payload_digest", digest(self.payload))


_BOXED = re.compile(r"\\boxed\{\s*([^{}]*?)\s*\}")
_NUMBER = re.compile(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?")
_CLASS = re.compile(r"(?<![\d.])[1-4](?!\d|\.\d)")


def parse_score(text: str | None, low: float, high: float) -> float:
    """The number inside the first \\boxed{...}, else the first number of the reply; ValueError when
    there is none, it is not a number, or it lies outside [low, high]."""
    body = (text or "").strip()
    boxed = _BOXED.search(body)
    if boxed:
        raw = boxed.group(1)
    else:
        bare = _NUMBER.search(body)
        if bare is None:
            raise ValueError(f"no \\boxed{{number}} and no number in {body[:80]!r}")
        raw = bare.group(0)
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"not a number in \\boxed{{}}: {raw[:40]!r}") from None
    if not math.isfinite(value) or not low <= value <= high:
        raise ValueError(f"{value:g} is out of range [{low:g}, {high:g}]")
    return value


def parse_class(text: str | None) -> int:
    """The call class (1 to 4) of an outcome reply: its first digit 1-4 standing alone; ValueError otherwise."""
    found = _CLASS.search(text or "")
    if found is None:
        raise ValueError(f"no class digit 1-4 in {(text or '')[:80]!r}")
    return int(found.group(0))


def json_object(text: str) -> dict[str, Any]:
    """The JSON object of a reply: the whole reply, else its first '{' to its last '}' (a fenced or
    commented reply); ValueError when there is none."""
    body = (text or "").strip()
    start, end = body.find("{"), body.rfind("}")
    for candidate in (body, body[start:end + 1] if 0 <= start < end else ""):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise ValueError(f"no JSON object in {body[:80]!r}")


async def first_answer(pool: Any, spec: Any, question: Question, attempts: int,
                       parse: Callable[[str], T]) -> T:
    """The first reply of a judge that `parse` accepts (it raises ValueError on the others).

    Replies already cached are read first, in attempt order; then the judge is asked at most
    `attempts` times more, so a rerun gives a judge that failed before fresh attempts, and a cached
    rerun gives the same answers. JudgeFailure when no reply is accepted or the API keeps failing.
    `pool` is the judge app's pool (``await pool.ask(spec, question, attempt, cached_only=...)``,
    raising JudgeFailure when the API keeps failing), `spec` one of its judges (``spec.name``).
    """
    problem, attempt, asked = "no attempt", 0, 0
    while asked < attempts:
        attempt += 1
        reply = await pool.ask(spec, question, attempt, cached_only=True)
        if reply is None:
            reply = await pool.ask(spec, question, attempt)
            asked += 1
        try:
            return parse(reply or "")
        except ValueError as exc:
            problem = str(exc)
    raise JudgeFailure(f"judge {spec.name}: no usable {question.rubric.purpose} answer in {attempts} "
                       f"attempt(s) (last: {problem})")
