"""The tasks file: the one reader of its records, for the rollout (the questions and images to roll out),
the judges (each evaluator's task record) and the rollout's multi-turn tasks.

A tasks file is a list of task objects, each with its id (``id``, or ``task_id`` as some released files
name it), or an object of id -> task (the key is the id where the task names none). A task that is not an
object, one without an id, an id given twice and a ``turns`` field that is not a non-empty list are refused
with an `InputError` naming the file, the task and the field. Every path a task names (its scripts here, its
image and its turns' images where they are resolved) is read through `engine.contract.contained_path`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from engine.contract.errors import InputError
from engine.contract.jsonio import JsonObject, JsonValue, read_json
from engine.contract.paths import contained_path

WHAT = "tasks file"
SCRIPT_FIELDS = ("check", "eval_script", "answer_template")
"""The fields naming a script the judges run (engine.evaluators.verifiers, answer_equivalence), relative to the
tasks file's folder."""


def task_id_of(record: object) -> JsonValue:
    """A task record's id: ``id``, else ``task_id`` (both names occur in released files); None without."""
    return record.get("id", record.get("task_id")) if isinstance(record, dict) else None


def task_records(path: str | Path) -> dict[str, JsonObject]:
    """id -> task record of a tasks file, in file order."""
    path = Path(path)
    root = read_json(path, WHAT)
    if isinstance(root, dict):
        items: list[tuple[str, object, str | None]] = [(str(k), v, k) for k, v in root.items()]
    elif isinstance(root, list):
        items = [(f"#{i}", v, None) for i, v in enumerate(root)]
    else:
        raise InputError(path, "the root must be a list of tasks or an object of id -> task")
    out: dict[str, JsonObject] = {}
    for position, (label, record, key) in enumerate(items):
        if not isinstance(record, dict):
            raise InputError(path, "a task must be an object", task_id=label)
        tid = task_id_of(record)
        tid = key if tid is None else tid
        if tid is None or isinstance(tid, bool) or not isinstance(tid, (str, int)):
            raise InputError(path, "a task needs an id (a string or an integer)", task_id=label, field="id")
        if str(tid) in out:
            raise InputError(path, f"the id is given twice (again at #{position})", task_id=str(tid), field="id")
        for name in SCRIPT_FIELDS:
            if record.get(name) is not None:
                contained_path(path.parent, record[name], file=path, task=str(tid), field=name)
        turns = record.get("turns")
        if turns is not None and (not isinstance(turns, list) or not turns):
            raise InputError(path, "must be a non-empty list of turns (or no turns field: one question)",
                             task_id=str(tid), field="turns")
        out[str(tid)] = record
    return out


@dataclass(frozen=True)
class Task:
    """One task to roll out: its question, the image it comes with, and its place in the file."""

    id: str
    question: str
    image: str | None
    image_path: Path | None
    type: str | None
    index: int


def images_folder(images_dir: str | Path | None) -> str:
    """What the folder a task's image paths are relative to is, as a message names it."""
    return "images folder (tasks.images_dir)" if images_dir else "tasks file's folder"


def read_tasks(path: str | Path, images_dir: str | Path | None = None, question_field: str = "question",
               ids: Iterable[str] | None = None) -> list[Task]:
    """The tasks to roll out of a tasks file (`task_records`; {id, image, type, question, ...}), in file order.

    `question_field` names the field given to the model ("question", or "prompt" for the explicit
    instructions of tasks_fuzzy.json). Images are resolved against `images_dir` (default: the
    file's folder), must stay inside it (`contained_path`) and must exist. `ids`, when given, keeps only
    those ids (all must exist).
    """
    path = Path(path)
    kept = task_records(path)
    base = Path(images_dir) if images_dir else path.parent
    wanted = {str(i) for i in ids} if ids else None
    if wanted is not None:
        unknown = sorted(wanted - set(kept))
        if unknown:
            raise InputError(path, f"requested id(s) not in the file: {', '.join(unknown)}")
    tasks = []
    missing: list[tuple[str, Path]] = []
    for index, (task_id, obj) in enumerate(kept.items()):
        if wanted is not None and task_id not in wanted:
            continue
        question = obj.get(question_field)
        if not isinstance(question, str) or not question.strip():
            raise InputError(path, "missing or empty text", task_id=task_id, field=question_field)
        image = obj.get("image")
        image_path = None
        if image is not None:
            if not isinstance(image, str) or not image:
                raise InputError(path, "must be a path string or null", task_id=task_id, field="image")
            image_path = contained_path(base, image, file=path, task=task_id, field="image",
                                        folder=images_folder(images_dir))
            if not image_path.is_file():
                missing.append((task_id, image_path))
        family = obj.get("type")
        if family is not None and not isinstance(family, str):
            raise InputError(path, "must be a string", task_id=task_id, field="type")
        tasks.append(Task(task_id, question, image, image_path, family, index))
    if missing:
        first_id, first = missing[0]
        raise InputError(path, f"{len(missing)} of {len(tasks)} task images are not under {base.resolve()} "
                         f"(first: {first}); the images are not shipped with the tasks file: put them in a "
                         "folder and give it as tasks.images_dir", task_id=first_id, field="image")
    return tasks


