"""Which tools a task's reference trajectory uses (for oracle exposure), read through the contract, and
the turns of multi-turn tasks.

Task prompt files themselves are read with `engine.contract.read_tasks` (the tasks file's reader,
engine.contract.tasks).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.contract import InputError, contained_path, read_trajectories, task_records
from engine.contract.beneath import file_kind
from engine.contract.tasks import images_folder


def read_reference_tools(path: str | Path) -> dict[str, list[str]]:
    """Per id, the distinct "server/tool" names of a reference (GT) trajectory file, in order of use."""
    references = read_trajectories(path)
    out: dict[str, list[str]] = {}
    for task_id, trajectory in references.tasks.items():
        names: list[str] = []
        for s, step in enumerate(trajectory.steps):
            for c, call in enumerate(step.calls):
                if "/" not in call.name:
                    raise InputError(references.path, "must be a 'server/tool' string", task_id=task_id,
                                     field=f"steps[{s}].calls[{c}].name")
                if call.name not in names:
                    names.append(call.name)
        out[task_id] = names
    return out


@dataclass(frozen=True)
class Turn:
    """One turn of a multi-turn task: what the user says and the images that come with it."""

    prompt: str
    images: tuple[Path, ...] = ()


def read_turns(path: str | Path, images_dir: str | Path | None = None) -> dict[str, list[Turn]]:
    """Per id, the turns of the tasks of a task file that have two or more (VisualToolBench's shape:
    ``turns: [{"prompt", "images": [path, ...]}, ...]``, images resolved like the task's ``image``: inside
    their folder, `engine.contract.contained_path`).
    A task with one turn runs as a single question (an empty list is refused by `task_records`).
    InputError naming the file, the task id and the field otherwise."""
    path = Path(path)
    base = Path(images_dir) if images_dir else path.parent
    folder = images_folder(images_dir)
    out: dict[str, list[Turn]] = {}
    for task_id, obj in task_records(path).items():
        if "turns" not in obj:
            continue
        turns = obj["turns"]
        if not isinstance(turns, list):
            raise InputError(path, "must be a non-empty list of turns", task_id=task_id, field="turns")
        if len(turns) < 2:
            continue
        out[task_id] = [_turn(path, base, folder, task_id, k, turn) for k, turn in enumerate(turns)]
    return out


def _turn(path: Path, base: Path, folder: str, task_id: str, k: int, turn: object) -> Turn:
    where = f"turns[{k}]"
    if not isinstance(turn, dict):
        raise InputError(path, "must be an object with a prompt", task_id=task_id, field=where)
    prompt = turn.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError(path, "missing or empty text", task_id=task_id, field=f"{where}.prompt")
    images = turn.get("images") or []
    if not isinstance(images, list) or not all(isinstance(i, str) and i for i in images):
        raise InputError(path, "must be a list of image paths", task_id=task_id, field=f"{where}.images")
    resolved = []
    for i, image in enumerate(images):
        full = contained_path(base, image, file=path, task=task_id, field=f"{where}.images[{i}]", folder=folder)
        if not full.exists():
            raise InputError(path, f"image file {full} not found (set tasks.images_dir)", task_id=task_id,
                             field=f"{where}.images[{i}]")
        if not full.is_file():
            raise InputError(path, f"image file {full}: not a regular file ({file_kind(full)})", task_id=task_id,
                             field=f"{where}.images[{i}]")
        resolved.append(full)
    return Turn(prompt, tuple(resolved))
