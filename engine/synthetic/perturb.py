"""Error profiles and the perturbation of reference trajectories into predictions."""

from __future__ import annotations

import marshal
from dataclasses import dataclass, fields
from typing import Protocol

import numpy as np

from engine.contract import JsonObject, JsonValue, set_steps
from engine.contract.pause import gc_paused
from engine.synthetic.catalogue import (
    _DRIFT_WORDS,
    _ERROR_RESULTS,
    _OK_RESULTS,
    _OTHER_SERVER,
    _SAME_SERVER,
    _TOOL_NAMES,
    _call,
)
from engine.synthetic.draws import _PERTURB_STREAM, _copy_json, _Draws

# --------------------------------------------------------------------------
# Error profiles and perturbation
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorProfile:
    """Per-element error rates applied by :func:`perturb` (each in [0, 1]).

    Call-level rates apply to every reference call: ``drop`` removes it,
    ``extra`` adds a spurious call next to it, ``wrong_tool`` renames it,
    ``drift`` changes one argument value slightly and ``strong_drift`` replaces
    several values (``drift + strong_drift <= 1``). Step-level rates: ``split``
    cuts a multi-call step in two, ``merge`` joins a step with the previous
    one, ``swap`` exchanges two consecutive steps. ``missing_task`` omits a
    whole task from the predictions.
    """

    drop: float = 0.0
    extra: float = 0.0
    drift: float = 0.0
    strong_drift: float = 0.0
    wrong_tool: float = 0.0
    split: float = 0.0
    merge: float = 0.0
    swap: float = 0.0
    missing_task: float = 0.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"ErrorProfile.{f.name} must be in [0, 1], got {value}")
        if self.drift + self.strong_drift > 1.0:
            raise ValueError("ErrorProfile.drift + strong_drift must be <= 1")


PROFILES: dict[str, ErrorProfile] = {
    "perfect": ErrorProfile(),
    "strong": ErrorProfile(drop=0.03, extra=0.03, drift=0.10, strong_drift=0.03, wrong_tool=0.02,
                           split=0.03, merge=0.03, swap=0.01, missing_task=0.005),
    "medium": ErrorProfile(drop=0.08, extra=0.08, drift=0.20, strong_drift=0.08, wrong_tool=0.06,
                           split=0.08, merge=0.08, swap=0.04, missing_task=0.02),
    "weak": ErrorProfile(drop=0.18, extra=0.15, drift=0.30, strong_drift=0.15, wrong_tool=0.12,
                         split=0.15, merge=0.15, swap=0.08, missing_task=0.05),
    "chaotic": ErrorProfile(drop=0.35, extra=0.30, drift=0.30, strong_drift=0.30, wrong_tool=0.25,
                            split=0.30, merge=0.30, swap=0.20, missing_task=0.12),
}


class _Leaf(Protocol):
    """A scalar inside a JSON value, read and replaced where it is."""

    def get(self) -> JsonValue: ...
    def set(self, value: JsonValue) -> None: ...


@dataclass(frozen=True)
class _Field:
    obj: JsonObject
    key: str

    def get(self) -> JsonValue:
        return self.obj[self.key]

    def set(self, value: JsonValue) -> None:
        self.obj[self.key] = value


@dataclass(frozen=True)
class _Item:
    items: list[JsonValue]
    index: int

    def get(self) -> JsonValue:
        return self.items[self.index]

    def set(self, value: JsonValue) -> None:
        self.items[self.index] = value


def _leaves(value: JsonObject | list[JsonValue], out: list[_Leaf]) -> list[_Leaf]:
    """Every scalar, non-null value inside ``value``, in order."""
    leaves: list[tuple[_Leaf, JsonValue]]
    if isinstance(value, dict):
        leaves = [(_Field(value, k), v) for k, v in value.items()]
    else:
        leaves = [(_Item(value, i), v) for i, v in enumerate(value)]
    for leaf, v in leaves:
        if type(v) is dict or type(v) is list:
            _leaves(v, out)
        elif v is not None:
            out.append(leaf)
    return out


def _nudge(value: JsonValue, d: _Draws) -> JsonValue:
    """A slightly different value of the same type."""
    if type(value) is bool:
        return not value
    if type(value) is int:
        step = max(1, abs(value) // 10)
        return value + d.pick((-step, step)) * d.randint(1, 2)
    if type(value) is float:
        return round(value * (1.0 + d.pick((-1, 1)) * d.uniform(0.005, 0.05)) + d.pick((-1, 1)) * 0.001, 4)
    words = str(value).split(" ")
    choice = d.below(3)
    if choice == 0 and len(words) > 1:
        del words[d.below(len(words))]
    elif choice == 1:
        words[d.below(len(words))] = d.pick(_DRIFT_WORDS)
    else:
        words.insert(d.below(len(words) + 1), d.pick(_DRIFT_WORDS))
    new = " ".join(words)
    return new if new != value else new + " " + d.pick(_DRIFT_WORDS)


def _replace(value: JsonValue, d: _Draws) -> JsonValue:
    """An unrelated value of the same type."""
    if type(value) is bool:
        return d.u() < 0.5
    if type(value) is int:
        return d.randint(0, max(10, 3 * abs(value)))
    if type(value) is float:
        return round(value * d.uniform(-2.0, 3.0), 4)
    return " ".join(d.sample(_DRIFT_WORDS, d.randint(1, 3)))


def _drift(args: JsonObject, strong: bool, d: _Draws) -> None:
    """Perturb ``args`` in place: one value nudged, or (strong) several replaced."""
    leaves = _leaves(args, [])
    if not leaves:
        return
    if not strong:
        leaf = d.pick(leaves)
        leaf.set(_nudge(leaf.get(), d))
        return
    k = len(leaves) if len(leaves) <= 2 else d.randint(2, len(leaves))
    for leaf in d.sample(leaves, k):
        leaf.set(_replace(leaf.get(), d))


# Per-call event flags, drawn in bulk for a whole prediction file.
_DROP, _EXTRA, _WRONG, _MILD, _STRONG = 1, 2, 4, 8, 16
_CHANGED = _DROP | _WRONG | _MILD | _STRONG


def _call_events(p: ErrorProfile, rng: np.random.Generator, n: int) -> list[int]:
    events = np.zeros(n, dtype=np.int64)
    if p.drop:
        events |= np.where(rng.random(n) < p.drop, _DROP, 0)
    if p.extra:
        events |= np.where(rng.random(n) < p.extra, _EXTRA, 0)
    if p.wrong_tool:
        events |= np.where(rng.random(n) < p.wrong_tool, _WRONG, 0)
    if p.drift or p.strong_drift:
        r = rng.random(n)
        events |= np.where(r < p.strong_drift, _STRONG, np.where(r < p.strong_drift + p.drift, _MILD, 0))
    return events.tolist()


def _mutate_call(call: JsonObject, events: int, d: _Draws) -> JsonObject:
    """A new predicted call from ``call`` with the renaming / drift in ``events``."""
    name = call["name"]
    if events & _WRONG:
        tool = name if isinstance(name, str) else ""  # "": no tool of the catalogue
        pool = _SAME_SERVER.get(tool) or ()
        if not pool or d.u() < 0.5:
            pool = _OTHER_SERVER.get(tool) or _TOOL_NAMES
        name = d.pick(pool)
    out: JsonObject = {"name": name}
    if "arguments" in call:
        args = call["arguments"]
        if events & (_MILD | _STRONG) and type(args) is dict:
            args = _copy_json(args)
            _drift(args, bool(events & _STRONG), d)
        out["arguments"] = args
    out["result"] = d.pick(_ERROR_RESULTS) if d.u() < 0.3 else d.pick(_OK_RESULTS)
    return out


def _extra_call(call: JsonObject, d: _Draws) -> JsonObject:
    """A spurious call: a re-issued variant of ``call`` or an unrelated tool."""
    arguments = call.get("arguments")
    if d.u() < 0.5 and type(arguments) is dict:
        args = _copy_json(arguments)
        _drift(args, False, d)
        extra: JsonObject = {"name": call["name"], "arguments": args}
    else:
        extra = _call(d, d.pick(_TOOL_NAMES))
    extra["result"] = d.pick(_OK_RESULTS)
    return extra


def _restructure(steps: list[list[dict]], p: ErrorProfile, d: _Draws) -> tuple[list[list[dict]], bool]:
    """Apply step splits, merges and swaps; also report whether anything changed."""
    changed = False
    if p.split:
        split_steps = []
        for calls in steps:
            if len(calls) > 1 and d.u() < p.split:
                cut = d.randint(1, len(calls) - 1)
                split_steps += [calls[:cut], calls[cut:]]
                changed = True
            else:
                split_steps.append(calls)
        steps = split_steps
    if p.merge and len(steps) > 1:
        merged = [steps[0]]
        for calls in steps[1:]:
            if d.u() < p.merge:
                merged[-1] = merged[-1] + calls
                changed = True
            else:
                merged.append(calls)
        steps = merged
    if p.swap:
        i = 0
        while i < len(steps) - 1:
            if d.u() < p.swap:
                steps[i], steps[i + 1] = steps[i + 1], steps[i]
                changed = True
                i += 2
            else:
                i += 1
    return steps, changed


def _perturb_copy(tasks: list[dict], n_calls: int, p: ErrorProfile, rng: np.random.Generator) -> list[dict]:
    """Turn ``tasks`` (a private deep copy of a reference with ``n_calls`` calls) into predictions in place."""
    events = _call_events(p, rng, n_calls)
    results = rng.integers(0, len(_OK_RESULTS), n_calls).tolist()
    missing = (rng.random(len(tasks)) < p.missing_task).tolist() if p.missing_task else None
    restructure = bool(p.split or p.merge or p.swap)
    d = _Draws(rng)
    ok = _OK_RESULTS
    out = []
    j = 0
    for t, task in enumerate(tasks):
        if missing is not None and missing[t]:
            j += sum(len(step["calls"]) for step in task["steps"])
            continue
        altered = False
        steps = []
        for step in task["steps"]:
            calls = []
            for call in step["calls"]:
                e = events[j]
                if not e & _CHANGED:
                    call["result"] = ok[results[j]]
                    calls.append(call)
                elif not e & _DROP:
                    calls.append(_mutate_call(call, e, d))
                if e:
                    altered = True
                    if e & _EXTRA:
                        calls.append(_extra_call(call, d))
                j += 1
            if calls:
                steps.append(calls)
        if restructure:
            steps, changed = _restructure(steps, p, d)
            altered = altered or changed
        set_steps(task, steps)
        if altered:
            reply = task.get("final_reply", "")
            task["final_reply"] = d.pick((
                reply,
                "I could not verify every detail, but: " + reply,
                "Sorry, I was unable to find all of the requested information.",
            ))
        out.append(task)
    return out


def _count_calls(tasks: list[dict]) -> int:
    return sum(len(step["calls"]) for task in tasks for step in task["steps"])


def perturb(reference: list[dict], profile: ErrorProfile, seed: int = 0) -> list[dict]:
    """Prediction tasks derived from ``reference`` with ``profile``'s error rates.

    Missing tasks are omitted, steps are renumbered from 1, every call gets a
    ``"result"`` string. The input is never modified.
    """
    rng = np.random.default_rng([_PERTURB_STREAM, seed])
    with gc_paused():
        return _perturb_copy(marshal.loads(marshal.dumps(reference)), _count_calls(reference), profile, rng)
