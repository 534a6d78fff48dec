"""Errors for bad input and configuration: one line naming the file, the task id and the field."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypeGuard, TypeVar

T = TypeVar("T")

SHOWN_CHARS = 120
"""Longest id or field shown in a message; longer ones are cut."""


def shown(text: str) -> str:
    """text as a message shows it: on one line (escaped and quoted when not printable), cut when long."""
    if len(text) > SHOWN_CHARS:
        text = text[:SHOWN_CHARS] + "..."
    return text if text.isprintable() else json.dumps(text, ensure_ascii=True)


class InputError(ValueError):
    """A malformed input file; the message (one line) names the file, the task id and the field."""

    def __init__(self, path: str | Path, problem: str, task_id: str | None = None,
                 field: str | None = None) -> None:
        where = [shown(str(path))]
        if task_id is not None:
            where.append(f"id {shown(task_id)}")
        if field is not None:
            where.append(f"field '{shown(field)}'")
        self.path = str(path)
        self.task_id = task_id
        self.field = field
        super().__init__(f"{': '.join(where)}: {problem}")


def check_choice(value: T, choices: Sequence[str], what: str, field: str) -> T:
    """`value` when it is one of `choices`, else an InputError naming the config setting `field`."""
    if value not in choices:
        raise InputError("config", f"unknown {what} {value!r} (expected one of {', '.join(choices)})", field=field)
    return value


def config_int(cfg: Mapping[str, object], key: str, *, minimum: int = 1, default: int | None = None,
               where: str | None = None) -> int:
    """An integer setting, at least `minimum` (`default` when absent); InputError naming the setting
    (`where`, default `key`) otherwise."""
    value = cfg.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise InputError("config", f"must be an integer >= {minimum}, got {value!r}", field=where or key)
    return value


NAME_CHARS = 100
"""Longest name check_name takes (file names add suffixes such as `_test_mcp_fuzzy_trial4_callanalysis.json`)."""


NAME_RULE = (f"cannot be part of a file name: a name is 1 to {NAME_CHARS} characters without '/', '\\' or control "
             "characters, and not '.' or '..'")
"""Why check_name refuses a name (after the name itself)."""


def is_name(value: object) -> bool:
    """Whether `value` can be part of a file or folder name (check_name's rule; an integer is its digits)."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    return (isinstance(value, str) and value not in ("", ".", "..") and len(value) <= NAME_CHARS
            and not re.search(r"[/\\\x00-\x1f\x7f]", value))


def check_name(value: object, field: str) -> str:
    """`value` when it can be part of a file or folder name (a model's name: `<name>_test_mcp_fuzzy.json`,
    `rollout/<name>/`): a string of 1 to NAME_CHARS characters, not `.` or `..`, without a path separator
    or a control character (an integer is taken as its digits); else an InputError naming the config
    setting `field`."""
    if not is_name(value):
        raise InputError("config", f"{shown(repr(value))} {NAME_RULE}", field=field)
    return str(value)


class WriteFailed(OSError):
    """An output file that could not be written (a full disk, a folder one may not write to): one line
    naming the file and why, e.g. `out/r.json: cannot write it (No space left on device)`."""

    def __str__(self) -> str:
        return f"{self.filename}: cannot write it ({self.strerror})"


class ConfigError(ValueError):
    """A configuration value that cannot be used."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, with one line saying what was kept (the apps print it: ``interrupted: <line>``)."""


def is_number(value: object) -> TypeGuard[int | float]:
    """A finite int or float (booleans excluded); an integer too large for a float is not one."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
