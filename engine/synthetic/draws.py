"""Seeded draws: cheap scalar randomness over numpy Generators, and the stream tags."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from typing import TypeVar, overload

import numpy as np

from engine.contract import JsonObject, JsonValue

T = TypeVar("T")

# Stream tags keep reference generation and perturbation on distinct streams
# even when called with the same seed.
_REFERENCE_STREAM = 0x5EF
_PERTURB_STREAM = 0x9E7


def _uniform_chunks(rng: np.random.Generator) -> Iterator[list[float]]:
    while True:
        yield rng.random(4096).tolist()


class _Draws:
    """Cheap scalar draws from a Generator: ``u()`` steps a C-level iterator over bulk draws."""

    __slots__ = ("u",)

    def __init__(self, rng: np.random.Generator) -> None:
        self.u: Callable[[], float] = chain.from_iterable(_uniform_chunks(rng)).__next__

    def below(self, n: int) -> int:
        """Uniform integer in [0, n); u() < 1 keeps int(u() * n) below n."""
        return int(self.u() * n)

    def randint(self, lo: int, hi: int) -> int:
        """Uniform integer in [lo, hi] (inclusive)."""
        return lo + self.below(hi - lo + 1)

    def uniform(self, lo: float, hi: float) -> float:
        return lo + (hi - lo) * self.u()

    def pick(self, seq: Sequence[T]) -> T:
        return seq[int(self.u() * len(seq))]

    def sample(self, seq: Sequence[T], k: int) -> list[T]:
        """k distinct elements of seq, in random order."""
        pool = list(seq)
        k = min(k, len(pool))
        for i in range(k):
            j = i + int(self.u() * (len(pool) - i))
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:k]

    def hexid(self, digits: int = 8) -> str:
        return format(self.below(16**digits), f"0{digits}x")

@overload
def _copy_json(value: JsonObject) -> JsonObject: ...
@overload
def _copy_json(value: object) -> JsonValue: ...
def _copy_json(value: object) -> JsonValue:
    """A copy of a JSON value, its objects and lists copied too; TypeError for a value JSON cannot hold."""
    if type(value) is dict:
        return {k: _copy_json(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy_json(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"not a JSON value: {type(value).__name__}")
