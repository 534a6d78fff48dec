"""Opening a file beneath a folder without following links: each component of the path is opened from
the file descriptor of the one before (``openat`` with ``O_NOFOLLOW``), so no symlink anywhere in the path
is followed, however it is swapped in while the path is walked, and what is read is the file that was
checked. The last component is opened with ``O_NONBLOCK`` and must be a regular file: a FIFO, socket or
device is never waited on or read.

Used wherever a path comes from data that someone else wrote (a prediction naming a file, a workspace
a check reads) and the bytes go somewhere else (a judge's request, a sandbox).
"""

from __future__ import annotations

import errno
import io
import os
import stat
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class Refused(Exception):
    """A path that is not opened: why, in a few words (``leaves the folder``, ``a symbolic link``, ...)."""


def relative_parts(root: str | Path, path: str | Path) -> tuple[str, ...]:
    """The components of `path` below `root`: a relative path's own (no ``..``, no empty name), an
    absolute one's below the root as written or as resolved; Refused when it lies outside."""
    raw = os.fspath(path)
    if not raw or "\x00" in raw:
        raise Refused("not a path")
    candidate = Path(raw)
    if candidate.is_absolute():
        normal = Path(os.path.normpath(raw))
        for base in dict.fromkeys((Path(os.path.normpath(os.path.abspath(root))), Path(root).resolve())):
            if normal.is_relative_to(base):
                candidate = normal.relative_to(base)
                break
        else:
            raise Refused("leaves the folder")
    parts = tuple(p for p in candidate.parts if p not in ("", "."))
    if not parts or ".." in parts:
        raise Refused("leaves the folder")
    return parts


def open_beneath(root: str | Path, path: str | Path) -> int:
    """A read-only descriptor of the regular file `path` names beneath `root` (relative, or absolute
    under the root), opened component by component with no symlink followed; Refused otherwise.
    The caller closes it."""
    parts = relative_parts(root, path)
    try:
        fd = os.open(Path(root).resolve(), _DIR_FLAGS)
    except OSError as exc:
        raise Refused(f"its folder cannot be opened ({exc.strerror})") from None
    try:
        for name in parts[:-1]:
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise Refused(_reason(exc, "a folder on its way", _is_link(name, fd))) from None
            os.close(fd)
            fd = child
        try:
            leaf = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        except OSError as exc:
            raise Refused(_reason(exc, "it", _is_link(parts[-1], fd))) from None
    finally:
        os.close(fd)
    mode = os.fstat(leaf).st_mode
    if not stat.S_ISREG(mode):
        os.close(leaf)
        raise Refused(f"not a regular file ({_kind(mode)})")
    os.set_blocking(leaf, True)
    return leaf


def read_beneath(root: str | Path, path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file `path` names beneath `root` (`open_beneath`); Refused when it is
    larger than `limit` bytes."""
    fd = open_beneath(root, path)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if limit is not None and size > limit:
            raise Refused(f"larger than {limit} bytes ({size})")
        data = handle.read() if limit is None else handle.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise Refused(f"larger than {limit} bytes")
    return data


IMAGE_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp",
                 "BMP": "image/bmp", "TIFF": "image/tiff"}
"""The image formats a request may carry, by Pillow's format name, and their MIME types."""


def image_type(data: bytes) -> str | None:
    """The MIME type of `data` when Pillow reads it as a whole image of a format of IMAGE_FORMATS; None
    for anything else (text, a key, a truncated or forged image)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as img:
            fmt = img.format
            img.verify()
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        return None
    return IMAGE_FORMATS.get(fmt or "")


def _is_link(name: str, dir_fd: int) -> bool:
    """Whether `name` in the folder of `dir_fd` is a symbolic link (not followed)."""
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _reason(exc: OSError, what: str, link: bool) -> str:
    """Why opening `what` failed, in a few words (`link`: the name is a symbolic link)."""
    if link or exc.errno == errno.ELOOP:
        return "a symbolic link" if what == "it" else f"{what} is a symbolic link"
    if exc.errno == errno.ENOTDIR:
        return f"{what} is not a folder"
    if exc.errno == errno.ENOENT:
        return "not found"
    return exc.strerror or exc.__class__.__name__


def file_kind(path: str | Path) -> str:
    """What kind of file `path` is, in a few words (``a FIFO``, ``a folder``, ...), its link not followed."""
    mode = os.lstat(path).st_mode
    return "a regular file" if stat.S_ISREG(mode) else _kind(mode)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "a special file"
