"""What a field of an app's schema declares besides its type, until the nodes check themselves in
``__post_init__``: a bounded setting its range (`bounded`, a Range), a setting whose values a type cannot
say its Check (`checked`: a device this machine has, an output folder that can be made, task ids).
engine.apps.config.store reads them off the schemas' fields and checks a composed config against them
(`check_ranges`), which the app kit calls before any work (a setting inside an open mapping is checked
where it is read)."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar, overload

from engine.contract.settings import setting_text
from kernels.device import device_problem


@dataclass(frozen=True)
class Range:
    """The values a bounded setting takes: at least `low`, at most `high` (None: unbounded), an integer or
    any number, null too when `nullable`; a list setting's range is each of its values'."""

    low: float | None = None
    high: float | None = None
    integer: bool = True
    nullable: bool = False

    def admits(self, value: object) -> bool:
        """Whether value lies in the range."""
        if value is None:
            return self.nullable
        if isinstance(value, bool) or not isinstance(value, int if self.integer else (int, float)):
            return False
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def __str__(self) -> str:
        kind = "an integer" if self.integer else "a number"
        if self.low is not None and self.high is not None:
            text = f"{kind} in [{self.low:g}, {self.high:g}]"
        elif self.low is not None:
            text = f"{kind} >= {self.low:g}"
        else:
            text = f"{kind} <= {self.high:g}"
        return f"{text} or null" if self.nullable else text


COUNT = Range(low=1)
"""A count: an integer >= 1."""
SIZE = Range(low=0)
"""A size or a seed: an integer >= 0."""
THRESHOLD = Range(low=-1, high=1, integer=False)
"""A similarity threshold: a number in [-1, 1] (cosine similarities)."""
SECONDS = Range(low=0, integer=False)
"""A time limit in seconds: a number >= 0."""

RANGE = "range"
"""The metadata key of a bounded field's Range."""


T = TypeVar("T")


@overload
def bounded(default: list[T], allowed: Range) -> list[T]: ...
@overload
def bounded(default: T, allowed: Range) -> T: ...
def bounded(default: object, allowed: Range) -> object:
    """A dataclass field of this default whose values lie in `allowed` (a list default: each value)."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={RANGE: allowed})
    return field(default=default, metadata={RANGE: allowed})


CHECK = "check"
"""The metadata key of a checked field's Check."""


class Check:
    """What a setting's values must be beyond their type and range."""

    def problem(self, value: object) -> str | None:
        """Why value is refused, in a few words after `key=value: ` (None: it is admitted)."""
        raise NotImplementedError


class Device(Check):
    """A torch device this machine has: auto, cpu, cuda or cuda:N (kernels.device.device_problem)."""

    def problem(self, value: object) -> str | None:
        """kernels.device's reason (torch is loaded only for a CUDA device's name)."""
        return device_problem(str(value))


class Folder(Check):
    """An output folder: one there that this user may write into, or one that can be made (folder_problem)."""

    def problem(self, value: object) -> str | None:
        """folder_problem of the path (None for null)."""
        return None if value is None else folder_problem(Path(str(value)))


class TaskIds(Check):
    """Task ids: null, one id (text or an integer) or a list of them."""

    def problem(self, value: object) -> str | None:
        """Why value holds something other than ids."""
        ids = value if isinstance(value, list) else [] if value is None else [value]
        wrong = [i for i in ids if isinstance(i, bool) or not isinstance(i, (str, int)) or i == ""]
        if wrong:
            shown = setting_text(wrong[0]) or "''"
            return f"must be a task id or a list of task ids (text or integers); {shown} is not one"
        return None


DEVICE, FOLDER, TASK_IDS = Device(), Folder(), TaskIds()


def checked(default: T, check: Check) -> T:
    """A dataclass field of this default whose values `check` admits."""
    return field(default=default, metadata={CHECK: check})


def folder_problem(folder: Path) -> str | None:
    """Why a run could not make `folder` (relative: to the working directory) its output folder, None when
    it can: an existing entry that is not a folder, a folder this user may not write into, or one that
    cannot be made in the nearest folder above it that exists (tried with a folder of another name, which
    is removed)."""
    folder = Path(folder).absolute()
    above = next(p for p in (folder, *folder.parents) if os.path.lexists(p))
    try:
        is_folder = above.is_dir()
    except OSError as exc:
        return f"cannot be looked at: {above} ({exc.strerror or exc})"
    if above == folder:
        if not is_folder:
            return "exists and is not a folder"
        return None if os.access(folder, os.W_OK | os.X_OK) else "is a folder this user may not write into"
    if not is_folder:
        return f"cannot be made: {above} is not a folder"
    try:
        os.rmdir(tempfile.mkdtemp(dir=above, prefix=".m3bench-check-"))
    except OSError as exc:
        return f"cannot be made in {above} ({exc.strerror or exc})"
    return None
