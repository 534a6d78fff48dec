"""The images a transcript shows: read by one rule, re-encoded into the site, or named with the reason
they are not shown.

A transcript names files in model and tool output (``file=/abs/path`` in a tool result, a dialogue's image
parts, the files a call produced), so what they name is untrusted, and the site is something users
share. An image is shown only when it lies in one of the task's folders: its own rollout workspace (the
``media`` folder included) or the declared image folder (``--images``, else the reference file's folder).
It is opened beneath that folder with no symbolic link followed, only a regular file of at most
`MEDIA_LIMIT` bytes, and only an image by its content (engine.contract.beneath); it is then decoded and
written anew (at most `MEDIA_SIDE` pixels a side, no metadata kept) under ``media/`` with a name of its
content's digest, so the site never holds a byte the viewer did not draw. Any other file is never read into
the site: the transcript names it with the reason (`SiteMedia.refused` keeps them for one warning).
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
from pathlib import Path

from engine.contract import shown
from engine.contract.beneath import Refused, image_type, read_beneath, relative_parts

MEDIA_DIR = "media"
MEDIA_LIMIT = 32 * 2 ** 20
"""The largest image file read for the site, in bytes (what a judge's request takes); a larger one is named."""
MEDIA_SIDE = 1024
"""Longest side of a transcript image in the site, in pixels (what the rollout sends a model by default)."""
OUTSIDE = "outside the task's folders"
"""The reason a path under none of the task's folders is not shown."""


class SiteMedia:
    """The images of one site being built (under `out`/media/), each source read once and each image
    written once however many tasks show it; `refused` maps (model, task id, path) to why it is not shown."""

    def __init__(self, out: Path, max_side: int = MEDIA_SIDE, limit: int = MEDIA_LIMIT) -> None:
        self.out = Path(out)
        self.max_side = max_side
        self.limit = limit
        self.refused: dict[tuple[str, str, str], str] = {}
        self._seen: dict[tuple[tuple[Path, ...], Path | None, str], dict[str, str]] = {}
        self._written: dict[str, str] = {}

    def image(self, task: tuple[str, str], path: str, workspace: Path | None,
              folders: tuple[Path, ...]) -> dict[str, str]:
        """``{"name": path, "src": its file in the site}`` for an image the rule admits, else ``{"name": path,
        "refused": why}``, of a `task` (model, task id). A relative `path` is read beneath the task's `workspace`
        (None: refused); an absolute one beneath the first of the workspace and `folders` it lies under."""
        key = (folders, workspace, path)
        if key not in self._seen:
            try:
                self._seen[key] = {"name": path, "src": self._admit(path, workspace, folders)}
            except Refused as exc:
                self._seen[key] = {"name": path, "refused": str(exc)}
        shown = self._seen[key]
        if "refused" in shown:
            self.refused[(task[0], task[1], path)] = shown["refused"]
        return shown

    def _admit(self, path: str, workspace: Path | None, folders: tuple[Path, ...]) -> str:
        """A file of the workspace (a link there is no workspace: its files are refused) or, named by an
        absolute path, of `folders`."""
        absolute = Path(path).is_absolute()
        if not absolute and workspace is None:
            raise Refused("no rollout workspace of this task")
        for folder in ((workspace,) if workspace is not None else ()) + (folders if absolute else ()):
            try:
                relative_parts(folder, path)
            except Refused:
                if not absolute:
                    raise  # a relative path leading out of the workspace
                continue
            if folder is workspace and _is_link(folder):
                raise Refused("the task's workspace is a symbolic link")
            return self._write(read_beneath(folder, path, self.limit))
        raise Refused(OUTSIDE)

    def _write(self, data: bytes) -> str:
        """The site path of the image these bytes hold, written anew under media/ (once per content)."""
        digest = hashlib.sha256(data).hexdigest()
        if digest in self._written:
            return self._written[digest]
        mime = image_type(data)
        if mime is None:
            raise Refused("not an image")
        from PIL import Image

        try:
            with Image.open(io.BytesIO(data)) as img:
                img.thumbnail((self.max_side, self.max_side))
                photo = mime == "image/jpeg"
                out = io.BytesIO()
                if photo:
                    img.convert("RGB").save(out, "JPEG", quality=85)
                else:
                    img.convert("RGBA" if img.mode in ("RGBA", "LA", "P") else "RGB").save(out, "PNG")
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
            raise Refused("not an image that can be drawn") from None
        rel = f"{MEDIA_DIR}/{digest[:24]}.{'jpg' if photo else 'png'}"
        (self.out / MEDIA_DIR).mkdir(exist_ok=True)
        (self.out / rel).write_bytes(out.getvalue())
        self._written[digest] = rel
        return rel

    def refused_line(self, few: int = 3) -> str | None:
        """One line of the file references not shown: how many, in how many tasks (of a model), by reason,
        naming the first `few`; None when there are none."""
        if not self.refused:
            return None
        reasons: dict[str, int] = {}
        for why in self.refused.values():
            reasons[why] = reasons.get(why, 0) + 1
        named = "; ".join(f"{shown(path)} ({why}; model {shown(model)}, task {shown(tid)})"
                          for (model, tid, path), why in list(self.refused.items())[:few])
        tasks = len({(model, tid) for model, tid, _ in self.refused})
        return (f"{len(self.refused)} file reference(s) of {tasks} task(s) not shown in the site ("
                + ", ".join(f"{n} {why}" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
                + f"): {named}" + (" ..." if len(self.refused) > few else ""))


def _is_link(folder: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(folder).st_mode)
    except OSError:
        return False

