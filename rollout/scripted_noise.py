"""Seeded noise for the scripted agent: a plan perturbed the way a real model errs, reproducibly.

`Noise` (the scripted model config's ``noise``: ``rate`` and ``seed``) perturbs a task's plan once per
(seed, task, trial): each call is dropped at the rate, each kept call gets one argument changed at the rate,
each pair of neighbouring steps swaps places at the rate, and the final reply becomes a wrong one at the rate.
The random stream of a (seed, task, trial) is its own (seeded by their text), so a rerun, a resumed run and
the tasks' order or concurrency give the same perturbed plans; at rate 0 the plan is left as it is.
"""

from __future__ import annotations

import copy
import random
import re
from dataclasses import dataclass
from typing import TypedDict

from engine.contract.settings import Noise as NoiseNode

WRONG_REPLY = "I could not work this out; the answer is probably none of these."
"""The wrong final reply of a plan whose reply has no number to change."""


class PlannedCall(TypedDict):
    """A call of a plan: the tool ("server/tool") and its arguments."""

    name: str
    arguments: dict[str, object]


class Plan(TypedDict):
    """What the scripted agent does in a task: its steps of calls, then its final reply."""

    steps: list[list[PlannedCall]]
    final_reply: str


@dataclass(frozen=True)
class Noise:
    """How often each perturbation happens (`rate`, 0 to 1) and the seed of every task's random stream."""

    rate: float = 0.0
    seed: int = 0

    @classmethod
    def of(cls, node: NoiseNode | None) -> Noise:
        """The noise of a model config's ``noise`` node (checked there: engine.contract.settings.Noise; none:
        no noise)."""
        return cls() if node is None else cls(node.rate, node.seed)

    def perturb(self, plan: Plan, task: str, trial: int | None) -> Plan:
        """The plan of `task` in `trial` with this noise (a copy; the plan itself when the rate is 0)."""
        if not self.rate:
            return plan
        rng = random.Random(f"{self.seed}:{task}:{trial or 0}")
        steps = []
        for step in copy.deepcopy(plan["steps"]):
            kept = [c for c in step if rng.random() >= self.rate]
            for call in kept:
                if call["arguments"] and rng.random() < self.rate:
                    key = rng.choice(sorted(call["arguments"]))
                    call["arguments"][key] = _changed(call["arguments"][key], rng)
            if kept:
                steps.append(kept)
        for i in range(len(steps) - 1):
            if rng.random() < self.rate:
                steps[i], steps[i + 1] = steps[i + 1], steps[i]
        final = plan["final_reply"]
        if rng.random() < self.rate:
            final = _wrong(final)
        return {"steps": steps, "final_reply": final}


def _changed(value: object, rng: random.Random) -> object:
    """An argument value changed the way a model gets it wrong: a number off, a name misspelt, an item lost."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + rng.choice((-7, -1, 1, 7))
    if isinstance(value, str):
        return value[:-1] if len(value) > 1 else value + "x"
    if isinstance(value, list):
        return value[:-1] if value else [0]
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        return {**value, key: _changed(value[key], rng)}
    return value


def _wrong(reply: str) -> str:
    """A wrong final reply: every digit of the reply shifted by one, or `WRONG_REPLY` when it has none."""
    if not re.search(r"\d", reply):
        return WRONG_REPLY
    return re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), reply)
