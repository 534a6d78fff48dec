"""Asking the judge pool from an evaluator: a versioned prompt, a question, and the first usable reply.

The judge pool reaches an evaluator through its context (`JudgeContext.pool`) and is used duck-typed:
``pool.specs`` (each with ``identity["model"]`` and ``name``) and ``await pool.ask(spec, question,
attempt, cached_only=...)``, which answers from the reply cache or the judge and keys the cache by
the judge's identity, the prompt's purpose and version, the payload's digest and the attempt.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from engine.contract import canonical_json

T = TypeVar("T")


class NoAnswer(Exception):
    """A judge gave no usable answer (bad replies in every attempt, or an API error past its retries)."""


@dataclass(frozen=True)
class Prompt:
    """A judge prompt: its purpose and version (both key the cached replies), the system text, and the
    user message's template, filled from the payload's fields with str.format."""

    purpose: str
    version: str
    system: str
    user: str

    def messages(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        """The request: the system prompt, then the user message filled from the payload."""
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user.format(**payload)}]


@dataclass(frozen=True)
class Question:
    """What a judge is asked: a prompt (as ``rubric``, the pool's name for it) and its payload, with the
    payload's digest (SHA-256 of its canonical JSON) computed once."""

    rubric: Prompt
    payload: dict[str, Any]
    payload_digest: str = field(init=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256(canonical_json(self.payload).encode("utf-8")).hexdigest()
        object.__setattr__(self, "payload_digest", digest)


async def first_answer(pool: Any, spec: Any, question: Question, attempts: int, parse: Callable[[str], T],
                       no_answer: tuple[type[BaseException], ...] = ()) -> T:
    """The first reply of a judge that `parse` accepts (it raises ValueError on the others).

    Cached replies are read first, in attempt order; then the judge is asked at most `attempts` times
    more, so a rerun gives a judge that failed before fresh attempts and a cached rerun the same
    answers. NoAnswer when no reply is accepted, or when asking raises one of `no_answer` (the pool's
    errors for a judge that cannot be reached).
    """
    problem, attempt, asked = "no attempt", 0, 0
    while asked < attempts:
        attempt += 1
        reply = await pool.ask(spec, question, attempt, cached_only=True)
        if reply is None:
            try:
                reply = await pool.ask(spec, question, attempt)
            except no_answer as exc:
                raise NoAnswer(f"judge {spec.name}: {exc}") from None
            asked += 1
        try:
            return parse(reply or "")
        except ValueError as exc:
            problem = str(exc)
    raise NoAnswer(f"judge {spec.name}: no usable {question.rubric.purpose} answer in {attempts} attempt(s) "
                   f"(last: {problem})")


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
