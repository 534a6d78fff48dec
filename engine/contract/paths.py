"""The one rule for a path a task or data file names (an image, an input file, a turn's image, a check or
answer script): relative, resolved (symlinks followed) inside its folder, the folder of the file that names
it or the data set's declared folder (tasks.images_dir, a TOBench or MCPVerse root). Anything else is
refused when the file is read, before any model is asked or any script runs: what lies outside that
folder (a home folder, a key) never reaches a workspace, a model request or a check."""

from __future__ import annotations

from pathlib import Path

from engine.contract.errors import InputError, shown


def contained_path(base: str | Path, value: object, *, file: str | Path, task: str | None, field: str,
                   folder: str = "tasks folder") -> Path:
    """The absolute path `value` names under `base` (`folder` says what base is, for the message);
    InputError naming `file`, the `task` id and the `field` when `value` is not a non-empty relative
    path, or leads outside `base` (through '..', or a symlink)."""
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise InputError(file, f"must be a relative path, got {shown(repr(value))}", task_id=task, field=field)
    root = Path(base).resolve()
    try:
        target = (root / value).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise InputError(file, f"{shown(repr(value))} cannot be resolved ({exc.__class__.__name__})",
                         task_id=task, field=field) from None
    if Path(value).is_absolute() or not target.is_relative_to(root):
        raise InputError(file, f"{shown(repr(value))} leaves the {folder} {root} (a path a task names is "
                         "relative and stays inside that folder, symlinks included)", task_id=task, field=field)
    return target
