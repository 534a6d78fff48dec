"""Errors for bad input and configuration: one line naming the file, the task id and the field."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


class InputError(ValueError):
    """A malformed input file; the message names the file, the task id and the field."""

    def __init__(self, path: str | Path, problem: str, task_id: str | None = None,
                 field: str | None = None) -> None:
        where = [str(path)]
        if task_id is not None:
            where.append(f"id {task_id}")
        if field is not None:
            where.append(f"field '{field}'")
        self.path = str(path)
        self.task_id = task_id
        self.field = field
        super().__init__(f"{': '.join(where)}: {problem}")


class ConfigError(ValueError):
    """A configuration value that cannot be used."""


def is_number(value: Any) -> bool:
    """A finite int or float (booleans excluded)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
