"""Paths between the model, the task workspace and servers that know nothing of workspaces.

The model writes paths relative to its task workspace (``./media/<id>.png``, ``out.xlsx``). Before a
call goes to a server, such arguments become absolute paths inside the workspace (`to_workspace`);
the call is recorded with the arguments as the model wrote them. The workspace's absolute path in a
result is shown to the model as a relative one again (`from_workspace`). `named_paths` finds the
file paths a result text names, so files a server wrote elsewhere can be brought into the workspace.

A string argument is rewritten when it is a relative path that stays inside the workspace and
either starts with ``./`` or ``../``, or begins with a file or folder the workspace has, or is the
value of a key whose last word names a path (``output_path``, ``filepath``, ``imageFileUri``,
``save_dir``, ``file_name``; lists under such a key too). URLs, absolute paths and text with line
breaks are left as they are. Probing a string as a path never fails a call: a string the file system
cannot take as a path (too long, a NUL byte) is no path.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from engine.contract import JsonValue, json_strings

_PATH_WORDS = {"path", "paths", "file", "files", "filepath", "filepaths", "filename", "filenames", "name", "dir",
               "dirs", "directory", "folder", "uri", "uris"}
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_ABSOLUTE = re.compile(r"(?<![\w.:/~-])(/[^\s\"'`<>|,;()\[\]{}*?]+)")
_RELATIVE = re.compile(r"(?<![\w/.:~-])((?:\./)?[\w-][\w.-]*(?:/[\w.-]+)*\.[A-Za-z][A-Za-z0-9]{0,7})(?![\w/-])")
MAX_NAMED = 200


def _relative_inside(value: str, root: Path, keyed: bool) -> Path | None:
    """The absolute workspace path a string argument stands for, or None when it is no such path."""
    text = value.strip()
    if not text or len(text) > 1024 or "\n" in text or _SCHEME.match(text) or text.startswith(("/", "~", "\\")):
        return None
    explicit = text.startswith(("./", "../"))
    first = text.split("/", 1)[0]
    try:
        if not (explicit or keyed or (first not in (".", "..") and (root / first).exists())):
            return None
        full = (root / text).resolve()
    except (OSError, ValueError):  # too long for the file system, a NUL byte, a loop: not a path
        return None
    return full if full == root or full.is_relative_to(root) else None


def path_key(key: str) -> bool:
    """Whether an argument's key names a path: its last word (snake, kebab or camel case) says so."""
    words = [w.lower() for w in _WORD.findall(key)]
    if not words:
        return False
    last = words[-1]
    return last in _PATH_WORDS and (last != "name" or len(words) > 1 and words[-2] == "file")


def kept_folder(folder: str) -> str | None:
    """A server's own folder as `under_kept` compares it (``./media/`` -> ``media``), or None when it is not a
    relative folder that stays where it is (empty, absolute, or leaving through ``..``)."""
    parts = [p for p in folder.strip().replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or folder.strip().startswith(("/", "~")) or ".." in parts:
        return None
    return "/".join(parts)


def under_kept(value: str, keep: tuple[str, ...]) -> bool:
    """Whether a string argument is a relative path inside one of the server's own folders (`kept_folder` form)."""
    if not keep:
        return False
    parts = [p for p in value.strip().split("/") if p not in ("", ".")]
    text = "/".join(parts)
    return ".." not in parts and not value.strip().startswith("/") and \
        any(text == k or text.startswith(k + "/") for k in keep)


def _one_line_strings(arguments: object) -> Iterator[str]:
    """The one-line string arguments of a call, depth first in argument order."""
    return (s for s in json_strings(arguments) if "\n" not in s)


def kept_paths(arguments: object, keep: tuple[str, ...]) -> list[str]:
    """The string arguments that are relative paths inside the server's own folders (files it may write there)."""
    if not keep:
        return []
    return [s.strip() for s in _one_line_strings(arguments) if under_kept(s, keep)]


def to_workspace(arguments: JsonValue, root: Path, keyed: bool = False, keep: tuple[str, ...] = ()) -> JsonValue:
    """The arguments with workspace-relative paths made absolute (a new structure; the input is unchanged).

    Paths inside the server's own folders (`keep`, see `kept_folder`) are sent as written.
    """
    if isinstance(arguments, dict):
        return {k: to_workspace(v, root, path_key(k), keep) for k, v in arguments.items()}
    if isinstance(arguments, list):
        return [to_workspace(v, root, keyed, keep) for v in arguments]
    if isinstance(arguments, str) and not under_kept(arguments, keep):
        full = _relative_inside(arguments, root, keyed)
        if full is not None:
            return str(full) + ("/" if arguments.endswith("/") and full != root else "")
    return arguments


def from_workspace(text: str, root: Path) -> str:
    """A result text with the workspace's absolute path turned into workspace-relative paths."""
    prefix = str(root)
    if prefix not in text:
        return text
    return re.sub(re.escape(prefix) + r"(?:/|(?![\w.-]))", lambda m: "" if m.group(0).endswith("/") else ".", text)


def named_paths(text: str) -> list[str]:
    """Absolute paths, and relative file paths with a suffix, that a text names (at most MAX_NAMED)."""
    found = [re.sub(r"(:\d+)+$", "", m.rstrip(".:")).rstrip(".:") for m in _ABSOLUTE.findall(text)]
    found += _RELATIVE.findall(text)
    return list(dict.fromkeys(p for p in found if p not in ("/", "")))[:MAX_NAMED]


def argument_paths(arguments: object) -> list[str]:
    """The absolute paths among a call's string arguments (files a call may write outside the workspace)."""
    return [s for s in _one_line_strings(arguments) if s.startswith("/")]
