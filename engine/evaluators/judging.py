"""What an LLM-judged evaluator needs of the judge pool, without importing it: a versioned prompt,
a question (prompt + payload + the payload's digest) and the retry loop over a judge's attempts.

The pool is duck-typed: ``pool.specs`` (each with ``name`` and ``identity["model"]``) and
``await pool.ask(spec, question, attempt, cached_only=...)`` returning the reply text (None for a
reply not cached with cached_only) or raising on an API failure past its retries.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from engine.contract import InputError, canonical_json

T = TypeVar("T")


class JudgeUnanswered(Exception):
    """No judge reply could be used (bad replies in every attempt, or an API error past its retries)."""


@dataclass(frozen=True)
class Prompt:
    """A judge prompt: its purpose and version (both key the cached replies) and its system text."""

    purpose: str
    version: str
    system: str

    def messages(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        """The request: the system text, then the payload as JSON."""
        return [{"role": "system", "content": self.system},
                {"role": "user", "content": json.dumps(payload, ensure_ascii=False)}]


@dataclass(frozen=True)
class Ask:
    """One question to a judge: the prompt (as ``rubric``, the pool's name for it) and the payload."""

    rubric: Prompt
    payload: dict[str, Any]
    payload_digest: str = field(init=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256(canonical_json(self.payload).encode("utf-8")).hexdigest()
        object.__setattr__(self, "payload_digest", digest)


async def first_usable(pool: Any, spec: Any, question: Ask, attempts: int, parse: Callable[[str], T]) -> T:
    """The first reply of a judge that `parse` accepts (it raises ValueError on the others): cached
    replies first, in attempt order, then at most `attempts` new requests. JudgeUnanswered when none
    is accepted or the judge's API keeps failing; bad config (InputError) propagates."""
    problem, attempt, asked = "no attempt", 0, 0
    while asked < attempts:
        attempt += 1
        reply = await pool.ask(spec, question, attempt, cached_only=True)
        if reply is None:
            try:
                reply = await pool.ask(spec, question, attempt)
            except InputError:
                raise
            except Exception as exc:  # the pool's API error, whatever its class
                raise JudgeUnanswered(f"judge {spec.name}: {exc}") from None
            asked += 1
        try:
            return parse(reply or "")
        except ValueError as exc:
            problem = str(exc)
    raise JudgeUnanswered(f"judge {spec.name}: no usable {question.rubric.purpose} answer in {attempts} "
                          f"attempt(s) (last: {problem})")
