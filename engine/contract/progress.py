"""Progress bars on stderr: the encoder's (its ``progress`` setting) and the task loops' of the rollout and
the judge (`TaskBar`, one tick per task ended, shown on a terminal only).

A bar shows only once its work has taken PROGRESS_DELAY seconds, so a short run shows none; it never
goes into a log file or an output.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from types import TracebackType
from typing import Any, TypeVar

PROGRESS_DELAY = 2.0
"""Seconds of work before a progress bar shows: a short run shows none."""

T = TypeVar("T")
R = TypeVar("R")


class TaskBar:
    """A progress bar with ETA of `total` tasks on stderr, labelled `label`, when stderr is a terminal
    (none otherwise: a redirected run's stderr stays as it was); while it is open, log lines written to
    the console go above it. Use `with`, and wrap the per-task work with `each`."""

    def __init__(self, total: int, label: str) -> None:
        self.total = total
        self.label = label
        self._stack = ExitStack()
        self._bar: Any = None

    def __enter__(self) -> TaskBar:
        isatty = getattr(sys.stderr, "isatty", None)
        if self.total and isatty is not None and isatty():
            from tqdm.auto import tqdm
            from tqdm.contrib.logging import logging_redirect_tqdm

            self._bar = self._stack.enter_context(tqdm(total=self.total, desc=self.label, unit="task",
                                                       delay=PROGRESS_DELAY, file=sys.stderr))
            self._stack.enter_context(logging_redirect_tqdm(tqdm_class=tqdm))
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stack.close()

    def each(self, work: Callable[[T], Awaitable[R]]) -> Callable[[T], Awaitable[R]]:
        """`work` that ticks the bar once when it returns for a task."""

        async def ticking(item: T) -> R:
            outcome = await work(item)
            if self._bar is not None:
                self._bar.update(1)
            return outcome

        return ticking
