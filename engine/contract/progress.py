"""Progress bars on stderr: the encoder's (its ``progress`` setting), the score app's stages (`track`) and the
task loops' of the rollout and the judge (`TaskBar`, one tick per task ended).

A bar is drawn only on a terminal (stderr a TTY, in the process the user started: a job of a parallel launcher
runs in a worker process whose siblings share the terminal), never into a redirected log or an output. It
shows once its work has taken its delay (PROGRESS_DELAY for the task loops and the encoder), so a short run
shows none; while it is open, log lines go above it (tqdm's logging redirection); it ends on its count of
everything done (tasks resumed or skipped included), on a line of its own, before the closing line.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from functools import cache
from types import TracebackType
from typing import Protocol, TypeVar

PROGRESS_DELAY = 2.0
"""Seconds of work before a progress bar shows: a short run shows none."""

T = TypeVar("T")
R = TypeVar("R")


def on_terminal() -> bool:
    """Whether a bar may be drawn: stderr is a terminal and this is not a worker process of a launcher."""
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty is not None and isatty()) and multiprocessing.parent_process() is None


class Bar(Protocol):
    """What a `progress` bar is used for: moving its count on by `n` (a tqdm bar)."""

    def update(self, n: float = 1) -> bool | None:
        """Move the count on by `n`; whether the bar was drawn again (None: not)."""


@cache
def _bar_class() -> type:
    """tqdm, hidden until its delay has passed whatever draws it (a log line written above it included), and
    closed on a line of its own once drawn (tqdm alone leaves a bar drawn by a log line unfinished)."""
    from tqdm.std import tqdm

    class Bar(tqdm):
        shown = False
        last_print_t: float

        def display(self, msg: str | None = None, pos: int | None = None) -> bool | None:
            if not self.shown:
                if self.delay > 0 and self._time() < self.start_t + self.delay:
                    return None
                self.shown = True
            return super().display(msg, pos)

        def clear(self, nolock: bool = False) -> None:
            if self.shown:
                super().clear(nolock)

        def close(self) -> None:
            if self.shown and not self.disable:
                drawn: float = self.start_t + self.delay  # what tqdm's close takes for "it was drawn"
                self.last_print_t = max(self.last_print_t, drawn)
            super().close()

    return Bar


@contextmanager
def progress(total: int, label: str, unit: str, show: bool = True, delay: float | None = None,
             done: int = 0) -> Iterator[Bar]:
    """A bar of `total` units labelled `label`, `done` of them done already, with log lines going above it
    while it is open; drawn only when `show` and on_terminal() (else one whose `update` does nothing)."""
    bar_class = _bar_class()
    if not (show and total and on_terminal()):
        yield bar_class(total=total, disable=True)
        return
    from tqdm.contrib.logging import logging_redirect_tqdm

    with bar_class(total=total, initial=done, desc=label, unit=unit, file=sys.stderr,
                   delay=PROGRESS_DELAY if delay is None else delay) as bar, \
            logging_redirect_tqdm(tqdm_class=bar_class):
        yield bar


def track(items: Iterable[T], label: str, show: bool, unit: str = "file", delay: float = 1.0) -> Iterator[T]:
    """`items`, one tick per item handled (once the next is asked for), through a `progress` bar."""
    items = list(items)
    with progress(len(items), label, unit, show, delay) as bar:
        for item in items:
            yield item
            bar.update(1)


class TaskBar:
    """A `progress` bar with ETA of a loop's `total` tasks, `done` of them ended before it starts (resumed,
    skipped), labelled `label`. Use `with`, and wrap the per-task work with `each`."""

    def __init__(self, total: int, label: str, done: int = 0) -> None:
        self.total = total
        self.label = label
        self.done = done
        self._stack = ExitStack()
        self._bar: Bar | None = None

    def __enter__(self) -> TaskBar:
        if self.done < self.total:
            self._bar = self._stack.enter_context(progress(self.total, self.label, "task", done=self.done))
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
