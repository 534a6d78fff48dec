"""What a judging evaluator needs to ask the judge pool, importing nothing of the rollout side: a
rubric (the system prompt, its version, the range of the number it answers), a question (a rubric and
its payload), the parsing of a judge's reply, `first_answer` and `JudgeFailure`; what a pool is to an
evaluator (`Pool`: its judges, each a `JudgeSpec`, and `ask`). The pool itself is the judge app's
(rollout.judges.pool.JudgePool, which satisfies `Pool`), handed to an evaluator in its context.

A rubric's version is part of every cached reply's key: change a prompt's text, change its version,
and the replies to the old text are no longer used.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from engine.contract import JsonObject, digest
from engine.contract.settings import ModelConfig

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
    """What a judge is asked: a rubric, its payload and the images shown with it besides those the
    payload names (absolute paths, e.g. the task's input image), with the digest of what is asked
    (computed once; the payload's alone when there are no such images)."""

    rubric: Rubric
    payload: dict[str, Any]
    images: tuple[str, ...] = ()
    payload_digest: str = field(init=False)

    def __post_init__(self) -> None:
        asked = {"payload": self.payload, "images": list(self.images)} if self.images else self.payload
        object.__setattr__(self, "payload_digest", digest(asked))


@dataclass(frozen=True)
class JudgeSpec:
    """One judge of the pool: its name in the pool, its model config (``name`` and ``api_name`` set), its
    identity (what keys its cached replies: provider, model and every setting that can change a reply) and
    its prices (USD per million input and output tokens; None: unknown)."""

    name: str
    config: ModelConfig
    identity: JsonObject
    price_input: float | None = None
    price_output: float | None = None


@runtime_checkable
class Pool(Protocol):
    """A judge pool as an evaluator asks it: its judges, the rubric they are asked with (the pool's own
    prompt for a purpose, when it has one), and a judge's reply to a question."""

    @property
    def specs(self) -> Sequence[JudgeSpec]:
        """The pool's judges, in order."""
        ...

    def rubric(self, rubric: Rubric) -> Rubric:
        """The rubric the judges are asked with."""
        ...

    async def ask(self, spec: JudgeSpec, question: Question, attempt: int, *, cached_only: bool = False) -> str | None:
        """The judge's reply to a question (attempt 1, 2, ...): cached, else asked (None instead with
        `cached_only`); JudgeFailure when the API keeps failing."""
        ...


_PUBLISHED_BOXED = re.compile(r"\\boxed\{\s*([^}]+)\s*\}")
_NUMBER = re.compile(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?")
_FRACTION = re.compile(r"\\[dt]?frac\{\s*([^{}]+?)\s*\}\{\s*([^{}]+?)\s*\}")
_CLASS = re.compile(r"(?<![\d.])[1-4](?!\d|\.\d)")


def _in_range(value: float, low: float, high: float) -> float:
    if not math.isfinite(value) or not low <= value <= high:
        raise ValueError(f"{value:g} is out of range [{low:g}, {high:g}]")
    return value


def _published_score(body: str, low: float, high: float) -> float:
    """The published reading: the text of the first ``\\boxed{`` up to the first ``}`` (no box: the
    first number of the reply) as a float in [low, high]; ValueError otherwise."""
    boxed = _PUBLISHED_BOXED.search(body)
    if boxed:
        raw = boxed.group(1).strip()
    else:
        bare = _NUMBER.search(body)
        if bare is None:
            raise ValueError(f"no \\boxed{{number}} and no number in {body[:80]!r}")
        raw = bare.group(0)
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"not a number in \\boxed{{}}: {raw[:40]!r}") from None
    return _in_range(value, low, high)


def _boxed_content(body: str) -> str | None:
    """What the first ``\\boxed{...}`` holds, braces balanced; None without a closed box."""
    start = body.find("\\boxed{")
    if start < 0:
        return None
    depth, i = 1, start + len("\\boxed{")
    for j in range(i, len(body)):
        depth += {"{": 1, "}": -1}.get(body[j], 0)
        if depth == 0:
            return body[i:j]
    return None


def parse_score(text: str | None, low: float, high: float) -> float:
    r"""A judge's score in [low, high]: first as the published parser reads it (the first
    ``\boxed{...}`` up to its first ``}``, else the first number of the reply), so every reply it
    scores gets the same number here; then, where it finds none, a box whose braces nest
    (``\boxed{{8}}`` -> 8, ``\boxed{\frac{7}{10}}`` -> 0.7), or the first number of a reply
    whose box is empty. ValueError when there is no number, or it lies outside [low, high].

    >>> parse_score(r"The answer is complete. \boxed{8}", 0, 10)
    8.0
    >>> parse_score(r"\boxed{{8}}", 0, 10), parse_score(r"\boxed{\frac{7}{10}}", 0, 1)
    (8.0, 0.7)
    >>> parse_score(r"Score: 7 out of 10", 0, 10)
    7.0
    >>> parse_score(r"\boxed{12}", 0, 10)
    Traceback (most recent call last):
    ...
    ValueError: ...
    """
    body = (text or "").strip()
    try:
        return _published_score(body, low, high)
    except ValueError as exc:
        problem = exc
    content = _boxed_content(body)
    if content is None:
        raise problem
    content = content.strip()
    while content.startswith("{") and content.endswith("}"):
        content = content[1:-1].strip()
    fraction = _FRACTION.fullmatch(content)
    try:
        if fraction:
            value = float(fraction.group(1)) / float(fraction.group(2))
        elif content:
            value = float(content)
        else:
            bare = _NUMBER.search(body[body.find("\\boxed{"):])
            if bare is None:
                raise problem
            value = float(bare.group(0))
    except (ValueError, ZeroDivisionError):
        raise problem from None
    return _in_range(value, low, high)


def _published_class(body: str) -> int | None:
    """The published reading of a class reply: its first line, as a whole, an integer 1-4."""
    lines = body.splitlines()
    try:
        value = int(lines[0].strip()) if lines else None
    except ValueError:
        return None
    return value if value in (1, 2, 3, 4) else None


def parse_class(text: str | None) -> int:
    """The call class (1 to 4) of an outcome reply: the published reading first (the reply's first
    line is the integer), else the reply's first digit 1-4 standing alone; ValueError otherwise."""
    body = (text or "").strip()
    published = _published_class(body)
    if published is not None:
        return published
    found = _CLASS.search(body)
    if found is None:
        raise ValueError(f"no class digit 1-4 in {body[:80]!r}")
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


async def first_answer(pool: Pool, spec: JudgeSpec, question: Question, attempts: int,
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
