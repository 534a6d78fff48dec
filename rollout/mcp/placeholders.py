"""Placeholders for running a servers config offline (``python scripts/servers.py placeholders``): a value for
each key its servers name, so that they start without the real ones, and an image for each task whose image is
not there, so that a rollout of the tasks can run where the real images are not at hand.

A placeholder key is ``m3bench-placeholder-<name>`` (`placeholder_value`): no word of a tool's result, and a
value the servers config never takes for a secret (`rollout.mcp.config.is_placeholder`), so it is never
redacted from results. A placeholder image is a grey PNG naming its task, written only where no file is.
"""

from __future__ import annotations

import io
import re
import shlex
from pathlib import Path

from PIL import Image, ImageDraw

from engine.contract import InputError, atomic_write_bytes, atomic_write_text, read_json
from engine.contract.paths import contained_path
from engine.contract.tasks import images_folder, task_records
from rollout.mcp.config import PLACEHOLDER_PREFIX, looks_secret

IMAGE_SIZE = (1024, 768)
"""Pixels of a placeholder image: large enough for the reference calls' crops and regions."""
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")
_PATTERN = re.compile(r"[*?\[]")


def placeholder_value(name: str) -> str:
    """The placeholder value of a key: ``m3bench-placeholder-`` and the name in lower case with dashes."""
    return PLACEHOLDER_PREFIX + name.lower().replace("_", "-")


def key_names(path: Path) -> list[str]:
    """The variables named like secrets (``KEY``, ``TOKEN``, ...) that the enabled entries of a servers config
    read: their ``inherit`` names and the ``${VAR}`` of their ``env`` and ``args``, and the top-level
    ``inherit`` names; sorted. Patterns (``LC_*``) are not names."""
    data = read_json(path, "servers config")
    servers = data.get("servers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise InputError(path, "expected an object with a 'servers' object", field="servers")
    names = _plain(data.get("inherit"))
    for entry in servers.values():
        if not isinstance(entry, dict) or entry.get("disabled") is True:
            continue
        names |= _plain(entry.get("inherit"))
        env = entry.get("env")
        texts = [*(env.values() if isinstance(env, dict) else ()), *(entry.get("args") or [])]
        names.update(m.group(1) for t in texts if isinstance(t, str) for m in _ENV_REF.finditer(t))
    return sorted(n for n in names if looks_secret(n))


def _plain(values: object) -> set[str]:
    """The names of an ``inherit`` list (its patterns left out)."""
    listed = values if isinstance(values, list) else []
    return {v for v in listed if isinstance(v, str) and v and not _PATTERN.search(v)}


def keys_script(names: list[str], config: Path) -> str:
    """A shell file exporting the placeholder value of each name (``. FILE`` reads it)."""
    lines = [f"# placeholder keys for the servers of {config} (python scripts/servers.py placeholders);",
             "# read with: . FILE   (values of the form m3bench-placeholder-..., never redacted from results)"]
    return "\n".join([*lines, *(f"export {n}={shlex.quote(placeholder_value(n))}" for n in names)]) + "\n"


def task_image_paths(tasks_file: Path, images_dir: Path) -> list[tuple[str, Path]]:
    """(task id, path) of every image a tasks file names (a task's ``image``, its turns' ``images``), resolved
    in `images_dir` as the rollout resolves them with ``tasks.images_dir`` (inside it)."""
    folder = images_folder(images_dir)
    out: list[tuple[str, Path]] = []
    for task_id, task in task_records(tasks_file).items():
        named: list[tuple[str, object]] = [("image", task.get("image"))]
        turns = task.get("turns")
        for k, turn in enumerate(turns if isinstance(turns, list) else []):
            images = turn.get("images") if isinstance(turn, dict) else None
            named += [(f"turns[{k}].images[{i}]", v) for i, v in enumerate(images if isinstance(images, list) else [])]
        for field, value in named:
            if value is None:
                continue
            if not isinstance(value, str) or not value:
                raise InputError(tasks_file, "must be a path string", task_id=task_id, field=field)
            out.append((task_id, contained_path(images_dir, value, file=tasks_file, task=task_id, field=field,
                                                folder=folder)))
    return out


def placeholder_png(task_id: str) -> Image.Image:
    """A mid-grey image saying it stands for the task's image."""
    image = Image.new("RGB", IMAGE_SIZE, (128, 128, 128))
    ImageDraw.Draw(image).text((32, 32), f"placeholder image of task {task_id}", fill=(0, 0, 0))
    return image


def write_placeholder_images(tasks_file: Path, images_dir: Path) -> tuple[int, int]:
    """Write a placeholder image wherever an image the tasks file names is not under `images_dir` (a file
    there is left as it is); (images written, images already there)."""
    written = present = 0
    seen: set[Path] = set()
    for task_id, path in task_image_paths(tasks_file, images_dir):
        if path in seen:
            continue
        seen.add(path)
        if path.exists():
            present += 1
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        data = io.BytesIO()
        placeholder_png(task_id).save(data, format="PNG")
        atomic_write_bytes(path, data.getvalue())
        written += 1
    return written, present


def write_keys(output: Path, config: Path, force: bool) -> list[str]:
    """Write the placeholder keys of a servers config to `output` (refused when it exists, unless `force`);
    the names written."""
    if output.exists() and not force:
        raise InputError(output, "exists already (use --force to replace it)")
    names = key_names(config)
    output.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(output, keys_script(names, config))
    return names
