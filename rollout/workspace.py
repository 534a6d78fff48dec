"""Per-task workspace: the task's input image, and the files its tool calls produce."""

from __future__ import annotations

import mimetypes
import os
import shutil
from pathlib import Path

from engine.contract import safe_name

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff")
MEDIA = "media"


def is_image(path: str) -> bool:
    """Whether a path names an image file (by its suffix)."""
    return path.lower().endswith(IMAGE_SUFFIXES)


def same_file_bytes(copy: Path, source: Path) -> bool:
    """Whether `copy` is a file holding exactly the bytes of `source` (sizes first, then the bytes)."""
    return (copy.is_file() and copy.stat().st_size == source.stat().st_size
            and copy.read_bytes() == source.read_bytes())


class Workspace:
    """The directory a task's tools work in; paths shown to the model are relative to it."""

    def __init__(self, root: Path, task_id: str) -> None:
        self.root = root
        self.task_id = task_id

    @classmethod
    def fresh(cls, base: Path, task_id: str) -> Workspace:
        """An empty workspace for a task (what an earlier, unfinished attempt left is removed)."""
        root = (base / safe_name(task_id)).resolve()
        if root.exists():
            shutil.rmtree(root)
        (root / MEDIA).mkdir(parents=True)
        return cls(root, task_id)

    def add_input(self, source: Path) -> str:
        """Copy an input file into media/ and return its workspace-relative path."""
        rel = f"{MEDIA}/{source.name}"
        shutil.copyfile(source, self.root / rel)
        return rel

    def path(self, rel: str) -> Path:
        """Absolute path of a workspace-relative path."""
        return self.root / rel

    def inside(self, rel: str) -> Path | None:
        """Absolute path of a workspace-relative path, or None when it would leave the workspace."""
        full = (self.root / rel).resolve()
        return full if full.is_relative_to(self.root) else None

    def snapshot(self) -> dict[str, tuple[int, int]]:
        """Every file's (size, mtime) by workspace-relative path."""
        state: dict[str, tuple[int, int]] = {}
        for dirpath, _, filenames in os.walk(self.root):
            for name in filenames:
                full = os.path.join(dirpath, name)
                try:
                    st = os.stat(full)
                except FileNotFoundError:
                    continue
                rel = os.path.relpath(full, self.root).replace(os.sep, "/")
                state[rel] = (st.st_size, st.st_mtime_ns)
        return state

    def changed_since(self, before: dict[str, tuple[int, int]]) -> list[str]:
        """Files created or modified since a snapshot, sorted."""
        return sorted(rel for rel, state in self.snapshot().items() if before.get(rel) != state)

    def free_name(self, rel: str) -> str:
        """`rel`, or `rel` with _2, _3, ... before its suffix, whichever names no file yet."""
        stem, dot, suffix = rel.rpartition(".") if "." in rel.rsplit("/", 1)[-1] else (rel, "", "")
        n = 1
        while (self.root / rel).exists():
            n += 1
            rel = f"{stem}_{n}{dot}{suffix}"
        return rel

    def save_image(self, data: bytes, mime: str, stem: str) -> str:
        """Write image bytes returned by a tool to media/ under a new name; returns its relative path."""
        suffix = mimetypes.guess_extension(mime) or ".png"
        if suffix == ".jpe":
            suffix = ".jpg"
        rel = self.free_name(f"{MEDIA}/{stem}{suffix}")
        (self.root / rel).write_bytes(data)
        return rel

    def bring_in(self, source: Path, rel: str) -> str:
        """Copy a file from outside into the workspace at `rel` (or a free name beside it); its relative path."""
        dest = self.inside(rel)
        if dest is None:
            rel = f"{MEDIA}/{source.name}"
        elif same_file_bytes(dest, source):
            return rel
        rel = self.free_name(rel)
        full = self.root / rel
        full.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, full)
        return rel
