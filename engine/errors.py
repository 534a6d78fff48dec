"""Errors raised for bad input: one line naming the file, the task id and the field."""

from __future__ import annotations

import json
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


def read_json(path: str | Path, what: str = "file", error: type[InputError] = InputError) -> Any:
    """Parse a JSON file; any failure becomes an `error` (an InputError) naming the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(path, f"{what} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(path, f"cannot read {what} ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
