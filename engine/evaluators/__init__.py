"""Evaluators by name: every module ``engine.evaluators.<name>`` that defines ``EVALUATOR``.

`evaluator(name)` loads one (an unknown name is an error naming the choices); `evaluators()` gives
all of them, ordered by their card's ``position``, then name: the metric table (engine.metricspec) takes
their metric rows in this order, and the score app looks for each one's file beside the predictions.
Modules of this package named ``base`` or ``protocol`` (the evaluator's shape), or starting with ``_``, are not
evaluators.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any

from engine.evaluators.protocol import Evaluator


@cache
def names() -> tuple[str, ...]:
    """The modules of this package that may hold an evaluator, sorted (the package is scanned once)."""
    return tuple(sorted(m.name for m in pkgutil.iter_modules(__path__)
                        if m.name not in ("base", "protocol") and not m.name.startswith("_")))


@cache
def evaluator(name: str) -> Evaluator[Any, Any]:
    """The evaluator of module engine.evaluators.<name>; ValueError naming the evaluators otherwise."""
    if name not in names():
        raise ValueError(f"unknown evaluator {name!r}; expected one of {', '.join(n for n in names() if _has(n))}")
    found = getattr(importlib.import_module(f"{__name__}.{name}"), "EVALUATOR", None)
    if not isinstance(found, Evaluator) or found.card.name != name:
        raise ValueError(f"module {__name__}.{name} must define EVALUATOR, an Evaluator (engine.evaluators.protocol) "
                         f"whose card is named {name!r}")
    return found


def _has(name: str) -> bool:
    return isinstance(getattr(importlib.import_module(f"{__name__}.{name}"), "EVALUATOR", None), Evaluator)


@cache
def evaluators() -> tuple[Evaluator[Any, Any], ...]:
    """Every evaluator of the package, by position, then name."""
    return tuple(sorted((evaluator(n) for n in names() if _has(n)), key=lambda e: (e.card.position, e.card.name)))
