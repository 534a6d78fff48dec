"""The images a judge is shown: those its payload names (``file=/abs/path`` in any of its texts, as
the published judges read them) and those its question carries (the task's input image), attached to
the request's user message as image parts, which every driver sends in its provider's own form.

A path comes from a prediction (model output) or a data set, so it is read by one rule before anything
goes into a request: only a file inside one of the task's folders (`ImageFolders`: the task's own
workspace, its media folder included, and the data set's declared image folders), opened beneath that
folder with no link followed, a regular file of at most IMAGE_LIMIT bytes, read once and an image by
its content (rollout.models.images.read_image); the drivers get those bytes, never the path. Every other
file is never read into a request: it is counted per task with the reason (`TaskImages.refused`),
named once in a warning, and in the judge app's closing lines (`refused_line`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from engine.contract import digest, json_strings, safe_name, shown
from engine.contract.beneath import Refused, relative_parts
from rollout.judges.inputs import rollout_folder
from rollout.judges.settings import JudgeSettings
from rollout.models.images import IMAGE_LIMIT, read_image

log = logging.getLogger("judge")

# An absolute path after "file=", up to white space or a character that closes a JSON or prose context.
_FILE_REFERENCE = re.compile(r"file=(/[^\s\"'<>|,;)\]}]+)")

OUTSIDE = "outside the task's folders"
"""The reason a path under none of the task's folders is refused."""


def path_shown(path: str, head: int = 60, tail: int = 160) -> str:
    """A path as a message names it: on one line (escaped and quoted when not printable), its middle cut
    when it is long, so its folder's start and its file's name stay."""
    if len(path) > head + tail + 3:
        path = path[:head] + "..." + path[-tail:]
    return path if path.isprintable() else json.dumps(path, ensure_ascii=True)


def named_images(payload: object) -> list[str]:
    """The absolute image paths a payload names as ``file=/abs/path``, in order, each once."""
    seen: dict[str, None] = {}
    for text in json_strings(payload):
        for path in _FILE_REFERENCE.findall(text):
            seen.setdefault(path.rstrip(".:"), None)
    return list(seen)


def task_image(folders: tuple[Path, ...], path: str, limit: int = IMAGE_LIMIT) -> tuple[str, bytes]:
    """(MIME type, bytes) of the image at the absolute `path`, read beneath the first of `folders` it lies
    under (rollout.models.images.read_image); Refused with the reason otherwise."""
    if not Path(path).is_absolute():
        raise Refused("not an absolute path")
    for folder in folders:
        try:
            relative_parts(folder, path)
        except Refused:
            continue
        return read_image(folder, path, limit)
    raise Refused(OUTSIDE)


class ImagePart(TypedDict):
    """An image of a request's user message, as every driver reads it: its MIME type, bytes and path."""

    type: str
    mime: str
    data: bytes
    name: str


class TaskImages:
    """The images one task's questions may show: each path read once by the rule (`task_image`) under
    the task's `folders`; those refused kept by path with the reason (`refused`). Thread-safe."""

    def __init__(self, folders: tuple[Path, ...] = (), limit: int = IMAGE_LIMIT) -> None:
        self.folders = folders
        self.limit = limit
        self.refused: dict[str, str] = {}
        self._shown: dict[str, tuple[str, bytes]] = {}
        self._lock = threading.Lock()

    def parts(self, paths: list[str]) -> list[ImagePart]:
        """The image parts (``{"type": "image", "mime", "data", "name"}``) of the paths the rule admits, in
        order; the others are recorded in `refused`."""
        out: list[ImagePart] = []
        for path in paths:
            with self._lock:
                shown, why = self._shown.get(path), self.refused.get(path)
                if shown is None and why is None:
                    try:
                        shown = self._shown[path] = task_image(self.folders, path, self.limit)
                    except Refused as exc:
                        self.refused[path] = str(exc)
            if shown is not None:
                out.append({"type": "image", "mime": shown[0], "data": shown[1], "name": path})
        return out


def shown_digest(payload_digest: str, parts: list[ImagePart]) -> str:
    """What a question shows its judge, as one digest: its payload's digest alone when no image is shown
    (so the keys of text-only questions stay as they were), else with the SHA-256 of each image's bytes, so
    a file changed under the same path is asked about again."""
    if not parts:
        return payload_digest
    return digest({"payload": payload_digest, "images": [hashlib.sha256(p["data"]).hexdigest() for p in parts]})


def named_files_key(images: TaskImages, payload: object) -> dict[str, str]:
    """path -> the SHA-256 of its bytes for each file a payload (a prediction) names that the task's rule
    admits, or ``not shown: <why>`` for one it refuses: what of those files can decide a verdict."""
    paths = named_images(payload)
    out = {part["name"]: hashlib.sha256(part["data"]).hexdigest() for part in images.parts(paths)}
    out.update({path: f"not shown: {why}" for path, why in images.refused.items() if path in paths})
    return {path: out[path] for path in paths if path in out}


@dataclass(frozen=True)
class ImageFolders:
    """Where the files a stage's questions name may lie: each task's own workspace
    (``<workspaces>/<safe_name(id)>``, its media folder inside) when the run has one, and the data set's
    declared image folders (`declared`)."""

    workspaces: Path | None = None
    declared: tuple[Path, ...] = ()
    limit: int = IMAGE_LIMIT

    def of_task(self, task_id: str) -> TaskImages:
        """The rule of one task's images."""
        own = (self.workspaces / safe_name(task_id),) if self.workspaces is not None else ()
        return TaskImages(own + self.declared, self.limit)


WARNED_IMAGES = 5
"""Refused images named one by one in a warning; past them, one line says the closing line counts the rest."""


class ImageAttacher:
    """Adds a question's images, read by its task's rule, to its request; names each refused image once
    in a warning, the first WARNED_IMAGES of them (the evaluator's closing line counts them all)."""

    def __init__(self) -> None:
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def attach(self, messages: list[dict[str, object]], paths: list[str],
               images: TaskImages) -> list[dict[str, object]]:
        """The messages with the images `images` admits appended to the last user message as image parts."""
        found = images.parts(paths)
        for path in paths:
            why = images.refused.get(path)
            with self._lock:
                if why is None or path in self._warned:
                    continue
                self._warned.add(path)
                count = len(self._warned)
            if count <= WARNED_IMAGES:
                log.warning("image %s not shown to the judges: %s", path_shown(path), why)
            elif count == WARNED_IMAGES + 1:
                log.warning("more images not shown to the judges: the closing line counts them all")
        if not found:
            return messages
        out = [dict(m) for m in messages]
        last = max(i for i, m in enumerate(out) if m["role"] == "user")
        content = out[last]["content"]
        parts: list[object] = [{"type": "text", "text": content}] if isinstance(content, str) \
            else list(content) if isinstance(content, list) else []
        out[last]["content"] = [*parts, *found]
        return out


def refused_line(refused: Mapping[str, Mapping[str, str]], few: int = 3) -> str | None:
    """One line of the file references not shown to the judges (task id -> path -> reason): how many, in how
    many tasks, by reason, naming the first `few`; None when there are none."""
    pairs = [(tid, path, why) for tid, paths in refused.items() for path, why in paths.items()]
    if not pairs:
        return None
    reasons = Counter(why for _, _, why in pairs)
    named = "; ".join(f"{path_shown(path)} ({why}, task {shown(tid)})" for tid, path, why in pairs[:few])
    return (f"{len(pairs)} file reference(s) of {len(refused)} task(s) not shown to the judges ("
            + ", ".join(f"{n} {why}" for why, n in reasons.most_common()) + f"): {named}"
            + (" ..." if len(pairs) > few else ""))


def image_folders(cfg: JudgeSettings, options: Mapping[str, object], reads_task: bool) -> ImageFolders:
    """The folders an evaluator's questions may show files of, from the judge app's settings `cfg` and the
    evaluator's `options` (its entry, with the run's files): each task's workspace (``workspace_dir``,
    else the rollout's of ``model``; none without either, whether or not the evaluator reads it) and the
    data set's declared image folders: the entry's ``images_dir``, else the reference file's folder (where
    the task's image is taken from), and ``data.images_dir``, else, for an evaluator that reads the task,
    the tasks file's folder (or the tasks folder)."""
    workspaces = (rollout_folder(cfg, cfg.workspace_dir, "workspace_dir", "workspace")
                  if cfg.workspace_dir or cfg.model else None)
    declared: list[Path] = []
    if options.get("images_dir"):
        declared.append(Path(str(options["images_dir"])))
    elif options.get("reference_file"):
        declared.append(Path(str(options["reference_file"])).parent)
    if cfg.data.images_dir:
        declared.append(Path(cfg.data.images_dir))
    elif reads_task and cfg.data.tasks:
        tasks = Path(cfg.data.tasks)
        declared.append(tasks if tasks.is_dir() else tasks.parent)
    return ImageFolders(workspaces, tuple(dict.fromkeys(declared)))
